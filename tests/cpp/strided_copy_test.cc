/*
 * strided_copy_test: CopyStrided against the plain loop for strides 1-3 and
 * every count 0..100, reading from the end of a buffer (so a load past the
 * last needed element would leave it) and checking that nothing past
 * dst[count) is written. The vector path is whichever MXLITE_ISA allows.
 */
#include <cstdio>
#include <vector>

#include "../../predict/kernels/strided_copy.h"

int main() {
  using namespace mxlite;
  int checks = 0, failures = 0;
  for (int64_t stride = 1; stride <= 3; ++stride) {
    for (int64_t count = 0; count <= 100; ++count) {
      // Exactly the floats the copy may read, on the heap, so that a read
      // past the end shows under the sanitizers.
      const int64_t needed = count == 0 ? 0 : (count - 1) * stride + 1;
      std::vector<float> src(static_cast<size_t>(needed));
      for (int64_t i = 0; i < needed; ++i) src[i] = static_cast<float>(i) * 0.5f + 1.f;
      std::vector<float> dst(static_cast<size_t>(count + 20), -7.f);
      CopyStrided(src.data(), stride, count, dst.data());
      ++checks;
      bool ok = true;
      for (int64_t i = 0; i < count; ++i) ok = ok && dst[i] == src[i * stride];
      for (int64_t i = count; i < count + 20; ++i) ok = ok && dst[i] == -7.f;
      if (!ok) {
        ++failures;
        std::printf("FAIL stride=%lld count=%lld\n", (long long)stride, (long long)count);
      }
    }
  }
  std::printf("%d checks, %d failures\n", checks, failures);
  return failures == 0 ? 0 : 1;
}
