/*
 * strided_copy_test: GatherRowsZeroPadded against its definition for
 * strides 1-4, row widths 0-40, column starts from before the row to past
 * its end, output counts 0-40 (several 16-lane blocks and every tail), 113
 * (a stem's line), 256 (the AVX2 path's longest) and 300 (past the vector
 * paths' limits), and row ranges that start above the
 * plane, step by 1 or 2 and end below it. The plane is exactly its size on
 * the heap, so a read outside it shows under the sanitizers; nothing past
 * the last row's end may be written. The vector path is whichever
 * MXLITE_ISA allows.
 */
#include <cstdio>
#include <vector>

#include "../../predict/kernels/strided_copy.h"

int main() {
  using namespace mxlite;
  int checks = 0, failures = 0;
  const int64_t height = 3;
  struct RowRange {
    int64_t first_row, row_step, rows;
  };
  const RowRange ranges[] = {{0, 1, 1}, {-1, 1, 5}, {-1, 2, 3}};
  for (int64_t stride = 1; stride <= 4; ++stride) {
    for (int64_t width = 0; width <= 40; ++width) {
      std::vector<float> plane(static_cast<size_t>(height * width));
      for (size_t i = 0; i < plane.size(); ++i) plane[i] = static_cast<float>(i) * 0.5f + 1.f;
      for (int64_t first = -5; first <= width + 3; ++first) {
        for (int64_t count = 0; count <= 43; ++count) {
          const int64_t outputs = count == 41 ? 113 : count == 42 ? 256 : count == 43 ? 300 : count;
          for (const RowRange& range : ranges) {
            const int64_t written = range.rows * outputs;
            std::vector<float> dst(static_cast<size_t>(written + 20), -7.f);
            GatherRowsZeroPadded(plane.data(), height, width, range.first_row, range.row_step,
                                 range.rows, first, stride, outputs, dst.data());
            ++checks;
            bool ok = true;
            for (int64_t r = 0; r < range.rows; ++r) {
              const int64_t y = range.first_row + r * range.row_step;
              for (int64_t i = 0; i < outputs; ++i) {
                const int64_t x = first + i * stride;
                const bool inside = y >= 0 && y < height && x >= 0 && x < width;
                ok = ok && dst[r * outputs + i] == (inside ? plane[y * width + x] : 0.f);
              }
            }
            for (int64_t i = written; i < written + 20; ++i) ok = ok && dst[i] == -7.f;
            if (!ok) {
              ++failures;
              if (failures <= 10) {
                std::printf("FAIL stride=%lld width=%lld first=%lld count=%lld rows from %lld\n",
                            (long long)stride, (long long)width, (long long)first,
                            (long long)outputs, (long long)range.first_row);
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
