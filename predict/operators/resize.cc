/*
 * Spatial resizing of NCHW data to a size the attributes or a second input
 * choose (GluonCV's segmentation, pose and attention models).
 *
 * _contrib_AdaptiveAvgPooling2D: output cell (i, j) of an (oh, ow) grid
 * averages input rows [floor(i * H / oh), ceil((i + 1) * H / oh)) and the
 * columns likewise; windows overlap when the ratio is not whole, and an
 * output larger than the input repeats input cells. MXNet's CPU arithmetic
 * (adaptive_avg_pooling.cc), reproduced: the bounds are computed in float
 * (float(i * H) / oh), the window is summed in float row by row, and the sum
 * is divided by the window's width, then by its height.
 *
 * _contrib_BilinearResize2D: bilinear interpolation to a size given by
 * `mode` (bilinear_resize-inl.h and bilinear_resize.cc in MXNet 1.9.1):
 *   scale = align_corners ? float(in - 1) / (out - 1) : float(in) / out
 *           (0 when out == 1);
 *   source = align_corners ? scale * o : max(double(scale) * (o + 0.5) - 0.5, 0)
 *            rounded to float;
 *   i0 = int(source), i1 = i0 + 1 clipped to the input, lambda = source - i0;
 *   y = h0 * (w0 * p00 + w1 * p01) + h1 * (w0 * p10 + w1 * p11),
 * and an output of the input's size is a copy.
 */
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "operator.h"
#include "tensor_util.h"

namespace mxlite {
namespace resize_op {

Status CheckNCHW(const Shape& data, const char* op) {
  MXL_CHECK(data.ndim() == 4, "input 'data' has shape ", data.ToString(), " but ", op,
            " needs (N, C, H, W)");
  return Status();
}

// --------------------------------------------------------------------------
// _contrib_AdaptiveAvgPooling2D
// --------------------------------------------------------------------------

class AdaptiveAvgPooling2D : public Operator {
 public:
  AdaptiveAvgPooling2D(int64_t out_h, int64_t out_w) : out_h_(out_h), out_w_(out_w) {}

  bool ComputesImagesApart(const std::vector<Shape>& image_in) const override {
    (void)image_in;
    return true;
  }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    const Shape& data = (*in)[0];
    if (!data.is_complete()) return Status();
    MXL_RETURN_IF_ERROR(CheckNCHW(data, "AdaptiveAvgPooling2D"));
    MXL_CHECK(data[2] > 0 && data[3] > 0, "input 'data' has shape ", data.ToString(),
              ": nothing to average over");
    return AssignShape(out, 0, Shape({data[0], data[1], out_h_, out_w_}), "output",
                       OutputNames());
  }

  Status Forward(const OpContext&, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const Shape& shape = in[0].shape();
    const int64_t planes = shape[0] * shape[1], in_h = shape[2], in_w = shape[3];
    std::vector<int64_t> h0(out_h_), h1(out_h_), w0(out_w_), w1(out_w_);
    Windows(in_h, out_h_, &h0, &h1);
    Windows(in_w, out_w_, &w0, &w1);
    const float* x = in[0].fdata();
    float* y = out[0].fdata();
    for (int64_t p = 0; p < planes; ++p) {
      const float* plane = x + p * in_h * in_w;
      for (int64_t i = 0; i < out_h_; ++i) {
        for (int64_t j = 0; j < out_w_; ++j) {
          float sum = 0.f;
          for (int64_t h = h0[i]; h < h1[i]; ++h) {
            for (int64_t w = w0[j]; w < w1[j]; ++w) sum += plane[h * in_w + w];
          }
          *y++ = sum / static_cast<float>(w1[j] - w0[j]) / static_cast<float>(h1[i] - h0[i]);
        }
      }
    }
    return Status();
  }

