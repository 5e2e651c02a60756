/*
 * clip: y = min(max(x, a_min), a_max). mobilenetv2's relu6 is clip(0, 6).
 * The tensor is split over the thread pool in runs of kElementwiseChunk.
 */
#include <algorithm>

#include "../kernels/thread_pool.h"
#include "operator.h"

namespace mxlite {
namespace clip_op {

class Clip : public Operator {
 public:
  Clip(float low, float high) : low_(low), high_(high) {}

  bool ComputesImagesApart(const std::vector<Shape>& image_in) const override {
    (void)image_in;
    return true;
  }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    MXL_RETURN_IF_ERROR(AssignShape(out, 0, (*in)[0], "output", OutputNames()));
    return AssignShape(in, 0, (*out)[0], "input", InputNames());
  }

  Status Forward(const OpContext& ctx, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const float* x = in[0].fdata();
    float* y = out[0].fdata();
    ParallelRanges(ctx.pool, in[0].Size(), kElementwiseChunk, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) y[i] = std::min(std::max(x[i], low_), high_);
    });
    return Status();
  }

 private:
  float low_, high_;
};

Status CreateClip(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  double low = attrs->Float("a_min");
  double high = attrs->Float("a_max");
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new Clip(static_cast<float>(low), static_cast<float>(high)));
  return Status();
}

}  // namespace clip_op
}  // namespace mxlite
