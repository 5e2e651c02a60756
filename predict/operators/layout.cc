/*
 * Operators that rearrange elements without computing on them.
 *
 * Most are one strided gather (tensor_util.h): the output, in row-major
 * order over a "view shape", reads input element offset + sum i_k*stride_k.
 * Each operator only states its view; one kernel does the copying:
 *   transpose, SwapAxis   the input strides permuted;
 *   slice, slice_axis,    an offset to the first element and the input
 *   slice_like, Crop      strides times the steps (negative steps walk back);
 *   reverse (flip)        negative strides from the last element;
 *   tile                  view (r0, d0, r1, d1, ...), stride 0 on each r;
 *   repeat                view (..., d, r, ...), stride 0 on r;
 *   broadcast_to/_axis/   stride 0 where a dim of extent 1 grows;
 *   _like
 *   depth_to_space,       the reshape-transpose-reshape of MXNet's
 *   space_to_depth        definition folded into one view.
 * SliceChannel (split) and stack are in split_stack.cc.
 *
 * Index rules are MXNet 1.9.1's: slice's begin/end may be negative (counted
 * from the end) or None (the start or end for the step's direction), an end
 * past the dim is an error, and an empty result is an error, as in MXNet.
 */
#include <algorithm>
#include <cstring>

#include "operator.h"
#include "tensor_util.h"

namespace mxlite {
namespace layout_op {

// The output of a gather read through a strided view of the input.
struct GatherView {
  Shape view_shape;  // iteration order; its element count is the output's
  std::vector<int64_t> strides;
  int64_t offset = 0;
};

// Base of the gather operators. Inputs after the first give only shapes.
class GatherOp : public Operator {
 public:
  // Output shape and view for complete input shapes.
  virtual Status MakeView(const std::vector<Shape>& in, Shape* oshape, GatherView* view) const = 0;

  std::vector<int> UnreadInputs() const override {
    std::vector<int> shape_only;
    for (size_t i = 1; i < InputNames().size(); ++i) shape_only.push_back(static_cast<int>(i));
    return shape_only;
  }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    for (const Shape& shape : *in) {
      if (!shape.is_complete()) return Status();
    }
    Shape oshape;
    GatherView view;
    MXL_RETURN_IF_ERROR(MakeView(*in, &oshape, &view));
    return AssignShape(out, 0, oshape, "output", OutputNames());
  }

  Status InferType(std::vector<int>* in, std::vector<int>* out) const override {
    return UnifyDTypes(*this, {0}, false, in, out);
  }

  Status Prepare(const std::vector<NDArray>& in, const std::vector<NDArray>&,
                 size_t* workspace_bytes) override {
    *workspace_bytes = 0;
    std::vector<Shape> shapes;
    for (const NDArray& array : in) shapes.push_back(array.shape());
    Shape oshape;
    return MakeView(shapes, &oshape, &view_);
  }

  Status Forward(const OpContext&, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    GatherStrided(in[0].fdata(), view_.offset, view_.strides, view_.view_shape, out[0].fdata());
    return Status();
  }

 private:
  GatherView view_;
};

// The identity view of `data` (a starting point for the operators below).
GatherView DenseView(const Shape& data) {
  GatherView view;
  view.view_shape = data;
  view.strides = RowMajorStrides(data);
  return view;
}

// ---------------------------------------------------------------------------
// transpose, SwapAxis

class Permute : public GatherOp {
 public:
  // An empty `axes` reverses the dims (transpose's default).
  explicit Permute(std::vector<int64_t> axes) : axes_(std::move(axes)) {}
  // SwapAxis.
  Permute(int64_t dim1, int64_t dim2) : swap_(true), dim1_(dim1), dim2_(dim2) {}

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    MXL_RETURN_IF_ERROR(GatherOp::InferShape(in, out));
    // Backwards too: a permutation is invertible.
    const Shape& oshape = (*out)[0];
    if ((*in)[0].is_complete() || !oshape.is_complete()) return Status();
    std::vector<int> order;
    MXL_RETURN_IF_ERROR(Order(oshape.ndim(), &order));
    std::vector<int64_t> dims(oshape.ndim());
    for (int d = 0; d < oshape.ndim(); ++d) dims[order[d]] = oshape[d];
    return AssignShape(in, 0, Shape(dims), "input", InputNames());
  }

