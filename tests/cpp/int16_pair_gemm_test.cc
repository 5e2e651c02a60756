/*
 * int16_pair_gemm_test: Int16PairGemm (whichever implementation MXLITE_ISA
 * allows) against its definition summed in int64 and reduced mod 2^32, on
 * the operand ranges the int8 convolution gives it (codes -128..255 times
 * weights -127..127): filter counts 1-9 (every tile size and remainder),
 * pair counts 1-40 and one of 40000 with extreme values (sums past the int32
 * range, which must wrap), column counts of one to four steps.
 */
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "../../predict/c_api/environment.h"
#include "../../predict/kernels/int16_pair_gemm.h"

namespace {

int checks = 0, failures = 0;

void Check(const std::vector<int16_t>& w, const std::vector<int16_t>& x, int64_t filters,
           int64_t pairs, int64_t columns) {
  std::vector<int32_t> wp(static_cast<size_t>(filters * pairs));
  std::vector<int32_t> xp(static_cast<size_t>(pairs * columns));
  for (int64_t f = 0; f < filters; ++f) {
    for (int64_t kp = 0; kp < pairs; ++kp) {
      wp[f * pairs + kp] = mxlite::PackInt16Pair(w[(f * pairs + kp) * 2], w[(f * pairs + kp) * 2 + 1]);
    }
  }
  for (int64_t kp = 0; kp < pairs; ++kp) {
    for (int64_t p = 0; p < columns; ++p) {
      xp[kp * columns + p] = mxlite::PackInt16Pair(x[(2 * kp) * columns + p],
                                                   x[(2 * kp + 1) * columns + p]);
    }
  }
  std::vector<int32_t> acc(static_cast<size_t>(filters * columns), 12345);
  mxlite::Int16PairGemm(wp.data(), xp.data(), filters, pairs, columns, acc.data());
  for (int64_t f = 0; f < filters; ++f) {
    for (int64_t p = 0; p < columns; ++p) {
      int64_t sum = 0;
      for (int64_t k = 0; k < 2 * pairs; ++k) {
        sum += static_cast<int64_t>(w[f * 2 * pairs + k]) * x[k * columns + p];
      }
      const int32_t want = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(sum)));
      ++checks;
      if (acc[f * columns + p] != want) {
        if (++failures <= 10) {
          std::printf("FAIL filters=%lld pairs=%lld columns=%lld at (%lld, %lld): %d, want %d\n",
                      static_cast<long long>(filters), static_cast<long long>(pairs),
                      static_cast<long long>(columns), static_cast<long long>(f),
                      static_cast<long long>(p), acc[f * columns + p], want);
        }
      }
    }
  }
}

}  // namespace

int main() {
  // This driver is the API boundary: the environment (MXLITE_ISA caps the
  // kernels' instruction set) applies here.
  const mxlite::Status environment = mxlite::ApplyProcessEnvironment();
  if (!environment.ok()) {
    std::fprintf(stderr, "%s\n", environment.message().c_str());
    return 2;
  }
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> code(-128, 255), weight(-127, 127);
  for (int64_t filters = 1; filters <= 9; ++filters) {
    for (int64_t pairs = 1; pairs <= 40; pairs += 3) {
      for (int64_t steps = 1; steps <= 4; ++steps) {
        const int64_t columns = steps * mxlite::kInt16PairColumnStep;
        std::vector<int16_t> w(static_cast<size_t>(filters * 2 * pairs));
        std::vector<int16_t> x(static_cast<size_t>(2 * pairs * columns));
        for (auto& v : w) v = static_cast<int16_t>(weight(rng));
        for (auto& v : x) v = static_cast<int16_t>(code(rng));
        Check(w, x, filters, pairs, columns);
      }
    }
  }
  // 80000 products of 255 * 127 (and of -128 * -127) pass INT32_MAX: the
  // sums wrap.
  const int64_t pairs = 40000, columns = mxlite::kInt16PairColumnStep;
  std::vector<int16_t> w(static_cast<size_t>(2 * 2 * pairs));
  std::vector<int16_t> x(static_cast<size_t>(2 * pairs * columns));
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<int16_t>(i < w.size() / 2 ? 127 : -127);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<int16_t>(i % 2 ? 255 : -128);
  Check(w, x, 2, pairs, columns);
  std::printf("%d checks, %d failures\n", checks, failures);
  return failures == 0 ? 0 : 1;
}
