/*
 * The pooling algorithm table (see pool_algorithms.h): for each algorithm,
 * what it covers (applies) and where it is the one to take (pays), in
 * priority order, and the scalar reference loops, the last entry. The
 * x86-64 kernels live in pool_avx512.cc and pool_avx2.cc.
 */
#include <algorithm>
#include <cfloat>
#include <cmath>

#include "pool_x86.h"

namespace mxlite {

bool PoolGeometry::WholePlanes() const {
  for (int d = 0; d < 3; ++d) {
    if (out[d] != 1 || pad[d] != 0 || kernel[d] != in[d]) return false;
  }
  return InPlane() >= 1;
}

bool PoolGeometry::WindowsNonempty() const {
  for (int d = 0; d < 3; ++d) {
    for (int64_t o = 0; o < out[d]; ++o) {
      const PoolSpan span = PoolWindowSpan(o, in[d], kernel[d], stride[d], pad[d]);
      if (span.end <= span.begin) return false;
    }
  }
  return true;
}

int64_t PoolGeometry::PaddedPlanePixels() const {
  return PoolPaddedExtent(in[1], out[1], kernel[1], stride[1], pad[1]) *
         PoolPaddedExtent(in[2], out[2], kernel[2], stride[2], pad[2]);
}

float PoolGeometry::UniformDivisor() const {
  if (type != PoolType::kAvg || out[1] < 1 || out[2] < 1) return 0.f;
  // Per axis, the one extent every window has, else 0.
  float extents[2];
  for (int d = 1; d < 3; ++d) {
    float& extent = extents[d - 1];
    for (int64_t o = 0; o < out[d]; ++o) {
      const PoolSpan span = PoolWindowSpan(o, in[d], kernel[d], stride[d], pad[d]);
      const float e =
          static_cast<float>(count_include_pad ? span.padded_extent : span.end - span.begin);
      if (o == 0) extent = e;
      if (e != extent) return 0.f;
    }
  }
  return extents[0] * extents[1];
}

std::string PoolGeometry::ToString() const {
  static const char* const kTypes[] = {"max", "avg", "sum", "lp"};
  const auto triple = [](const int64_t v[3]) {
    return StrCat(v[0], "x", v[1], "x", v[2]);
  };
  std::string kind = kTypes[static_cast<int>(type)];
  if (type == PoolType::kLp) kind += StrCat(" p=", p);
  if (type == PoolType::kAvg && !count_include_pad) kind += " excluding pad";
  return StrCat(planes, " planes, ", kind, ", input ", triple(in), ", output ", triple(out),
                ", kernel ", triple(kernel), ", stride ", triple(stride), ", pad ", triple(pad));
}

namespace pool_algorithms_cc {

// --- the scalar reference ----------------------------------------------------

// MXNet's loops over every geometry and kind.
class ReferenceKernel : public PoolKernel {
 public:
  explicit ReferenceKernel(const PoolGeometry& g) : g_(g) {
    // Window bounds per output index, per axis, shared by every plane.
    for (int d = 0; d < 3; ++d) {
      for (int64_t o = 0; o < g.out[d]; ++o) {
        spans_[d].push_back(PoolWindowSpan(o, g.in[d], g.kernel[d], g.stride[d], g.pad[d]));
      }
    }
  }

  void Forward(const float* x, float* y, ThreadPool* pool) const override {
    const PoolGeometry& g = g_;
    const int64_t in_plane = g.InPlane(), out_plane = g.OutPlane();
    // Planes are independent: split them over the threads.
    ParallelFor(pool, g.planes, [&](int64_t plane) {
      const float* src = x + plane * in_plane;
      float* dst = y + plane * out_plane;
      for (int64_t od = 0; od < g.out[0]; ++od) {
        for (int64_t oh = 0; oh < g.out[1]; ++oh) {
          for (int64_t ow = 0; ow < g.out[2]; ++ow) {
            *dst++ = Window(src, spans_[0][od], spans_[1][oh], spans_[2][ow]);
          }
        }
      }
    });
  }

