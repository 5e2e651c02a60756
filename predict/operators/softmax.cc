/*
 * The softmax family: softmax, log_softmax, softmin, SoftmaxOutput (alias
 * Softmax) and SoftmaxActivation. All of them reduce to one kernel: the
 * data seen as (outer, extent, inner), softmax over the extent for every
 * (outer, inner) pair, computed stably as
 *
 *   m = max_j x_j,  e_j = exp((x_j - m) / T),  y_j = e_j / sum_j e_j.
 *
 * The arithmetic is MXNet's CPU code: float exp, the sum accumulated in
 * float in index order, a true division per element, and no division at
 * all when the temperature T is 1 (MXNet's softmax without
 * MXNET_SAFE_ACCUMULATION and mshadow's Softmax used by the other two),
 * except that softmax's exponentials come from the vector math kernels
 * (MathRow: within 2 ulps of the C library's expf) and, over a contiguous
 * axis (the last), its sum from their vector partial sums; such rows are
 * split over the thread pool. The
 * kernel reads each x_j before writing y_j, so it runs in place.
 *
 * log_softmax writes (x_j - m) / T - log(sum_j e_j) instead; softmin is the
 * softmax of -x.
 *
 * How each operator picks the axis:
 *   - softmax, log_softmax, softmin: `axis` (default -1), temperature
 *     optional ("None" is 1). The dtype attribute may only ask for float32.
 *     With use_length (softmax only: MXNet's log_softmax and softmin take no
 *     length) a second input `length` (int32 or int64, the data's
 *     shape without the axis; (1,) for 1-D data) limits each softmax to its
 *     first length[i] elements, the rest of the row being 0, as MXNet's CPU
 *     kernel (a length of 0 gives a row of zeros; one below 0 or above the
 *     axis' extent, where MXNet writes or reads out of bounds, is an error);
 *   - SoftmaxOutput: inputs data and label; the label only matters for the
 *     gradient, so inference never reads it, but its shape is inferred as
 *     MXNet does (data's shape without the last axis; with multi_output
 *     (d0, size/d0/d1); a label equal to the data shape is accepted too).
 *     Default: over all but the first axis, data viewed as (d0, size/d0);
 *     multi_output: over axis 1 of (d0, d1, rest); preserve_shape: over the
 *     last axis. The training attributes are accepted and have no effect;
 *   - SoftmaxActivation: mode instance (the default) is over the last axis
 *     (MXNet flattens the data to 2-D keeping the last axis), mode channel
 *     over axis 1 of (d0, d1, rest) and needs at least 3-D data.
 * softmax and SoftmaxOutput declare MXNet's in-place option {0, 0};
 * SoftmaxActivation has none in MXNet and none here.
 */
#include <algorithm>
#include <cmath>

#include "../kernels/thread_pool.h"
#include "math_row.h"
#include "operator.h"

