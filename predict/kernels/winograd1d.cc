#include "winograd1d.h"

#include "cpu_features.h"
#include "winograd.h"
#include "x86_simd.h"

#include <algorithm>
#include <limits>

namespace mxlite {
namespace winograd1d_cc {

constexpr int kLanes = 16;
constexpr int kPoints = 8;

// The finite interpolation points (the eighth is infinity) and the scale
// of each row of G: the inverse of the factor that made row k of B^T
// coprime integers (see winograd1d.h).
constexpr double kPointValues[kPoints - 1] = {0, 1, -1, 2, -2, 0.5, -0.5};
constexpr double kGScale[kPoints] = {1.0 / 4,   1.0 / 18,   1.0 / 18,   1.0 / 360,
                                     1.0 / 360, 16.0 / 45, 16.0 / 45, 1.0 / 4};

#if defined(MXLITE_X86_64)

constexpr int64_t kMinChannels = 32;
constexpr int64_t kMinFilters = 32;
// The 3x3 layers it takes before F(4x4) (see Winograd1dPays).
constexpr int64_t kMaxFilters3x3 = 32;
constexpr int64_t kMinSide3x3 = 28;
constexpr int64_t kMaxOutputsPerThread3x3 = 56 * 56 / 2;

// Reads 16 lanes of one position: one or two masked loads where the lanes
// are runs of neighbours in the plane, a gather otherwise; zeros outside.
MXLITE_TARGET_AVX512_INLINE __m512 LoadLanes(const float* plane, const Winograd1dAccess& a) {
  if (a.contiguous) {
    const __m512 first = _mm512_maskz_loadu_ps(a.runs[0], OffsetAddress(plane, a.base[0]));
    if (a.runs[1] == 0) return first;
    return _mm512_mask_loadu_ps(first, a.runs[1], OffsetAddress(plane, a.base[1]));
  }
  return _mm512_mask_i32gather_ps(_mm512_setzero_ps(), a.lanes, _mm512_loadu_si512(a.offsets),
                                  plane, 4);
}

MXLITE_TARGET_AVX512_INLINE void StoreLanes(float* plane, const Winograd1dAccess& a,
                                            __m512 value) {
  if (a.contiguous) {
    for (int run = 0; run < 2; ++run) {
      if (a.runs[run] == 0) continue;
      _mm512_mask_storeu_ps(const_cast<float*>(OffsetAddress(plane, a.base[run])), a.runs[run],
                            value);
    }
  } else {
    _mm512_mask_i32scatter_ps(plane, a.lanes, _mm512_loadu_si512(a.offsets), value, 4);
  }
}

// t = B^T d over the 8 points. Rows 1-2, 3-4 and 5-6 of B^T are the sum
// and the difference of two half-rows, which halves their work.
MXLITE_TARGET_AVX512_INLINE void InputTransform8(const __m512 d[8], __m512 t[8]) {
  const __m512 four = _mm512_set1_ps(4.f), five = _mm512_set1_ps(5.f);
  const __m512 seventeen = _mm512_set1_ps(17.f), twenty_one = _mm512_set1_ps(21.f);
  // t0 = 4 (d0 - d6) + 21 (d4 - d2); t7 = 4 (d7 - d1) + 21 (d3 - d5)
  t[0] = _mm512_fmadd_ps(twenty_one, _mm512_sub_ps(d[4], d[2]),
                         _mm512_mul_ps(four, _mm512_sub_ps(d[0], d[6])));
  t[7] = _mm512_fmadd_ps(twenty_one, _mm512_sub_ps(d[3], d[5]),
                         _mm512_mul_ps(four, _mm512_sub_ps(d[7], d[1])));
  // t1, t2 = a +- b: a = 17 d4 - 4 (d2 + d6), b = 17 d3 - 4 (d1 + d5)
  const __m512 a =
      _mm512_fmsub_ps(seventeen, d[4], _mm512_mul_ps(four, _mm512_add_ps(d[2], d[6])));
  const __m512 b =
      _mm512_fmsub_ps(seventeen, d[3], _mm512_mul_ps(four, _mm512_add_ps(d[1], d[5])));
  t[1] = _mm512_add_ps(a, b);
  t[2] = _mm512_sub_ps(a, b);
  // t3, t4 = c +- e: c = d2 - 5 d4 + 4 d6, e = 2 (d1 - 5 d3 + 4 d5)
  const __m512 c = _mm512_fmadd_ps(four, d[6], _mm512_fnmadd_ps(five, d[4], d[2]));
  const __m512 e_half = _mm512_fmadd_ps(four, d[5], _mm512_fnmadd_ps(five, d[3], d[1]));
  const __m512 e = _mm512_add_ps(e_half, e_half);
  t[3] = _mm512_add_ps(c, e);
  t[4] = _mm512_sub_ps(c, e);
  // t5, t6 = f +- h: f = 2 (4 d2 - 5 d4 + d6), h = 4 d1 - 5 d3 + d5
  const __m512 f_half = _mm512_fnmadd_ps(five, d[4], _mm512_fmadd_ps(four, d[2], d[6]));
  const __m512 f = _mm512_add_ps(f_half, f_half);
  const __m512 h = _mm512_fnmadd_ps(five, d[3], _mm512_fmadd_ps(four, d[1], d[5]));
  t[5] = _mm512_add_ps(f, h);
  t[6] = _mm512_sub_ps(f, h);
}

// V[xi][c][group's tiles] for one channel plane; access: the group's 8;
// lanes [0, live_tiles) are stored.
MXLITE_TARGET_AVX512 void TransformInput(const float* plane, const Winograd1dAccess* access,
                                         int64_t live_tiles, float* v, int64_t xi_stride) {
  const __mmask16 live = LanesBelowAvx512(live_tiles);
  __m512 d[kPoints];
  MXLITE_UNROLL for (int k = 0; k < kPoints; ++k) d[k] = LoadLanes(plane, access[k]);
  __m512 t[kPoints];
  InputTransform8(d, t);
  MXLITE_UNROLL for (int k = 0; k < kPoints; ++k) {
    _mm512_mask_storeu_ps(v + k * xi_stride, live, t[k]);
  }
}

// Output pixels of one filter for a group's tiles from M[xi][f][tiles]:
// y_i = (A^T m)_i for the group's `outputs` positions, then + bias,
// + residual, clamp. Row i of A^T is p^i over the points, so with
// s_j, d_j the sum and difference of the pair (+p_j, -p_j) (p = 1, 2, 1/2)
//     y_i = [i = 0] m0 + sum_j p_j^i (i even ? s_j : d_j) + [i = last] m7.
MXLITE_TARGET_AVX512 void TransformOutput(const float* m, int64_t xi_stride,
                                          int64_t live_tiles, const Winograd1dAccess* access,
                                          int outputs, float bias, const float* residual,
                                          bool clamp, float lower, float upper, float* out) {
  const __mmask16 live = LanesBelowAvx512(live_tiles);
  __m512 v[kPoints];
  MXLITE_UNROLL for (int k = 0; k < kPoints; ++k) {
    v[k] = _mm512_maskz_loadu_ps(live, m + k * xi_stride);
  }
  const __m512 sums[3] = {_mm512_add_ps(v[1], v[2]), _mm512_add_ps(v[3], v[4]),
                          _mm512_add_ps(v[5], v[6])};
  const __m512 differences[3] = {_mm512_sub_ps(v[1], v[2]), _mm512_sub_ps(v[3], v[4]),
                                 _mm512_sub_ps(v[5], v[6])};
  const __m512 bias_v = _mm512_set1_ps(bias);
  const __m512 lo = _mm512_set1_ps(lower), hi = _mm512_set1_ps(upper);
  float two_power = 1.f;  // 2^i
  for (int i = 0; i < outputs; ++i, two_power *= 2.f) {
    const __m512* pair = i % 2 == 0 ? sums : differences;
    __m512 y = _mm512_fmadd_ps(_mm512_set1_ps(two_power), pair[1], pair[0]);
    y = _mm512_fmadd_ps(_mm512_set1_ps(1.f / two_power), pair[2], y);
    if (i == 0) y = _mm512_add_ps(y, v[0]);
    if (i == outputs - 1) y = _mm512_add_ps(y, v[7]);
    y = _mm512_add_ps(y, bias_v);
    if (residual) y = _mm512_add_ps(y, LoadLanes(residual, access[i]));
    if (clamp) y = ClampAvx512(lo, hi, y);
    StoreLanes(out, access[i], y);
  }
}

#endif  // MXLITE_X86_64

}  // namespace winograd1d_cc

bool Winograd1dPays(int64_t kernel_h, int64_t kernel_w, int64_t stride_h, int64_t stride_w,
                    int64_t dilate_h, int64_t dilate_w, int64_t groups, int64_t channels,
                    int64_t filters, int64_t out_h, int64_t out_w, int threads) {
#if defined(MXLITE_X86_64)
  using namespace winograd1d_cc;
  if (!WinogradKernels().small_tiles || stride_h != 1 || stride_w != 1 || dilate_h != 1 ||
      dilate_w != 1 || groups != 1 || channels < kMinChannels || filters < kMinFilters) {
    return false;
  }
  if ((kernel_h == 1 && kernel_w == 7) || (kernel_h == 7 && kernel_w == 1) ||
      (kernel_h == 5 && kernel_w == 5)) {
    return true;
  }
  // 3x3 layers of few filters (DenseNet's 128 -> 32), off AMD. F(4x4)
  // does 2.25 multiplications an output against F(6, 3)'s 4, but with 32
  // filters its 36 GEMMs are short and the transforms weigh more, and on
  // two threads it splits each step (here, the depth: WinogradSplitsDepth)
  // where this kernel gives each thread its own tiles through all three
  // steps. Up to 56x56 / 2 outputs a thread, whose transformed input
  // (8 x 128 channels x ~320 tiles, 1.3 MB) stays in a 2 MB L2. Measured per
  // layer in densenet121 (profile=2), F(4x4) -> 1-D, us:
  //   model-207 Xeon, two threads: 56x56 718-732 -> 512-547, 28x28 184-223
  //   -> 142-154; one thread: 28x28 313-328 -> 262-284, 56x56 1030-1085
  //   -> 1007-1129 (a tie at best: left to F(4x4)); 14x14 stays on F(2x2).
  //   model-167 Xeon, two threads: 56x56 648-700 -> 478-515, 28x28 188-205
  //   -> 132-143; one thread: 28x28 272-287 -> 237-251, 56x56 868-915 ->
  //   943-1055.
  // Not measured on AMD, where F(4x4)'s depth split was tuned: kept there.
  return kernel_h == 3 && kernel_w == 3 && filters <= kMaxFilters3x3 &&
         out_h >= kMinSide3x3 && out_w >= kMinSide3x3 &&
         out_h * out_w <= kMaxOutputsPerThread3x3 * threads &&
         GetCpuFeatures().vendor != CpuVendor::kAmd;
#else
  (void)kernel_h, (void)kernel_w, (void)stride_h, (void)stride_w, (void)dilate_h,
      (void)dilate_w, (void)groups, (void)channels, (void)filters, (void)out_h, (void)out_w,
      (void)threads;
  return false;
#endif  // defined(MXLITE_X86_64)
}

namespace winograd1d_cc {

// Fills one access record from the 16 lanes' offsets (-1: outside).
Winograd1dAccess MakeAccess(const int64_t offsets[kLanes]) {
  Winograd1dAccess a{};
  int runs = 0;
  a.contiguous = true;
  for (int lane = 0; lane < kLanes; ++lane) {
    if (offsets[lane] < 0) continue;
    a.offsets[lane] = static_cast<int32_t>(offsets[lane]);
    a.lanes = static_cast<uint16_t>(a.lanes | (1u << lane));
    const int64_t base = offsets[lane] - lane;
    int run = 0;
    while (run < runs && a.base[run] != base) ++run;
    if (run == runs) {
      if (runs == 2) {
        a.contiguous = false;
        continue;
      }
      a.base[runs++] = static_cast<int32_t>(base);
    }
    a.runs[run] = static_cast<uint16_t>(a.runs[run] | (1u << lane));
  }
  return a;
}

// dst (cols x rows) = src (rows x cols) transposed.
void TransposePlane(const float* src, int64_t rows, int64_t cols, float* dst) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) dst[c * rows + r] = src[r * cols + c];
  }
}

}  // namespace winograd1d_cc

