/*
 * Operators whose output is the input's data unchanged, in a new shape or
 * not: Reshape, expand_dims, squeeze, reshape_like, and the identities
 * _copy (identity), BlockGrad (stop_gradient), MakeLoss and make_loss (their
 * effect is on the gradient only). Each declares its output an identity view
 * of its input, so the memory planner lets them share one buffer and
 * Forward copies only when it could not.
 *
 * Reshape follows MXNet's InferReshapeShape. The codes in `shape` consume
 * input dims from left to right:
 *   d > 0   a literal dim (consumes one input dim),
 *   0       copies the input dim,
 *   -1      is inferred from the element count (at most once; consumes one),
 *   -2      copies all remaining input dims,
 *   -3      merges the next two input dims into their product,
 *   -4 a b  splits one input dim into a * b (one of them may be -1).
 * With reverse=True the codes and the input dims are matched from the right
 * (both lists reversed, the result reversed back). The deprecated
 * target_shape (used when shape is empty) is the output shape with one 0
 * standing for the inferred dim; keep_highest keeps the input's first dim.
 * Like MXNet, inference also runs backwards: a single unknown input dim is
 * filled in from a known output.
 */
#include <algorithm>
#include <cstring>

#include "operator.h"
#include "tensor_util.h"

namespace mxlite {
namespace reshape_op {

// The base of every view operator: one data input (plus inputs that give
// only shapes), output 0 an identity view of input 0, in any dtype.
class ViewOp : public Operator {
 public:
  std::vector<InplacePair> InplaceOptions() const override { return {{0, 0, true}}; }
  bool MovesBytesOnly() const override { return true; }
  bool ComputesImagesApart(const std::vector<Shape>& image_in) const override {
    (void)image_in;
    return true;
  }

  // A view keeps the element count and the dtype. Shape inference can leave
  // them apart (a Reshape without a shape whose output size a consumer
  // dictates): refused here, before any copy.
  Status Prepare(const std::vector<NDArray>& in, const std::vector<NDArray>& out,
                 size_t* workspace_bytes) override {
    *workspace_bytes = 0;
    MXL_CHECK(in[0].Size() == out[0].Size(), "input 'data' has shape ", in[0].shape().ToString(),
              " (", in[0].Size(), " elements) but the output has shape ",
              out[0].shape().ToString(), " (", out[0].Size(),
              " elements): a view keeps the element count");
    MXL_CHECK(in[0].dtype() == out[0].dtype(), "input 'data' has dtype ",
              DTypeName(in[0].dtype()), " but the output ", DTypeName(out[0].dtype()));
    return Status();
  }

  Status Forward(const OpContext&, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    MXL_CHECK(in[0].bytes() == out[0].bytes(), "a view of ", in[0].bytes(), " bytes into ",
              out[0].bytes());
    if (in[0].data() != out[0].data() && out[0].bytes() > 0) {
      std::memcpy(out[0].data(), in[0].data(), out[0].bytes());
    }
    return Status();
  }

 protected:
  // Fills the one unknown input dim from a complete output (MXNet's
  // ReverseReshapeInferShape).
  Status InferInputFromOutput(std::vector<Shape>* in, const std::vector<Shape>& out) const {
    const Shape& data = (*in)[0];
    const Shape& oshape = out[0];
    if (!data.rank_known() || data.is_complete() || !oshape.is_complete()) return Status();
    int unknown = -1, count = 0;
    int64_t known_product = 1;
    for (int d = 0; d < data.ndim(); ++d) {
      if (data[d] < 0) {
        unknown = d;
        ++count;
      } else {
        known_product = Shape::CheckedProduct(known_product, data[d]);
      }
    }
    if (count != 1 || known_product <= 0) return Status();
    Shape want = data;
    want[unknown] = oshape.Size() / known_product;
    return AssignShape(in, 0, want, "input", InputNames());
  }

