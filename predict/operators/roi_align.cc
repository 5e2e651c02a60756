/*
 * _contrib_ROIAlign (Faster/Mask R-CNN heads): each region of interest
 * averaged into a pooled_size grid by bilinear sampling, no rounding.
 * data (N, C, H, W), rois (R, 5): batch index, then x1, y1, x2, y2 in image
 * coordinates; output (R, C, ph, pw), or with position_sensitive
 * (R, C / (ph * pw), ph, pw), bin (i, j) of channel c reading input channel
 * c * ph * pw + i * pw + j (R-FCN's PSRoIAlign).
 *
 * MXNet 1.9.1's CPU arithmetic (contrib/roi_align.cc, from Caffe2), in
 * float, in its order:
 *   start = x1 * spatial_scale - offset, end likewise (offset 0.5 when
 *   aligned, else 0); extent = end - start, at least 1 unless aligned
 *   (aligned: an extent <= 0 is an error, as MXNet's CHECK);
 *   bin = extent / pooled; a bin averages grid_h x grid_w samples, the grid
 *   sample_ratio per side when > 0, else ceil(extent / pooled);
 *   sample (iy, ix) of bin (ph, pw) at y = start_h + ph * bin_h +
 *   (iy + .5) * bin_h / grid_h (x alike); a sample with y < -1, y > H,
 *   x < -1 or x > W counts 0; otherwise y, x below 0 move to 0, and a
 *   sample at or past the last row (column) reads that row (column) alone;
 *   the four corners are weighted (1-ly)(1-lx), (1-ly)lx, ly(1-lx), ly lx.
 * The four weights are products of one factor per axis, and a sample left
 * out has zero factors, so the average is separable: each input row that
 * some sample reads is first interpolated along x at every bin column
 * (SeparablePlan), and the output bins then combine those rows along y. A
 * region whose samples share rows (one a few feature pixels tall, as most
 * are) reads each row once instead of once per sample. The sums run in
 * another order than MXNet's (per axis), within float rounding of its.
 * position_sensitive reads a different channel in each bin: there each bin
 * sums its samples from the same per-axis plan.
 * The batch index is truncated to an int. A negative one leaves the ROI out:
 * its output is 0 (MXNet documents 0 but its kernel zeroes a single element
 * and leaves the rest of the ROI unwritten); one past the batch is an error
 * (MXNet would read out of bounds).
 */
#include <algorithm>
#include <cmath>
#include <vector>

#include "../kernels/thread_pool.h"
#include "operator.h"
#include "tensor_util.h"

namespace mxlite {
namespace roi_align_op {

// The most bilinear samples one roi may take (all its bins together): far
// beyond any real feature map, a bound on one roi's work.
constexpr double kMaxSamples = 1 << 26;

// One sample's place along one axis: its two neighbouring rows (or columns)
// and their weights; a sample outside the map has zero weights on row 0.
struct AxisSample {
  int64_t low = 0, high = 0;
  float w_low = 0.f, w_high = 0.f;
};

// A region's samples, axis by axis, and (for the separable path) the input
// rows they read: slot k of `interpolated` holds row rows[k]; row_slot maps
// a row to its slot.
struct SeparablePlan {
  std::vector<AxisSample> ys, xs;  // (ph, iy) and (pw, ix), in order
  std::vector<int64_t> rows, row_slot;
  std::vector<float> interpolated;  // rows x pooled_w: each row along x
};

class ROIAlign : public Operator {
 public:
  ROIAlign(int64_t pooled_h, int64_t pooled_w, float scale, int64_t sample_ratio,
           bool position_sensitive, bool aligned)
      : pooled_h_(pooled_h),
        pooled_w_(pooled_w),
        scale_(scale),
        sample_ratio_(sample_ratio),
        position_sensitive_(position_sensitive),
        aligned_(aligned) {}

