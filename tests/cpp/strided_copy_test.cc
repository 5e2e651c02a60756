/*
 * strided_copy_test: GatherRowsZeroPadded against its definition for
 * strides 1-4, row widths 0-40, column starts from before the row to past
 * its end, output counts 0-40 (several 16-lane blocks and every tail), 113
 * (a stem's line), 256 (the AVX2 path's longest) and 300 (past the vector
 * paths' limits), and row ranges that start above the
 * plane, step by 1 or 2 and end below it. The plane is exactly its size on
 * the heap, so a read outside it shows under the sanitizers; nothing past
 * the last row's end may be written. The vector path is whichever
 * MXLITE_ISA allows. On Linux each case runs again on copies of the plane
 * that start right after, and end right before, an inaccessible page: the
 * sanitizers do not check the lanes of AVX2 masked loads (GCC 12), a
 * fault there does.
 */
#include <cstdio>
#include <cstring>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif  // defined(__linux__)

#include "../../predict/c_api/environment.h"
#include "../../predict/kernels/strided_copy.h"

// A page of floats between two inaccessible ones (null where unavailable).
float* GuardedPage(size_t page) {
#if defined(__linux__)
  void* pages = mmap(nullptr, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (pages == MAP_FAILED) return nullptr;
  char* bytes = static_cast<char*>(pages);
  if (mprotect(bytes, page, PROT_NONE) != 0 || mprotect(bytes + 2 * page, page, PROT_NONE) != 0) {
    return nullptr;
  }
  return reinterpret_cast<float*>(bytes + page);
#else
  (void)page;
  return nullptr;
#endif  // defined(__linux__)
}

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
  using namespace mxlite;
  int checks = 0, failures = 0;
#if defined(__linux__)
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
#else
  const size_t page = 4096;
#endif  // defined(__linux__)
  float* const guarded = GuardedPage(page);
  const size_t page_floats = page / sizeof(float);
  const int64_t height = 3;
  struct RowRange {
    int64_t first_row, row_step, rows;
  };
  const RowRange ranges[] = {{0, 1, 1}, {-1, 1, 5}, {-1, 2, 3}};
  for (int64_t stride = 1; stride <= 4; ++stride) {
    for (int64_t width = 0; width <= 40; ++width) {
      std::vector<float> plane(static_cast<size_t>(height * width));
      for (size_t i = 0; i < plane.size(); ++i) plane[i] = static_cast<float>(i) * 0.5f + 1.f;
      // The plane as given, and its copies against the guard pages.
      std::vector<const float*> copies = {plane.data()};
      if (guarded != nullptr && plane.size() <= page_floats && !plane.empty()) {
        float* at_end = guarded + (page_floats - plane.size());
        std::memcpy(guarded, plane.data(), plane.size() * sizeof(float));
        std::memcpy(at_end, plane.data(), plane.size() * sizeof(float));
        copies = {plane.data(), guarded, at_end};
      }
      for (int64_t first = -5; first <= width + 3; ++first) {
        for (int64_t count = 0; count <= 43; ++count) {
          const int64_t outputs = count == 41 ? 113 : count == 42 ? 256 : count == 43 ? 300 : count;
          for (const RowRange& range : ranges) {
            for (const float* source : copies) {
              const int64_t written = range.rows * outputs;
              std::vector<float> dst(static_cast<size_t>(written + 20), -7.f);
              GatherRowsZeroPadded(source, height, width, range.first_row, range.row_step,
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
  }
  std::printf("%d checks, %d failures\n", checks, failures);
  return failures == 0 ? 0 : 1;
}