  // Assigns the output and checks the element counts agree.
  Status AssignViewShape(std::vector<Shape>* in, std::vector<Shape>* out,
                         const Shape& oshape) const {
    const Shape& data = (*in)[0];
    // Counts past Shape::kMaxElements (a shape= whose product overflows)
    // are refused before any arithmetic on them.
    MXL_CHECK(!oshape.is_complete() || oshape.CheckedSize() >= 0, "the output shape ",
              oshape.ToString(), " has too many elements (more than 2^48)");
    if (data.is_complete() && oshape.is_complete()) {
      MXL_CHECK(data.Size() == oshape.Size(), "input 'data' has shape ", data.ToString(), " (",
                data.Size(), " elements) but the output shape ", oshape.ToString(), " has ",
                oshape.Size());
    }
    return AssignShape(out, 0, oshape, "output", OutputNames());
  }
};

// ---------------------------------------------------------------------------
// Reshape

class Reshape : public ViewOp {
 public:
  Reshape(std::vector<int64_t> shape, bool reverse, std::vector<int64_t> target_shape,
          bool keep_highest)
      : shape_(std::move(shape)),
        reverse_(reverse),
        target_shape_(std::move(target_shape)),
        keep_highest_(keep_highest) {}

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    MXL_RETURN_IF_ERROR(InferInputFromOutput(in, *out));
    const Shape& data = (*in)[0];
    if (!data.rank_known() || (shape_.empty() && target_shape_.empty())) return Status();
    Shape oshape;
    if (!shape_.empty()) {
      MXL_RETURN_IF_ERROR(FromCodes(data, &oshape));
    } else {
      MXL_RETURN_IF_ERROR(FromTargetShape(data, &oshape));
    }
    MXL_RETURN_IF_ERROR(AssignViewShape(in, out, oshape));
    return InferInputFromOutput(in, *out);
  }

 private:
  Status FromCodes(const Shape& data, Shape* oshape) const {
    std::vector<int64_t> codes = shape_;
    std::vector<int64_t> dims = data.dims();
    if (reverse_) {
      std::reverse(codes.begin(), codes.end());
      std::reverse(dims.begin(), dims.end());
    }
    const std::string where = StrCat("attribute shape=", TupleText(shape_),
                                     " does not fit input 'data' of shape ", data.ToString());
    std::vector<int64_t> result;
    size_t src = 0;
    int inferred = -1;
    for (size_t i = 0; i < codes.size(); ++i) {
      const int64_t code = codes[i];
      if (code == 0) {
        MXL_CHECK(src < dims.size(), where, ": code 0 has no input dim left to copy");
        result.push_back(dims[src++]);
      } else if (code == -1) {
        MXL_CHECK(inferred < 0, where, ": only one dim can be -1");
        inferred = static_cast<int>(result.size());
        result.push_back(1);
        ++src;
      } else if (code == -2) {
        while (src < dims.size()) result.push_back(dims[src++]);
      } else if (code == -3) {
        MXL_CHECK(src + 1 < dims.size(), where, ": code -3 needs two input dims to merge");
        const int64_t a = dims[src++], b = dims[src++];
        result.push_back(a < 0 || b < 0 ? -1 : a * b);
      } else if (code == -4) {
        MXL_CHECK(i + 2 < codes.size(), where, ": code -4 must be followed by two dims");
        MXL_CHECK(src < dims.size(), where, ": code -4 has no input dim left to split");
        const int64_t whole = dims[src++];
        int64_t a = codes[++i], b = codes[++i];
        MXL_CHECK(a != -1 || b != -1, where, ": the two dims after -4 cannot both be -1");
        MXL_CHECK(a >= -1 && b >= -1 && a != 0 && b != 0, where,
                  ": the dims after -4 must be positive or -1");
        if (a == -1 && whole >= 0) a = whole / b;
        if (b == -1 && whole >= 0) b = whole / a;
        MXL_CHECK(whole < 0 || Shape::CheckedProduct(a, b) == whole, where, ": ", whole,
                  " cannot be split into ", a, " x ", b);
        result.push_back(a);
        result.push_back(b);
      } else {
        MXL_CHECK(code > 0, where, ": code ", code, " is not a dim or one of 0, -1, -2, -3, -4");
        result.push_back(code);
        ++src;
      }
    }
    if (inferred >= 0) {
      if (data.is_complete()) {
        int64_t product = 1;
        for (int64_t d : result) product = Shape::CheckedProduct(product, d);
        MXL_CHECK(product != 0, where, ": cannot infer the -1 dim next to a zero dim");
        MXL_CHECK(product > 0, where, ": the other dims have too many elements (more than 2^48)");
        result[inferred] = data.Size() / product;
      } else {
        result[inferred] = -1;
      }
    }
    if (reverse_) std::reverse(result.begin(), result.end());
    *oshape = Shape(std::move(result));
    return Status();
  }