  std::vector<std::string> InputNames() const override { return {"data", "rois"}; }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    const Shape& data = (*in)[0];
    const Shape& rois = (*in)[1];
    if (!data.is_complete() || !rois.is_complete()) return Status();
    MXL_CHECK(data.ndim() == 4, "input 'data' has shape ", data.ToString(),
              " but _contrib_ROIAlign needs (N, C, H, W)");
    MXL_CHECK(rois.ndim() == 2 && rois[1] == 5, "input 'rois' has shape ", rois.ToString(),
              " but needs (R, 5): batch index, x1, y1, x2, y2");
    int64_t channels = data[1];
    if (position_sensitive_) {
      const int64_t bins = pooled_h_ * pooled_w_;
      MXL_CHECK(channels % bins == 0, "input 'data' has ", channels,
                " channels: position_sensitive needs a multiple of pooled_size's ", bins,
                " bins");
      channels /= bins;
    }
    return AssignShape(out, 0, Shape({rois[0], channels, pooled_h_, pooled_w_}), "output",
                       OutputNames());
  }

  Status InferType(std::vector<int>* in, std::vector<int>* out) const override {
    return UnifyDTypes(*this, {0, 1}, true, in, out);
  }

  Status Forward(const OpContext& ctx, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const Shape& shape = in[0].shape();
    const int64_t batch = shape[0], height = shape[2], width = shape[3];
    const int64_t channels = out[0].shape()[1];  // pooled channels
    const int64_t in_channels = shape[1];
    const int64_t count = in[1].shape()[0];
    const float* rois = in[1].fdata();
    const int64_t bins = pooled_h_ * pooled_w_;
    // Check every ROI first, so that an error leaves no partial output behind.
    for (int64_t r = 0; r < count; ++r) {
      const float* roi = rois + r * 5;
      MXL_CHECK(!(roi[0] >= static_cast<float>(batch)), "roi ", r, " names batch index ",
                roi[0], " but the data has ", batch, " images");
      for (int k = 0; k < 5; ++k) {
        MXL_CHECK(std::isfinite(roi[k]), "roi ", r, " has a non-finite value ", roi[k]);
      }
      if (roi[0] <= -1.f) continue;  // left out
      const Box box = MakeBox(roi);
      if (aligned_) {
        MXL_CHECK(box.width > 0.f && box.height > 0.f, "roi ", r, " (", roi[1], ", ", roi[2],
                  ", ", roi[3], ", ", roi[4], ") is empty at spatial_scale ", scale_,
                  ": with aligned=True its width and height must be positive (MXNet checks "
                  "roi_width > 0 and roi_height > 0)");
      }
      const double grid = static_cast<double>(GridSide(box.height, pooled_h_)) *
                          static_cast<double>(GridSide(box.width, pooled_w_));
      MXL_CHECK(grid * static_cast<double>(bins) <= kMaxSamples, "roi ", r, " (", roi[1], ", ",
                roi[2], ", ", roi[3], ", ", roi[4], ") needs ", grid,
                " samples per bin: more than mxlite takes (", kMaxSamples, " per roi)");
    }
    const float* data = in[0].fdata();
    float* y = out[0].fdata();
    ParallelFor(count > 1 ? ctx.pool : nullptr, count, [&](int64_t r) {
      const float* roi = rois + r * 5;
      float* top = y + r * channels * bins;
      if (roi[0] <= -1.f) {  // a batch index below 0 once truncated
        std::fill(top, top + channels * bins, 0.f);
        return;
      }
      const int64_t image = static_cast<int64_t>(roi[0]);
      const Box box = MakeBox(roi);
      const float bin_h = box.height / static_cast<float>(pooled_h_);
      const float bin_w = box.width / static_cast<float>(pooled_w_);
      const int grid_h = static_cast<int>(GridSide(box.height, pooled_h_));
      const int grid_w = static_cast<int>(GridSide(box.width, pooled_w_));
      const float samples_per_bin = static_cast<float>(grid_h * grid_w);
      thread_local SeparablePlan plan;
      PlanAxis(box.start_h, bin_h, grid_h, pooled_h_, height, &plan.ys);
      PlanAxis(box.start_w, bin_w, grid_w, pooled_w_, width, &plan.xs);
      if (!position_sensitive_) PlanRows(height, &plan);
      const int64_t plane = height * width;
      const float* image_data = data + image * in_channels * plane;
      for (int64_t c = 0; c < channels; ++c) {
        if (position_sensitive_) {
          PoolPositionSensitive(plan, image_data + c * bins * plane, plane, width, grid_h,
                                grid_w, samples_per_bin, top + c * bins);
        } else {
          PoolSeparable(plan, image_data + c * plane, width, grid_h, grid_w, samples_per_bin,
                        top + c * bins);
        }
      }
    });
    return Status();
  }