  Status MakeView(const std::vector<Shape>& in, Shape* oshape, GatherView* view) const override {
    const Shape& data = in[0];
    std::vector<int> order;
    MXL_RETURN_IF_ERROR(Order(data.ndim(), &order));
    const std::vector<int64_t> dense = RowMajorStrides(data);
    std::vector<int64_t> dims(data.ndim());
    view->strides.assign(data.ndim(), 0);
    for (int d = 0; d < data.ndim(); ++d) {
      dims[d] = data[order[d]];
      view->strides[d] = dense[order[d]];
    }
    *oshape = Shape(dims);
    view->view_shape = *oshape;
    return Status();
  }

 private:
  // Output dim d is input dim order[d].
  Status Order(int ndim, std::vector<int>* order) const {
    order->resize(ndim);
    for (int d = 0; d < ndim; ++d) (*order)[d] = d;
    if (swap_) {
      int a = 0, b = 0;
      MXL_CHECK(ResolveAxis(dim1_, ndim, &a) && ResolveAxis(dim2_, ndim, &b),
                "attributes dim1=", dim1_, ", dim2=", dim2_, " are out of range for ", ndim,
                "-D input");
      std::swap((*order)[a], (*order)[b]);
      return Status();
    }
    if (axes_.empty()) {
      for (int d = 0; d < ndim; ++d) (*order)[d] = ndim - 1 - d;
      return Status();
    }
    MXL_CHECK(static_cast<int>(axes_.size()) == ndim, "attribute axes=", TupleText(axes_),
              " has ", axes_.size(), " entries but the input has ", ndim, " dims");
    std::vector<bool> seen(ndim, false);
    for (int d = 0; d < ndim; ++d) {
      int axis = 0;
      MXL_CHECK(ResolveAxis(axes_[d], ndim, &axis) && !seen[axis], "attribute axes=",
                TupleText(axes_), " is not a permutation of the ", ndim, " input dims");
      seen[axis] = true;
      (*order)[d] = axis;
    }
    return Status();
  }

  std::vector<int64_t> axes_;
  bool swap_ = false;
  int64_t dim1_ = 0, dim2_ = 0;
};

Status CreateTranspose(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  std::vector<int64_t> axes = attrs->Tuple("axes", {});
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new Permute(axes));
  return Status();
}

Status CreateSwapAxis(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  int64_t dim1 = attrs->Int("dim1", 0);
  int64_t dim2 = attrs->Int("dim2", 0);
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new Permute(dim1, dim2));
  return Status();
}

// ---------------------------------------------------------------------------
// slice, slice_axis, slice_like

// Narrows `view` along `axis` to begin, begin+step, ... (count elements).
void NarrowView(int axis, int64_t begin, int64_t step, int64_t count, GatherView* view) {
  view->offset += begin * view->strides[axis];
  view->strides[axis] *= step;
  view->view_shape[axis] = count;
}

class Slice : public GatherOp {
 public:
  Slice(std::vector<int64_t> begin, std::vector<int64_t> end, std::vector<int64_t> step)
      : begin_(std::move(begin)), end_(std::move(end)), step_(std::move(step)) {}

  Status MakeView(const std::vector<Shape>& in, Shape* oshape, GatherView* view) const override {
    const Shape& data = in[0];
    MXL_CHECK(static_cast<int>(begin_.size()) <= data.ndim(), "attribute begin=",
              TupleText(begin_), " has more entries than the input has dims (",
              data.ToString(), ")");
    *view = DenseView(data);
    for (size_t i = 0; i < begin_.size(); ++i) {
      const int64_t step = i < step_.size() && step_[i] != kNoneInt ? step_[i] : 1;
      const int64_t len = data[static_cast<int>(i)];
      if (len == 0) continue;
      int64_t b = begin_[i] != kNoneInt ? begin_[i] : (step < 0 ? len - 1 : 0);
      int64_t e = end_[i] != kNoneInt ? end_[i] : (step < 0 ? -1 : len);
      if (b < 0) b += len;
      if (e < 0 && end_[i] != kNoneInt) e += len;
      MXL_CHECK(b >= 0 && b < len && e <= len && (end_[i] == kNoneInt || e >= 0), "slice [",
                Text(begin_[i]), ":", Text(end_[i]), ":", step, "] is out of range for dim ", i,
                " of input shape ", data.ToString());
      MXL_CHECK(step > 0 ? b < e : e < b, "slice [", Text(begin_[i]), ":", Text(end_[i]), ":",
                step, "] of dim ", i, " (size ", len, ") is empty, which MXNet does not allow");
      const int64_t count = step > 0 ? (e - b - 1) / step + 1 : (b - e - 1) / (-step) + 1;
      NarrowView(static_cast<int>(i), b, step, count, view);
    }
    *oshape = view->view_shape;
    return Status();
  }