 private:
  float Window(const float* src, const PoolSpan& sd, const PoolSpan& sh,
               const PoolSpan& sw) const {
    const PoolGeometry& g = g_;
    if (g.type == PoolType::kMax) {
      float best = -FLT_MAX;
      for (int64_t d = sd.begin; d < sd.end; ++d) {
        for (int64_t h = sh.begin; h < sh.end; ++h) {
          const float* row = src + (d * g.in[1] + h) * g.in[2];
          for (int64_t w = sw.begin; w < sw.end; ++w) {
            if (row[w] > best) best = row[w];
          }
        }
      }
      return best;
    }
    int64_t pool_size = 1;
    if (g.type == PoolType::kAvg) {
      pool_size = g.count_include_pad
                      ? sd.padded_extent * sh.padded_extent * sw.padded_extent
                      : (sd.end - sd.begin) * (sh.end - sh.begin) * (sw.end - sw.begin);
    }
    if (pool_size == 0 && g.nan_on_empty) return std::nanf("");
    const float divisor = static_cast<float>(pool_size);
    const int p = g.type == PoolType::kLp ? g.p : 1;
    float sum = 0.f;
    for (int64_t d = sd.begin; d < sd.end; ++d) {
      for (int64_t h = sh.begin; h < sh.end; ++h) {
        const float* row = src + (d * g.in[1] + h) * g.in[2];
        for (int64_t w = sw.begin; w < sw.end; ++w) {
          const float v = row[w];
          const float term = p == 1 ? v : p == 2 ? v * v : v * v * v;
          sum += term / divisor;
        }
      }
    }
    if (p == 2) return std::sqrt(sum);
    if (p == 3) return std::cbrt(sum);
    return sum;
  }

