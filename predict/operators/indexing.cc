/*
 * Indexing: Embedding, take, one_hot, gather_nd. Indices arrive as numbers
 * of any type and are truncated towards zero (MXNet's static_cast) before
 * use (gather_nd: see below).
 *   - Embedding: out[..., :] = weight[clip(index), :], the output shape
 *     data.shape + (output_dim,); indices are clipped to [0, input_dim - 1]
 *     (TakeZeroAxisCPU with clip=true).
 *   - take: rows of `a` along `axis` picked by `indices`; the output shape
 *     a.shape[:axis] + indices.shape + a.shape[axis+1:]. mode clip clamps an
 *     index into range, wrap takes it modulo the extent (Python style), and
 *     raise reports an out-of-range index as an error when the model runs.
 *   - one_hot: indices.shape + (depth,), on_value at the index and off_value
 *     elsewhere; an index outside [0, depth) gives a row of off_value.
 *   - gather_nd: indices (M, Y0, ..., Yk) pick, for each (y0, ..., yk), the
 *     slice data[i0, ..., iM-1, ...] with ij = indices[j, y0, ..., yk]; the
 *     output shape is (Y0, ..., Yk) + data.shape[M:]. As MXNet's CPU kernel
 *     (GatherNDForwardCPU): an index in [-d, d - 1] (d the extent of its
 *     dim) is valid, negative ones counting from the end, and any other is
 *     an IndexError when the model runs (an error here too, never a read
 *     out of bounds). A fractional index is used as int64(index + d) % d,
 *     i.e. rounded down: 1.7 is 1, -0.5 is d - 1, while d - 0.5 is out of
 *     range. M must be at least 1 (MXNet divides by it) and at most 10.
 */
#include <algorithm>
#include <cstring>

#include "operator.h"
#include "tensor_util.h"

namespace mxlite {
namespace indexing_op {

enum IndexMode { kClip, kRaise, kWrap };

// The row an index selects among `extent`, by `mode`; false for raise mode
// and an index out of range.
inline bool ResolveIndex(float value, int64_t extent, IndexMode mode, int64_t* row) {
  int64_t index = static_cast<int64_t>(value);
  if (mode == kWrap) {
    index %= extent;
    if (index < 0) index += extent;
  } else if (index < 0 || index >= extent) {
    if (mode == kRaise) return false;
    index = index < 0 ? 0 : extent - 1;
  }
  *row = index;
  return true;
}

// Copies `count` rows of `width` floats, row i from table row index[i].
Status GatherRows(const float* indices, int64_t count, const float* table, int64_t extent,
                  int64_t width, IndexMode mode, float* out) {
  for (int64_t i = 0; i < count; ++i) {
    int64_t row = 0;
    MXL_CHECK(ResolveIndex(indices[i], extent, mode, &row), "index ", indices[i],
              " is out of range [0, ", extent, ") and mode is 'raise'");
    std::memcpy(out + i * width, table + row * width, sizeof(float) * static_cast<size_t>(width));
  }
  return Status();
}

// ---------------------------------------------------------------------------
// Embedding

class Embedding : public Operator {
 public:
  Embedding(int64_t input_dim, int64_t output_dim, int dtype)
      : input_dim_(input_dim), output_dim_(output_dim), dtype_(dtype) {}

  std::vector<std::string> InputNames() const override { return {"data", "weight"}; }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    MXL_RETURN_IF_ERROR(
        AssignShape(in, 1, Shape({input_dim_, output_dim_}), "input", InputNames()));
    const Shape& data = (*in)[0];
    if (!data.rank_known()) return Status();
    std::vector<int64_t> dims = data.dims();
    dims.push_back(output_dim_);
    return AssignShape(out, 0, Shape(dims), "output", OutputNames());
  }

  Status InferType(std::vector<int>* in, std::vector<int>* out) const override {
    // The weight and the output have the dtype attribute's type (MXNet
    // insists); the indices any type.
    std::vector<int> typed = {dtype_};
    MXL_RETURN_IF_ERROR(UnifyDTypes(*this, {1}, false, in, &typed));
    (*out)[0] = typed[0];
    return Status();
  }

