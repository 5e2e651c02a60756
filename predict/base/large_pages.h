/*
 * Memory for prepared weights, in transparent huge pages where the system
 * has them (Linux).
 *
 * A forward pass streams every layer's prepared weights (the packed GEMM
 * matrices, Winograd-transformed filters included): tens of MiB for a
 * ResNet, each byte read once or a few times a pass. In 4 KiB pages that
 * is a TLB miss every 4 KiB; in 2 MiB pages almost none. Measured on the
 * model-167 Xeon, one thread, with the storages below (BENCHMARKS.md,
 * "Where the time goes on the model-167 Xeon"): resnet18_v1 3.0% faster,
 * resnet50_v2 2.2%, densenet121 4.5%, inceptionv3 2.7%, vgg11 2.1%, the
 * MobileNets 1-4%, SqueezeNet unchanged.
 *
 * Most of these arrays are 0.25 to 4 MiB (a Winograd layer holds 16 or 36
 * matrices of about 1 MiB each), so giving each its own huge pages would
 * waste up to half of them. Instead arrays of kLargePageMinBytes or more are
 * carved from shared slabs of kLargePageSlabBytes (an array that fits no
 * free range and is larger than half a slab gets a slab of its own size),
 * each 2 MiB-aligned and advised MADV_HUGEPAGE before anything touches it,
 * first fit, neighbouring free ranges joined; a slab goes back to the
 * system when its last array is freed. Smaller arrays, and every array
 * where huge pages are off (ProcessOptions::huge_pages, MXLITE_HUGE_PAGES=0)
 * or the system is not Linux, are allocated as before (operator new,
 * calloc). The same slabs hold the large NDArray storages (a predictor's
 * arena of intermediate results, the parameters): in an earlier A/B
 * resnet50_v2 gained 2% with the weights alone in huge pages and 5% with
 * the arena too. The kernel may still back a slab with 4 KiB pages (THP
 * "never", or no free huge page); then nothing is lost but the slab's
 * rounding.
 */
#ifndef MXLITE_BASE_LARGE_PAGES_H_
#define MXLITE_BASE_LARGE_PAGES_H_

#include <cstddef>
#include <new>

namespace mxlite {

inline constexpr size_t kLargePageBytes = size_t{2} << 20;
inline constexpr size_t kLargePageMinBytes = size_t{256} << 10;
inline constexpr size_t kLargePageSlabBytes = size_t{32} << 20;

// `bytes` from a slab (page-aligned) where bytes >= kLargePageMinBytes and
// huge pages are on; null otherwise, or when no slab can be mapped: the
// caller then allocates as it would have. *zeroed (if given) says whether
// the bytes are zeros: never handed out since the slab was mapped.
void* AllocateFromSlab(size_t bytes, bool* zeroed = nullptr);
// Frees `bytes` at `pointer` if AllocateFromSlab returned it; false (and
// nothing done) when it lies in no slab.
bool FreeToSlab(void* pointer, size_t bytes);

// How many bytes the slabs hold now (for tests and reports).
size_t LargePageSlabBytes();

// A std::allocator that takes its memory from the slabs where it can.
template <class T>
struct LargePageAllocator {
  using value_type = T;
  LargePageAllocator() = default;
  template <class U>
  LargePageAllocator(const LargePageAllocator<U>&) {}
  T* allocate(size_t n) {
    // An impossible size goes to operator new, which fails on it.
    const size_t bytes = n > static_cast<size_t>(-1) / sizeof(T) ? static_cast<size_t>(-1)
                                                                  : n * sizeof(T);
    void* pointer = AllocateFromSlab(bytes);
    return static_cast<T*>(pointer ? pointer : ::operator new(bytes));
  }
  void deallocate(T* pointer, size_t n) {
    if (!FreeToSlab(pointer, n * sizeof(T))) ::operator delete(pointer);
  }
  template <class U>
  bool operator==(const LargePageAllocator<U>&) const {
    return true;
  }
  template <class U>
  bool operator!=(const LargePageAllocator<U>&) const {
    return false;
  }
};

}  // namespace mxlite

#endif  // MXLITE_BASE_LARGE_PAGES_H_
