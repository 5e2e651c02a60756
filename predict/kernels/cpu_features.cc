#include "cpu_features.h"

#include <string>

#include "../base/options.h"

#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__) || defined(_M_IX86)
#define MXLITE_X86 1
#if defined(_MSC_VER)
#include <intrin.h>
#else
#include <cpuid.h>
#endif  // defined(_MSC_VER)
#endif  // x86

namespace mxlite {

namespace cpu_features_cc {

#if defined(MXLITE_X86)
void Cpuid(unsigned leaf, unsigned subleaf, unsigned regs[4]) {
#if defined(_MSC_VER)
  int out[4];
  __cpuidex(out, static_cast<int>(leaf), static_cast<int>(subleaf));
  for (int i = 0; i < 4; ++i) regs[i] = static_cast<unsigned>(out[i]);
#else
  __cpuid_count(leaf, subleaf, regs[0], regs[1], regs[2], regs[3]);
#endif  // defined(_MSC_VER)
}

unsigned long long ReadXcr0() {
#if defined(_MSC_VER)
  return _xgetbv(0);
#else
  unsigned eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<unsigned long long>(edx) << 32) | eax;
#endif  // defined(_MSC_VER)
}
#endif  // MXLITE_X86

CpuFeatures Detect() {
  CpuFeatures features;
#if defined(MXLITE_X86)
  // Feature bits only, never family/model tables: new processors must get
  // the kernels their bits allow. (The vendor picks among variants of equal
  // results, never whether a kernel runs.)
  unsigned regs[4];
  Cpuid(0x80000000u, 0, regs);
  if (regs[0] >= 0x80000001u) {
    Cpuid(0x80000001u, 0, regs);
    features.prefetchw = (regs[2] >> 8) & 1;
  }
  Cpuid(0, 0, regs);
  unsigned max_leaf = regs[0];
  // The vendor string is EBX, EDX, ECX: "GenuineIntel", "AuthenticAMD".
  if (regs[1] == 0x756e6547u && regs[3] == 0x49656e69u && regs[2] == 0x6c65746eu) {
    features.vendor = CpuVendor::kIntel;
  } else if (regs[1] == 0x68747541u && regs[3] == 0x69746e65u && regs[2] == 0x444d4163u) {
    features.vendor = CpuVendor::kAmd;
  }
  Cpuid(1, 0, regs);
  bool osxsave = (regs[2] >> 27) & 1;
  bool fma = (regs[2] >> 12) & 1;
  bool avx = (regs[2] >> 28) & 1;
  if (!osxsave || !avx || max_leaf < 7) return features;
  unsigned long long xcr0 = ReadXcr0();
  bool ymm_state = (xcr0 & 0x6) == 0x6;     // SSE + AVX state saved by the OS
  bool zmm_state = (xcr0 & 0xe6) == 0xe6;   // plus opmask and ZMM state
  Cpuid(7, 0, regs);
  bool avx2 = (regs[1] >> 5) & 1;
  bool avx512f = (regs[1] >> 16) & 1;
  features.avx2_fma = ymm_state && avx2 && fma;
  features.avx512f = features.avx2_fma && zmm_state && avx512f;
#elif defined(__ARM_NEON) || defined(__aarch64__)
  features.neon = true;
#endif  // defined(MXLITE_X86)
  return features;
}

}  // namespace cpu_features_cc

const CpuFeatures& GetCpuFeatures() {
  static const CpuFeatures features = cpu_features_cc::Detect();
  return features;
}

const std::string& CpuModelName() {
  static const std::string name = [] {
    std::string brand;
#if defined(MXLITE_X86)
    unsigned regs[4];
    cpu_features_cc::Cpuid(0x80000000u, 0, regs);
    if (regs[0] >= 0x80000004u) {
      for (unsigned leaf = 0x80000002u; leaf <= 0x80000004u; ++leaf) {
        cpu_features_cc::Cpuid(leaf, 0, regs);
        for (unsigned reg : regs) {
          for (int byte = 0; byte < 4; ++byte) brand += static_cast<char>((reg >> (8 * byte)) & 0xff);
        }
      }
    }
    brand = brand.substr(0, brand.find('\0'));
#endif  // defined(MXLITE_X86)
    // Trimmed, printable, one line (it goes into a text file).
    std::string clean;
    for (char c : brand) {
      if (c >= 0x20 && c < 0x7f && !(c == ' ' && (clean.empty() || clean.back() == ' '))) clean += c;
    }
    while (!clean.empty() && clean.back() == ' ') clean.pop_back();
    if (!clean.empty()) return clean;
#if defined(__aarch64__)
    return std::string("aarch64");
#elif defined(__arm__)
    return std::string("arm");
#elif defined(__wasm__)
    return std::string("wasm");
#else
    return std::string("unknown processor");
#endif
  }();
  return name;
}

Isa SelectedIsa() {
  static const Isa isa = [] {
    const CpuFeatures& features = GetCpuFeatures();
    Isa best = features.avx512f ? Isa::kAvx512
               : features.avx2_fma ? Isa::kAvx2
               : features.neon ? Isa::kNeon
                               : Isa::kGeneric;
    const std::string& cap = GetProcessOptions().isa;
    if (cap == "scalar" || cap == "generic") return Isa::kGeneric;
    if (cap == "avx2" && best == Isa::kAvx512) return Isa::kAvx2;
    return best;
  }();
  return isa;
}

const char* IsaName(Isa isa) {
  switch (isa) {
    case Isa::kGeneric: return "generic";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
    case Isa::kNeon: return "neon";
  }
  return "?";
}

}  // namespace mxlite