  Status Forward(const OpContext&, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    return GatherRows(in[0].fdata(), in[0].Size(), in[1].fdata(), input_dim_, output_dim_, kClip,
                      out[0].fdata());
  }

 private:
  int64_t input_dim_, output_dim_;
  int dtype_;
};

Status CreateEmbedding(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  const int64_t input_dim = attrs->Int("input_dim");
  const int64_t output_dim = attrs->Int("output_dim");
  const int dtype = attrs->DType("dtype", {"float32", "float16", "float64", "bfloat16", "int32",
                                           "int64", "int8", "uint8"}, 0);
  attrs->Bool("sparse_grad", false);  // training only
  MXL_RETURN_IF_ERROR(attrs->Finish());
  if (input_dim < 1) attrs->Fail("input_dim", StrCat(input_dim, " must be at least 1"));
  if (output_dim < 0) attrs->Fail("output_dim", StrCat(output_dim, " must not be negative"));
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new Embedding(input_dim, output_dim, dtype));
  return Status();
}

// ---------------------------------------------------------------------------
// take

class Take : public Operator {
 public:
  Take(int64_t axis, IndexMode mode) : axis_(axis), mode_(mode) {}

  std::vector<std::string> InputNames() const override { return {"a", "indices"}; }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    const Shape& a = (*in)[0];
    const Shape& indices = (*in)[1];
    if (!a.is_complete() || !indices.rank_known()) return Status();
    int axis = 0;
    MXL_RETURN_IF_ERROR(CheckAxis(axis_, a, "axis", &axis));
    MXL_CHECK(a[axis] > 0, "input 'a' has shape ", a.ToString(), ": cannot take from an empty axis");
    std::vector<int64_t> dims(a.dims().begin(), a.dims().begin() + axis);
    dims.insert(dims.end(), indices.dims().begin(), indices.dims().end());
    dims.insert(dims.end(), a.dims().begin() + axis + 1, a.dims().end());
    return AssignShape(out, 0, Shape(dims), "output", OutputNames());
  }

  Status InferType(std::vector<int>* in, std::vector<int>* out) const override {
    return UnifyDTypes(*this, {0}, false, in, out);  // indices: any type
  }

  Status Forward(const OpContext&, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const Shape& a = in[0].shape();
    const int axis = static_cast<int>(axis_ < 0 ? axis_ + a.ndim() : axis_);
    const int64_t outer = a.ProdRange(0, axis);
    const int64_t inner = a.ProdRange(axis + 1, a.ndim());
    const int64_t count = in[1].Size();
    for (int64_t o = 0; o < outer; ++o) {
      MXL_RETURN_IF_ERROR(GatherRows(in[1].fdata(), count, in[0].fdata() + o * a[axis] * inner,
                                     a[axis], inner, mode_, out[0].fdata() + o * count * inner));
    }
    return Status();
  }

 private:
  int64_t axis_;
  IndexMode mode_;
};

Status CreateTake(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  const int64_t axis = attrs->Int("axis", 0);
  const int mode = attrs->Enum("mode", {"clip", "raise", "wrap"}, 0);
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new Take(axis, static_cast<IndexMode>(mode)));
  return Status();
}

// ---------------------------------------------------------------------------
// one_hot

class OneHot : public Operator {
 public:
  OneHot(int64_t depth, float on_value, float off_value, int dtype)
      : depth_(depth), on_value_(on_value), off_value_(off_value), dtype_(dtype) {}