namespace mxlite {
namespace softmax_op {

// One softmax over `extent` contiguous values (see SoftmaxAxis): the
// maximum, the exponentials with their sum and the division run the vector
// math kernels' row passes.
void SoftmaxRow(const float* src, float* dst, int64_t extent, float temperature,
                bool log_output) {
  const float mmax = RowMax(src, extent);
  if (log_output) {
    const bool scaled = temperature != 1.f;
    float sum = 0.f;
    for (int64_t j = 0; j < extent; ++j) {
      sum += scaled ? std::exp((src[j] - mmax) / temperature) : std::exp(src[j] - mmax);
    }
    const float log_sum = std::log(sum);
    for (int64_t j = 0; j < extent; ++j) {
      dst[j] = (scaled ? (src[j] - mmax) / temperature : src[j] - mmax) - log_sum;
    }
    return;
  }
  DivideRow(dst, dst, extent, ExpShiftedRow(src, dst, extent, mmax, temperature));
}

// Softmax over the middle dim of x viewed as (outer, extent, inner), or its
// logarithm with `log_output` ((x_j - m) / T - log(sum_j e_j), as MXNet's
// log_softmax). The exponentials of softmax run the vector math kernels
// (MathRow). Rows of a contiguous extent are split over `pool`; otherwise
// `scratch` is grown to 2 * inner floats.
void SoftmaxAxis(const float* x, float* y, int64_t outer, int64_t extent, int64_t inner,
                 float temperature, bool log_output, ThreadPool* pool,
                 std::vector<float>* scratch) {
  if (extent <= 0 || inner <= 0) return;
  const bool scaled = temperature != 1.f;
  if (inner == 1) {
    ParallelRanges(pool, outer, RowsPerElementwiseTask(extent), [&](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o) {
        SoftmaxRow(x + o * extent, y + o * extent, extent, temperature, log_output);
      }
    });
    return;
  }
  scratch->resize(static_cast<size_t>(2 * inner));
  float* mmax = scratch->data();
  float* sum = mmax + inner;
  for (int64_t o = 0; o < outer; ++o) {
    const float* src = x + o * extent * inner;
    float* dst = y + o * extent * inner;
    for (int64_t i = 0; i < inner; ++i) mmax[i] = src[i];
    for (int64_t j = 1; j < extent; ++j) {
      const float* row = src + j * inner;
      for (int64_t i = 0; i < inner; ++i) {
        if (mmax[i] < row[i]) mmax[i] = row[i];
      }
    }
    for (int64_t i = 0; i < inner; ++i) sum[i] = 0.f;
    for (int64_t j = 0; j < extent; ++j) {
      const float* row = src + j * inner;
      float* out_row = dst + j * inner;
      if (log_output) {
        for (int64_t i = 0; i < inner; ++i) {
          sum[i] += scaled ? std::exp((row[i] - mmax[i]) / temperature)
                           : std::exp(row[i] - mmax[i]);
        }
        continue;
      }
      for (int64_t i = 0; i < inner; ++i) {
        out_row[i] = scaled ? (row[i] - mmax[i]) / temperature : row[i] - mmax[i];
      }
      MathRow(RowMath::kExp, out_row, out_row, inner, 0.f);
      for (int64_t i = 0; i < inner; ++i) sum[i] += out_row[i];
    }
    if (log_output) {
      for (int64_t i = 0; i < inner; ++i) sum[i] = std::log(sum[i]);
    }
    for (int64_t j = 0; j < extent; ++j) {
      const float* row = src + j * inner;
      float* out_row = dst + j * inner;
      for (int64_t i = 0; i < inner; ++i) {
        if (log_output) {
          const float shifted = scaled ? (row[i] - mmax[i]) / temperature : row[i] - mmax[i];
          out_row[i] = shifted - sum[i];
        } else {
          out_row[i] /= sum[i];
        }
      }
    }
  }
}

bool Compatible(const Shape& a, const Shape& b) {
  Shape merged = a;
  return MergeShape(&merged, b);
}

// Output shape = input shape, known from either side.
Status SameShape(const Operator& op, std::vector<Shape>* in, std::vector<Shape>* out) {
  MXL_RETURN_IF_ERROR(AssignShape(out, 0, (*in)[0], "output", op.OutputNames()));
  return AssignShape(in, 0, (*out)[0], "input", op.InputNames());
}

// ---------------------------------------------------------------------------
// softmax

// softmax, log_softmax and softmin (the softmax of -x).
enum SoftmaxForm { kPlain, kLog, kNegated };

class Softmax : public Operator {
 public:
  Softmax(int64_t axis, float temperature, SoftmaxForm form, bool use_length)
      : axis_(axis), temperature_(temperature), form_(form), use_length_(use_length) {}

  std::vector<std::string> InputNames() const override {
    if (use_length_) return {"data", "length"};
    return {"data"};
  }

  std::vector<InplacePair> InplaceOptions() const override { return {{0, 0, false}}; }

