/*
 * large_pages_test: the huge-page slabs of predict/base/large_pages.h.
 *
 *   large_pages_test          huge pages on (the default)
 *   MXLITE_HUGE_PAGES=0 ...   off: nothing may come from a slab
 *
 * With huge pages on (Linux): arrays of kLargePageMinBytes or more come from
 * slabs, page-aligned, inside a 2 MiB-aligned mapping advised for huge pages
 * ("hg" in its VmFlags, where the kernel has transparent huge pages);
 * smaller ones do not; a freed range is handed out again; freed neighbours
 * join, so a range as large as two of them fits where they were; an array
 * larger than any free range and half a slab gets a slab of its own size;
 * and the slabs go back to the
 * system when their last array is freed; ranges never handed out before
 * are reported as zeros, others not. Vectors with LargePageAllocator
 * keep their contents across growth. Prints "N failures".
 */
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "../../predict/base/large_pages.h"
#include "../../predict/base/options.h"
#include "../../predict/c_api/environment.h"

namespace {

int failures = 0;

void Check(bool ok, const char* what) {
  if (!ok) {
    std::printf("FAILED: %s\n", what);
    ++failures;
  }
}

// The VmFlags of the mapping that holds `address` (empty where unknown).
std::string VmFlagsOf(const void* address) {
  std::ifstream smaps("/proc/self/smaps");
  const uintptr_t at = reinterpret_cast<uintptr_t>(address);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    unsigned long long begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx ", &begin, &end) == 2 && line.find('-') < 17) {
      inside = at >= begin && at < end;
      continue;
    }
    if (inside && line.compare(0, 8, "VmFlags:") == 0) return line;
  }
  return "";
}

bool KernelHasHugePages() {
  std::ifstream enabled("/sys/kernel/mm/transparent_hugepage/enabled");
  return enabled.good();
}

}  // namespace

int main() {
  using namespace mxlite;
  const Status applied = ApplyProcessEnvironment();
  if (!applied.ok()) {
    std::printf("environment: %s\n", applied.message().c_str());
    return 1;
  }
  const bool on = GetProcessOptions().huge_pages;
#if defined(__linux__)
  const bool slabs = on;
#else
  const bool slabs = false;
#endif  // __linux__
  std::printf("huge pages %s, slabs %s\n", on ? "on" : "off", slabs ? "used" : "not used");

  Check(AllocateFromSlab(kLargePageMinBytes - 4096) == nullptr, "a small array from a slab");
  bool zeroed = true;
  void* first = AllocateFromSlab(kLargePageMinBytes, &zeroed);
  Check(zeroed == slabs, "a range fresh from the system is reported as zeros");
  Check((first != nullptr) == slabs, "a large array from a slab exactly when they are used");
  if (slabs && first != nullptr) {
    Check(reinterpret_cast<uintptr_t>(first) % 4096 == 0, "slab arrays are page-aligned");
    Check(LargePageSlabBytes() == kLargePageSlabBytes, "one slab of kLargePageSlabBytes");
    if (KernelHasHugePages()) {
      const std::string flags = VmFlagsOf(first);
      Check(flags.find(" hg") != std::string::npos, "the slab is advised MADV_HUGEPAGE");
    }
    // Three neighbours; freeing the first two leaves room for one of
    // twice the size where they were.
    void* second = AllocateFromSlab(kLargePageMinBytes);
    void* third = AllocateFromSlab(kLargePageMinBytes);
    Check(second == static_cast<char*>(first) + kLargePageMinBytes, "first fit, in order");
    Check(third == static_cast<char*>(second) + kLargePageMinBytes, "first fit, in order (2)");
    Check(FreeToSlab(second, kLargePageMinBytes), "freeing a slab array");
    Check(FreeToSlab(first, kLargePageMinBytes), "freeing a slab array (2)");
    void* joined = AllocateFromSlab(2 * kLargePageMinBytes, &zeroed);
    Check(joined == first, "freed neighbours join");
    Check(!zeroed, "a range handed out before is not reported as zeros");
    // Larger than any free range and half a slab: a slab of its own size in
    // whole huge pages.
    const size_t big = kLargePageSlabBytes + 1;
    void* alone = AllocateFromSlab(big);
    Check(alone != nullptr && reinterpret_cast<uintptr_t>(alone) % kLargePageBytes == 0,
          "a large array starts its own 2 MiB-aligned slab");
    Check(LargePageSlabBytes() ==
              kLargePageSlabBytes + (big + kLargePageBytes - 1) / kLargePageBytes * kLargePageBytes,
          "its slab is counted");
    char outside[16];
    Check(!FreeToSlab(outside, kLargePageMinBytes), "a pointer outside the slabs is not freed");
    Check(FreeToSlab(alone, big), "freeing the large array");
    Check(FreeToSlab(joined, 2 * kLargePageMinBytes), "freeing the joined array");
    Check(FreeToSlab(third, kLargePageMinBytes), "freeing the last array");
    Check(LargePageSlabBytes() == 0, "empty slabs go back to the system");
  } else if (first != nullptr) {
    Check(false, "slab memory where slabs are not used");
  }

  // A size no slab can hold is left to the caller's own allocation.
  Check(AllocateFromSlab(static_cast<size_t>(-1)) == nullptr, "an impossible size");
  Check(AllocateFromSlab(static_cast<size_t>(-1) - 4095) == nullptr, "an impossible size (2)");

  // A vector that grows across the threshold keeps its values.
  std::vector<float, LargePageAllocator<float>> values;
  for (int i = 0; i < 300000; ++i) values.push_back(static_cast<float>(i));
  bool kept = true;
  for (int i = 0; i < 300000; ++i) kept = kept && values[i] == static_cast<float>(i);
  Check(kept, "a growing vector keeps its values");
  Check((LargePageSlabBytes() > 0) == slabs, "the vector's memory is in a slab when they are used");
  values = std::vector<float, LargePageAllocator<float>>();
  Check(LargePageSlabBytes() == 0, "and is returned with it");

  std::printf("%d failures\n", failures);
  return failures == 0 ? 0 : 1;
}