  Status FromTargetShape(const Shape& data, Shape* oshape) const {
    std::vector<int64_t> result = target_shape_;
    const size_t first = keep_highest_ ? 1 : 0;
    if (keep_highest_) {
      MXL_CHECK(!result.empty() && data.ndim() > 0, "attribute target_shape=",
                TupleText(target_shape_), " with keep_highest needs at least one dim");
      result[0] = data[0];
    }
    int zeros = 0;
    size_t inferred = 0;
    for (size_t i = first; i < result.size(); ++i) {
      if (result[i] == 0) {
        ++zeros;
        inferred = i;
      }
    }
    if (zeros == 1) {
      if (data.is_complete()) {
        result[inferred] = 1;
        int64_t product = 1;
        bool negative = false;
        for (int64_t d : result) {
          negative = negative || d < 0;
          product = Shape::CheckedProduct(product, d);
        }
        MXL_CHECK(negative || product >= 0, "attribute target_shape=", TupleText(target_shape_),
                  ": the other dims have too many elements (more than 2^48)");
        result[inferred] = !negative && product > 0 ? data.Size() / product : 0;
      } else {
        result[inferred] = -1;
      }
    }
    *oshape = Shape(std::move(result));
    return Status();
  }

  std::vector<int64_t> shape_;
  bool reverse_;
  std::vector<int64_t> target_shape_;
  bool keep_highest_;
};

Status CreateReshape(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  std::vector<int64_t> shape = attrs->Tuple("shape", {});
  bool reverse = attrs->Bool("reverse", false);
  std::vector<int64_t> target_shape = attrs->Tuple("target_shape", {});
  bool keep_highest = attrs->Bool("keep_highest", false);
  MXL_RETURN_IF_ERROR(attrs->Finish());
  for (int64_t code : shape) {
    if (code < -4) {
      attrs->Fail("shape", StrCat(TupleText(shape), ": ", code,
                                  " is not a dim or one of the codes 0, -1, -2, -3, -4"));
      return attrs->Finish();
    }
  }
  for (int64_t dim : target_shape) {
    if (dim < 0) {
      attrs->Fail("target_shape", StrCat(TupleText(target_shape), ": dims must be >= 0"));
      return attrs->Finish();
    }
  }
  out->reset(new Reshape(shape, reverse, target_shape, keep_highest));
  return Status();
}

// ---------------------------------------------------------------------------
// expand_dims, squeeze

class ExpandDims : public ViewOp {
 public:
  explicit ExpandDims(int64_t axis) : axis_(axis) {}

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    const Shape& data = (*in)[0];
    if (data.rank_known()) {
      int axis = 0;
      MXL_CHECK(ResolveAxis(axis_, data.ndim() + 1, &axis), "attribute axis=", axis_,
                " is out of range for input of shape ", data.ToString(), " (valid: ",
                -data.ndim() - 1, " to ", data.ndim(), ")");
      std::vector<int64_t> dims = data.dims();
      dims.insert(dims.begin() + axis, 1);
      MXL_RETURN_IF_ERROR(AssignShape(out, 0, Shape(dims), "output", OutputNames()));
    }
    const Shape& oshape = (*out)[0];
    if (oshape.rank_known() && oshape.ndim() > 0) {
      int axis = 0;
      if (ResolveAxis(axis_, oshape.ndim(), &axis)) {
        std::vector<int64_t> dims = oshape.dims();
        dims.erase(dims.begin() + axis);
        return AssignShape(in, 0, Shape(dims), "input", InputNames());
      }
    }
    return Status();
  }

 private:
  int64_t axis_;
};

Status CreateExpandDims(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  int64_t axis = attrs->Int("axis");
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new ExpandDims(axis));
  return Status();
}

class Squeeze : public ViewOp {
 public:
  Squeeze(bool has_axes, std::vector<int64_t> axes) : has_axes_(has_axes), axes_(std::move(axes)) {}

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    const Shape& data = (*in)[0];
    if (!data.is_complete()) return Status();
    std::vector<bool> drop(data.ndim(), false);
    if (has_axes_) {
      for (int64_t axis : axes_) {
        int resolved = 0;
        MXL_RETURN_IF_ERROR(CheckAxis(axis, data, "axis", &resolved));
        MXL_CHECK(data[resolved] == 1, "attribute axis=", TupleText(axes_), ": dim ", resolved,
                  " of input shape ", data.ToString(), " is ", data[resolved], ", not 1");
        drop[resolved] = true;
      }
    } else {
      for (int d = 0; d < data.ndim(); ++d) drop[d] = data[d] == 1;
    }
    std::vector<int64_t> dims;
    for (int d = 0; d < data.ndim(); ++d) {
      if (!drop[d]) dims.push_back(data[d]);
    }
    if (dims.empty()) dims.push_back(1);  // MXNet keeps one dim
    return AssignViewShape(in, out, Shape(dims));
  }

 private:
  bool has_axes_;
  std::vector<int64_t> axes_;
};