  bool ComputesImagesApart(const std::vector<Shape>& image_in) const override {
    return !image_in.empty() && (axis_ < 0 ? axis_ + image_in[0].ndim() : axis_) != 0;
  }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    MXL_RETURN_IF_ERROR(SameShape(*this, in, out));
    const Shape& data = (*in)[0];
    if (data.rank_known()) {
      const int64_t axis = axis_ < 0 ? axis_ + data.ndim() : axis_;
      MXL_CHECK(axis >= 0 && axis < data.ndim(), "attribute axis=", axis_,
                " is out of range for input 'data' of shape ", data.ToString());
      if (use_length_) {
        // MXNet's SoftmaxOpShape: the data's shape without the axis.
        std::vector<int64_t> dims;
        for (int d = 0; d < data.ndim(); ++d) {
          if (d != axis) dims.push_back(data[d]);
        }
        if (dims.empty()) dims.push_back(1);
        MXL_RETURN_IF_ERROR(AssignShape(in, 1, Shape(dims), "input", InputNames()));
      }
    }
    return Status();
  }

  Status InferType(std::vector<int>* in, std::vector<int>* out) const override {
    if (!use_length_) return Operator::InferType(in, out);
    const int length = (*in)[1];
    MXL_CHECK(length == kUnknownDType || length == kInt32 || length == kInt64,
              "input 'length' has dtype ", DTypeName(length),
              " but softmax's use_length takes int32 or int64 lengths (as MXNet)");
    return UnifyDTypes(*this, {0}, true, in, out);
  }

  Status Forward(const OpContext& ctx, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const Shape& shape = in[0].shape();
    const int axis = static_cast<int>(axis_ < 0 ? axis_ + shape.ndim() : axis_);
    const float* x = in[0].fdata();
    if (form_ == kNegated) {
      // Negate into the output, then run in place there.
      float* y = out[0].fdata();
      for (int64_t i = 0; i < out[0].Size(); ++i) y[i] = -x[i];
      x = y;
    }
    const int64_t outer = shape.ProdRange(0, axis), extent = shape[axis];
    const int64_t inner = shape.ProdRange(axis + 1, shape.ndim());
    if (use_length_) {
      return SoftmaxLengths(x, in[1].fdata(), out[0].fdata(), outer, extent, inner, ctx.pool);
    }
    SoftmaxAxis(x, out[0].fdata(), outer, extent, inner, temperature_, form_ == kLog, ctx.pool,
                &scratch_);
    return Status();
  }

 private:
  // MXNet's Softmax with a length per row (softmax only): row (o, i) over its first
  // length[o * inner + i] elements, zeros after them.
  Status SoftmaxLengths(const float* x, const float* lengths, float* y, int64_t outer,
                        int64_t extent, int64_t inner, ThreadPool* pool) const {
    for (int64_t r = 0; r < outer * inner; ++r) {
      const float value = lengths[r];
      MXL_CHECK(value >= 0 && value <= static_cast<float>(extent), "length ", value, " (row ", r,
                ") is out of range for a softmax over ", extent, " elements");
    }
    if (extent <= 0) return Status();
    if (inner == 1) {  // contiguous rows: the vector row passes, rows over the pool
      ParallelRanges(pool, outer, RowsPerElementwiseTask(extent), [&](int64_t begin, int64_t end) {
        for (int64_t o = begin; o < end; ++o) {
          const int64_t len = static_cast<int64_t>(lengths[o]);
          float* dst = y + o * extent;
          if (len > 0) SoftmaxRow(x + o * extent, dst, len, temperature_, false);
          std::fill(dst + len, dst + extent, 0.f);
        }
      });
      return Status();
    }
    const bool scaled = temperature_ != 1.f;
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t len = static_cast<int64_t>(lengths[o * inner + i]);
        const float* src = x + o * extent * inner + i;
        float* dst = y + o * extent * inner + i;
        float mmax = src[0];
        for (int64_t j = 1; j < len; ++j) {
          if (mmax < src[j * inner]) mmax = src[j * inner];
        }
        float sum = 0.f;
        for (int64_t j = 0; j < len; ++j) {
          const float shifted = scaled ? (src[j * inner] - mmax) / temperature_
                                       : src[j * inner] - mmax;
          sum += std::exp(shifted);
        }
        for (int64_t j = 0; j < len; ++j) {
          const float shifted = scaled ? (src[j * inner] - mmax) / temperature_
                                       : src[j * inner] - mmax;
          dst[j * inner] = std::exp(shifted) / sum;
        }
        for (int64_t j = len; j < extent; ++j) dst[j * inner] = 0.f;
      }
    }
    return Status();
  }

  int64_t axis_;
  float temperature_;
  SoftmaxForm form_;
  bool use_length_;
  std::vector<float> scratch_;
};