Status Winograd1dPlan::Prepare(const Winograd1dGeometry& g, const float* weights) {
  using namespace winograd1d_cc;
  const Winograd1dGeometry f = g.Frame();
  const int64_t taps = f.kernel_h, width = f.kernel_w, outputs = g.TileOutputs();
  MXL_CHECK(taps >= 2 && taps <= kPoints - 1 && width >= 1 && width <= kPoints - 1 &&
                (!g.Transposed() || width == 1),
            "one-dimensional Winograd takes kernels of 2 to 7 rows and at most 7 columns (or a "
            "1xk one), not ", g.kernel_h, "x", g.kernel_w);
  MXL_CHECK(g.InputTiles() + kLanes < (int64_t{1} << 31) && f.in_h * f.in_w < (int64_t{1} << 31) &&
                f.out_h * f.out_w < (int64_t{1} << 31),
            "plane too large for 32-bit offsets");
  geometry_ = g;
  // U[xi][f][kx * channels + c] = (G g[., kx])[xi] in double, rounded once:
  // row xi of G is kGScale[xi] * (1, p, p^2, ...) at point p, and picks the
  // last tap at infinity. In the frame, tap (ky, kx) of a 1xk layer's kernel
  // is its (kx, ky); both are weights[... + ky] as the column is one wide.
  const int64_t depth = width * g.channels;
  std::vector<float> u(static_cast<size_t>(kPoints * g.filters * depth));
  for (int64_t filter = 0; filter < g.filters; ++filter) {
    for (int64_t c = 0; c < g.channels; ++c) {
      const float* w = weights + (filter * g.channels + c) * taps * width;
      for (int64_t kx = 0; kx < width; ++kx) {
        for (int xi = 0; xi < kPoints; ++xi) {
          double value = 0;
          if (xi == kPoints - 1) {
            value = w[(taps - 1) * width + kx];
          } else {
            double power = 1;
            for (int64_t ky = 0; ky < taps; ++ky, power *= kPointValues[xi]) {
              value += power * w[ky * width + kx];
            }
          }
          u[(xi * g.filters + filter) * depth + kx * g.channels + c] =
              static_cast<float>(kGScale[xi] * value);
        }
      }
    }
  }
  packed_.resize(kPoints);
  for (int xi = 0; xi < kPoints; ++xi) {
    MXL_RETURN_IF_ERROR(packed_[xi].Pack(u.data() + xi * g.filters * depth, depth, g.filters,
                                         depth, false, nullptr, width > 1 ? g.channels : 0));
  }
  // Access records in the frame. Input tile t = (t / row, t % row) reads
  // rows ty*m - pad_h + k of column x - pad_w; output tile t writes rows
  // ty*m + i of column x, where x < out_w.
  const int64_t row = g.RowTiles();
  const int64_t input_groups = (g.InputTiles() + kLanes - 1) / kLanes;
  const int64_t output_groups = (g.OutputTiles() + kLanes - 1) / kLanes;
  input_access_.assign(static_cast<size_t>(input_groups * kPoints), Winograd1dAccess{});
  output_access_.assign(static_cast<size_t>(output_groups * outputs), Winograd1dAccess{});
  for (int64_t group = 0; group < input_groups; ++group) {
    for (int64_t k = 0; k < kPoints; ++k) {
      int64_t offsets[kLanes];
      for (int lane = 0; lane < kLanes; ++lane) {
        const int64_t tile = group * kLanes + lane;
        const int64_t y = tile / row * outputs + k - f.pad_h, x = tile % row - f.pad_w;
        const bool inside = tile < g.InputTiles() && y >= 0 && y < f.in_h && x >= 0 && x < f.in_w;
        offsets[lane] = inside ? y * f.in_w + x : -1;
      }
      input_access_[group * kPoints + k] = MakeAccess(offsets);
    }
  }
  for (int64_t group = 0; group < output_groups; ++group) {
    for (int64_t i = 0; i < outputs; ++i) {
      int64_t offsets[kLanes];
      for (int lane = 0; lane < kLanes; ++lane) {
        const int64_t tile = group * kLanes + lane;
        const int64_t y = tile / row * outputs + i, x = tile % row;
        const bool inside = tile < g.OutputTiles() && y < f.out_h && x < f.out_w;
        offsets[lane] = inside ? y * f.out_w + x : -1;
      }
      output_access_[group * outputs + i] = MakeAccess(offsets);
    }
  }
  return Status();
}