 private:
  struct Box {
    float start_w, start_h, width, height;
  };

  // Samples per bin along one side: sample_ratio, else ceil(extent / pooled).
  float GridSide(float extent, int64_t pooled) const {
    if (sample_ratio_ > 0) return static_cast<float>(sample_ratio_);
    return std::ceil(extent / static_cast<float>(pooled));
  }

  Box MakeBox(const float* roi) const {
    const float offset = aligned_ ? 0.5f : 0.f;
    Box box;
    box.start_w = roi[1] * scale_ - offset;
    box.start_h = roi[2] * scale_ - offset;
    const float end_w = roi[3] * scale_ - offset;
    const float end_h = roi[4] * scale_ - offset;
    box.width = end_w - box.start_w;
    box.height = end_h - box.start_h;
    if (!aligned_) {  // malformed ROIs count as 1x1
      box.width = std::max(box.width, 1.f);
      box.height = std::max(box.height, 1.f);
    }
    return box;
  }

  // Sample coordinate v along an axis of `size` (one axis of MXNet's
  // pre_calc_for_bilinear_interpolate). Off the map (below -1 or past
  // size) it has zero weights, which leave the whole sample out, whatever
  // its coordinate along the other axis.
  static AxisSample AxisAt(float v, int64_t size) {
    AxisSample a;
    if (v < -1.0 || v > size) return a;
    if (v <= 0) v = 0;
    a.low = static_cast<int>(v);
    if (a.low >= size - 1) {
      a.high = a.low = size - 1;
      v = static_cast<float>(a.low);
    } else {
      a.high = a.low + 1;
    }
    a.w_high = v - static_cast<float>(a.low);
    a.w_low = 1.f - a.w_high;
    return a;
  }

  // The samples along one axis of `size`: grid per bin, pooled bins of
  // `bin` from `start`, in (bin, sample) order.
  static void PlanAxis(float start, float bin, int grid, int64_t pooled, int64_t size,
                       std::vector<AxisSample>* samples) {
    samples->resize(static_cast<size_t>(pooled * grid));
    for (int64_t p = 0; p < pooled; ++p) {
      for (int i = 0; i < grid; ++i) {
        const float v = start + static_cast<float>(p) * bin +
                        static_cast<float>(i + .5f) * bin / static_cast<float>(grid);
        (*samples)[p * grid + i] = AxisAt(v, size);
      }
    }
  }

  // The input rows the y samples read, each given a slot of `interpolated`.
  void PlanRows(int64_t height, SeparablePlan* plan) const {
    plan->row_slot.assign(static_cast<size_t>(height), -1);
    plan->rows.clear();
    for (const AxisSample& a : plan->ys) {
      for (int64_t row : {a.low, a.high}) {
        if (plan->row_slot[row] < 0) {
          plan->row_slot[row] = static_cast<int64_t>(plan->rows.size());
          plan->rows.push_back(row);
        }
      }
    }
    plan->interpolated.resize(plan->rows.size() * static_cast<size_t>(pooled_w_));
  }

