/*
 * Normalisations computed from the data itself: InstanceNorm, LayerNorm,
 * GroupNorm and L2Normalization.
 *
 * Each one splits the input into groups of values that share a mean and a
 * variance (or a norm). Viewed as (outer, extent, inner) with the
 * statistics taken over `extent * inner` or over `extent` alone, one helper
 * computes them; the operators only say how to split:
 *   - InstanceNorm (N, C, ...): per (n, c) over the spatial values; then
 *     gamma[c] * (x - mean) / sqrt(var + eps) + beta[c]. Hidden outputs:
 *     mean and var, shape (N, C).
 *   - LayerNorm: over `axis` (default -1) for every other position;
 *     gamma/beta of shape (extent,) along that axis; hidden outputs mean
 *     and std = sqrt(var + eps), the data shape with the axis set to 1
 *     (visible with output_mean_var).
 *   - GroupNorm (N, C, ...): C split into num_groups groups, statistics per
 *     (n, group) over its channels and spatial values; gamma/beta hold one
 *     value per group (MXNet 1.9.1's shape (num_groups,)); hidden mean and
 *     std of shape (N, num_groups).
 *   - L2Normalization: x / sqrt(sum x^2 + eps), the sum over everything but
 *     the batch axis (instance), over the channels at each position
 *     (channel), or over the spatial values of each channel (spatial). Its
 *     hidden output is the norm.
 * The variance is the population variance (divided by the count), and the
 * sums accumulate in double. Where each group's values are one contiguous
 * run (InstanceNorm, GroupNorm, LayerNorm over the last axis) the groups
 * are split over the thread pool, with the same arithmetic per group.
 */
#include <algorithm>
#include <cmath>

#include "../kernels/thread_pool.h"
#include "operator.h"
#include "tensor_util.h"

namespace mxlite {
namespace norm_op {

// Mean and population variance of x viewed as (outer, extent, inner): one
// pair per (outer, inner) position when `per_position`, else per outer
// index (over extent * inner values).
// Where each outer index is one contiguous run of values, the runs are
// split over `pool`.
void Moments(const float* x, int64_t outer, int64_t extent, int64_t inner, bool per_position,
             ThreadPool* pool, std::vector<double>* mean, std::vector<double>* var) {
  mean->assign(per_position ? outer * inner : outer, 0.0);
  var->assign(mean->size(), 0.0);
  const double count = static_cast<double>(per_position ? extent : extent * inner);
  if (!per_position || inner == 1) {  // one contiguous run of values per outer index
    const int64_t n = extent * inner;
    ParallelRanges(pool, outer, RowsPerElementwiseTask(n), [&](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o) {
        const float* block = x + o * n;
        double sum = 0.0, squares = 0.0;
        for (int64_t i = 0; i < n; ++i) sum += block[i];
        const double m = sum / count;
        for (int64_t i = 0; i < n; ++i) squares += (block[i] - m) * (block[i] - m);
        (*mean)[o] = m;
        (*var)[o] = squares / count;
      }
    });
    return;
  }
  for (int64_t o = 0; o < outer; ++o) {
    const float* block = x + o * extent * inner;
    double* m = mean->data() + o * inner;
    double* v = var->data() + o * inner;
    for (int64_t e = 0; e < extent; ++e) {
      for (int64_t i = 0; i < inner; ++i) m[i] += block[e * inner + i];
    }
    for (int64_t i = 0; i < inner; ++i) m[i] /= count;
    for (int64_t e = 0; e < extent; ++e) {
      for (int64_t i = 0; i < inner; ++i) {
        const double d = block[e * inner + i] - m[i];
        v[i] += d * d;
      }
    }
    for (int64_t i = 0; i < inner; ++i) v[i] /= count;
  }
}

// ---------------------------------------------------------------------------
// InstanceNorm, LayerNorm, GroupNorm: (x - mean) / sqrt(var + eps) * gamma + beta

enum NormKind { kInstance, kLayer, kGroup };

class AffineNorm : public Operator {
 public:
  AffineNorm(NormKind kind, int64_t axis, int64_t num_groups, float eps, bool output_mean_var)
      : kind_(kind), axis_(axis), num_groups_(num_groups), eps_(eps),
        output_mean_var_(output_mean_var) {}

  std::vector<std::string> InputNames() const override { return {"data", "gamma", "beta"}; }
  std::vector<std::string> OutputNames() const override {
    if (kind_ == kInstance) return {"output", "mean", "var"};
    return {"output", "mean", "std"};
  }
  int NumVisibleOutputs() const override { return output_mean_var_ ? 3 : 1; }

