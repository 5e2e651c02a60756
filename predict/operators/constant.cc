/*
 * Operators whose output depends only on their attributes or on their
 * input's shape, never on data values: _zeros, _ones, _full, _arange,
 * _contrib_arange_like, shape_array, size_array (MXNet's init_op.h and
 * matrix_op.cc), and _contrib_MultiBoxPrior's anchors (contrib/multibox_prior.cc). Prepare computes the output once, when the shapes are
 * bound; Forward copies it into the output buffer (which the memory planner
 * may share with other nodes, so it is written on every run).
 *
 * _arange and _contrib_arange_like follow MXNet's range_fwd: element i is
 * start + (i / repeat) * step, computed in the output's type from start and
 * step converted to that type (so an integer dtype truncates a fractional
 * step, as MXNet does); _arange's length is
 * ceil((stop - start) / step) * repeat in double, and stop omitted (without
 * infer_range) means the range [0, start).
 *
 * _contrib_MultiBoxPrior (SSD's anchors) on data (..., H, W): output
 * (1, H * W * (sizes + ratios - 1), 4), for each cell (row-major) the boxes
 * of every size at ratios[0], then of sizes[0] at each further ratio, as
 * corners (xmin, ymin, xmax, ymax) around the centre
 * ((c + offsets[1]) * step_x, (r + offsets[0]) * step_y), with half-width
 * size * H / W * sqrt(ratio) / 2 and half-height size / sqrt(ratio) / 2, in
 * MXNet's float arithmetic; steps (step_y, step_x) default to 1 / H and 1 / W
 * (a step <= 0 means both are); clip clamps every value into [0, 1].
 */
#include <cmath>
#include <cstring>
#include <utility>

#include "operator.h"
#include "tensor_util.h"

namespace mxlite {
namespace constant_op {

const std::vector<std::string> kAllDTypes = {"float32", "float16", "float64", "bfloat16",
                                             "int32",   "int64",   "int8",    "uint8"};

bool IsIntegerType(int dtype) {
  return dtype == kInt32 || dtype == kInt64 || dtype == kInt8 || dtype == kUint8;
}

// range_fwd in the output's type: float types compute in float32 (mxlite's
// compute type), integer types exactly.
void FillRange(double start, double step, int64_t repeat, int dtype, std::vector<float>* out) {
  const int64_t count = static_cast<int64_t>(out->size());
  if (IsIntegerType(dtype)) {
    const int64_t istart = static_cast<int64_t>(start), istep = static_cast<int64_t>(step);
    for (int64_t i = 0; i < count; ++i) {
      (*out)[i] = static_cast<float>(istart + (i / repeat) * istep);
    }
  } else {
    const float fstart = static_cast<float>(start), fstep = static_cast<float>(step);
    for (int64_t i = 0; i < count; ++i) {
      (*out)[i] = fstart + static_cast<float>(i / repeat) * fstep;
    }
  }
}

// The shape of attribute `shape` as MXNet's legacy (non-numpy) shapes read
// it: () is unknown, and a 0 dim is an unknown dim, both left to what the
// consumers of the output say.
Shape AttrShape(const std::vector<int64_t>& dims) {
  if (dims.empty()) return Shape();
  std::vector<int64_t> known(dims);
  for (int64_t& d : known) {
    if (d == 0) d = -1;
  }
  return Shape(known);
}

// Base: an output precomputed at Prepare and copied out by Forward.
class Precomputed : public Operator {
 public:
  Status Forward(const OpContext&, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    (void)in;
    if (!values_.empty()) {
      std::memcpy(out[0].fdata(), values_.data(), sizeof(float) * values_.size());
    }
    return Status();
  }

 protected:
  std::vector<float> values_;
};

// --------------------------------------------------------------------------
// _zeros, _ones, _full
// --------------------------------------------------------------------------

class Fill : public Precomputed {
 public:
  Fill(const std::vector<int64_t>& shape, int dtype, double value)
      : shape_(shape), dtype_(dtype), value_(value) {}

  std::vector<std::string> InputNames() const override { return {}; }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    (void)in;
    const Shape want = AttrShape(shape_);
    if (!want.rank_known()) return Status();  // the consumers decide
    return AssignShape(out, 0, want, "output", OutputNames());
  }

