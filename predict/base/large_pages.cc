#include "large_pages.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <vector>

#include "config.h"
#include "mutex.h"
#include "options.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif  // __linux__

namespace mxlite {

namespace large_pages_cc {

#if defined(__linux__)

// Ranges inside slabs are whole pages, so that arrays freed and allocated
// again fit each other's gaps.
constexpr size_t kGrain = 4096;

size_t RoundUp(size_t bytes, size_t to) { return (bytes + to - 1) / to * to; }

// One 2 MiB-aligned anonymous mapping advised MADV_HUGEPAGE, and its free
// ranges (offset -> bytes), neighbours always joined.
struct Slab {
  char* base = nullptr;
  size_t bytes = 0;
  size_t used = 0;
  size_t ever_used = 0;  // bytes from the start ever handed out; zeros beyond
  std::map<size_t, size_t> free;

  // The offset of a free range of `bytes`, first fit, taken; or -1.
  int64_t Take(size_t want) {
    for (auto it = free.begin(); it != free.end(); ++it) {
      if (it->second < want) continue;
      const size_t offset = it->first, rest = it->second - want;
      free.erase(it);
      if (rest > 0) free[offset + want] = rest;
      used += want;
      return static_cast<int64_t>(offset);
    }
    return -1;
  }

  void Give(size_t offset, size_t given) {
    used -= given;
    auto next = free.lower_bound(offset);
    if (next != free.end() && offset + given == next->first) {
      given += next->second;
      next = free.erase(next);
    }
    if (next != free.begin()) {
      auto before = std::prev(next);
      if (before->first + before->second == offset) {
        before->second += given;
        return;
      }
    }
    free[offset] = given;
  }
};

// Maps `bytes` (a multiple of kLargePageBytes) at a 2 MiB boundary: maps one
// huge page more and unmaps what lies outside the aligned part.
char* MapAligned(size_t bytes) {
  const size_t mapped = bytes + kLargePageBytes;
  void* raw = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + kLargePageBytes - 1) / kLargePageBytes * kLargePageBytes;
  if (aligned > start) munmap(raw, aligned - start);
  const size_t after = start + mapped - (aligned + bytes);
  if (after > 0) munmap(reinterpret_cast<void*>(aligned + bytes), after);
#if defined(MADV_HUGEPAGE)
  // A hint: where transparent huge pages are off it fails, and the slab
  // keeps 4 KiB pages.
  madvise(reinterpret_cast<void*>(aligned), bytes, MADV_HUGEPAGE);
#endif  // MADV_HUGEPAGE
  return reinterpret_cast<char*>(aligned);
}

struct Slabs {
  Mutex mutex;
  std::vector<std::unique_ptr<Slab>> slabs;
  size_t bytes = 0;
};

Slabs& TheSlabs() {
  static Slabs* slabs = new Slabs();  // never destroyed: arrays may outlive statics
  return *slabs;
}

// The range at `offset` of `slab`, handed out; *zeroed says whether it was
// never handed out before.
char* HandOut(Slab* slab, size_t offset, size_t want, bool* zeroed) {
  *zeroed = offset >= slab->ever_used;
  slab->ever_used = std::max(slab->ever_used, offset + want);
  return slab->base + offset;
}

void* SlabAllocate(size_t bytes, bool* zeroed) {
  // No slab for a size whose rounding would overflow: the caller's own
  // allocation then fails on it.
  if (bytes > static_cast<size_t>(-1) / 4) return nullptr;
  const size_t want = RoundUp(bytes, kGrain);
  Slabs& all = TheSlabs();
  MutexLock lock(all.mutex);
  for (const std::unique_ptr<Slab>& slab : all.slabs) {
    const int64_t offset = slab->Take(want);
    if (offset >= 0) return HandOut(slab.get(), static_cast<size_t>(offset), want, zeroed);
  }
  std::unique_ptr<Slab> slab(new Slab());
  slab->bytes = RoundUp(want > kLargePageSlabBytes / 2 ? want : kLargePageSlabBytes,
                        kLargePageBytes);
  slab->base = MapAligned(slab->bytes);
  if (slab->base == nullptr) return nullptr;
  slab->free[0] = slab->bytes;
  const int64_t offset = slab->Take(want);
  char* pointer = HandOut(slab.get(), static_cast<size_t>(offset), want, zeroed);
  all.bytes += slab->bytes;
  all.slabs.push_back(std::move(slab));
  return pointer;
}

// False when `pointer` lies in no slab.
bool SlabFree(void* pointer, size_t bytes) {
  char* at = static_cast<char*>(pointer);
  Slabs& all = TheSlabs();
  MutexLock lock(all.mutex);
  for (size_t i = 0; i < all.slabs.size(); ++i) {
    Slab& slab = *all.slabs[i];
    if (at < slab.base || at >= slab.base + slab.bytes) continue;
    slab.Give(static_cast<size_t>(at - slab.base), RoundUp(bytes, kGrain));
    if (slab.used == 0) {
      munmap(slab.base, slab.bytes);
      all.bytes -= slab.bytes;
      all.slabs.erase(all.slabs.begin() + static_cast<std::ptrdiff_t>(i));
    }
    return true;
  }
  return false;
}

#endif  // __linux__

}  // namespace large_pages_cc

void* AllocateFromSlab(size_t bytes, bool* zeroed) {
  bool fresh = false;
  void* pointer = nullptr;
#if defined(__linux__)
  if (bytes >= kLargePageMinBytes && GetProcessOptions().huge_pages) {
    pointer = large_pages_cc::SlabAllocate(bytes, &fresh);
  }
#else
  (void)bytes;
#endif  // __linux__
  if (zeroed != nullptr) *zeroed = pointer != nullptr && fresh;
  return pointer;
}

bool FreeToSlab(void* pointer, size_t bytes) {
#if defined(__linux__)
  // Whether an array came from a slab is looked up, not re-derived from
  // the option, which may have changed since.
  if (pointer != nullptr && bytes >= kLargePageMinBytes) {
    return large_pages_cc::SlabFree(pointer, bytes);
  }
#endif  // __linux__
  (void)pointer, (void)bytes;
  return false;
}

size_t LargePageSlabBytes() {
#if defined(__linux__)
  large_pages_cc::Slabs& all = large_pages_cc::TheSlabs();
  MutexLock lock(all.mutex);
  return all.bytes;
#else
  return 0;
#endif  // __linux__
}

}  // namespace mxlite