  bool ComputesImagesApart(const std::vector<Shape>& image_in) const override {
    return !image_in.empty() && (kind_ != kLayer || (axis_ < 0 ? axis_ + image_in[0].ndim() : axis_) != 0);
  }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    MXL_RETURN_IF_ERROR(SameShapeInference(*this, in, out));
    const Shape& data = (*in)[0];
    if (!data.is_complete()) return Status();
    Shape affine, moments;
    MXL_RETURN_IF_ERROR(Shapes(data, &affine, &moments));
    MXL_RETURN_IF_ERROR(AssignShape(in, 1, affine, "input", InputNames()));
    MXL_RETURN_IF_ERROR(AssignShape(in, 2, affine, "input", InputNames()));
    MXL_RETURN_IF_ERROR(AssignShape(out, 1, moments, "output", OutputNames()));
    return AssignShape(out, 2, moments, "output", OutputNames());
  }

  Status Forward(const OpContext& ctx, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const Shape& shape = in[0].shape();
    int64_t outer = 0, extent = 0, inner = 0, affine_extent = 0;
    bool per_position = false;
    Layout(shape, &outer, &extent, &inner, &per_position, &affine_extent);
    const float* x = in[0].fdata();
    const float* gamma = in[1].fdata();
    const float* beta = in[2].fdata();
    float* y = out[0].fdata();
    Moments(x, outer, extent, inner, per_position, ctx.pool, &mean_, &var_);
    float* mean_out = out[1].fdata();
    float* second_out = out[2].fdata();
    for (size_t g = 0; g < mean_.size(); ++g) {
      mean_out[g] = static_cast<float>(mean_[g]);
      const double stddev = std::sqrt(var_[g] + eps_);
      second_out[g] = static_cast<float>(kind_ == kInstance ? var_[g] : stddev);
      var_[g] = 1.0 / stddev;  // reused as the scale
    }
    if (!per_position) {
      // Instance and group: each outer index is one contiguous block with
      // one mean, one scale and one gamma/beta pair.
      const int64_t block = extent * inner;
      const int64_t rows_per_task = RowsPerElementwiseTask(block);
      ParallelRanges(ctx.pool, outer, rows_per_task, [&](int64_t begin, int64_t end) {
        for (int64_t o = begin; o < end; ++o) {
          const float mean = static_cast<float>(mean_[o]), scale = static_cast<float>(var_[o]);
          const float g = gamma[o % affine_extent], b = beta[o % affine_extent];
          const float* src = x + o * block;
          float* dst = y + o * block;
          for (int64_t i = 0; i < block; ++i) dst[i] = (src[i] - mean) * scale * g + b;
        }
      });
      return Status();
    }
    // Layer: statistics per (outer, inner) position, gamma/beta along the axis.
    if (inner == 1) {  // the normalised axis is the last: contiguous rows
      const int64_t rows_per_task = RowsPerElementwiseTask(extent);
      ParallelRanges(ctx.pool, outer, rows_per_task, [&](int64_t begin, int64_t end) {
        for (int64_t o = begin; o < end; ++o) {
          const float mean = static_cast<float>(mean_[o]), scale = static_cast<float>(var_[o]);
          const float* src = x + o * extent;
          float* dst = y + o * extent;
          for (int64_t e = 0; e < extent; ++e) {
            dst[e] = (src[e] - mean) * scale * gamma[e] + beta[e];
          }
        }
      });
      return Status();
    }
    for (int64_t o = 0; o < outer; ++o) {
      mean_f_.assign(mean_.begin() + o * inner, mean_.begin() + (o + 1) * inner);
      scale_f_.assign(var_.begin() + o * inner, var_.begin() + (o + 1) * inner);
      const float* means = mean_f_.data();
      const float* scales = scale_f_.data();
      for (int64_t e = 0; e < extent; ++e) {
        const float* src = x + (o * extent + e) * inner;
        float* dst = y + (o * extent + e) * inner;
        const float g = gamma[e], b = beta[e];
        for (int64_t i = 0; i < inner; ++i) dst[i] = (src[i] - means[i]) * scales[i] * g + b;
      }
    }
    return Status();
  }

  // How the data splits: statistics per outer index (over extent * inner)
  // or per (outer, inner) position (over extent).
  void Layout(const Shape& shape, int64_t* outer, int64_t* extent, int64_t* inner,
              bool* per_position, int64_t* affine_extent) const {
    if (kind_ == kLayer) {
      const int axis = static_cast<int>(axis_ < 0 ? axis_ + shape.ndim() : axis_);
      *outer = shape.ProdRange(0, axis);
      *extent = shape[axis];
      *inner = shape.ProdRange(axis + 1, shape.ndim());
      *per_position = true;
      *affine_extent = shape[axis];
    } else if (kind_ == kInstance) {
      *outer = shape[0] * shape[1];
      *extent = 1;
      *inner = shape.ProdRange(2, shape.ndim());
      *per_position = false;
      *affine_extent = shape[1];
    } else {
      *outer = shape[0] * num_groups_;
      *extent = 1;
      *inner = shape.ProdRange(1, shape.ndim()) / num_groups_;
      *per_position = false;
      *affine_extent = num_groups_;
    }
  }