 private:
  // MXNet's START_IND / END_IND: the bounds in float arithmetic.
  static void Windows(int64_t in, int64_t out, std::vector<int64_t>* begin,
                      std::vector<int64_t>* end) {
    for (int64_t i = 0; i < out; ++i) {
      (*begin)[i] = static_cast<int64_t>(
          std::floor(static_cast<float>(i * in) / static_cast<float>(out)));
      (*end)[i] = static_cast<int64_t>(
          std::ceil(static_cast<float>((i + 1) * in) / static_cast<float>(out)));
    }
  }

  int64_t out_h_, out_w_;
};

Status CreateAdaptiveAvgPooling2D(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  const std::vector<int64_t> size = attrs->Tuple("output_size", {});
  MXL_RETURN_IF_ERROR(attrs->Finish());
  // MXNet reads the default, an empty tuple, as 1x1.
  std::vector<int64_t> hw = size.empty() ? std::vector<int64_t>{1} : size;
  if (hw.size() == 1) hw.push_back(hw[0]);
  if (hw.size() != 2 || hw[0] < 1 || hw[1] < 1) {
    attrs->Fail("output_size", StrCat(TupleText(size), " must be one or two positive sizes "
                                      "(the output's height and width)"));
  }
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new AdaptiveAvgPooling2D(hw[0], hw[1]));
  return Status();
}

// --------------------------------------------------------------------------
// _contrib_BilinearResize2D
// --------------------------------------------------------------------------

enum Mode { kSize, kOddScale, kLike, kToEvenDown, kToEvenUp, kToOddDown, kToOddUp };

// One axis of the interpolation: the lower source index, whether a next
// index exists, and the two weights.
struct Taps {
  std::vector<int64_t> index, step;
  std::vector<float> lambda0, lambda1;
};

class BilinearResize2D : public Operator {
 public:
  BilinearResize2D(Mode mode, int64_t height, int64_t width, bool has_scale_h, float scale_h,
                   float scale_w, bool align_corners)
      : mode_(mode), height_(height), width_(width), has_scale_h_(has_scale_h),
        scale_h_(scale_h), scale_w_(scale_w),
        align_corners_(align_corners) {}

  std::vector<std::string> InputNames() const override {
    if (mode_ == kLike) return {"data", "like"};
    return {"data"};
  }
  std::vector<int> UnreadInputs() const override {
    if (mode_ == kLike) return {1};
    return {};
  }

