/*
 * What the processor can do, read once from CPUID (x86) or fixed by the
 * target (ARM, WebAssembly). Kernel families pick their variant from this,
 * once, through ChooseImplementation;
 * ProcessOptions::isa (MXLITE_ISA=scalar|avx2|avx512, applied by the front
 * ends) caps the choice so tests can force every path on one machine.
 */
#ifndef MXLITE_KERNELS_CPU_FEATURES_H_
#define MXLITE_KERNELS_CPU_FEATURES_H_

#include <cstddef>
#include <string>

namespace mxlite {

enum class Isa { kGeneric = 0, kAvx2 = 1, kAvx512 = 2, kNeon = 3 };

// Who designed the processor (x86 CPUID leaf 0). Never gates an instruction
// set; it selects among kernels for the same layer where the vendors' cores
// were measured to prefer different ones (gemm.cc, UseWideTiles; depthwise.cc,
// DepthwiseBlockedPays; winograd.cc, WorkspaceBudget).
enum class CpuVendor { kOther = 0, kIntel = 1, kAmd = 2 };

struct CpuFeatures {
  bool avx2_fma = false;  // AVX2 + FMA3, with OS support for the YMM state
  bool avx512f = false;   // AVX-512F, with OS support for the ZMM state
  bool neon = false;
  bool prefetchw = false;  // PREFETCHW (CPUID 0x80000001 ECX bit 8)
  CpuVendor vendor = CpuVendor::kOther;
};

// Features of this processor (computed once, thread-safe).
const CpuFeatures& GetCpuFeatures();
// The processor's model as it names itself (x86: the CPUID brand string,
// "Intel(R) Xeon(R) Processor @ 2.50GHz"), or the target's name where it has
// no such string: what results measured on one processor are filed under.
const std::string& CpuModelName();
// The widest ISA that kernels may use: the processor's, capped by ProcessOptions::isa
// (read at the first call).
Isa SelectedIsa();
const char* IsaName(Isa isa);

// A kernel family's implementation for this machine: the first entry of its
// table (entries with an `isa` field, in order of preference, the last one
// Isa::kGeneric) whose instruction set is SelectedIsa(), else the generic
// one. Each family calls it once, into a function-local static, and the
// family's callers ask that entry what the family has: this is the only
// place that turns the selected ISA into kernels.
template <class Implementation, size_t kEntries>
const Implementation& ChooseImplementation(const Implementation (&table)[kEntries]) {
  const Isa isa = SelectedIsa();
  for (const Implementation& entry : table) {
    if (entry.isa == isa || entry.isa == Isa::kGeneric) return entry;
  }
  return table[kEntries - 1];
}

}  // namespace mxlite

#endif  // MXLITE_KERNELS_CPU_FEATURES_H_