Status CreateSoftmax(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  int64_t axis = attrs->Int("axis", -1);
  double temperature = 1.0;
  attrs->OptionalFloat("temperature", &temperature);  // None means 1
  int dtype = attrs->Enum("dtype", {"None", "float16", "float32", "float64"}, 0);
  bool use_length = attrs->OptionalBool("use_length");
  MXL_RETURN_IF_ERROR(attrs->Finish());
  if (dtype == 1 || dtype == 3) {
    attrs->Fail("dtype", StrCat("output dtype ", dtype == 1 ? "float16" : "float64",
                                " is not supported (mxlite computes softmax in float32)"));
    return attrs->Finish();
  }
  if (use_length && attrs->op_name() != "softmax") {
    // MXNet's log_softmax and softmin take one input: use_length fails there.
    attrs->Fail("use_length", StrCat(attrs->op_name(), " takes no length input (as MXNet)"));
    return attrs->Finish();
  }
  // MXNet casts the temperature to the data type before using it.
  const SoftmaxForm form = attrs->op_name() == "log_softmax" ? kLog
                           : attrs->op_name() == "softmin"   ? kNegated
                                                             : kPlain;
  out->reset(new Softmax(axis, static_cast<float>(temperature), form, use_length));
  return Status();
}

// ---------------------------------------------------------------------------
// SoftmaxOutput

class SoftmaxOutput : public Operator {
 public:
  SoftmaxOutput(bool multi_output, bool preserve_shape)
      : multi_output_(multi_output), preserve_shape_(preserve_shape) {}

  std::vector<std::string> InputNames() const override { return {"data", "label"}; }
  std::vector<int> UnreadInputs() const override { return {1}; }
  std::vector<InplacePair> InplaceOptions() const override { return {{0, 0, false}}; }

  bool ComputesImagesApart(const std::vector<Shape>& image_in) const override {
    return !image_in.empty() && (!preserve_shape_ || image_in[0].ndim() >= 2);
  }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    MXL_RETURN_IF_ERROR(SameShape(*this, in, out));
    const Shape& data = (*in)[0];
    if (!data.rank_known()) return Status();
    const int ndim = data.ndim();
    const Shape& label = (*in)[1];
    // A label of the data's shape holds probabilities: always accepted.
    if (label.rank_known() && label.ndim() == ndim && Compatible(label, data)) return Status();