 private:
  static std::string Text(int64_t value) {
    return value == kNoneInt ? "None" : std::to_string(value);
  }
  std::vector<int64_t> begin_, end_, step_;
};

Status CreateSlice(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  std::vector<int64_t> begin = attrs->Tuple("begin");
  std::vector<int64_t> end = attrs->Tuple("end");
  std::vector<int64_t> step = attrs->Tuple("step", {});
  MXL_RETURN_IF_ERROR(attrs->Finish());
  if (end.size() != begin.size()) {
    attrs->Fail("end", StrCat("has ", end.size(), " entries but begin has ", begin.size()));
  } else if (!step.empty() && step.size() != begin.size()) {
    attrs->Fail("step", StrCat("has ", step.size(), " entries but begin has ", begin.size()));
  }
  for (int64_t value : step) {
    if (value == 0) attrs->Fail("step", "a step cannot be 0");
  }
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new Slice(begin, end, step));
  return Status();
}

class SliceAxis : public GatherOp {
 public:
  SliceAxis(int64_t axis, int64_t begin, int64_t end) : axis_(axis), begin_(begin), end_(end) {}

  Status MakeView(const std::vector<Shape>& in, Shape* oshape, GatherView* view) const override {
    const Shape& data = in[0];
    int axis = 0;
    MXL_RETURN_IF_ERROR(CheckAxis(axis_, data, "axis", &axis));
    const int64_t len = data[axis];
    int64_t b = begin_ < 0 ? begin_ + len : begin_;
    int64_t e = end_ == kNoneInt ? len : (end_ < 0 ? end_ + len : end_);
    *view = DenseView(data);
    if (len > 0) {
      MXL_CHECK(b >= 0 && e <= len && b < e, "begin=", begin_, ", end=",
                end_ == kNoneInt ? "None" : std::to_string(end_), " select nothing valid of axis ",
                axis, " (size ", len, ") of input shape ", data.ToString());
      NarrowView(axis, b, 1, e - b, view);
    }
    *oshape = view->view_shape;
    return Status();
  }

 private:
  int64_t axis_, begin_, end_;
};

Status CreateSliceAxis(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  int64_t axis = attrs->Int("axis");
  int64_t begin = attrs->Int("begin");
  int64_t end = attrs->OptionalInt("end");
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new SliceAxis(axis, begin, end));
  return Status();
}

class SliceLike : public GatherOp {
 public:
  explicit SliceLike(std::vector<int64_t> axes) : axes_(std::move(axes)) {}

  std::vector<std::string> InputNames() const override { return {"data", "shape_like"}; }

  Status MakeView(const std::vector<Shape>& in, Shape* oshape, GatherView* view) const override {
    const Shape& data = in[0];
    const Shape& like = in[1];
    *view = DenseView(data);
    std::vector<int> axes;
    if (axes_.empty()) {
      MXL_CHECK(data.ndim() == like.ndim(), "input 'shape_like' has shape ", like.ToString(),
                " but without axes it needs the rank of 'data' ", data.ToString());
      for (int d = 0; d < data.ndim(); ++d) axes.push_back(d);
    } else {
      for (int64_t axis : axes_) {
        int resolved = 0;
        MXL_RETURN_IF_ERROR(CheckAxis(axis, data, "axes", &resolved));
        MXL_CHECK(resolved < like.ndim(), "attribute axes=", TupleText(axes_),
                  ": input 'shape_like' of shape ", like.ToString(), " has no dim ", resolved);
        axes.push_back(resolved);
      }
    }
    for (int axis : axes) {
      MXL_CHECK(like[axis] <= data[axis], "input 'shape_like' has shape ", like.ToString(),
                ", larger than 'data' ", data.ToString(), " along axis ", axis);
      NarrowView(axis, 0, 1, like[axis], view);
    }
    *oshape = view->view_shape;
    return Status();
  }

