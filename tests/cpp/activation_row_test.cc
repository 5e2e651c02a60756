/*
 * activation_row_test: ActivationRow (predict/operators/activation_row.h)
 * against its definition, MXNet's expressions, bit for bit (any NaN equals
 * any NaN): relu keeps NaN and gives +0 for -0 and every value <= 0; leaky
 * gives x for x > 0, else slope * x. Runs of 0-40 elements (every vector
 * tail), 1000 and 16390; inputs mixing normal values, +-0, +-inf, NaN and
 * subnormals; slopes 0.1, 0, -1.5 and 2; in place and into another array.
 * The vector path is whichever MXLITE_ISA allows.
 */
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#include "../../predict/c_api/environment.h"
#include "../../predict/operators/activation_row.h"

namespace {

float Definition(mxlite::RowActivation kind, float x, float slope) {
  if (kind == mxlite::RowActivation::kRelu) return std::isnan(x) || x > 0.f ? x : 0.f;
  return x > 0.f ? x : slope * x;
}

bool SameBits(float a, float b) {
  if (std::isnan(a) && std::isnan(b)) return true;
  uint32_t x, y;
  std::memcpy(&x, &a, sizeof(x));
  std::memcpy(&y, &b, sizeof(y));
  return x == y;
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
  using mxlite::RowActivation;
  const float specials[] = {0.f,
                            -0.f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            -std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::denorm_min(),
                            -std::numeric_limits<float>::denorm_min(),
                            1.f,
                            -1.f};
  std::vector<int64_t> counts;
  for (int64_t n = 0; n <= 40; ++n) counts.push_back(n);
  counts.push_back(1000);
  counts.push_back(16390);
  int checks = 0, failures = 0;
  uint32_t state = 12345;
  for (RowActivation kind : {RowActivation::kRelu, RowActivation::kLeaky}) {
    for (float slope : {0.1f, 0.f, -1.5f, 2.f}) {
      for (int64_t count : counts) {
        std::vector<float> x(static_cast<size_t>(count));
        for (int64_t i = 0; i < count; ++i) {
          state = state * 1664525u + 1013904223u;
          const uint32_t pick = state >> 8;
          x[static_cast<size_t>(i)] = pick % 3 == 0
                                          ? specials[pick / 3 % 10]
                                          : (static_cast<float>(pick % 20001) - 10000.f) / 1000.f;
        }
        for (bool in_place : {false, true}) {
          std::vector<float> y = in_place ? x : std::vector<float>(x.size(), 7.f);
          mxlite::ActivationRow(kind, in_place ? y.data() : x.data(), y.data(), count, slope);
          for (int64_t i = 0; i < count; ++i) {
            ++checks;
            const float want = Definition(kind, x[static_cast<size_t>(i)], slope);
            if (!SameBits(y[static_cast<size_t>(i)], want)) {
              if (++failures <= 10) {
                std::printf("FAIL %s slope %g count %ld in place %d [%ld]: x %g got %g want %g\n",
                            kind == RowActivation::kRelu ? "relu" : "leaky", slope,
                            static_cast<long>(count), in_place, static_cast<long>(i),
                            x[static_cast<size_t>(i)], y[static_cast<size_t>(i)], want);
              }
            }
          }
        }
      }
    }
  }
  std::printf("%d checks, %d failures\n", checks, failures);
  return failures == 0 ? 0 : 1;
}
