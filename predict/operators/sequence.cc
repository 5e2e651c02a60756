/*
 * Sequence operators of the classic RNN models: SequenceMask, SequenceLast
 * and SequenceReverse. The data are time-major, (T, N, ...) with axis 0, or
 * batch-major (N, T, ...) with axis 1 (Mask and Last only, as in MXNet).
 * With use_sequence_length a second input holds each batch entry's length
 * (numbers of any type, truncated); without it every sequence is T long.
 *   - SequenceMask: steps at or past a sequence's length become `value`;
 *   - SequenceLast: each sequence's last valid step, the time axis removed;
 *   - SequenceReverse: each sequence's first `length` steps reversed, the
 *     padding after them left in place.
 * Lengths are clamped to [0, T] (SequenceLast to [1, T]).
 */
#include <algorithm>
#include <cstring>

#include "operator.h"
#include "tensor_util.h"

namespace mxlite {
namespace sequence_op {

enum SequenceKind { kMask, kLast, kReverse };

class Sequence : public Operator {
 public:
  Sequence(SequenceKind kind, bool use_length, int64_t axis, float value)
      : kind_(kind), use_length_(use_length), axis_(axis), value_(value) {}

  std::vector<std::string> InputNames() const override {
    if (use_length_) return {"data", "sequence_length"};
    return {"data"};
  }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    const Shape& data = (*in)[0];
    if (!data.is_complete()) return Status();
    MXL_CHECK(data.ndim() >= 2, "input 'data' has shape ", data.ToString(),
              " but needs a time and a batch axis");
    const int64_t batch = data[axis_ == 0 ? 1 : 0];
    if (use_length_) MXL_RETURN_IF_ERROR(AssignShape(in, 1, Shape({batch}), "input", InputNames()));
    if (kind_ != kLast) return AssignShape(out, 0, data, "output", OutputNames());
    std::vector<int64_t> dims = data.dims();
    dims.erase(dims.begin() + axis_);
    return AssignShape(out, 0, Shape(dims), "output", OutputNames());
  }

  Status InferType(std::vector<int>* in, std::vector<int>* out) const override {
    return UnifyDTypes(*this, {0}, false, in, out);  // lengths: any type
  }

  Status Forward(const OpContext&, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const Shape& shape = in[0].shape();
    const int64_t steps = shape[axis_], batch = shape[1 - axis_];
    const int64_t width = shape.ProdRange(2, shape.ndim());  // values per (step, entry)
    // Element (t, n) starts at t * step_stride + n * batch_stride.
    const int64_t step_stride = axis_ == 0 ? batch * width : width;
    const int64_t batch_stride = axis_ == 0 ? width : steps * width;
    const float* x = in[0].fdata();
    float* y = out[0].fdata();
    const size_t bytes = sizeof(float) * static_cast<size_t>(width);
    for (int64_t n = 0; n < batch; ++n) {
      int64_t length = steps;
      if (use_length_) {
        length = std::min<int64_t>(steps, std::max<int64_t>(0, static_cast<int64_t>(in[1].fdata()[n])));
      }
      if (kind_ == kLast) {
        const int64_t t = std::max<int64_t>(length, 1) - 1;
        std::memcpy(y + n * width, x + t * step_stride + n * batch_stride, bytes);
        continue;
      }
      for (int64_t t = 0; t < steps; ++t) {
        float* dst = y + t * step_stride + n * batch_stride;
        if (kind_ == kMask) {
          if (t < length) {
            if (dst != x + t * step_stride + n * batch_stride) {
              std::memcpy(dst, x + t * step_stride + n * batch_stride, bytes);
            }
          } else {
            std::fill(dst, dst + width, value_);
          }
        } else {
          const int64_t source = t < length ? length - 1 - t : t;
          std::memcpy(dst, x + source * step_stride + n * batch_stride, bytes);
        }
      }
    }
    return Status();
  }

 private:
  SequenceKind kind_;
  bool use_length_;
  int64_t axis_;
  float value_;
};

Status CreateSequence(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  const SequenceKind kind = attrs->op_name() == "SequenceMask"   ? kMask
                            : attrs->op_name() == "SequenceLast" ? kLast
                                                                 : kReverse;
  const bool use_length = attrs->Bool("use_sequence_length", false);
  const double value = kind == kMask ? attrs->Float("value", 0.0) : 0.0;
  const int64_t axis = attrs->Int("axis", 0);
  MXL_RETURN_IF_ERROR(attrs->Finish());
  if (axis != 0 && (axis != 1 || kind == kReverse)) {
    attrs->Fail("axis", StrCat(axis, " is not supported (", kind == kReverse ? "0" : "0 or 1",
                               ")"));
    return attrs->Finish();
  }
  out->reset(new Sequence(kind, use_length, axis, static_cast<float>(value)));
  return Status();
}

}  // namespace sequence_op
}  // namespace mxlite