 private:
  std::vector<int64_t> axes_;
};

Status CreateSliceLike(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  std::vector<int64_t> axes = attrs->Tuple("axes", {});
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new SliceLike(axes));
  return Status();
}

// ---------------------------------------------------------------------------
// reverse (flip)

class Reverse : public GatherOp {
 public:
  explicit Reverse(std::vector<int64_t> axes) : axes_(std::move(axes)) {}

  Status MakeView(const std::vector<Shape>& in, Shape* oshape, GatherView* view) const override {
    const Shape& data = in[0];
    *view = DenseView(data);
    std::vector<bool> flipped(data.ndim(), false);
    for (int64_t axis : axes_) {
      int resolved = 0;
      MXL_RETURN_IF_ERROR(CheckAxis(axis, data, "axis", &resolved));
      MXL_CHECK(!flipped[resolved], "attribute axis=", TupleText(axes_), " names axis ",
                resolved, " twice");
      flipped[resolved] = true;
      if (data[resolved] > 0) NarrowView(resolved, data[resolved] - 1, -1, data[resolved], view);
    }
    *oshape = data;
    return Status();
  }

 private:
  std::vector<int64_t> axes_;
};

Status CreateReverse(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  std::vector<int64_t> axes = attrs->Tuple("axis");
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new Reverse(axes));
  return Status();
}

// ---------------------------------------------------------------------------
// tile, repeat

class Tile : public GatherOp {
 public:
  explicit Tile(std::vector<int64_t> reps) : reps_(std::move(reps)) {}

  Status MakeView(const std::vector<Shape>& in, Shape* oshape, GatherView* view) const override {
    // Align the input dims and the reps from the right; missing ones are 1.
    const Shape& data = in[0];
    if (reps_.empty()) {
      *view = DenseView(data);
      *oshape = data;
      return Status();
    }
    const int ndim = std::max<int>(data.ndim(), static_cast<int>(reps_.size()));
    const std::vector<int64_t> dense = RowMajorStrides(data);
    std::vector<int64_t> view_dims, out_dims;
    view->strides.clear();
    view->offset = 0;
    for (int d = 0; d < ndim; ++d) {
      const int di = d - (ndim - data.ndim());
      const int dr = d - (ndim - static_cast<int>(reps_.size()));
      const int64_t extent = di >= 0 ? data[di] : 1;
      const int64_t rep = dr >= 0 ? reps_[dr] : 1;
      view_dims.push_back(rep);
      view->strides.push_back(0);
      view_dims.push_back(extent);
      view->strides.push_back(di >= 0 ? dense[di] : 0);
      out_dims.push_back(rep * extent);
    }
    view->view_shape = Shape(view_dims);
    *oshape = Shape(out_dims);
    return Status();
  }

 private:
  std::vector<int64_t> reps_;
};

Status CreateTile(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  std::vector<int64_t> reps = attrs->Tuple("reps");
  MXL_RETURN_IF_ERROR(attrs->Finish());
  for (int64_t rep : reps) {
    if (rep < 0) attrs->Fail("reps", StrCat(TupleText(reps), ": repetitions must be >= 0"));
  }
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new Tile(reps));
  return Status();
}

class Repeat : public GatherOp {
 public:
  Repeat(int64_t repeats, int64_t axis) : repeats_(repeats), axis_(axis) {}