  Status Shapes(const Shape& data, Shape* affine, Shape* moments) const {
    if (kind_ == kLayer) {
      int axis = 0;
      MXL_RETURN_IF_ERROR(CheckAxis(axis_, data, "axis", &axis));
      *affine = Shape({data[axis]});
      *moments = data;
      (*moments)[axis] = 1;
      return Status();
    }
    MXL_CHECK(data.ndim() >= 2, "input 'data' has shape ", data.ToString(),
              " but needs a channel axis (N, C, ...)");
    if (kind_ == kInstance) {
      *affine = Shape({data[1]});
      *moments = Shape({data[0], data[1]});
      return Status();
    }
    MXL_CHECK(data[1] % num_groups_ == 0, "input 'data' has ", data[1],
              " channels, not divisible by num_groups=", num_groups_);
    *affine = Shape({num_groups_});
    *moments = Shape({data[0], num_groups_});
    return Status();
  }

  NormKind kind_;
  int64_t axis_, num_groups_;
  float eps_;
  bool output_mean_var_;
  std::vector<double> mean_, var_;
  std::vector<float> mean_f_, scale_f_;
};

Status CreateInstanceNorm(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  const double eps = attrs->Float("eps", 1e-3);
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new AffineNorm(kInstance, 1, 1, static_cast<float>(eps), false));
  return Status();
}

Status CreateLayerNorm(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  const int64_t axis = attrs->Int("axis", -1);
  const double eps = attrs->Float("eps", 1e-5);
  const bool output_mean_var = attrs->Bool("output_mean_var", false);
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new AffineNorm(kLayer, axis, 1, static_cast<float>(eps), output_mean_var));
  return Status();
}

Status CreateGroupNorm(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  const int64_t num_groups = attrs->Int("num_groups", 1);
  const double eps = attrs->Float("eps", 1e-5);
  const bool output_mean_var = attrs->Bool("output_mean_var", false);
  MXL_RETURN_IF_ERROR(attrs->Finish());
  if (num_groups < 1) {
    attrs->Fail("num_groups", StrCat(num_groups, " must be at least 1"));
    return attrs->Finish();
  }
  out->reset(new AffineNorm(kGroup, 1, num_groups, static_cast<float>(eps), output_mean_var));
  return Status();
}

// ---------------------------------------------------------------------------
// L2Normalization

enum L2Mode { kL2Channel, kL2Instance, kL2Spatial };

class L2Normalization : public Operator {
 public:
  L2Normalization(L2Mode mode, float eps) : mode_(mode), eps_(eps) {}

  std::vector<std::string> OutputNames() const override { return {"output", "norm"}; }

  bool ComputesImagesApart(const std::vector<Shape>& image_in) const override {
    (void)image_in;
    return true;
  }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    MXL_RETURN_IF_ERROR(SameShapeInference(*this, in, out));
    const Shape& data = (*in)[0];
    if (!data.is_complete()) return Status();
    MXL_CHECK(data.ndim() >= (mode_ == kL2Instance ? 2 : 3), "input 'data' has shape ",
              data.ToString(), " which is too small for this mode");
    std::vector<int64_t> dims;
    if (mode_ == kL2Instance) {
      dims = {data[0]};
    } else if (mode_ == kL2Channel) {
      dims = data.dims();
      dims.erase(dims.begin() + 1);
    } else {
      dims = {data[0], data[1]};
    }
    return AssignShape(out, 1, Shape(dims), "output", OutputNames());
  }

  Status Forward(const OpContext&, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const Shape& shape = in[0].shape();
    // (outer, extent, inner) with the sum over extent (channel) or over
    // extent * inner (instance, spatial).
    int64_t outer = shape[0], extent = 1, inner = shape.ProdRange(1, shape.ndim());
    bool per_position = false;
    if (mode_ == kL2Channel) {
      extent = shape[1];
      inner = shape.ProdRange(2, shape.ndim());
      per_position = true;
    } else if (mode_ == kL2Spatial) {
      outer = shape[0] * shape[1];
      inner = shape.ProdRange(2, shape.ndim());
    }
    const float* x = in[0].fdata();
    float* y = out[0].fdata();
    float* norm = out[1].fdata();
    const int64_t groups = per_position ? outer * inner : outer;
    sums_.assign(groups, 0.0);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t e = 0; e < extent; ++e) {
        for (int64_t i = 0; i < inner; ++i) {
          const double v = x[(o * extent + e) * inner + i];
          sums_[per_position ? o * inner + i : o] += v * v;
        }
      }
    }
    for (int64_t g = 0; g < groups; ++g) norm[g] = static_cast<float>(std::sqrt(sums_[g] + eps_));
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t e = 0; e < extent; ++e) {
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t index = (o * extent + e) * inner + i;
          y[index] = x[index] / norm[per_position ? o * inner + i : o];
        }
      }
    }
    return Status();
  }

 private:
  L2Mode mode_;
  float eps_;
  std::vector<double> sums_;
};

Status CreateL2Normalization(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  const double eps = attrs->Float("eps", 1e-10);
  const int mode = attrs->Enum("mode", {"channel", "instance", "spatial"}, 1);
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new L2Normalization(static_cast<L2Mode>(mode), static_cast<float>(eps)));
  return Status();
}

}  // namespace norm_op
}  // namespace mxlite