  Status InferType(std::vector<int>* in, std::vector<int>* out) const override {
    (void)in;
    (*out)[0] = dtype_;
    return Status();
  }

  Status Prepare(const std::vector<NDArray>& in, const std::vector<NDArray>& out,
                 size_t* workspace_bytes) override {
    (void)in;
    *workspace_bytes = 0;
    // MXNet converts the value to the output's type; an integer type
    // truncates it (the executor rounds float results to integers).
    const double value = IsIntegerType(dtype_) ? std::trunc(value_) : value_;
    values_.assign(static_cast<size_t>(out[0].Size()), static_cast<float>(value));
    return Status();
  }

 private:
  std::vector<int64_t> shape_;
  int dtype_;
  double value_;
};

Status CreateFill(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  const std::vector<int64_t> shape = attrs->Tuple("shape", {});
  attrs->Ignore("ctx");
  const int dtype = attrs->DType("dtype", kAllDTypes, 0);
  double value = 0;
  if (attrs->op_name() == "_full") {
    value = attrs->Float("value");
  } else if (attrs->op_name() == "_ones") {
    value = 1;
  }
  MXL_RETURN_IF_ERROR(attrs->Finish());
  for (int64_t d : shape) {
    if (d < 0) {
      attrs->Fail("shape", StrCat(TupleText(shape), " has a negative dim"));
      break;
    }
  }
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new Fill(shape, dtype, value));
  return Status();
}

// --------------------------------------------------------------------------
// _arange
// --------------------------------------------------------------------------

class Arange : public Precomputed {
 public:
  Arange(double start, bool has_stop, double stop, double step, int64_t repeat, int dtype)
      : start_(start), has_stop_(has_stop), stop_(stop), step_(step), repeat_(repeat),
        dtype_(dtype) {}

  std::vector<std::string> InputNames() const override { return {}; }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    (void)in;
    // infer_range without stop: the length comes from the consumers.
    if (!has_stop_) return AssignShape(out, 0, Shape::OfRank(1), "output", OutputNames());
    const double count = std::ceil((stop_ - start_) / step_) * static_cast<double>(repeat_);
    return AssignShape(out, 0, Shape({static_cast<int64_t>(count)}), "output", OutputNames());
  }

  Status InferType(std::vector<int>* in, std::vector<int>* out) const override {
    (void)in;
    (*out)[0] = dtype_;
    return Status();
  }

  Status Prepare(const std::vector<NDArray>& in, const std::vector<NDArray>& out,
                 size_t* workspace_bytes) override {
    (void)in;
    *workspace_bytes = 0;
    values_.resize(static_cast<size_t>(out[0].Size()));
    FillRange(start_, step_, repeat_, dtype_, &values_);
    return Status();
  }

 private:
  double start_;
  bool has_stop_;
  double stop_, step_;
  int64_t repeat_;
  int dtype_;
};

Status CreateArange(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  double start = attrs->Float("start");
  double stop = 0;
  bool has_stop = attrs->OptionalFloat("stop", &stop);
  const double step = attrs->Float("step", 1.0);
  const int64_t repeat = attrs->Int("repeat", 1);
  const bool infer_range = attrs->Bool("infer_range", false);
  attrs->Ignore("ctx");
  const int dtype = attrs->DType("dtype", kAllDTypes, 0);
  MXL_RETURN_IF_ERROR(attrs->Finish());
  if (!infer_range && !has_stop) {  // arange(n): [0, n)
    stop = start;
    start = 0;
    has_stop = true;
  }
  if (step == 0) {
    attrs->Fail("step", "must not be 0");
  } else if (repeat < 1) {
    attrs->Fail("repeat", StrCat(repeat, " must be at least 1"));
  } else if (has_stop && step > 0 && !(start < stop)) {
    attrs->Fail("stop", StrCat(stop, " must be greater than start ", start, " for step ", step));
  } else if (has_stop && step < 0 && !(start > stop)) {
    attrs->Fail("stop", StrCat(stop, " must be less than start ", start, " for step ", step));
  } else if (has_stop && std::ceil((stop - start) / step) * static_cast<double>(repeat) >
                             static_cast<double>(int64_t{1} << 40)) {
    attrs->Fail("stop", StrCat("(", start, ", ", stop, ", ", step, ") with repeat ", repeat,
                               " is too long a range"));
  }
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new Arange(start, has_stop, stop, step, repeat, dtype));
  return Status();
}