  Status MakeView(const std::vector<Shape>& in, Shape* oshape, GatherView* view) const override {
    const Shape& data = in[0];
    if (axis_ == kNoneInt) {  // the flattened input, each element repeated
      // A product past the element limit must not wrap (24 x 2^62 gave an
      // empty output): it is an error naming the counts.
      const int64_t total = Shape::CheckedProduct(data.Size(), repeats_);
      MXL_CHECK(total >= 0, "repeats=", repeats_, " of ", data.Size(),
                " elements gives too many elements (more than ", Shape::kMaxElements, ")");
      view->view_shape = Shape({data.Size(), repeats_});
      view->strides = {1, 0};
      view->offset = 0;
      *oshape = Shape({total});
      return Status();
    }
    int axis = 0;
    MXL_RETURN_IF_ERROR(CheckAxis(axis_, data, "axis", &axis));
    const std::vector<int64_t> dense = RowMajorStrides(data);
    std::vector<int64_t> view_dims = data.dims();
    view->strides = dense;
    view_dims.insert(view_dims.begin() + axis + 1, repeats_);
    view->strides.insert(view->strides.begin() + axis + 1, 0);
    view->view_shape = Shape(view_dims);
    view->offset = 0;
    std::vector<int64_t> out_dims = data.dims();
    out_dims[axis] = Shape::CheckedProduct(out_dims[axis], repeats_);
    MXL_CHECK(out_dims[axis] >= 0 && Shape(out_dims).Size() >= 0, "repeats=", repeats_,
              " along axis ", axis, " of ", data.ToString(), " gives too many elements");
    *oshape = Shape(out_dims);
    return Status();
  }

 private:
  int64_t repeats_, axis_;
};

Status CreateRepeat(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  int64_t repeats = attrs->Int("repeats");
  int64_t axis = attrs->OptionalInt("axis");
  MXL_RETURN_IF_ERROR(attrs->Finish());
  // MXNet's repeats is an int: it refuses a value past 2^31 - 1 as unreadable.
  if (repeats < 0 || repeats > 2147483647) {
    attrs->Fail("repeats", StrCat(repeats, " must be from 0 to 2147483647"));
    return attrs->Finish();
  }
  out->reset(new Repeat(repeats, axis));
  return Status();
}

// ---------------------------------------------------------------------------
// broadcast_to, broadcast_axis, broadcast_like

// Grows dims of extent 1 in `data` to those of `target` (same rank).
Status BroadcastView(const Shape& data, const Shape& target, const char* what, Shape* oshape,
                     GatherView* view) {
  MXL_CHECK(data.ndim() == target.ndim(), what, " ", target.ToString(), " has ", target.ndim(),
            " dims but the input ", data.ToString(), " has ", data.ndim());
  for (int d = 0; d < data.ndim(); ++d) {
    MXL_CHECK(data[d] == target[d] || data[d] == 1, "cannot broadcast input ", data.ToString(),
              " to ", target.ToString(), " (", what, "): dim ", d, " is ", data[d], ", not 1");
  }
  view->view_shape = target;
  view->strides = BroadcastStrides(data, target);
  view->offset = 0;
  *oshape = target;
  return Status();
}

class BroadcastTo : public GatherOp {
 public:
  explicit BroadcastTo(std::vector<int64_t> shape) : shape_(std::move(shape)) {}

  Status MakeView(const std::vector<Shape>& in, Shape* oshape, GatherView* view) const override {
    const Shape& data = in[0];
    MXL_CHECK(static_cast<int>(shape_.size()) == data.ndim(), "attribute shape=",
              TupleText(shape_), " has ", shape_.size(), " dims but the input ", data.ToString(),
              " has ", data.ndim());
    std::vector<int64_t> dims = shape_;
    for (int d = 0; d < data.ndim(); ++d) {
      if (dims[d] == 0) dims[d] = data[d];  // 0 keeps the input dim
    }
    return BroadcastView(data, Shape(dims), "attribute shape", oshape, view);
  }

 private:
  std::vector<int64_t> shape_;
};

Status CreateBroadcastTo(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  std::vector<int64_t> shape = attrs->Tuple("shape", {});
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new BroadcastTo(shape));
  return Status();
}

class BroadcastAxis : public GatherOp {
 public:
  BroadcastAxis(std::vector<int64_t> axes, std::vector<int64_t> sizes)
      : axes_(std::move(axes)), sizes_(std::move(sizes)) {}

