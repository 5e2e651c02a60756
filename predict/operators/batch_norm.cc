/*
 * BatchNorm at inference: every channel c (the dim `axis`, default 1,
 * negative counting from the end) is normalised with the moving statistics
 *
 *   y = (x - moving_mean[c]) * invstd[c] * gamma[c] + beta[c],
 *   invstd[c] = 1 / sqrt(moving_var[c] + eps),
 *
 * with gamma taken as 1 when fix_gamma is set, which is MXNet's default (the
 * stored gamma is then ignored). eps defaults to 1e-3. The expression and its
 * float rounding are those of MXNet's CPU kernel (batch_norm.cc): invstd is
 * computed from the float sum var + eps, and each element is evaluated as
 * ((x - mean) * invstd) * gamma + beta, so results match it bit for bit
 * where the compiler does not fuse the multiply-adds.
 *
 * Inputs: data, gamma, beta, moving_mean, moving_var; the last two are
 * auxiliary states (MXNet's FMutateInputs {3, 4}), all of shape (C,).
 * Outputs: output, mean, var; mean and var are visible only with
 * output_mean_var. At inference MXNet 1.9.1's CPU kernel returns the moving
 * mean in `mean` and the inverse standard deviation invstd (not a variance)
 * in `var`, and so does this one.
 */
#include <cmath>
#include <cstring>

#include <algorithm>
#include <cmath>
#include <limits>

#include "../kernels/cpu_features.h"
#include "../kernels/thread_pool.h"
#include "../kernels/x86_simd.h"
#include "batch_norm_row.h"
#include "operator.h"


namespace mxlite {
namespace batch_norm_op {

#if defined(MXLITE_X86_64)
// Sixteen elements, with the scalar code's operations in its order
// (separate multiplies and adds, no FMA), so the results are the same bit
// for bit, the clamp included (ClampAvx512 passes NaN through as the scalar
// std::max/std::min do).
MXLITE_TARGET_AVX512_INLINE __m512 NormalizeAvx512(__m512 x, __m512 mean, __m512 invstd,
                                                   bool has_gamma, __m512 gamma, __m512 beta,
                                                   bool clamps, __m512 lower, __m512 upper) {
  __m512 v = _mm512_mul_ps(_mm512_sub_ps(x, mean), invstd);
  if (has_gamma) v = _mm512_mul_ps(v, gamma);
  v = _mm512_add_ps(v, beta);
  return clamps ? ClampAvx512(lower, upper, v) : v;
}

// One plane: whole vectors with plain loads and stores (a masked load costs
// about twice as much), then one masked vector for the rest.
MXLITE_TARGET_AVX512 void PlaneAvx512(const float* src, float* dst, int64_t count,
                                          float mean, float invstd, bool has_gamma, float gamma,
                                          float beta, bool clamps, float lower, float upper) {
  const __m512 m = _mm512_set1_ps(mean), s = _mm512_set1_ps(invstd);
  const __m512 w = _mm512_set1_ps(gamma), b = _mm512_set1_ps(beta);
  const __m512 lo = _mm512_set1_ps(lower), hi = _mm512_set1_ps(upper);
  int64_t i = 0;
  for (; i + 16 <= count; i += 16) {
    _mm512_storeu_ps(dst + i, NormalizeAvx512(_mm512_loadu_ps(src + i), m, s, has_gamma, w, b,
                                              clamps, lo, hi));
  }
  if (i < count) {
    const __mmask16 mask = LanesBelowAvx512(count - i);
    _mm512_mask_storeu_ps(dst + i, mask,
                          NormalizeAvx512(_mm512_maskz_loadu_ps(mask, src + i), m, s, has_gamma,
                                          w, b, clamps, lo, hi));
  }
}

// The same in eight lanes for AVX2 machines: the operations of
// NormalizeAvx512 in its order (no FMA), the clamp as ClampAvx512 (max and
// min return their second operand, x, on NaN), so the same bits. GCC writes
// the AVX2 intrinsics as plain vector arithmetic and, compiling C++, fuses
// a multiply and the add after it into an FMA where it sees fit (it did in
// some of PlaneAvx2's loops and not in others, so an element's bits
// depended on its position in the run); the empty asm hides the product
// from it.
MXLITE_TARGET_AVX2_INLINE __m256 NormalizeAvx2(__m256 x, __m256 mean, __m256 invstd,
                                               bool has_gamma, __m256 gamma, __m256 beta,
                                               bool clamps, __m256 lower, __m256 upper) {
  __m256 v = _mm256_mul_ps(_mm256_sub_ps(x, mean), invstd);
  if (has_gamma) v = _mm256_mul_ps(v, gamma);
  asm("" : "+x"(v));
  v = _mm256_add_ps(v, beta);
  return clamps ? _mm256_min_ps(upper, _mm256_max_ps(lower, v)) : v;
}

// One plane, four vectors a step (independent, so the loads overlap), then
// single vectors, then the last 1-7 elements through masked loads and
// stores (the vector operations again, not a scalar tail the compiler might
// contract into FMAs in this FMA-enabled function).
MXLITE_TARGET_AVX2 void PlaneAvx2(const float* src, float* dst, int64_t count, float mean,
                                  float invstd, bool has_gamma, float gamma, float beta,
                                  bool clamps, float lower, float upper) {
  const __m256 m = _mm256_set1_ps(mean), s = _mm256_set1_ps(invstd);
  const __m256 w = _mm256_set1_ps(gamma), b = _mm256_set1_ps(beta);
  const __m256 lo = _mm256_set1_ps(lower), hi = _mm256_set1_ps(upper);
  int64_t i = 0;
  for (; i + 32 <= count; i += 32) {
    MXLITE_UNROLL for (int64_t k = 0; k < 32; k += 8) {
      _mm256_storeu_ps(dst + i + k, NormalizeAvx2(_mm256_loadu_ps(src + i + k), m, s, has_gamma,
                                                  w, b, clamps, lo, hi));
    }
  }
  for (; i + 8 <= count; i += 8) {
    _mm256_storeu_ps(dst + i, NormalizeAvx2(_mm256_loadu_ps(src + i), m, s, has_gamma, w, b,
                                            clamps, lo, hi));
  }
  if (i < count) {
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count - i)),
                                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    _mm256_maskstore_ps(dst + i, mask,
                        NormalizeAvx2(_mm256_maskload_ps(src + i, mask), m, s, has_gamma, w, b,
                                      clamps, lo, hi));
  }
}
#endif  // MXLITE_X86_64