    if (!multi_output_) {
      MXL_CHECK(ndim >= 1, "input 'data' is zero-dimensional; SoftmaxOutput needs an axis");
      std::vector<int64_t> dims(data.dims().begin(), data.dims().end() - 1);
      return AssignShape(in, 1, Shape(dims), "input", InputNames());
    }
    MXL_CHECK(ndim >= 2, "input 'data' has shape ", data.ToString(),
              " but SoftmaxOutput with multi_output needs at least 2 dims");
    // (d0, size/d0/d1), (d0, d2, d3, ...) or the data shape with d1 = 1.
    int64_t rest = 1;
    for (int i = 2; i < ndim && rest >= 0; ++i) rest = data[i] < 0 ? -1 : rest * data[i];
    const Shape flat({data[0], rest});
    std::vector<int64_t> dims = {data[0]};
    dims.insert(dims.end(), data.dims().begin() + 2, data.dims().end());
    const Shape spatial(dims);
    Shape single = data;
    single[1] = 1;
    if (!label.rank_known()) return AssignShape(in, 1, flat, "input", InputNames());
    for (const Shape& candidate : {flat, spatial, single}) {
      if (label.ndim() == candidate.ndim() && Compatible(label, candidate)) {
        return AssignShape(in, 1, candidate, "input", InputNames());
      }
    }
    return Status::Error(StrCat("input 'label' has shape ", label.ToString(),
                                " but SoftmaxOutput with multi_output needs ", flat.ToString(),
                                " or ", spatial.ToString(), " for data ", data.ToString()));
  }

  Status Forward(const OpContext& ctx, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const Shape& shape = in[0].shape();
    const int ndim = shape.ndim();
    const int64_t size = shape.Size();
    int64_t outer = 0, extent = 0, inner = 1;
    if (multi_output_) {
      outer = shape[0];
      extent = shape[1];
      inner = shape.ProdRange(2, ndim);
    } else if (preserve_shape_) {
      extent = ndim > 0 ? shape[ndim - 1] : 1;
      outer = ndim > 0 ? shape.ProdRange(0, ndim - 1) : 1;
    } else {
      outer = ndim > 0 ? shape[0] : 1;
      extent = outer > 0 ? size / outer : 0;
    }
    SoftmaxAxis(in[0].fdata(), out[0].fdata(), outer, extent, inner, 1.f, false, ctx.pool,
                &scratch_);
    return Status();
  }

 private:
  bool multi_output_, preserve_shape_;
  std::vector<float> scratch_;
};

Status CreateSoftmaxOutput(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  bool multi_output = attrs->Bool("multi_output", false);
  bool preserve_shape = attrs->Bool("preserve_shape", false);
  // Training-only: they shape the gradient, not the output.
  attrs->Float("grad_scale", 1.0);
  attrs->Float("ignore_label", -1.0);
  attrs->Bool("use_ignore", false);
  attrs->Enum("normalization", {"null", "batch", "valid"}, 0);
  attrs->Bool("out_grad", false);
  attrs->Float("smooth_alpha", 0.0);
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new SoftmaxOutput(multi_output, preserve_shape));
  return Status();
}

// ---------------------------------------------------------------------------
// SoftmaxActivation

class SoftmaxActivation : public Operator {
 public:
  explicit SoftmaxActivation(bool channel) : channel_(channel) {}

  bool ComputesImagesApart(const std::vector<Shape>& image_in) const override {
    (void)image_in;
    return true;
  }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    MXL_RETURN_IF_ERROR(SameShape(*this, in, out));
    const Shape& data = (*in)[0];
    if (channel_ && data.rank_known()) {
      MXL_CHECK(data.ndim() >= 3, "input 'data' has shape ", data.ToString(),
                " but mode 'channel' needs at least 3 dims");
    }
    return Status();
  }

  Status Forward(const OpContext& ctx, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const Shape& shape = in[0].shape();
    const int ndim = shape.ndim();
    int64_t outer = 1, extent = 1, inner = 1;
    if (channel_) {
      outer = shape[0];
      extent = shape[1];
      inner = shape.ProdRange(2, ndim);
    } else if (ndim > 0) {
      extent = shape[ndim - 1];
      outer = shape.ProdRange(0, ndim - 1);
    }
    SoftmaxAxis(in[0].fdata(), out[0].fdata(), outer, extent, inner, 1.f, false, ctx.pool,
                &scratch_);
    return Status();
  }

 private:
  bool channel_;
  std::vector<float> scratch_;
};

Status CreateSoftmaxActivation(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  int mode = attrs->Enum("mode", {"instance", "channel"}, 0);
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new SoftmaxActivation(mode == 1));
  return Status();
}

}  // namespace softmax_op
}  // namespace mxlite
