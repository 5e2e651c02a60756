/*
 * fc_sweep_test: every FullyConnected algorithm (predict/operators/
 * fully_connected.h) whose applies() accepts a size is forced on it, in
 * turn, on one and two threads, and compared with a double-precision
 * reference: max |y - ref| <= 1e-4 * max |ref|. Sizes are seeded random:
 * rows 1-70 (across the GEMV threshold), depth and hidden 1-300 with odd
 * and prime values, past the micro-kernel's tile edges.
 *
 * Usage: fc_sweep_test [--cases N] [--seed S]. Prints
 * "N cases, M algorithm runs, F failures" last.
 */
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "../../predict/c_api/environment.h"
#include "../../predict/kernels/cpu_features.h"
#include "../../predict/kernels/thread_pool.h"
#include "../../predict/operators/fully_connected.h"
#include "test_random.h"

namespace fc_sweep_test {

using namespace mxlite;

int Main(int argc, char** argv) {
  int64_t count = 300;
  unsigned seed = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string arg = argv[i];
    if (arg == "--cases") count = std::atoll(argv[i + 1]);
    if (arg == "--seed") seed = static_cast<unsigned>(std::strtoul(argv[i + 1], nullptr, 10));
  }
  TestRandom random(seed);
  const auto pick = [&random](int64_t lo, int64_t hi) {
    const float u = (random() + 1.f) / 2.f;  // [0, 1)
    return lo + std::min<int64_t>(hi - lo, static_cast<int64_t>(u * float(hi - lo + 1)));
  };
  ThreadPool two(2);
  int runs = 0, failures = 0;
  std::map<std::string, int> by_algorithm;
  for (int64_t c = 0; c < count; ++c) {
    FcGeometry g;
    g.rows = pick(0, 3) == 0 ? pick(5, 70) : pick(1, 6);
    g.depth = pick(1, 300);
    g.hidden = pick(1, 300);
    std::vector<float> x(static_cast<size_t>(g.rows * g.depth)),
        w(static_cast<size_t>(g.hidden * g.depth));
    for (float& v : x) v = random();
    for (float& v : w) v = random();
    std::vector<double> want(static_cast<size_t>(g.rows * g.hidden));
    double scale = 0;
    for (int64_t r = 0; r < g.rows; ++r) {
      for (int64_t j = 0; j < g.hidden; ++j) {
        double sum = 0;
        for (int64_t k = 0; k < g.depth; ++k) sum += double(x[r * g.depth + k]) * w[j * g.depth + k];
        want[r * g.hidden + j] = sum;
        scale = std::max(scale, std::fabs(sum));
      }
    }
    const FcAlgorithm* chosen = ChooseFcAlgorithm(g);
    if (chosen == nullptr || !chosen->applies(g)) {
      ++failures;
      std::printf("FAIL: no applicable choice for %lld x %lld x %lld\n", (long long)g.rows,
                  (long long)g.depth, (long long)g.hidden);
    }
    for (const FcAlgorithm& algorithm : FcAlgorithmTable()) {
      if (!algorithm.applies(g)) continue;
      ++runs;
      ++by_algorithm[algorithm.name];
      std::unique_ptr<FcKernel> kernel;
      // Prepared for one row and run on the case's rows: a prepared
      // kernel serves any number of rows (executors of a model share it).
      FcGeometry one_row = g;
      one_row.rows = 1;
      Status status = algorithm.prepare(one_row, w.data(), &kernel);
      std::vector<float> y(want.size(), NAN);
      PackedMatrix packed_x;
      FcCall call;
      call.rows = g.rows;
      call.packed_x = &packed_x;
      call.x = x.data();
      call.weight = w.data();
      call.y = y.data();
      call.pool = c % 2 ? &two : nullptr;
      if (status.ok()) status = kernel->Forward(call);
      double error = status.ok() ? 0 : INFINITY;
      for (size_t i = 0; i < y.size() && status.ok(); ++i) {
        const double e = std::fabs(y[i] - want[i]);
        error = std::isnan(e) ? INFINITY : std::max(error, e);
      }
      if (!(error <= 1e-4 * std::max(scale, 1e-30))) {
        ++failures;
        std::printf("FAIL: %s on %lld x %lld x %lld: error %.3g (scale %.3g) %s\n",
                    algorithm.name, (long long)g.rows, (long long)g.depth, (long long)g.hidden,
                    error, scale, status.message().c_str());
      }
    }
  }
  for (const auto& entry : by_algorithm) {
    std::printf("  %-28s %d runs\n", entry.first.c_str(), entry.second);
  }
  std::printf("%lld cases, %d algorithm runs, %d failures\n", (long long)count, runs, failures);
  return failures == 0 ? 0 : 1;
}

}  // namespace fc_sweep_test

int main(int argc, char** argv) {
  // This driver is the API boundary: the environment (MXLITE_ISA caps the
  // kernels' instruction set) applies here.
  const mxlite::Status environment = mxlite::ApplyProcessEnvironment();
  if (!environment.ok()) {
    std::fprintf(stderr, "%s\n", environment.message().c_str());
    return 2;
  }
  return fc_sweep_test::Main(argc, argv);
}