  bool ComputesImagesApart(const std::vector<Shape>& image_in) const override {
    (void)image_in;
    return true;
  }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    const Shape& data = (*in)[0];
    if (!data.is_complete()) return Status();
    MXL_RETURN_IF_ERROR(CheckNCHW(data, "BilinearResize2D"));
    const int64_t h = data[2], w = data[3];
    int64_t oh = 0, ow = 0;
    switch (mode_) {
      case kSize:
        // As MXNet: scale_height switches both dims to their scales.
        oh = has_scale_h_ ? static_cast<int64_t>(static_cast<int>(scale_h_ * static_cast<float>(h)))
                          : height_;
        ow = has_scale_h_ ? static_cast<int64_t>(static_cast<int>(scale_w_ * static_cast<float>(w)))
                          : width_;
        break;
      case kOddScale:
        oh = h % 2 == 0 ? static_cast<int64_t>(static_cast<float>(h) * scale_h_)
                        : static_cast<int64_t>(static_cast<float>(h - 1) * scale_h_) + 1;
        ow = w % 2 == 0 ? static_cast<int64_t>(static_cast<float>(w) * scale_w_)
                        : static_cast<int64_t>(static_cast<float>(w - 1) * scale_w_) + 1;
        break;
      case kLike: {
        const Shape& like = (*in)[1];
        if (!like.is_complete()) return Status();
        MXL_CHECK(like.ndim() == 4, "input 'like' has shape ", like.ToString(),
                  " but BilinearResize2D mode 'like' needs (N, C, H, W)");
        oh = like[2];
        ow = like[3];
        break;
      }
      case kToEvenDown:
        oh = h % 2 == 0 ? h : h - 1;
        ow = w % 2 == 0 ? w : w - 1;
        break;
      case kToEvenUp:
        oh = h % 2 == 0 ? h : h + 1;
        ow = w % 2 == 0 ? w : w + 1;
        break;
      case kToOddDown:
        oh = h % 2 == 1 ? h : h - 1;
        ow = w % 2 == 1 ? w : w - 1;
        break;
      case kToOddUp:
        oh = h % 2 == 1 ? h : h + 1;
        ow = w % 2 == 1 ? w : w + 1;
        break;
    }
    MXL_CHECK(oh >= 1 && ow >= 1 && oh <= 32767 && ow <= 32767, "input 'data' of shape ",
              data.ToString(), " resizes to ", oh, "x", ow,
              ": the output's height and width must be in [1, 32767]");
    MXL_CHECK(h >= 1 && w >= 1, "input 'data' has shape ", data.ToString(),
              ": nothing to interpolate from");
    return AssignShape(out, 0, Shape({data[0], data[1], oh, ow}), "output", OutputNames());
  }

  Status InferType(std::vector<int>* in, std::vector<int>* out) const override {
    return UnifyDTypes(*this, {0}, true, in, out);  // like: only its shape is used
  }

  Status Prepare(const std::vector<NDArray>& in, const std::vector<NDArray>& out,
                 size_t* workspace_bytes) override {
    *workspace_bytes = 0;
    const Shape& x = in[0].shape();
    const Shape& y = out[0].shape();
    MakeTaps(x[2], y[2], &rows_);
    MakeTaps(x[3], y[3], &cols_);
    return Status();
  }

  // Outputs below which one thread resizes alone (a pool's round trip
  // costs about a microsecond).
  static constexpr int64_t kMinParallelOutputs = 16384;

  Status Forward(const OpContext& ctx, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const Shape& xs = in[0].shape();
    const Shape& ys = out[0].shape();
    const int64_t planes = xs[0] * xs[1], in_h = xs[2], in_w = xs[3];
    const int64_t out_h = ys[2], out_w = ys[3];
    const float* x = in[0].fdata();
    float* y = out[0].fdata();
    if (in_h == out_h && in_w == out_w) {
      if (x != y) std::memcpy(y, x, sizeof(float) * static_cast<size_t>(planes * in_h * in_w));
      return Status();
    }
    // Separably: an input row interpolated along its columns (w0 * left +
    // w1 * right, MXNet's inner sums) is kept and serves every output row
    // that reads it, then each output row is h0 * upper + h1 * lower: the
    // same operations in the same order as the direct formula. Output rows
    // split over the pool; the taps are read through locals, which the
    // stores to y cannot alias.
    const float* const col_w0 = cols_.lambda0.data();
    const float* const col_w1 = cols_.lambda1.data();
    const int64_t* const col_index = cols_.index.data();
    const int64_t* const col_step = cols_.step.data();
    const int64_t rows = planes * out_h;
    const int64_t parts = ctx.pool ? std::min<int64_t>(rows, ctx.pool->size()) : 1;
    ParallelFor(parts > 1 && rows * out_w >= kMinParallelOutputs ? ctx.pool : nullptr, parts,
                [&](int64_t part) {
      std::vector<float> held(static_cast<size_t>(2 * out_w));
      float* upper = held.data();
      float* lower = upper + out_w;
      int64_t upper_row = -1, lower_row = -1;  // which input rows (over all planes) they hold
      const auto interpolate = [&](int64_t input_row, float* to) {
        const float* row = x + input_row * in_w;
        for (int64_t j = 0; j < out_w; ++j) {
          const int64_t c0 = col_index[j];
          to[j] = col_w0[j] * row[c0] + col_w1[j] * row[c0 + col_step[j]];
        }
      };
      for (int64_t r = part * rows / parts; r < (part + 1) * rows / parts; ++r) {
        const int64_t p = r / out_h, i = r % out_h;
        const int64_t first = p * in_h + rows_.index[i], second = first + rows_.step[i];
        if (first != upper_row) {
          if (first == lower_row) {
            std::swap(upper, lower);
            std::swap(upper_row, lower_row);
          } else {
            interpolate(first, upper);
            upper_row = first;
          }
        }
        const float* below = upper;
        if (second != first) {
          if (second != lower_row) {
            interpolate(second, lower);
            lower_row = second;
          }
          below = lower;
        }
        const float h0 = rows_.lambda0[i], h1 = rows_.lambda1[i];
        float* out_row = y + r * out_w;
        for (int64_t j = 0; j < out_w; ++j) out_row[j] = h0 * upper[j] + h1 * below[j];
      }
    });
    return Status();
  }

 private:
  void MakeTaps(int64_t in, int64_t out, Taps* taps) const {
    float scale = 0.f;
    if (out > 1) {
      scale = align_corners_ ? static_cast<float>(in - 1) / static_cast<float>(out - 1)
                             : static_cast<float>(in) / static_cast<float>(out);
    }
    taps->index.resize(out);
    taps->step.resize(out);
    taps->lambda0.resize(out);
    taps->lambda1.resize(out);
    for (int64_t o = 0; o < out; ++o) {
      float source;
      if (align_corners_) {
        source = scale * static_cast<float>(o);
      } else {
        // MXNet: scale * (o + 0.5) - 0.5 in double, returned as float.
        source = static_cast<float>(static_cast<double>(scale) * (static_cast<double>(o) + 0.5) -
                                    0.5);
        if (source < 0.f) source = 0.f;
      }
      const int64_t index = static_cast<int64_t>(static_cast<int>(source));
      taps->index[o] = index;
      taps->step[o] = index < in - 1 ? 1 : 0;
      taps->lambda1[o] = source - static_cast<float>(index);
      taps->lambda0[o] = 1.f - taps->lambda1[o];
    }
  }

  Mode mode_;
  int64_t height_, width_;
  bool has_scale_h_;
  float scale_h_;
  float scale_w_;  // read with scale_h_ (MXNet: scale_height switches both)
  bool align_corners_;
  Taps rows_, cols_;
};