// The portable path: the same expression, element by element.
void PlaneScalar(const float* src, float* dst, int64_t count, float mean, float invstd,
                 bool has_gamma, float gamma, float beta, bool clamps, float lower,
                 float upper) {
  if (has_gamma) {
    for (int64_t i = 0; i < count; ++i) dst[i] = ((src[i] - mean) * invstd) * gamma + beta;
  } else {
    for (int64_t i = 0; i < count; ++i) dst[i] = ((src[i] - mean) * invstd) + beta;
  }
  // A following relu/clip folded in by the graph optimizer.
  if (clamps) {
    for (int64_t i = 0; i < count; ++i) dst[i] = std::min(std::max(dst[i], lower), upper);
  }
}

class BatchNorm : public Operator {
 public:
  BatchNorm(double eps, bool fix_gamma, bool output_mean_var, int64_t axis, float lower,
            float upper)
      : eps_(eps),
        fix_gamma_(fix_gamma),
        output_mean_var_(output_mean_var),
        axis_(axis),
        lower_(lower),
        upper_(upper) {}

  std::vector<std::string> InputNames() const override {
    return {"data", "gamma", "beta", "moving_mean", "moving_var"};
  }
  std::vector<std::string> OutputNames() const override { return {"output", "mean", "var"}; }
  int NumVisibleOutputs() const override { return output_mean_var_ ? 3 : 1; }
  std::vector<int> MutatedInputs() const override { return {3, 4}; }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    const std::vector<std::string> names = InputNames();
    // The data and the output have one shape.
    Shape data = (*in)[0];
    MXL_CHECK(MergeShape(&data, (*out)[0]), "input 'data' has shape ", (*in)[0].ToString(),
              " but output 'output' has shape ", (*out)[0].ToString());
    if (!data.rank_known()) return Status();
    const int ndim = data.ndim();
    const int64_t axis = axis_ < 0 ? axis_ + ndim : axis_;
    MXL_CHECK(axis >= 0 && axis < ndim, "attribute axis=", axis_,
              " is out of range for input 'data' of shape ", data.ToString());
    // The channel count: from the data, else from any parameter that knows it.
    int64_t channels = data[static_cast<int>(axis)];
    for (int i = 1; i < 5 && channels < 0; ++i) {
      const Shape& param = (*in)[i];
      if (param.rank_known() && param.ndim() == 1 && param[0] >= 0) channels = param[0];
    }
    data[static_cast<int>(axis)] = channels;
    const Shape param_shape({channels});
    for (int i = 1; i < 5; ++i) {
      MXL_RETURN_IF_ERROR(AssignShape(in, i, param_shape, "input", names));
    }
    MXL_RETURN_IF_ERROR(AssignShape(in, 0, data, "input", names));
    MXL_RETURN_IF_ERROR(AssignShape(out, 0, data, "output", OutputNames()));
    MXL_RETURN_IF_ERROR(AssignShape(out, 1, param_shape, "output", OutputNames()));
    return AssignShape(out, 2, param_shape, "output", OutputNames());
  }

  Status Forward(const OpContext& ctx, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const Shape& shape = in[0].shape();
    const int ndim = shape.ndim();
    const int axis = static_cast<int>(axis_ < 0 ? axis_ + ndim : axis_);
    const int64_t channels = shape[axis];
    const int64_t outer = shape.ProdRange(0, axis);
    const int64_t inner = shape.ProdRange(axis + 1, ndim);
    const float* gamma = in[1].fdata();
    const float* beta = in[2].fdata();
    const float* mean = in[3].fdata();
    const float* var = in[4].fdata();
    invstd_.resize(static_cast<size_t>(channels));
    for (int64_t c = 0; c < channels; ++c) invstd_[c] = BatchNormInvStd(var[c], eps_);

    const float* x = in[0].fdata();
    float* y = out[0].fdata();
    const bool clamps = lower_ != -std::numeric_limits<float>::infinity() ||
                        upper_ != std::numeric_limits<float>::infinity();
    ParallelFor(ctx.pool, outer * channels, [&](int64_t plane) {
      const int64_t c = plane % channels;
      BatchNormRow(x + plane * inner, y + plane * inner, inner, mean[c], invstd_[c], !fix_gamma_,
                   gamma[c], beta[c], clamps, lower_, upper_);
    });
    return CopyStatistics(in, out, channels);
  }

 private:
  // The other outputs, as MXNet fills them: the mean used and invstd.
  Status CopyStatistics(const std::vector<NDArray>& in, const std::vector<NDArray>& out,
                        int64_t channels) const {
    const size_t param_bytes = static_cast<size_t>(channels) * sizeof(float);
    if (out.size() > 1 && !out[1].is_none() && out[1].data() != in[3].data()) {
      std::memcpy(out[1].data(), in[3].data(), param_bytes);
    }
    if (out.size() > 2 && !out[2].is_none()) {
      std::memcpy(out[2].data(), invstd_.data(), param_bytes);
    }
    return Status();
  }

  double eps_;
  bool fix_gamma_;
  bool output_mean_var_;
  int64_t axis_;
  float lower_, upper_;        // clamp of a fused activation (none: infinities)
  std::vector<float> invstd_;  // per-channel scratch of Forward
};

