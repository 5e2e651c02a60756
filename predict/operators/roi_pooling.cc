/*
 * ROIPooling (Fast/Faster R-CNN heads): max pooling of each region of
 * interest into a fixed pooled_size grid. rois is (R, 5): batch index, then
 * x1, y1, x2, y2 in input-image coordinates, scaled to the feature map by
 * spatial_scale. MXNet's CPU arithmetic (roi_pooling.cc), reproduced:
 *   start = round(x1 * scale), end = round(x2 * scale) (half away from zero),
 *   extent = max(end - start + 1, 1), bin = extent / pooled (float);
 *   bin p covers [floor(p * bin), ceil((p + 1) * bin)) offset by start and
 *   clipped to the map; an empty bin gives 0.
 * The hidden second output is MXNet's argmax (the flat index of the maximum
 * within its plane, -1 for an empty bin).
 */
#include <algorithm>
#include <cfloat>
#include <cmath>

#include "operator.h"
#include "tensor_util.h"

namespace mxlite {
namespace roi_pooling_op {

class ROIPooling : public Operator {
 public:
  ROIPooling(int64_t pooled_h, int64_t pooled_w, float scale)
      : pooled_h_(pooled_h), pooled_w_(pooled_w), scale_(scale) {}

  std::vector<std::string> InputNames() const override { return {"data", "rois"}; }
  std::vector<std::string> OutputNames() const override { return {"output", "maxidx"}; }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    const Shape& data = (*in)[0];
    const Shape& rois = (*in)[1];
    if (!data.is_complete() || !rois.is_complete()) return Status();
    MXL_CHECK(data.ndim() == 4, "input 'data' has shape ", data.ToString(),
              " but ROIPooling needs (N, C, H, W)");
    MXL_CHECK(rois.ndim() == 2 && rois[1] == 5, "input 'rois' has shape ", rois.ToString(),
              " but needs (R, 5): batch index, x1, y1, x2, y2");
    const Shape oshape({rois[0], data[1], pooled_h_, pooled_w_});
    MXL_RETURN_IF_ERROR(AssignShape(out, 0, oshape, "output", OutputNames()));
    return AssignShape(out, 1, oshape, "output", OutputNames());
  }

  Status InferType(std::vector<int>* in, std::vector<int>* out) const override {
    return UnifyDTypes(*this, {0, 1}, true, in, out);
  }

  Status Forward(const OpContext&, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const Shape& shape = in[0].shape();
    const int64_t batch = shape[0], channels = shape[1], height = shape[2], width = shape[3];
    const float* data = in[0].fdata();
    const float* rois = in[1].fdata();
    float* y = out[0].fdata();
    float* argmax = out[1].fdata();
    const int64_t count = in[1].shape()[0];
    for (int64_t r = 0; r < count; ++r) {
      const float* roi = rois + r * 5;
      const int64_t image = static_cast<int64_t>(roi[0]);
      MXL_CHECK(image >= 0 && image < batch, "roi ", r, " names batch index ", roi[0],
                " but the data has ", batch, " images");
      const int64_t start_w = static_cast<int64_t>(std::round(roi[1] * scale_));
      const int64_t start_h = static_cast<int64_t>(std::round(roi[2] * scale_));
      const int64_t end_w = static_cast<int64_t>(std::round(roi[3] * scale_));
      const int64_t end_h = static_cast<int64_t>(std::round(roi[4] * scale_));
      const float bin_h = static_cast<float>(std::max<int64_t>(end_h - start_h + 1, 1)) /
                          static_cast<float>(pooled_h_);
      const float bin_w = static_cast<float>(std::max<int64_t>(end_w - start_w + 1, 1)) /
                          static_cast<float>(pooled_w_);
      for (int64_t c = 0; c < channels; ++c) {
        const float* plane = data + (image * channels + c) * height * width;
        for (int64_t ph = 0; ph < pooled_h_; ++ph) {
          const int64_t h0 = Clip(static_cast<int64_t>(std::floor(ph * bin_h)) + start_h, height);
          const int64_t h1 = Clip(static_cast<int64_t>(std::ceil((ph + 1) * bin_h)) + start_h, height);
          for (int64_t pw = 0; pw < pooled_w_; ++pw) {
            const int64_t w0 = Clip(static_cast<int64_t>(std::floor(pw * bin_w)) + start_w, width);
            const int64_t w1 = Clip(static_cast<int64_t>(std::ceil((pw + 1) * bin_w)) + start_w, width);
            float best = h1 <= h0 || w1 <= w0 ? 0.f : -FLT_MAX;
            int64_t best_index = -1;
            for (int64_t h = h0; h < h1; ++h) {
              for (int64_t w = w0; w < w1; ++w) {
                if (plane[h * width + w] > best) {
                  best = plane[h * width + w];
                  best_index = h * width + w;
                }
              }
            }
            const int64_t index = ((r * channels + c) * pooled_h_ + ph) * pooled_w_ + pw;
            y[index] = best;
            argmax[index] = static_cast<float>(best_index);
          }
        }
      }
    }
    return Status();
  }

 private:
  static int64_t Clip(int64_t value, int64_t extent) {
    return std::min(std::max<int64_t>(value, 0), extent);
  }

  int64_t pooled_h_, pooled_w_;
  float scale_;
};

Status CreateROIPooling(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  const std::vector<int64_t> pooled = attrs->Tuple("pooled_size");
  const double scale = attrs->Float("spatial_scale");
  MXL_RETURN_IF_ERROR(attrs->Finish());
  if (pooled.size() != 2 || pooled[0] < 1 || pooled[1] < 1) {
    attrs->Fail("pooled_size", StrCat(TupleText(pooled), " must be two positive sizes (h, w)"));
  } else if (!(scale > 0)) {
    attrs->Fail("spatial_scale", StrCat(scale, " must be positive"));
  }
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new ROIPooling(pooled[0], pooled[1], static_cast<float>(scale)));
  return Status();
}

}  // namespace roi_pooling_op
}  // namespace mxlite