// --------------------------------------------------------------------------
// _contrib_arange_like
// --------------------------------------------------------------------------

class ArangeLike : public Precomputed {
 public:
  ArangeLike(double start, double step, int64_t repeat, int64_t axis)
      : start_(start), step_(step), repeat_(repeat), axis_(axis) {}

  std::vector<int> UnreadInputs() const override { return {0}; }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    const Shape& data = (*in)[0];
    if (!data.is_complete()) return Status();
    if (axis_ == kNoneInt) return AssignShape(out, 0, data, "output", OutputNames());
    int axis = 0;
    MXL_RETURN_IF_ERROR(CheckAxis(axis_, data, "axis", &axis));
    return AssignShape(out, 0, Shape({data[axis]}), "output", OutputNames());
  }

  Status InferType(std::vector<int>* in, std::vector<int>* out) const override {
    return UnifyDTypes(*this, {0}, false, in, out);  // MXNet: the input's type
  }

  void SetDTypes(const std::vector<int>& in, const std::vector<int>& out) override {
    (void)in;
    dtype_ = out[0];
  }

  Status Prepare(const std::vector<NDArray>& in, const std::vector<NDArray>& out,
                 size_t* workspace_bytes) override {
    (void)in;
    *workspace_bytes = 0;
    values_.resize(static_cast<size_t>(out[0].Size()));
    FillRange(start_, step_, repeat_, dtype_, &values_);
    return Status();
  }

 private:
  double start_, step_;
  int64_t repeat_, axis_;
  int dtype_ = kFloat32;
};

Status CreateArangeLike(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  const double start = attrs->Float("start", 0.0);
  const double step = attrs->Float("step", 1.0);
  const int64_t repeat = attrs->Int("repeat", 1);
  attrs->Ignore("ctx");
  const int64_t axis = attrs->OptionalInt("axis");
  MXL_RETURN_IF_ERROR(attrs->Finish());
  if (repeat < 1) attrs->Fail("repeat", StrCat(repeat, " must be at least 1"));
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new ArangeLike(start, step, repeat, axis));
  return Status();
}

// --------------------------------------------------------------------------
// shape_array, size_array
// --------------------------------------------------------------------------

class ShapeArray : public Precomputed {
 public:
  explicit ShapeArray(bool size) : size_(size) {}

  std::vector<int> UnreadInputs() const override { return {0}; }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    const Shape& data = (*in)[0];
    if (size_) return AssignShape(out, 0, Shape({1}), "output", OutputNames());
    if (!data.rank_known()) return Status();
    return AssignShape(out, 0, Shape({static_cast<int64_t>(data.ndim())}), "output",
                       OutputNames());
  }

  Status InferType(std::vector<int>* in, std::vector<int>* out) const override {
    (void)in;  // the data: any type
    (*out)[0] = kInt64;
    return Status();
  }

  Status Prepare(const std::vector<NDArray>& in, const std::vector<NDArray>& out,
                 size_t* workspace_bytes) override {
    (void)out;
    *workspace_bytes = 0;
    const Shape& shape = in[0].shape();
    values_.clear();
    if (size_) {
      values_.push_back(static_cast<float>(shape.Size()));
    } else {
      for (int64_t d : shape.dims()) values_.push_back(static_cast<float>(d));
    }
    return Status();
  }

 private:
  bool size_;
};

Status CreateShapeArray(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new ShapeArray(attrs->op_name() == "size_array"));
  return Status();
}

// --------------------------------------------------------------------------
// _contrib_MultiBoxPrior
// --------------------------------------------------------------------------

class MultiBoxPrior : public Precomputed {
 public:
  MultiBoxPrior(std::vector<float> sizes, std::vector<float> ratios, bool clip,
                std::vector<float> steps, std::vector<float> offsets)
      : sizes_(std::move(sizes)),
        ratios_(std::move(ratios)),
        clip_(clip),
        steps_(std::move(steps)),
        offsets_(std::move(offsets)) {}