  std::vector<std::string> InputNames() const override { return {"indices"}; }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    const Shape& indices = (*in)[0];
    if (!indices.rank_known()) return Status();
    std::vector<int64_t> dims = indices.dims();
    dims.push_back(depth_);
    return AssignShape(out, 0, Shape(dims), "output", OutputNames());
  }

  Status InferType(std::vector<int>* in, std::vector<int>* out) const override {
    (void)in;  // indices: any type; the output: the dtype attribute
    (*out)[0] = dtype_;
    return Status();
  }

  Status Forward(const OpContext&, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const float* indices = in[0].fdata();
    float* y = out[0].fdata();
    const int64_t count = in[0].Size();
    for (int64_t i = 0; i < count; ++i) {
      float* row = y + i * depth_;
      std::fill(row, row + depth_, off_value_);
      const int64_t index = static_cast<int64_t>(indices[i]);
      if (index >= 0 && index < depth_) row[index] = on_value_;
    }
    return Status();
  }

 private:
  int64_t depth_;
  float on_value_, off_value_;
  int dtype_;
};

Status CreateOneHot(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  const int64_t depth = attrs->Int("depth");
  const double on_value = attrs->Float("on_value", 1.0);
  const double off_value = attrs->Float("off_value", 0.0);
  const int dtype = attrs->DType("dtype", {"float32", "float16", "float64", "bfloat16", "int32",
                                           "int64", "int8", "uint8"}, 0);
  MXL_RETURN_IF_ERROR(attrs->Finish());
  if (depth < 0) attrs->Fail("depth", StrCat(depth, " must not be negative"));
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new OneHot(depth, static_cast<float>(on_value), static_cast<float>(off_value), dtype));
  return Status();
}

// ---------------------------------------------------------------------------
// gather_nd

class GatherND : public Operator {
 public:
  std::vector<std::string> InputNames() const override { return {"data", "indices"}; }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    const Shape& data = (*in)[0];
    const Shape& indices = (*in)[1];
    if (!data.rank_known() || !indices.is_complete()) return Status();
    MXL_CHECK(indices.ndim() >= 2, "input 'indices' has shape ", indices.ToString(),
              " but gather_nd needs at least 2 dims: (M, ...), M the number of data dims indexed");
    const int64_t m = indices[0];
    MXL_CHECK(m >= 1 && m <= data.ndim() && m <= 10, "input 'indices' has shape ",
              indices.ToString(), ": its first dim (", m, ", the number of data dims indexed) "
              "must be in [1, min(10, data.ndim)] but the data has shape ", data.ToString());
    std::vector<int64_t> dims(indices.dims().begin() + 1, indices.dims().end());
    dims.insert(dims.end(), data.dims().begin() + m, data.dims().end());
    return AssignShape(out, 0, Shape(dims), "output", OutputNames());
  }

  Status InferType(std::vector<int>* in, std::vector<int>* out) const override {
    return UnifyDTypes(*this, {0}, false, in, out);  // indices: any type
  }

  Status Forward(const OpContext&, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const Shape& data = in[0].shape();
    const int m = static_cast<int>(in[1].shape()[0]);
    const int64_t count = in[1].Size() / m;
    const int64_t inner = data.ProdRange(m, data.ndim());
    const float* x = in[0].fdata();
    const float* indices = in[1].fdata();
    float* y = out[0].fdata();
    for (int64_t i = 0; i < count; ++i) {
      int64_t offset = 0;
      for (int j = 0; j < m; ++j) {
        const float value = indices[j * count + i];
        const int64_t extent = data[j];
        // MXNet's bound check, in the index's (float) arithmetic; NaN is
        // refused too (MXNet would read out of bounds).
        MXL_CHECK(value >= static_cast<float>(-extent) && value <= static_cast<float>(extent - 1),
                  "IndexError: index ", value, " is out of bounds for axis ", j, " with size ",
                  extent, " (indices position ", i, ")");
        const int64_t row = static_cast<int64_t>(value + static_cast<float>(extent)) % extent;
        offset = offset * extent + row;
      }
      std::memcpy(y + i * inner, x + offset * inner, sizeof(float) * static_cast<size_t>(inner));
    }
    return Status();
  }
};

Status CreateGatherND(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new GatherND());
  return Status();
}

}  // namespace indexing_op
}  // namespace mxlite
