/*
 * imperative_test: the imperative layer (predict/imperative/imperative.h)
 * pushed to from many C++ threads at once, with no GIL to serialise them.
 *
 * Each thread accumulates its own array through registered operators,
 * copies, fills of a view and GEMM products, reading its inputs while
 * other threads push; the sums it reads back must be what arithmetic says.
 * A failing operation must surface at the read of what it computed.
 *
 *   imperative_test [--threads T] [--steps S]
 *
 * Prints "<checks> checks, <failures> failures" last.
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../../predict/c_api/environment.h"
#include "../../predict/imperative/imperative.h"

namespace imperative_test {

using namespace mxlite;

std::mutex g_mutex;
int g_checks = 0;
int g_failures = 0;

void Expect(bool ok, const std::string& what) {
  std::lock_guard<std::mutex> lock(g_mutex);
  ++g_checks;
  if (!ok) {
    ++g_failures;
    std::printf("FAILED: %s\n", what.c_str());
  }
}

// acc += x, then row 1 of acc := 0, then a product reading acc; `steps` times.
// Row 0 of acc ends as steps * value, row 1 as 0.
void Accumulate(int thread, int steps) {
  const float value = 1.0f + static_cast<float>(thread);
  ArrayRef x, acc;
  Status status = NewEngineArray(Shape({16, 32}), kFloat32, &x);
  if (status.ok()) status = NewEngineArray(Shape({16, 32}), kFloat32, &acc);
  if (status.ok()) status = Fill(x, value);
  for (int step = 0; status.ok() && step < steps; ++step) {
    std::vector<ArrayRef> sum;
    status = Invoke("broadcast_add", {}, {acc, x}, &sum);
    if (status.ok()) status = CopyFromTo(sum[0], acc);
    ArrayRef row;
    if (status.ok()) status = ViewOf(acc, 32, Shape({32}), &row);
    if (status.ok()) status = Fill(row, 0.0);
    ArrayRef product;
    if (status.ok()) status = Dot(acc, x, false, true, &product);
  }
  std::vector<ArrayRef> totals;
  if (status.ok()) status = Invoke("sum", {{"axis", "1"}}, {acc}, &totals);
  NDArray host;
  if (status.ok()) status = ReadToHost(totals[0], &host);
  Expect(status.ok(), "thread " + std::to_string(thread) + ": " + status.message());
  if (!status.ok()) return;
  const float want = 32.0f * static_cast<float>(steps) * value;
  Expect(host.fdata()[0] == want && host.fdata()[1] == 0.0f && host.fdata()[2] == want,
         "thread " + std::to_string(thread) + ": row sums " + std::to_string(host.fdata()[0]) +
             ", " + std::to_string(host.fdata()[1]) + ", want " + std::to_string(want) + ", 0");
}

void FailureSurfacesAtTheRead() {
  ArrayRef a;
  Status status = NewEngineArray(Shape({4}), kFloat32, &a);
  if (status.ok()) status = PushSleep({a}, 20, "planned failure");
  std::vector<ArrayRef> doubled;
  if (status.ok()) status = Invoke("_mul_scalar", {{"scalar", "2"}}, {a}, &doubled);
  Expect(status.ok(), "pushing after a failing operation: " + status.message());
  if (!status.ok()) return;
  NDArray host;
  status = ReadToHost(doubled[0], &host);
  Expect(!status.ok() && status.message().find("planned failure") != std::string::npos,
         "the failure reaches the read of what it computed: " + status.message());
  Expect(!WaitToRead(a).ok(), "the failure is kept on the failed array until read");
  Expect(WaitToRead(a).ok(), "and reported once");
}

}  // namespace imperative_test

int main(int argc, char** argv) {
  // This driver is the API boundary: the environment (MXLITE_ISA caps the
  // kernels' instruction set) applies here.
  {
    const mxlite::Status environment = mxlite::ApplyProcessEnvironment();
    if (!environment.ok()) {
      std::fprintf(stderr, "%s\n", environment.message().c_str());
      return 2;
    }
  }
  int threads = 16, steps = 40;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--threads") == 0) threads = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--steps") == 0) steps = std::atoi(argv[i + 1]);
  }
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) workers.emplace_back(imperative_test::Accumulate, t, steps);
  for (std::thread& worker : workers) worker.join();
  imperative_test::FailureSurfacesAtTheRead();
  imperative_test::Expect(mxlite::WaitAll().ok(), "nothing left unreported at the end");
  std::printf("%d checks, %d failures\n", imperative_test::g_checks, imperative_test::g_failures);
  return imperative_test::g_failures == 0 ? 0 : 1;
}