  std::vector<int> UnreadInputs() const override { return {0}; }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    const Shape& data = (*in)[0];
    if (!data.is_complete()) return Status();
    MXL_CHECK(data.ndim() >= 4, "input 'data' has shape ", data.ToString(),
              " but _contrib_MultiBoxPrior needs (batch, channels, height, width)");
    MXL_CHECK(data[2] > 0 && data[3] > 0, "input 'data' has shape ", data.ToString(),
              ": its height and width must be positive");
    const int64_t anchors = static_cast<int64_t>(sizes_.size() + ratios_.size()) - 1;
    return AssignShape(out, 0, Shape({1, data[2] * data[3] * anchors, 4}), "output",
                       OutputNames());
  }

  Status Prepare(const std::vector<NDArray>& in, const std::vector<NDArray>& out,
                 size_t* workspace_bytes) override {
    *workspace_bytes = 0;
    const int height = static_cast<int>(in[0].shape()[2]);
    const int width = static_cast<int>(in[0].shape()[3]);
    float step_y = steps_[0], step_x = steps_[1];
    if (step_y <= 0 || step_x <= 0) {
      step_y = 1.f / height;
      step_x = 1.f / width;
    }
    values_.resize(static_cast<size_t>(out[0].Size()));
    float* v = values_.data();
    auto box = [&](float center_x, float center_y, float size, float ratio) {
      const float w = size * height / width * ratio / 2;
      const float h = size / ratio / 2;
      *v++ = center_x - w;
      *v++ = center_y - h;
      *v++ = center_x + w;
      *v++ = center_y + h;
    };
    for (int r = 0; r < height; ++r) {
      const float center_y = (r + offsets_[0]) * step_y;
      for (int c = 0; c < width; ++c) {
        const float center_x = (c + offsets_[1]) * step_x;
        const float ratio = std::sqrt(ratios_[0]);
        for (float size : sizes_) box(center_x, center_y, size, ratio);
        for (size_t j = 1; j < ratios_.size(); ++j) {
          box(center_x, center_y, sizes_[0], std::sqrt(ratios_[j]));
        }
      }
    }
    if (clip_) {
      for (float& x : values_) {
        if (x < 0.f) x = 0.f;
        if (x > 1.f) x = 1.f;
      }
    }
    return Status();
  }

 private:
  std::vector<float> sizes_, ratios_;
  bool clip_;
  std::vector<float> steps_, offsets_;
};

Status CreateMultiBoxPrior(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  const std::vector<double> sizes = attrs->FloatTuple("sizes", {1.0});
  const std::vector<double> ratios = attrs->FloatTuple("ratios", {1.0});
  const bool clip = attrs->Bool("clip", false);
  const std::vector<double> steps = attrs->FloatTuple("steps", {-1.0, -1.0});
  const std::vector<double> offsets = attrs->FloatTuple("offsets", {0.5, 0.5});
  MXL_RETURN_IF_ERROR(attrs->Finish());
  if (sizes.empty()) attrs->Fail("sizes", "needs at least one size");
  if (ratios.empty()) attrs->Fail("ratios", "needs at least one ratio");
  if (steps.size() != 2) {
    attrs->Fail("steps", StrCat("has ", steps.size(), " entries: needs 2 (step_y, step_x)"));
  } else if (steps[0] * steps[1] < 0) {
    attrs->Fail("steps", "must give both step_y and step_x (or neither, with -1)");
  }
  if (offsets.size() != 2) {
    attrs->Fail("offsets", StrCat("has ", offsets.size(), " entries: needs 2 (y, x)"));
  } else if (!(offsets[0] >= 0 && offsets[0] <= 1 && offsets[1] >= 0 && offsets[1] <= 1)) {
    attrs->Fail("offsets", "each offset must be in [0, 1]");
  }
  MXL_RETURN_IF_ERROR(attrs->Finish());
  auto to_float = [](const std::vector<double>& values) {
    return std::vector<float>(values.begin(), values.end());
  };
  out->reset(new MultiBoxPrior(to_float(sizes), to_float(ratios), clip, to_float(steps),
                               to_float(offsets)));
  return Status();
}

}  // namespace constant_op
}  // namespace mxlite