  const PoolGeometry g_;
  std::vector<PoolSpan> spans_[3];
};

Status PrepareReference(const PoolGeometry& g, std::unique_ptr<PoolKernel>* kernel) {
  kernel->reset(new ReferenceKernel(g));
  return Status();
}

bool Always(const PoolGeometry&) { return true; }

#if defined(MXLITE_X86_64)

// --- coverage ----------------------------------------------------------------

bool Avx512() { return PoolKernels().avx512; }
bool Avx2() { return PoolKernels().avx2; }

// Max or average over whole unpadded planes, any rank.
bool WholePlanesCovered(const PoolGeometry& g) { return g.MaxOrAvg() && g.WholePlanes(); }

// What every plane kernel needs: a planar max or average with strides of 1
// or 2; an average's windows all hold an input element (an empty one would
// divide the padding's zeros by a divisor of 0 where the reference adds no
// term).
bool PlaneCovered(const PoolGeometry& g) {
  return g.Planar() && g.MaxOrAvg() && (g.stride[1] == 1 || g.stride[1] == 2) &&
         (g.stride[2] == 1 || g.stride[2] == 2) &&
         (g.type == PoolType::kMax || g.WindowsNonempty());
}

// The separable max kernels hold per-tap masks for at most
// kMaxPoolSeparableTaps columns.
bool RowsCovered(const PoolGeometry& g) {
  return PlaneCovered(g) &&
         (g.type == PoolType::kAvg || g.kernel[2] <= pool_x86::kMaxPoolSeparableTaps);
}

bool WholePlanesAvx512Applies(const PoolGeometry& g) {
  return Avx512() && WholePlanesCovered(g);
}
bool WholePlanesAvx2Applies(const PoolGeometry& g) {
  return Avx2() && WholePlanesCovered(g);
}
// Average with a uniform divisor: each input row is divided by it once.
bool AverageRowsAvx2Applies(const PoolGeometry& g) {
  return Avx2() && PlaneCovered(g) && g.type == PoolType::kAvg && g.UniformDivisor() > 0.f;
}
bool BlockedPlanesAvx512Applies(const PoolGeometry& g) {
  return Avx512() && PlaneCovered(g);
}
// Average only.
bool BlockedPlanesAvx2Applies(const PoolGeometry& g) {
  return Avx2() && PlaneCovered(g) && g.type == PoolType::kAvg;
}
bool RowsAvx512Applies(const PoolGeometry& g) { return Avx512() && RowsCovered(g); }
bool RowsAvx2Applies(const PoolGeometry& g) { return Avx2() && RowsCovered(g); }

// --- performance -------------------------------------------------------------

// An AVX2 kernel that has an AVX-512 counterpart pays under AVX2 only.
bool OnAvx2(const PoolGeometry&) { return PoolKernels().avx2_preferred; }

// Where a plane kernel beats the scalar loops at all: rows of at least four
// outputs, every window holding an input element, and a max's kernel
// narrow enough for the separable kernels.
bool PlanePays(const PoolGeometry& g) {
  return g.out[2] >= 4 && g.WindowsNonempty() &&
         (g.type == PoolType::kAvg || g.kernel[2] <= pool_x86::kMaxPoolSeparableTaps);
}

// The blocked kernels' scratch stays within L2.
bool BlockedFits(const PoolGeometry& g) {
  return g.PaddedPlanePixels() <= pool_x86::kPoolBlockMaxPixels;
}

// AVX2 averages with a uniform divisor go row by row, except on planes of
// at most 8 outputs a row, where the blocked path's transposes keep up.
bool AverageRowsAvx2Pays(const PoolGeometry& g) {
  return OnAvx2(g) && PlanePays(g) && (g.out[2] > 8 || !BlockedFits(g));
}

// Max pooling with rows of more than 8 outputs keeps the row path: a max
// pool reads each input about once, so the transposes cost about as much as
// the windows; average pools are faster blocked at every width. Since the
// row path keeps a ring of row maxima in L1 it also wins at 13 and 17
// outputs, and loses a little at 8 and 6 (BENCHMARKS.md, "Narrow max pools
// row by row").
constexpr int64_t kMaxPoolBlockedMaxOutputs = 8;
bool BlockedPlanesAvx512Pays(const PoolGeometry& g) {
  return PlanePays(g) && BlockedFits(g) &&
         (g.type == PoolType::kAvg || g.out[2] <= kMaxPoolBlockedMaxOutputs);
}

// With eight lanes the row path leaves fewer lanes idle, and max pooling
// keeps it at every width (the AVX2 blocked kernel is average only).
bool BlockedPlanesAvx2Pays(const PoolGeometry& g) {
  return OnAvx2(g) && PlanePays(g) && BlockedFits(g);
}

bool RowsAvx512Pays(const PoolGeometry& g) { return PlanePays(g); }
bool RowsAvx2Pays(const PoolGeometry& g) { return OnAvx2(g) && PlanePays(g); }

#endif  // defined(MXLITE_X86_64)

// In order of preference: the first whose instruction set is selected.
const PoolImplementation kPoolImplementations[] = {
#if defined(MXLITE_X86_64)
    {Isa::kAvx512, true, true, false},
    {Isa::kAvx2, false, true, true},
#endif  // defined(MXLITE_X86_64)
    {Isa::kGeneric, false, false, false},
};

}  // namespace pool_algorithms_cc

const PoolImplementation& PoolKernels() {
  static const PoolImplementation& chosen =
      ChooseImplementation(pool_algorithms_cc::kPoolImplementations);
  return chosen;
}

const std::vector<PoolAlgorithm>& PoolAlgorithmTable() {
  using namespace pool_algorithms_cc;
  static const std::vector<PoolAlgorithm> table = {
#if defined(MXLITE_X86_64)
      {"whole planes avx512", WholePlanesAvx512Applies, Always, pool_avx512::PrepareWholePlanes},
      {"whole planes avx2", WholePlanesAvx2Applies, OnAvx2, pool_avx2::PrepareWholePlanes},
      {"average rows avx2", AverageRowsAvx2Applies, AverageRowsAvx2Pays,
       pool_avx2::PrepareAverageRows},
      {"blocked planes avx512", BlockedPlanesAvx512Applies, BlockedPlanesAvx512Pays,
       pool_avx512::PrepareBlockedPlanes},
      {"blocked planes avx2", BlockedPlanesAvx2Applies, BlockedPlanesAvx2Pays,
       pool_avx2::PrepareBlockedPlanes},
      {"rows avx512", RowsAvx512Applies, RowsAvx512Pays, pool_avx512::PrepareRows},
      {"rows avx2", RowsAvx2Applies, RowsAvx2Pays, pool_avx2::PrepareRows},
#endif  // defined(MXLITE_X86_64)
      {"reference", Always, Always, PrepareReference},
  };
  return table;
}

const PoolAlgorithm* ChoosePoolAlgorithm(const PoolGeometry& g) {
  for (const PoolAlgorithm& algorithm : PoolAlgorithmTable()) {
    if (algorithm.applies(g) && algorithm.pays(g)) return &algorithm;
  }
  return nullptr;
}

const PoolAlgorithm* FindPoolAlgorithm(const std::string& name) {
  for (const PoolAlgorithm& algorithm : PoolAlgorithmTable()) {
    if (name == algorithm.name) return &algorithm;
  }
  return nullptr;
}

}  // namespace mxlite