  Status MakeView(const std::vector<Shape>& in, Shape* oshape, GatherView* view) const override {
    const Shape& data = in[0];
    Shape target = data;
    for (size_t i = 0; i < axes_.size(); ++i) {
      int axis = 0;
      MXL_RETURN_IF_ERROR(CheckAxis(axes_[i], data, "axis", &axis));
      target[axis] = sizes_[i];
    }
    return BroadcastView(data, target, "attributes axis/size give", oshape, view);
  }

 private:
  std::vector<int64_t> axes_, sizes_;
};

Status CreateBroadcastAxis(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  std::vector<int64_t> axes = attrs->Tuple("axis", {});
  std::vector<int64_t> sizes = attrs->Tuple("size", {});
  MXL_RETURN_IF_ERROR(attrs->Finish());
  if (axes.size() != sizes.size()) {
    attrs->Fail("size", StrCat(TupleText(sizes), " has ", sizes.size(), " entries but axis ",
                               TupleText(axes), " has ", axes.size()));
    return attrs->Finish();
  }
  out->reset(new BroadcastAxis(axes, sizes));
  return Status();
}

class BroadcastLike : public GatherOp {
 public:
  BroadcastLike(bool has_axes, std::vector<int64_t> lhs_axes, std::vector<int64_t> rhs_axes)
      : has_axes_(has_axes), lhs_axes_(std::move(lhs_axes)), rhs_axes_(std::move(rhs_axes)) {}

  std::vector<std::string> InputNames() const override { return {"lhs", "rhs"}; }

  Status MakeView(const std::vector<Shape>& in, Shape* oshape, GatherView* view) const override {
    const Shape& lhs = in[0];
    const Shape& rhs = in[1];
    if (!has_axes_) return BroadcastView(lhs, rhs, "input 'rhs'", oshape, view);
    Shape target = lhs;
    for (size_t i = 0; i < lhs_axes_.size(); ++i) {
      int la = 0, ra = 0;
      MXL_RETURN_IF_ERROR(CheckAxis(lhs_axes_[i], lhs, "lhs_axes", &la));
      MXL_RETURN_IF_ERROR(CheckAxis(rhs_axes_[i], rhs, "rhs_axes", &ra));
      target[la] = rhs[ra];
    }
    return BroadcastView(lhs, target, "the axes of 'rhs' give", oshape, view);
  }

 private:
  bool has_axes_;
  std::vector<int64_t> lhs_axes_, rhs_axes_;
};

Status CreateBroadcastLike(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  std::vector<int64_t> lhs_axes, rhs_axes;
  bool has_lhs = attrs->OptionalTuple("lhs_axes", &lhs_axes);
  bool has_rhs = attrs->OptionalTuple("rhs_axes", &rhs_axes);
  MXL_RETURN_IF_ERROR(attrs->Finish());
  if (has_lhs != has_rhs || lhs_axes.size() != rhs_axes.size()) {
    attrs->Fail("rhs_axes", "lhs_axes and rhs_axes must be given together, with equal lengths");
    return attrs->Finish();
  }
  out->reset(new BroadcastLike(has_lhs, lhs_axes, rhs_axes));
  return Status();
}

// ---------------------------------------------------------------------------
// Crop: a (h, w) window of an (N, C, H, W) input, its size from h_w or from
// the second input (crop_like), at `offset` or centred (center_crop).

class Crop : public GatherOp {
 public:
  Crop(int num_args, std::vector<int64_t> offset, std::vector<int64_t> h_w, bool center)
      : num_args_(num_args), offset_(std::move(offset)), h_w_(std::move(h_w)), center_(center) {}

  std::vector<std::string> InputNames() const override {
    if (num_args_ == 1) return {"data"};
    return {"data", "crop_like"};
  }