  // One channel's bins (plane: its input, out: its pooled_h x pooled_w).
  void PoolSeparable(SeparablePlan& plan, const float* plane, int64_t width, int grid_h,
                     int grid_w, float samples_per_bin, float* out) const {
    const int64_t pooled_w = pooled_w_;
    float* interpolated = plan.interpolated.data();
    for (size_t k = 0; k < plan.rows.size(); ++k) {
      const float* row = plane + plan.rows[k] * width;
      float* line = interpolated + static_cast<int64_t>(k) * pooled_w;
      const AxisSample* x = plan.xs.data();
      for (int64_t pw = 0; pw < pooled_w; ++pw) {
        float sum = 0.f;
        for (int ix = 0; ix < grid_w; ++ix, ++x) {
          sum += x->w_low * row[x->low] + x->w_high * row[x->high];
        }
        line[pw] = sum;
      }
    }
    const AxisSample* y = plan.ys.data();
    for (int64_t ph = 0; ph < pooled_h_; ++ph) {
      float* bin_row = out + ph * pooled_w;
      std::fill(bin_row, bin_row + pooled_w, 0.f);
      for (int iy = 0; iy < grid_h; ++iy, ++y) {
        const float* low = interpolated + plan.row_slot[y->low] * pooled_w;
        const float* high = interpolated + plan.row_slot[y->high] * pooled_w;
        for (int64_t pw = 0; pw < pooled_w; ++pw) {
          bin_row[pw] += y->w_low * low[pw] + y->w_high * high[pw];
        }
      }
      for (int64_t pw = 0; pw < pooled_w; ++pw) bin_row[pw] /= samples_per_bin;
    }
  }

  // One output channel of position_sensitive: bin `bin` reads input plane
  // planes + bin * plane_size and sums its own samples.
  void PoolPositionSensitive(const SeparablePlan& plan, const float* planes, int64_t plane_size,
                             int64_t width, int grid_h, int grid_w, float samples_per_bin,
                             float* out) const {
    for (int64_t ph = 0; ph < pooled_h_; ++ph) {
      for (int64_t pw = 0; pw < pooled_w_; ++pw) {
        const float* plane = planes + (ph * pooled_w_ + pw) * plane_size;
        float sum = 0.f;
        for (int iy = 0; iy < grid_h; ++iy) {
          const AxisSample& y = plan.ys[ph * grid_h + iy];
          const float* low = plane + y.low * width;
          const float* high = plane + y.high * width;
          for (int ix = 0; ix < grid_w; ++ix) {
            const AxisSample& x = plan.xs[pw * grid_w + ix];
            sum += y.w_low * (x.w_low * low[x.low] + x.w_high * low[x.high]) +
                   y.w_high * (x.w_low * high[x.low] + x.w_high * high[x.high]);
          }
        }
        out[ph * pooled_w_ + pw] = sum / samples_per_bin;
      }
    }
  }

  int64_t pooled_h_, pooled_w_;
  float scale_;
  int64_t sample_ratio_;
  bool position_sensitive_, aligned_;
};

Status CreateROIAlign(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  const std::vector<int64_t> pooled = attrs->Tuple("pooled_size");
  const double scale = attrs->Float("spatial_scale");
  const int64_t sample_ratio = attrs->Int("sample_ratio", -1);
  const bool position_sensitive = attrs->Bool("position_sensitive", false);
  const bool aligned = attrs->Bool("aligned", false);
  MXL_RETURN_IF_ERROR(attrs->Finish());
  if (pooled.size() != 2 || pooled[0] < 1 || pooled[1] < 1) {
    attrs->Fail("pooled_size", StrCat(TupleText(pooled), " must be two positive sizes (h, w)"));
  } else if (!(scale >= 0 && scale <= 1)) {
    attrs->Fail("spatial_scale", StrCat(scale, " must be in [0, 1] (MXNet's range)"));
  }
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new ROIAlign(pooled[0], pooled[1], static_cast<float>(scale), sample_ratio,
                          position_sensitive, aligned));
  return Status();
}

}  // namespace roi_align_op
}  // namespace mxlite