void Winograd1dPlan::Convolve(const float* input, const float* bias, const float* residual,
                              float lower, float upper, float* output, float* workspace,
                              ThreadPool* pool) const {
#if defined(MXLITE_X86_64)
  using winograd1d_cc::kLanes;
  using winograd1d_cc::kPoints;
  const Winograd1dGeometry& g = geometry_;
  const bool transposed = g.Transposed();
  const int64_t outputs = g.TileOutputs(), shift = g.Frame().kernel_w - 1;
  const int64_t input_tiles = g.InputTiles(), output_tiles = g.OutputTiles();
  const int64_t groups = (output_tiles + kLanes - 1) / kLanes;
  const int64_t in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
  const int64_t threads = pool ? pool->size() : 1;
  const int64_t chunks = std::min({groups, threads, Winograd1dGeometry::kMaxChunks});
  float* v = workspace;  // chunk by chunk: [8][channels][chunk's input tiles]
  float* m = v + kPoints * g.channels * (output_tiles + chunks * shift);
  float* input_t = m + kPoints * g.filters * output_tiles;  // 1xk: planes transposed
  float* output_t = input_t + g.channels * in_plane;        // 1xk: output planes transposed
  const bool clamp = ClampIsSet(lower, upper);
  if (transposed) {
    ParallelFor(pool, g.channels, [&](int64_t c) {
      winograd1d_cc::TransposePlane(input + c * in_plane, g.in_h, g.in_w,
                                    input_t + c * in_plane);
    });
  }
  const float* source = transposed ? input_t : input;
  float* target = transposed ? output_t : output;
  ParallelFor(pool, chunks, [&](int64_t chunk) {
    // Output tiles [t0, t0 + width), which read input tiles [t0, t0 +
    // width + shift); t0 is a multiple of 16, so input and output lane
    // groups line up.
    const int64_t first = groups * chunk / chunks, last = groups * (chunk + 1) / chunks;
    const int64_t t0 = first * kLanes, width = std::min(output_tiles, last * kLanes) - t0;
    const int64_t in_width = width + shift;
    float* vc = v + kPoints * g.channels * (t0 + chunk * shift);
    float* mc = m + kPoints * g.filters * t0;
    const int64_t in_groups = (in_width + kLanes - 1) / kLanes;
    for (int64_t c = 0; c < g.channels; ++c) {
      for (int64_t j = 0; j < in_groups; ++j) {
        winograd1d_cc::TransformInput(
            source + c * in_plane, input_access_.data() + (first + j) * kPoints,
            std::min(in_width, input_tiles - t0) - j * kLanes,
            vc + c * in_width + j * kLanes, g.channels * in_width);
      }
    }
    const float* segments[kPoints - 1];
    for (int xi = 0; xi < kPoints; ++xi) {
      const float* vx = vc + xi * g.channels * in_width;
      float* mx = mc + xi * g.filters * width;
      if (shift == 0) {
        GemmPacked(packed_[xi], vx, in_width, width, mx, width, GemmEpilogue(), nullptr);
      } else {
        for (int64_t kx = 0; kx <= shift; ++kx) segments[kx] = vx + kx;
        GemmSegmentedB(packed_[xi], segments, in_width, width, mx, width, GemmEpilogue(),
                       nullptr);
      }
    }
    for (int64_t f = 0; f < g.filters; ++f) {
      // Transposed: the bias only; the residual and the clamp come on the
      // way back.
      for (int64_t group = first; group < last; ++group) {
        winograd1d_cc::TransformOutput(
            mc + f * width + (group - first) * kLanes, g.filters * width,
            output_tiles - group * kLanes,
            output_access_.data() + group * outputs, static_cast<int>(outputs),
            bias ? bias[f] : 0.f,
            transposed || residual == nullptr ? nullptr : residual + f * out_plane,
            clamp && !transposed, lower, upper, target + f * out_plane);
      }
    }
  });
  if (transposed) {
    ParallelFor(pool, g.filters, [&](int64_t f) {
      float* out = output + f * out_plane;
      winograd1d_cc::TransposePlane(output_t + f * out_plane, g.out_w, g.out_h, out);
      GemmEpilogue finish;
      finish.residual = residual ? residual + f * out_plane : nullptr;
      finish.residual_stride = out_plane;
      finish.lower = lower;
      finish.upper = upper;
      if (finish.residual || clamp) ApplyGemmEpilogue(finish, 0, 0, 1, out_plane, out, out_plane);
    });
  }
#else
  // Winograd1dPays is false without AVX-512: never called.
  (void)input, (void)bias, (void)residual, (void)lower, (void)upper, (void)output,
      (void)workspace, (void)pool;
#endif  // defined(MXLITE_X86_64)
}

}  // namespace mxlite
