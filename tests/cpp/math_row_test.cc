/*
 * math_row_test: MathRow (predict/operators/math_row.h) against its
 * definitions, MXNet's float expressions over the C library, in units in
 * the last place (ulps, counted on the ordered float line, so +0 and -0 are
 * one apart; any NaN equals any NaN and nothing else).
 *
 * Inputs: every 251st float bit pattern (17 million values with both signs,
 * subnormals, +-inf and NaNs), a fine sweep across each function's branch
 * points, and runs of 0-40 elements (every vector tail), 1000 and 4099, in
 * place and into another array. Bounds: 2 ulps for exp; 3 for expm1,
 * tanh, erf and elu; 4 for sigmoid, whose 1 + exp(-x) rounds an exp one ulp
 * away to a sum up to two ulps away where exp(-x) is near 2^24; gelu within
 * 2 ulps plus |x| 2^-22, what the definition's own rounding of
 * 1 + erf(x / sqrt 2) can move it (its largest error in ulps, printed, is
 * large where that cancels, x < 0). The vector path is whichever MXLITE_ISA
 * allows; the scalar path is the definition itself. Prints the largest
 * error seen per function. Softmax's row passes are checked too (see
 * CheckSoftmaxPasses).
 */
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#include "../../predict/c_api/environment.h"
#include "../../predict/operators/math_row.h"

namespace {

using mxlite::RowMath;

constexpr float kAlpha = 1.6732632f;  // SELU's alpha, as the elu under selu uses it

float Definition(RowMath function, float x) {
  const float sqrt_half = mxlite::math_row_constants::kSqrtHalf;
  switch (function) {
    case RowMath::kExp:
      return std::exp(x);
    case RowMath::kExpm1:
      return std::expm1(x);
    case RowMath::kSigmoid:
      return 1.f / (1.f + std::exp(-x));
    case RowMath::kTanh:
      return std::tanh(x);
    case RowMath::kErf:
      return std::erf(x);
    case RowMath::kGelu:
      return 0.5f * x * (1.f + std::erf(x * sqrt_half));
    case RowMath::kElu:
      return x > 0.f ? x : kAlpha * std::expm1(x);
  }
  return x;
}

const char* Name(RowMath function) {
  const char* names[] = {"exp", "expm1", "sigmoid", "tanh", "erf", "gelu", "elu"};
  return names[static_cast<int>(function)];
}

// Position on the ordered float line: adjacent floats differ by 1.
int64_t Ordinal(float x) {
  int32_t bits;
  std::memcpy(&bits, &x, sizeof(bits));
  return bits < 0 ? -static_cast<int64_t>(bits & 0x7fffffff) : bits;
}

// Distance in ulps; -1 where exactly one is NaN.
int64_t UlpDistance(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : -1;
  const int64_t d = Ordinal(a) - Ordinal(b);
  return d < 0 ? -d : d;
}

float Ulp(float x) {
  const float a = std::fabs(x);
  return std::nextafter(a, std::numeric_limits<float>::infinity()) - a;
}

struct Tally {
  int64_t checks = 0, failures = 0, worst_ulps = 0;
};

// Whether `got` for input x is within the function's bound; records the
// largest error in ulps.
bool Within(RowMath function, float x, float got, Tally* tally) {
  const float want = Definition(function, x);
  const int64_t ulps = UlpDistance(got, want);
  ++tally->checks;
  if (ulps < 0) return false;
  if (ulps > tally->worst_ulps) tally->worst_ulps = ulps;
  if (function == RowMath::kGelu) {
    const double error = std::fabs(static_cast<double>(got) - want);
    return error <= 2.0 * Ulp(want) + std::ldexp(std::fabs(static_cast<double>(x)), -22) ||
           ulps <= 2;
  }
  const int64_t bound = function == RowMath::kExp ? 2 : function == RowMath::kSigmoid ? 4 : 3;
  return ulps <= bound;
}

void Check(RowMath function, const std::vector<float>& x, bool in_place, Tally* tally) {
  std::vector<float> y = in_place ? x : std::vector<float>(x.size(), 7.f);
  mxlite::MathRow(function, in_place ? y.data() : x.data(), y.data(),
                  static_cast<int64_t>(x.size()), kAlpha);
  for (size_t i = 0; i < x.size(); ++i) {
    if (!Within(function, x[i], y[i], tally) && ++tally->failures <= 10) {
      std::printf("FAIL %s count %zu in place %d [%zu]: x %.9g got %.9g want %.9g\n",
                  Name(function), x.size(), in_place, i, x[i], y[i], Definition(function, x[i]));
    }
  }
}

// Softmax's row passes (RowMax, ExpShiftedRow, DivideRow) on rows of
// `count` values with -inf, +-0 and (for the maximum) NaN among them:
// the maximum equal to MXNet's loop's (NaN first stays, later NaNs are
// passed over), each exponential within 2 ulps of exp((x - m) / T), their
// sum within count * 2^-24 of the exact sum, the division bit for bit.
int64_t CheckSoftmaxPasses(int64_t count, uint32_t* state) {
  int64_t failures = 0;
  auto fail = [&](const char* what, int64_t i, double got, double want) {
    if (++failures <= 10) {
      std::printf("FAIL %s count %ld [%ld]: got %.9g want %.9g\n", what, static_cast<long>(count),
                  static_cast<long>(i), got, want);
    }
  };
  std::vector<float> x(static_cast<size_t>(count)), y(x.size());
  for (int variant = 0; variant < 4; ++variant) {
    for (float& v : x) {
      *state = *state * 1664525u + 1013904223u;
      const uint32_t pick = *state >> 8;
      v = pick % 16 == 0   ? -std::numeric_limits<float>::infinity()
          : pick % 16 == 1 ? (pick & 256 ? 0.f : -0.f)
                           : (static_cast<float>(pick % 40001) - 20000.f) / 500.f;
    }
    if (variant >= 2) x[static_cast<size_t>(*state % count)] = std::nanf("");
    if (variant == 3) x[0] = std::nanf("");
    float want_max = x[0];
    for (float v : x) {
      if (want_max < v) want_max = v;
    }
    const float got_max = mxlite::RowMax(x.data(), count);
    if (!(got_max == want_max || (std::isnan(got_max) && std::isnan(want_max)))) {
      fail("RowMax", variant, got_max, want_max);
    }
    if (variant >= 2) continue;  // softmax's exponentials of finite rows
    for (float temperature : {1.f, 1.7f}) {
      const float sum = mxlite::ExpShiftedRow(x.data(), y.data(), count, want_max, temperature);
      double exact = 0;
      for (int64_t i = 0; i < count; ++i) {
        const float xi = x[static_cast<size_t>(i)];
        const float want = temperature == 1.f ? std::exp(xi - want_max)
                                              : std::exp((xi - want_max) / temperature);
        const int64_t ulps = UlpDistance(y[static_cast<size_t>(i)], want);
        if (ulps < 0 || ulps > 2) fail("ExpShiftedRow", i, y[static_cast<size_t>(i)], want);
        exact += y[static_cast<size_t>(i)];
      }
      if (std::fabs(sum - exact) > std::ldexp(exact, -24) * static_cast<double>(count)) {
        fail("ExpShiftedRow sum", count, sum, exact);
      }
      std::vector<float> quotient(x.size());
      mxlite::DivideRow(y.data(), quotient.data(), count, sum);
      for (int64_t i = 0; i < count; ++i) {
        const float want = y[static_cast<size_t>(i)] / sum;
        if (UlpDistance(quotient[static_cast<size_t>(i)], want) != 0) {
          fail("DivideRow", i, quotient[static_cast<size_t>(i)], want);
        }
      }
    }
  }
  return failures;
}

}  // namespace