Status CreateBilinearResize2D(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  const int64_t height = attrs->Int("height", 1);
  const int64_t width = attrs->Int("width", 1);
  double scale_h = 0, scale_w = 0;
  const bool has_scale_h = attrs->OptionalFloat("scale_height", &scale_h);
  const bool has_scale_w = attrs->OptionalFloat("scale_width", &scale_w);
  const int mode = attrs->Enum("mode", {"size", "odd_scale", "like", "to_even_down",
                                        "to_even_up", "to_odd_down", "to_odd_up"}, 0);
  const bool align_corners = attrs->Bool("align_corners", true);
  MXL_RETURN_IF_ERROR(attrs->Finish());
  if (height < 1) {
    attrs->Fail("height", StrCat(height, " must be at least 1"));
  } else if (width < 1) {
    attrs->Fail("width", StrCat(width, " must be at least 1"));
  } else if (has_scale_h && !(scale_h > 0)) {
    attrs->Fail("scale_height", StrCat(scale_h, " must be positive"));
  } else if (has_scale_w && !(scale_w > 0)) {
    attrs->Fail("scale_width", StrCat(scale_w, " must be positive"));
  } else if (mode == kSize && has_scale_h && !has_scale_w) {
    // MXNet reads scale_width whenever scale_height is given.
    attrs->Fail("scale_width", "is required with scale_height in mode 'size'");
  } else if (mode == kOddScale && !has_scale_h) {
    attrs->Fail("scale_height", "is required in mode 'odd_scale'");
  } else if (mode == kOddScale && !has_scale_w) {
    attrs->Fail("scale_width", "is required in mode 'odd_scale'");
  }
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new BilinearResize2D(static_cast<Mode>(mode), height, width, has_scale_h,
                                  static_cast<float>(scale_h), static_cast<float>(scale_w),
                                  align_corners));
  return Status();
}

}  // namespace resize_op
}  // namespace mxlite