Status CreateSqueeze(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  std::vector<int64_t> axes;
  bool has_axes = attrs->OptionalTuple("axis", &axes);
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new Squeeze(has_axes, axes));
  return Status();
}

// ---------------------------------------------------------------------------
// reshape_like: lhs's data in the shape of rhs, or with dims
// [lhs_begin, lhs_end) of lhs replaced by dims [rhs_begin, rhs_end) of rhs.

class ReshapeLike : public ViewOp {
 public:
  ReshapeLike(int64_t lhs_begin, int64_t lhs_end, int64_t rhs_begin, int64_t rhs_end)
      : lhs_begin_(lhs_begin), lhs_end_(lhs_end), rhs_begin_(rhs_begin), rhs_end_(rhs_end) {}

  std::vector<std::string> InputNames() const override { return {"lhs", "rhs"}; }
  std::vector<int> UnreadInputs() const override { return {1}; }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    const Shape& lhs = (*in)[0];
    const Shape& rhs = (*in)[1];
    if (!lhs.is_complete() || !rhs.is_complete()) return Status();
    int lb = 0, le = 0, rb = 0, re = 0;
    MXL_RETURN_IF_ERROR(Range(lhs, lhs_begin_, lhs_end_, "lhs", &lb, &le));
    MXL_RETURN_IF_ERROR(Range(rhs, rhs_begin_, rhs_end_, "rhs", &rb, &re));
    std::vector<int64_t> dims(lhs.dims().begin(), lhs.dims().begin() + lb);
    dims.insert(dims.end(), rhs.dims().begin() + rb, rhs.dims().begin() + re);
    dims.insert(dims.end(), lhs.dims().begin() + le, lhs.dims().end());
    return AssignViewShape(in, out, Shape(dims));
  }

  Status InferType(std::vector<int>* in, std::vector<int>* out) const override {
    return UnifyDTypes(*this, {0}, false, in, out);  // rhs gives only its shape
  }

 private:
  // [begin, end) of `shape`, None meaning its start or end; negative values
  // count from the end.
  static Status Range(const Shape& shape, int64_t begin, int64_t end, const char* side, int* lo,
                      int* hi) {
    const int ndim = shape.ndim();
    int64_t b = begin == kNoneInt ? 0 : (begin < 0 ? begin + ndim : begin);
    int64_t e = end == kNoneInt ? ndim : (end < 0 ? end + ndim : end);
    MXL_CHECK(b >= 0 && b <= ndim && e >= b && e <= ndim, "attributes ", side, "_begin/", side,
              "_end select no valid range of input '", side, "' of shape ", shape.ToString());
    *lo = static_cast<int>(b);
    *hi = static_cast<int>(e);
    return Status();
  }

  int64_t lhs_begin_, lhs_end_, rhs_begin_, rhs_end_;
};

Status CreateReshapeLike(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  int64_t lhs_begin = attrs->OptionalInt("lhs_begin");
  int64_t lhs_end = attrs->OptionalInt("lhs_end");
  int64_t rhs_begin = attrs->OptionalInt("rhs_begin");
  int64_t rhs_end = attrs->OptionalInt("rhs_end");
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new ReshapeLike(lhs_begin, lhs_end, rhs_begin, rhs_end));
  return Status();
}

// ---------------------------------------------------------------------------
// Identities

class Identity : public ViewOp {
 public:
  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    return SameShapeInference(*this, in, out);
  }
};

Status CreateIdentity(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  if (attrs->op_name() == "MakeLoss") {
    // Gradient-only attributes.
    attrs->Float("grad_scale", 1.0);
    attrs->Float("valid_thresh", 0.0);
    attrs->Enum("normalization", {"null", "batch", "valid"}, 0);
  }
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new Identity());
  return Status();
}

}  // namespace reshape_op
}  // namespace mxlite