  Status MakeView(const std::vector<Shape>& in, Shape* oshape, GatherView* view) const override {
    const Shape& data = in[0];
    MXL_CHECK(data.ndim() == 4, "input 'data' has shape ", data.ToString(),
              " but Crop needs 4-D input (N, C, H, W)");
    int64_t h = h_w_[0], w = h_w_[1];
    if (num_args_ == 2) {
      const Shape& like = in[1];
      MXL_CHECK(like.ndim() == 4, "input 'crop_like' has shape ", like.ToString(),
                " but needs 4 dims");
      h = like[2];
      w = like[3];
    }
    MXL_CHECK(h > 0 && w > 0 && h <= data[2] && w <= data[3], "cannot crop ", h, "x", w,
              " out of input 'data' of shape ", data.ToString());
    const int64_t top = center_ ? (data[2] - h) / 2 : offset_[0];
    const int64_t left = center_ ? (data[3] - w) / 2 : offset_[1];
    MXL_CHECK(top + h <= data[2] && left + w <= data[3], "attribute offset=", TupleText(offset_),
              " puts the ", h, "x", w, " window outside input 'data' of shape ", data.ToString());
    *view = DenseView(data);
    NarrowView(2, top, 1, h, view);
    NarrowView(3, left, 1, w, view);
    *oshape = view->view_shape;
    return Status();
  }

 private:
  int num_args_;
  std::vector<int64_t> offset_, h_w_;
  bool center_;
};

Status CreateCrop(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  const int64_t num_args = attrs->Int("num_args");
  const std::vector<int64_t> offset = attrs->Tuple("offset", {0, 0});
  const std::vector<int64_t> h_w = attrs->Tuple("h_w", {0, 0});
  const bool center = attrs->Bool("center_crop", false);
  MXL_RETURN_IF_ERROR(attrs->Finish());
  if (num_args != 1 && num_args != 2) {
    attrs->Fail("num_args", StrCat(num_args, " must be 1 (size from h_w) or 2 (from crop_like)"));
  } else if (offset.size() != 2 || offset[0] < 0 || offset[1] < 0) {
    attrs->Fail("offset", StrCat(TupleText(offset), " must be two non-negative values"));
  } else if (h_w.size() != 2 || (num_args == 1 && (h_w[0] < 1 || h_w[1] < 1))) {
    attrs->Fail("h_w", StrCat(TupleText(h_w), " must be two positive values with num_args 1"));
  }
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new Crop(static_cast<int>(num_args), offset, h_w, center));
  return Status();
}

// ---------------------------------------------------------------------------
// depth_to_space, space_to_depth (NCHW, MXNet's DCR order)

class DepthSpace : public GatherOp {
 public:
  DepthSpace(bool to_space, int64_t block) : to_space_(to_space), block_(block) {}

  Status MakeView(const std::vector<Shape>& in, Shape* oshape, GatherView* view) const override {
    const Shape& data = in[0];
    MXL_CHECK(data.ndim() == 4, "input 'data' has shape ", data.ToString(),
              " but needs 4 dims (N, C, H, W)");
    const int64_t n = data[0], c = data[1], h = data[2], w = data[3], b = block_;
    view->offset = 0;
    if (to_space_) {
      MXL_CHECK(c % (b * b) == 0, "input 'data' has ", c, " channels, not divisible by ",
                "block_size^2 = ", b * b);
      const int64_t oc = c / (b * b);
      // Output (n, oc, h, i, w, j) reads input channel (i * b + j) * oc + oc_index.
      view->view_shape = Shape({n, oc, h, b, w, b});
      view->strides = {c * h * w, h * w, w, b * oc * h * w, 1, oc * h * w};
      *oshape = Shape({n, oc, h * b, w * b});
    } else {
      MXL_CHECK(h % b == 0 && w % b == 0, "input 'data' has shape ", data.ToString(),
                ": height and width must be divisible by block_size=", b);
      // Output (n, i, j, c, oh, ow) reads input (n, c, oh * b + i, ow * b + j).
      view->view_shape = Shape({n, b, b, c, h / b, w / b});
      view->strides = {c * h * w, w, 1, h * w, b * w, b};
      *oshape = Shape({n, c * b * b, h / b, w / b});
    }
    return Status();
  }

 private:
  bool to_space_;
  int64_t block_;
};

Status CreateDepthSpace(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  int64_t block = attrs->Int("block_size");
  MXL_RETURN_IF_ERROR(attrs->Finish());
  if (block < 1) {
    attrs->Fail("block_size", StrCat(block, " must be at least 1"));
    return attrs->Finish();
  }
  out->reset(new DepthSpace(attrs->op_name() == "depth_to_space", block));
  return Status();
}

}  // namespace layout_op
}  // namespace mxlite