int main() {
  // This driver is the API boundary: the environment (MXLITE_ISA caps the
  // kernels' instruction set) applies here.
  {
    const mxlite::Status environment = mxlite::ApplyProcessEnvironment();
    if (!environment.ok()) {
      std::fprintf(stderr, "%s\n", environment.message().c_str());
      return 2;
    }
  }
  std::vector<float> sweep;
  for (uint64_t bits = 0; bits <= 0xffffffffull; bits += 251) {
    const uint32_t b = static_cast<uint32_t>(bits);
    float x;
    std::memcpy(&x, &b, sizeof(x));
    sweep.push_back(x);
  }
  // Each side of the branch points (tanh 0.625, erf 0.875 and 4 at both
  // scales gelu uses, exp's and expm1's clamps, n = +-1 of the reduction),
  // 4096 floats apart from each, and the small magnitudes.
  const float points[] = {0.625f, 0.875f,  1.2374369f, 4.f,  5.656854f, 88.72f, 103.97f,
                          30.f,   0.34657f, 1.0397f,   17.3f, 9.01f,    1e-3f,  1.f};
  for (float point : points) {
    for (float sign : {1.f, -1.f}) {
      float x = sign * point;
      for (int k = 0; k < 4096; ++k) x = std::nextafter(x, 0.f);
      for (int k = 0; k < 8192; ++k, x = std::nextafter(x, sign * 1e30f)) sweep.push_back(x);
    }
  }
  const float specials[] = {0.f,
                            -0.f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            -std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::denorm_min(),
                            -std::numeric_limits<float>::denorm_min(),
                            std::numeric_limits<float>::max(),
                            -std::numeric_limits<float>::max()};
  int64_t failures = 0;
  for (int f = 0; f <= static_cast<int>(RowMath::kElu); ++f) {
    const RowMath function = static_cast<RowMath>(f);
    Tally tally;
    Check(function, sweep, false, &tally);
    uint32_t state = 12345;
    for (int64_t count : {0, 1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 23, 31, 32, 33, 40, 1000, 4099}) {
      std::vector<float> x(static_cast<size_t>(count));
      for (float& v : x) {
        state = state * 1664525u + 1013904223u;
        const uint32_t pick = state >> 8;
        v = pick % 4 == 0 ? specials[pick / 4 % 10]
                          : (static_cast<float>(pick % 40001) - 20000.f) / 1000.f;
      }
      for (bool in_place : {false, true}) Check(function, x, in_place, &tally);
    }
    std::printf("%s: %ld checks, largest error %ld ulps, %ld failures\n", Name(function),
                static_cast<long>(tally.checks), static_cast<long>(tally.worst_ulps),
                static_cast<long>(tally.failures));
    failures += tally.failures;
  }
  uint32_t state = 777;
  int64_t softmax_failures = 0;
  for (int64_t count : {1, 2, 7, 8, 9, 15, 16, 17, 31, 33, 128, 1000, 4099}) {
    softmax_failures += CheckSoftmaxPasses(count, &state);
  }
  std::printf("softmax row passes: %ld failures\n", static_cast<long>(softmax_failures));
  return failures + softmax_failures == 0 ? 0 : 1;
}
