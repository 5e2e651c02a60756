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
  static constexpr char kTypes[][4] = {"max", "avg", "sum", "lp"};
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

// Window bounds per output index, per axis, shared by every plane.
void WindowSpans(const PoolGeometry& g, std::vector<PoolSpan> (&spans)[3]) {
  for (int d = 0; d < 3; ++d) {
    for (int64_t o = 0; o < g.out[d]; ++o) {
      spans[d].push_back(PoolWindowSpan(o, g.in[d], g.kernel[d], g.stride[d], g.pad[d]));
    }
  }
}

// MXNet's loops over every geometry and kind.
class ReferenceKernel : public PoolKernel {
 public:
  explicit ReferenceKernel(const PoolGeometry& g) : g_(g) { WindowSpans(g, spans_); }

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

// --- separable max -----------------------------------------------------------

// Max pooling as one pass per axis: along the rows (w), then across rows (h),
// then across depth slices (d), each over the clipped spans. The maximum of
// a box is the maximum of its rows' maxima, and the running maximum from
// -FLT_MAX (v > best: NaN never wins, of equal values the first stays) picks
// the same element in either grouping: the first of the box's maxima in
// row-major order. The h and d passes are elementwise maxima of whole output
// rows, which the compiler vectorizes; the reference walks each 3-D window
// in full, one call per output. For the video models' 3-D pools, which no
// vector kernel takes.
class SeparableMaxKernel : public PoolKernel {
 public:
  explicit SeparableMaxKernel(const PoolGeometry& g) : g_(g) { WindowSpans(g, spans_); }

  void Forward(const float* x, float* y, ThreadPool* pool) const override {
    const PoolGeometry& g = g_;
    const int64_t in_d = g.in[0], in_h = g.in[1], in_w = g.in[2];
    const int64_t out_d = g.out[0], out_h = g.out[1], out_w = g.out[2];
    // An axis whose window is one element at stride 1 and no padding needs
    // no pass: its input already is the pass's result.
    const auto identity = [&g](int axis) {
      return g.kernel[axis] == 1 && g.stride[axis] == 1 && g.pad[axis] == 0;
    };
    const bool pass_w = !identity(2), pass_h = !identity(1);
    const PoolSpan* const w_spans = spans_[2].data();
    const bool unrolled = g.kernel[2] == 2 || g.kernel[2] == 3;
    ParallelFor(pool, g.planes, [&](int64_t plane) {
      thread_local std::vector<float> scratch;
      scratch.resize(static_cast<size_t>(in_d * (in_h + out_h) * out_w));
      const float* src = x + plane * g.InPlane();
      // in_d x in_h x out_w, then in_d x out_h x out_w.
      float* const w_done = scratch.data();
      float* const h_done = w_done + in_d * in_h * out_w;
      for (int64_t row = 0; pass_w && row < in_d * in_h; ++row) {
        const float* in_row = src + row * in_w;
        float* out_row = w_done + row * out_w;
        for (int64_t ow = 0; ow < out_w; ++ow) {
          const int64_t taps = w_spans[ow].end - w_spans[ow].begin;
          if (unrolled && taps == g.kernel[2]) {  // a whole 2- or 3-wide window
            const float* at = in_row + w_spans[ow].begin;
            float best = at[0] > -FLT_MAX ? at[0] : -FLT_MAX;
            best = at[1] > best ? at[1] : best;
            if (g.kernel[2] == 3) best = at[2] > best ? at[2] : best;
            out_row[ow] = best;
            continue;
          }
          float best = -FLT_MAX;
          for (int64_t w = w_spans[ow].begin; w < w_spans[ow].end; ++w) {
            best = in_row[w] > best ? in_row[w] : best;
          }
          out_row[ow] = best;
        }
      }
      const float* const across_w = pass_w ? w_done : src;
      const float* const across_h = pass_h ? h_done : across_w;
      // The out_w-wide rows span.begin .. span.end - 1 of `from`, `apart`
      // floats apart, folded into `to`.
      const auto fold_rows = [out_w](const float* from, const PoolSpan& span, int64_t apart,
                                     float* to) {
        std::fill(to, to + out_w, -FLT_MAX);
        for (int64_t r = span.begin; r < span.end; ++r) {
          const float* row = from + r * apart;
          for (int64_t ow = 0; ow < out_w; ++ow) to[ow] = row[ow] > to[ow] ? row[ow] : to[ow];
        }
      };
      for (int64_t d = 0; pass_h && d < in_d; ++d) {
        for (int64_t oh = 0; oh < out_h; ++oh) {
          fold_rows(across_w + d * in_h * out_w, spans_[1][oh], out_w,
                    h_done + (d * out_h + oh) * out_w);
        }
      }
      float* dst = y + plane * g.OutPlane();
      for (int64_t od = 0; od < out_d; ++od) {
        for (int64_t oh = 0; oh < out_h; ++oh) {
          // Depth slices of output row oh lie out_h * out_w apart.
          fold_rows(across_h + oh * out_w, spans_[0][od], out_h * out_w,
                    dst + (od * out_h + oh) * out_w);
        }
      }
    });
  }

 private:
  const PoolGeometry g_;
  std::vector<PoolSpan> spans_[3];
};

bool SeparableMaxApplies(const PoolGeometry& g) { return g.type == PoolType::kMax; }
// Windows with depth: 2-D ones have the vector kernels above it.
bool SeparableMaxPays(const PoolGeometry& g) { return g.kernel[0] > 1 || g.in[0] > 1; }

Status PrepareSeparableMax(const PoolGeometry& g, std::unique_ptr<PoolKernel>* kernel) {
  kernel->reset(new SeparableMaxKernel(g));
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
      {"separable max", SeparableMaxApplies, SeparableMaxPays, PrepareSeparableMax},
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