Status CreateBatchNorm(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  // MXNet declares the default as the float literal 1e-3f.
  double eps = attrs->Float("eps", static_cast<double>(1e-3f));
  bool fix_gamma = attrs->Bool("fix_gamma", true);
  bool output_mean_var = attrs->Bool("output_mean_var", false);
  int64_t axis = attrs->Int("axis", 1);
  attrs->IgnoreFloat("momentum");
  attrs->IgnoreBool("use_global_stats");  // inference always uses the moving statistics
  attrs->IgnoreBool("cudnn_off");
  attrs->Ignore("min_calib_range");  // only read by the quantized operator
  attrs->Ignore("max_calib_range");
  double lower = -HUGE_VAL, upper = HUGE_VAL;
  if (attrs->op_name() == "_FusedBatchNorm") {
    // Written by the graph optimizer (graph/fuse.cc), never by MXNet.
    lower = attrs->Float("clamp_min", -HUGE_VAL);
    upper = attrs->Float("clamp_max", HUGE_VAL);
  }
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new BatchNorm(eps, fix_gamma, output_mean_var, axis, static_cast<float>(lower),
                           static_cast<float>(upper)));
  return Status();
}

}  // namespace batch_norm_op

void BatchNormRow(const float* src, float* dst, int64_t count, float mean, float invstd,
                  bool has_gamma, float gamma, float beta, bool clamps, float lower,
                  float upper) {
#if defined(MXLITE_X86_64)
  static const Isa isa = SelectedIsa();
  if (isa == Isa::kAvx512) {
    batch_norm_op::PlaneAvx512(src, dst, count, mean, invstd, has_gamma, gamma, beta, clamps,
                               lower, upper);
    return;
  }
  if (isa == Isa::kAvx2) {
    batch_norm_op::PlaneAvx2(src, dst, count, mean, invstd, has_gamma, gamma, beta, clamps,
                             lower, upper);
    return;
  }
#endif  // defined(MXLITE_X86_64)
  batch_norm_op::PlaneScalar(src, dst, count, mean, invstd, has_gamma, gamma, beta, clamps,
                             lower, upper);
}

}  // namespace mxlite
