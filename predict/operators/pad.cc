/*
 * Pad (alias pad): widens the spatial dims of a 4-D or 5-D input by
 * pad_width = (before_0, after_0, before_1, after_1, ...), whose entries for
 * the batch and channel dims must be 0, as in MXNet. Modes:
 *   constant  the new elements are constant_value;
 *   edge      they repeat the nearest edge element;
 *   reflect   they mirror the input about its edge element, which is not
 *             repeated (numpy's "reflect"); a pad must be smaller than the
 *             dim.
 * Every output dim has a table mapping output index to input index (-1 for
 * a constant element); the copy walks output rows through those tables.
 */
#include <algorithm>

#include "operator.h"
#include "tensor_util.h"

namespace mxlite {
namespace pad_op {

enum PadMode { kConstant, kEdge, kReflect };

class Pad : public Operator {
 public:
  Pad(PadMode mode, std::vector<int64_t> widths, float value)
      : mode_(mode), widths_(std::move(widths)), value_(value) {}

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    const Shape& data = (*in)[0];
    if (!data.is_complete()) return Status();
    MXL_CHECK(data.ndim() == 4 || data.ndim() == 5, "input 'data' has shape ", data.ToString(),
              " but Pad supports 4-D and 5-D input only");
    MXL_CHECK(static_cast<int>(widths_.size()) == 2 * data.ndim(), "attribute pad_width=",
              TupleText(widths_), " needs 2 entries per input dim (", 2 * data.ndim(), ")");
    std::vector<int64_t> dims = data.dims();
    for (int d = 0; d < data.ndim(); ++d) {
      const int64_t before = widths_[2 * d], after = widths_[2 * d + 1];
      if (mode_ == kReflect) {
        MXL_CHECK(before < data[d] && after < data[d], "attribute pad_width=",
                  TupleText(widths_), ": reflect padding of dim ", d, " (size ", data[d],
                  ") must be smaller than the dim");
      }
      if (mode_ == kEdge) {
        MXL_CHECK(data[d] > 0 || before + after == 0, "cannot edge-pad the empty dim ", d);
      }
      dims[d] += before + after;
    }
    return AssignShape(out, 0, Shape(dims), "output", OutputNames());
  }

  Status Prepare(const std::vector<NDArray>& in, const std::vector<NDArray>& out,
                 size_t* workspace_bytes) override {
    *workspace_bytes = 0;
    const Shape& data = in[0].shape();
    const Shape& oshape = out[0].shape();
    maps_.assign(data.ndim(), {});
    for (int d = 0; d < data.ndim(); ++d) {
      const int64_t before = widths_[2 * d], extent = data[d];
      for (int64_t o = 0; o < oshape[d]; ++o) {
        int64_t i = o - before;
        if (i < 0 || i >= extent) {
          if (mode_ == kConstant) {
            i = -1;
          } else if (mode_ == kEdge) {
            i = i < 0 ? 0 : extent - 1;
          } else {
            i = i < 0 ? -i : 2 * (extent - 1) - i;
          }
        }
        maps_[d].push_back(i);
      }
    }
    return Status();
  }

  Status Forward(const OpContext&, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const Shape& data = in[0].shape();
    const Shape& oshape = out[0].shape();
    const int ndim = oshape.ndim();
    const std::vector<int64_t> strides = RowMajorStrides(data);
    const float* x = in[0].fdata();
    float* y = out[0].fdata();
    const int64_t width = oshape[ndim - 1];
    const std::vector<int64_t>& last = maps_[ndim - 1];
    std::vector<int64_t> index(ndim - 1, 0);
    const int64_t rows = oshape.ProdRange(0, ndim - 1);
    for (int64_t row = 0; row < rows; ++row, y += width) {
      // The source row, or none when any outer index falls in a constant pad.
      int64_t base = 0;
      bool constant = false;
      for (int d = 0; d < ndim - 1; ++d) {
        const int64_t i = maps_[d][index[d]];
        constant |= i < 0;
        base += i * strides[d];
      }
      if (constant) {
        std::fill(y, y + width, value_);
      } else {
        const float* src = x + base;
        for (int64_t o = 0; o < width; ++o) y[o] = last[o] < 0 ? value_ : src[last[o]];
      }
      for (int d = ndim - 2; d >= 0; --d) {
        if (++index[d] < oshape[d]) break;
        index[d] = 0;
      }
    }
    return Status();
  }

 private:
  PadMode mode_;
  std::vector<int64_t> widths_;
  float value_;
  std::vector<std::vector<int64_t>> maps_;
};

Status CreatePad(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  const int mode = attrs->Enum("mode", {"constant", "edge", "reflect"}, -1);
  const std::vector<int64_t> widths = attrs->Tuple("pad_width");
  const double value = attrs->Float("constant_value", 0.0);
  MXL_RETURN_IF_ERROR(attrs->Finish());
  for (size_t i = 0; i < widths.size(); ++i) {
    if (widths[i] < 0) {
      attrs->Fail("pad_width", StrCat(TupleText(widths), ": widths must not be negative"));
    } else if (i < 4 && widths[i] != 0) {
      attrs->Fail("pad_width", StrCat(TupleText(widths), ": the batch and channel dims (the ",
                                      "first four entries) cannot be padded"));
    }
  }
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new Pad(static_cast<PadMode>(mode), widths, static_cast<float>(value)));
  return Status();
}

}  // namespace pad_op
}  // namespace mxlite
