/*
 * Convolution: 1-D, 2-D and 3-D, channel-first layouts (NCW, NCHW, NCDHW),
 * with groups, dilation, per-axis kernel/stride/pad and an optional bias.
 *
 * Every case is computed in one three-spatial-dims form: a 1-D or 2-D
 * convolution gets unit dims in front (kernel 1, stride 1, pad 0), which
 * changes neither the arithmetic nor the memory layout.
 *
 * The kernel is chosen in Prepare from the final shapes:
 *   - depthwise (num_group == C == num_filter): a direct loop. Each input
 *     plane meets a single small filter, so a GEMM would have M = 1 and do
 *     nothing useful; instead every filter tap adds a shifted, clipped row of
 *     the input into the output plane (3x3 with stride 1 or 2 has its own
 *     kernel, kernels/depthwise.h);
 *   - pointwise (kernel all 1, stride all 1, pad all 0): the input plane of a
 *     group already is the GEMM's right-hand matrix [C/g, D*H*W], so the
 *     GEMM runs on it directly;
 *   - 3x3 stride-1 layers with enough channels and output tiles (see
 *     WinogradApplies): Winograd F(4x4, 3x3), a quarter of the multiplies;
 *     on AVX-512, such layers on maps of at most 14x14 take F(2x2, 3x3)
 *     (kernels/winograd2x2.h), 1x7 / 7x1 layers take the one-dimensional
 *     F(2, 7) and 5x5 ones F(4, 5) down the rows (kernels/winograd1d.h);
 *   - 2-D layers with at most 4 input channels (network stems), with
 *     AVX-512: a direct kernel that reads the input rows in place of a
 *     column matrix (kernels/direct_conv.h);
 *   - every other 2-D layer: shifted views, one GEMM per group whose depth
 *     segments are the taps, each a view of a few stored copies of the
 *     input displaced by whole rows, so no column matrix (see
 *     ShiftedGeometry; MXLITE_SHIFTED_GEMM=0 sends them to im2col);
 *   - 3-D layers: im2col then GEMM. For each image and group, the
 *     columns matrix holds one row per (input channel, kd, kh, kw) and one
 *     column per output position (zeros where a tap falls in the padding),
 *     and out_g[F/g, OD*OH*OW] = W_g[F/g, C/g*KD*KH*KW] * col. The columns
 *     are built a band of output rows at a time so the scratch stays bounded
 *     (kColumnBytes) and warm in cache while the GEMM consumes it.
 * The bias, and a fused residual and clamp, are applied as each output tile
 * is finished (the GEMM's epilogue, or the direct kernels' last step).
 *
 * Shapes follow MXNet's ConvolutionShape: out = (in + 2*pad - dk) / stride + 1
 * with dk = dilate*(k-1)+1 (floor), weight (num_filter, C/num_group, *kernel),
 * bias (num_filter,). Like MXNet, inference also fills the batch size and,
 * where the stride is 1, an unknown input extent back from the output.
 */
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "../kernels/depthwise.h"
#include "../kernels/direct_conv.h"
#include "../kernels/gemm.h"
#include "../kernels/strided_copy.h"
#include "../kernels/winograd.h"
#include "../kernels/winograd1d.h"
#include "../kernels/winograd2x2.h"
#include "batch_norm_row.h"
#include "operator.h"

namespace mxlite {
namespace convolution_op {

// Upper bound of the im2col scratch; a band is never less than one output row.
// 2 MiB keeps a band in L2/L3 between im2col writing it and the GEMM packing
// it (measured: 7-10% faster on resnet18_v1 and densenet121 than 8 MiB).
constexpr int64_t kColumnBytes = int64_t{2} << 20;

// ceil(a / b) for b > 0 and any sign of a.
inline int64_t CeilDiv(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

std::string TupleString(const std::vector<int64_t>& values) {
  std::string text = "(";
  for (size_t i = 0; i < values.size(); ++i) text += (i ? ", " : "") + std::to_string(values[i]);
  return text + ")";
}

// All sizes in the three-spatial-dims form.
struct Geometry {
  int64_t batch = 0, channels = 0, filters = 0, groups = 1;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  int64_t kernel[3] = {1, 1, 1}, stride[3] = {1, 1, 1}, pad[3] = {0, 0, 0},
          dilate[3] = {1, 1, 1};

  int64_t InSpatial() const { return in[0] * in[1] * in[2]; }
  int64_t OutSpatial() const { return out[0] * out[1] * out[2]; }
  int64_t KernelSize() const { return kernel[0] * kernel[1] * kernel[2]; }
};

// Output positions ow in [*lo, *hi) whose input iw = ow*s + offset lies in
// [0, in), where offset = k*d - p; an empty range comes back as lo == hi.
inline void ValidRange(int64_t in, int64_t out, int64_t stride, int64_t offset, int64_t* lo,
                       int64_t* hi) {
  *lo = std::min<int64_t>(out, std::max<int64_t>(0, CeilDiv(-offset, stride)));
  *hi = std::max<int64_t>(*lo, std::min<int64_t>(out, CeilDiv(in - offset, stride)));
}

// Writes the column-matrix rows of input channel plane `plane` and kernel
// offsets (kd, kh), one row per kw, for output rows [row_begin, row_end)
// (a row is one (od, oh) pair); `col` is the first of those kernel[2] rows,
// each (row_end - row_begin) * OW long.
void Im2ColTapRows(const Geometry& g, const float* plane, int64_t kd, int64_t kh,
                   int64_t row_begin, int64_t row_end, float* col) {
  const int64_t ow_count = g.out[2];
  const int64_t columns = (row_end - row_begin) * ow_count;
  for (int64_t kw = 0; kw < g.kernel[2]; ++kw, col += columns) {
    const int64_t offset_w = kw * g.dilate[2] - g.pad[2];
    if (g.out[0] == 1) {
      // 1-D and 2-D: the band's rows are consecutive output rows, one call.
      const int64_t id = -g.pad[0] + kd * g.dilate[0];
      if (id < 0 || id >= g.in[0]) {
        std::fill(col, col + columns, 0.f);
        continue;
      }
      GatherRowsZeroPadded(plane + id * g.in[1] * g.in[2], g.in[1], g.in[2],
                           row_begin * g.stride[1] - g.pad[1] + kh * g.dilate[1], g.stride[1],
                           row_end - row_begin, offset_w, g.stride[2], ow_count, col);
      continue;
    }
    float* dst = col;
    for (int64_t row = row_begin; row < row_end; ++row, dst += ow_count) {
      const int64_t od = row / g.out[1], oh = row % g.out[1];
      const int64_t id = od * g.stride[0] - g.pad[0] + kd * g.dilate[0];
      const int64_t ih = oh * g.stride[1] - g.pad[1] + kh * g.dilate[1];
      if (id < 0 || id >= g.in[0]) {
        std::fill(dst, dst + ow_count, 0.f);
        continue;
      }
      GatherRowsZeroPadded(plane + id * g.in[1] * g.in[2], g.in[1], g.in[2], ih, 1, 1, offset_w,
                           g.stride[2], ow_count, dst);
    }
  }
}

// One channel of a depthwise convolution: out += filter (*) in, the output
// plane already holding the bias.
void DepthwisePlane(const Geometry& g, const float* in, const float* filter, float* out) {
  const int64_t ow_count = g.out[2];
  for (int64_t kd = 0; kd < g.kernel[0]; ++kd) {
    for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
      for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
        const float tap = *filter++;
        const int64_t offset_w = kw * g.dilate[2] - g.pad[2];
        int64_t lo = 0, hi = 0;
        ValidRange(g.in[2], ow_count, g.stride[2], offset_w, &lo, &hi);
        if (lo == hi) continue;
        for (int64_t od = 0; od < g.out[0]; ++od) {
          const int64_t id = od * g.stride[0] - g.pad[0] + kd * g.dilate[0];
          if (id < 0 || id >= g.in[0]) continue;
          for (int64_t oh = 0; oh < g.out[1]; ++oh) {
            const int64_t ih = oh * g.stride[1] - g.pad[1] + kh * g.dilate[1];
            if (ih < 0 || ih >= g.in[1]) continue;
            const float* src = in + (id * g.in[1] + ih) * g.in[2] + lo * g.stride[2] + offset_w;
            float* dst = out + (od * g.out[1] + oh) * ow_count + lo;
            const int64_t count = hi - lo;
            if (g.stride[2] == 1) {
              for (int64_t i = 0; i < count; ++i) dst[i] += tap * src[i];
            } else {
              const int64_t step = g.stride[2];
              for (int64_t i = 0; i < count; ++i) dst[i] += tap * src[i * step];
            }
          }
        }
      }
    }
  }
}

// Shifted views: a 2-D convolution as one GEMM whose depth segments are
// the taps, each a displaced view of copies of the input, in place of
// im2col's column matrix. Along an axis, output o and tap k read input
// s*o + a, with a = k*d - p. Rows first: write a = s*dy + py (0 <= py < s);
// the input row is s*(o + dy) + py, so all taps with the same py read the
// same rows (every s-th, from py) shifted by dy rows. Columns likewise give
// px and dx, but a shift along a row cannot be a flat offset when the plane
// is as wide as the output, so each distinct (py, px, dx) is one stored
// view: the input's rows py, py+s, ... and columns s*(ow + dx) + px for
// ow in [0, OW), zero outside the input, with span_h extra rows so that
// every tap's dy is a whole-row offset. Output position j = oh*OW + ow of
// tap (dy, view) is then element j + (dy - min dy)*OW of that view: each tap
// is a flat run, read in place by the GEMM (GemmSegmentedB), and the GEMM
// writes the output directly with its epilogue. A 3x3 layer stores 3 views
// per channel at stride 1 and 6 at stride 2, where im2col writes 9; a 7x1
// layer stores 1 against 7. The views are built a band of output rows at a
// time (kColumnBytes) so they stay in cache while the GEMM reads them.
//
// The input is usually cold (made two or more layers back, or too large
// for L2), and a gather reads each plane in short strided runs the
// hardware prefetcher does not follow (at stride 2, every other row). So
// the first view to read a set of rows prefetches the same rows
// `prefetch_planes` planes further on, at least kPrefetchBytes ahead.
// Measured in resnet50_v2, one thread, per node, the same library with and
// without it, min of 8 rounds: the 1x1 stride-2 layers 1058 -> 956 us (256
// -> 512 at 56x56), 1026 -> 990, 1031 -> 993; the 3x3 stride-2 ones 1283 ->
// 1212, 1207 -> 1163, 1200 -> 1183. InceptionV3's (stride 1, 17x17 and
// 35x35) read -2.5% in one run and +7% in another of a noisy hour.
struct ShiftedGeometry {
  int64_t views = 0;          // stored views per channel
  int64_t span_h = 0;         // extra rows per view: max dy - min dy
  int64_t rows_per_band = 0;  // output rows per band
  int64_t plane = 0;          // floats from one stored view to the next
  // Every tap has a view of its own, in tap order, at row offset 0 (a
  // kernel one row tall, such as 1x7): the views are then one plain
  // matrix, im2col's in (tap, channel) order, and the GEMM reads its depth
  // as one segment, in blocks of the full depth-block size.
  bool plain = false;
  // Per view: its first input row (for output row 0) and first column;
  // per tap (kh-major): its view and its row offset in the view (dy - min dy).
  std::vector<int64_t> first_row, first_col, tap_view, tap_row;
  // Per view: whether it is the first with its first_row (views with the
  // same first row read the same input rows); those prefetch.
  std::vector<bool> first_with_rows;
  int64_t prefetch_planes = 1;

  size_t WorkspaceBytes(int64_t channels) const {
    return static_cast<size_t>(views * channels * plane) * sizeof(float);
  }
};

// How far ahead (at least) the views' gather prefetches its input: 1 plane at
// 56x56, 2 at 28x28, 6 at 14x14. 1, 2 and 6 planes measured alike.
constexpr int64_t kPrefetchBytes = 4096;

// Splits a = k*dilate - pad into stride * shift + phase, 0 <= phase < stride.
inline void SplitTap(int64_t k, int64_t dilate, int64_t pad, int64_t stride, int64_t* shift,
                     int64_t* phase) {
  const int64_t a = k * dilate - pad;
  *shift = a >= 0 ? a / stride : -((stride - 1 - a) / stride);
  *phase = a - *shift * stride;
}

// Plans shifted views for a 2-D geometry (false for 3-D: those use im2col).
bool PlanShifted(const Geometry& g, int64_t column_bytes, ShiftedGeometry* plan) {
  if (g.in[0] != 1 || g.kernel[0] != 1) return false;
  ShiftedGeometry& p = *plan;
  p = ShiftedGeometry();
  std::vector<int64_t> dy(static_cast<size_t>(g.kernel[1])), py(dy.size());
  for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
    SplitTap(kh, g.dilate[1], g.pad[1], g.stride[1], &dy[kh], &py[kh]);
  }
  const int64_t min_dy = *std::min_element(dy.begin(), dy.end());
  p.span_h = *std::max_element(dy.begin(), dy.end()) - min_dy;
  for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
    for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
      int64_t dx = 0, px = 0;
      SplitTap(kw, g.dilate[2], g.pad[2], g.stride[2], &dx, &px);
      // A view is known by its first input row and column.
      const int64_t row = g.stride[1] * min_dy + py[kh], col = g.stride[2] * dx + px;
      int64_t view = 0;
      while (view < p.views && !(p.first_row[view] == row && p.first_col[view] == col)) ++view;
      if (view == p.views) {
        p.first_row.push_back(row);
        p.first_col.push_back(col);
        ++p.views;
      }
      p.tap_view.push_back(view);
      p.tap_row.push_back(dy[kh] - min_dy);
    }
  }
  for (int64_t view = 0; view < p.views; ++view) {
    const auto first = p.first_row.begin();
    p.first_with_rows.push_back(std::find(first, first + view, p.first_row[view]) == first + view);
  }
  const int64_t plane_bytes = std::max<int64_t>(1, g.InSpatial() * int64_t{sizeof(float)});
  p.prefetch_planes = (kPrefetchBytes + plane_bytes - 1) / plane_bytes;
  p.plain = g.groups == 1 && p.views == static_cast<int64_t>(p.tap_view.size());
  for (size_t t = 0; t < p.tap_view.size(); ++t) {
    p.plain = p.plain && p.tap_view[t] == static_cast<int64_t>(t) && p.tap_row[t] == 0;
  }
  const int64_t band_row_bytes =
      std::max<int64_t>(1, p.views * g.channels * g.out[2] * int64_t{sizeof(float)});
  p.rows_per_band = std::max<int64_t>(1, std::min(g.out[1], column_bytes / band_row_bytes));
  p.plane = (p.rows_per_band + p.span_h) * g.out[2];
  // Rows a multiple of 8 KiB apart would fall into few cache sets (and the
  // GEMM would then pack B instead of reading it in place).
  if (p.plane % 2048 == 0) p.plane += 16;
  return true;
}

// The one-axis Winograd plan's geometry of a 2-D layer (g.kernel[0] == 1).
Winograd1dGeometry Winograd1dGeometryOf(const Geometry& g) {
  return Winograd1dGeometry{g.channels, g.filters, g.in[1],  g.in[2],     g.out[1],
                            g.out[2],   g.pad[1],   g.pad[2], g.kernel[1], g.kernel[2]};
}

enum Method {
  kIm2col, kPointwise, kDepthwise, kWinograd, kDirect, kShifted, kWinograd2x2, kWinograd1d
};

// MXLITE_WINOGRAD=0 turns the Winograd path off (to compare, or to debug).
inline bool WinogradDisabled() {
  static const bool disabled = [] {
    const char* value = std::getenv("MXLITE_WINOGRAD");
    return value != nullptr && value[0] == '0';
  }();
  return disabled;
}

// MXLITE_SHIFTED_GEMM=0 turns the shifted-view path off (im2col instead).
inline bool ShiftedDisabled() {
  static const bool disabled = [] {
    const char* value = std::getenv("MXLITE_SHIFTED_GEMM");
    return value != nullptr && value[0] == '0';
  }();
  return disabled;
}

// What the graph optimizer folded into this convolution (the internal
// operator _FusedConvolution): a following BatchNorm (its statistics are
// folded into the weights and bias at Prepare), a residual input added to
// the result, and a clamp (relu, relu6/clip); and, for a 1x1 convolution, a
// BatchNorm and clamp before it (a pre-activation network's), applied to
// the input as it is read. Plain Convolution has none.
struct Fusion {
  bool batch_norm = false;
  double bn_eps = 1e-3;
  bool bn_fix_gamma = true;
  bool residual = false;
  float lower = -std::numeric_limits<float>::infinity();
  float upper = std::numeric_limits<float>::infinity();
  bool input_bn = false;
  double in_bn_eps = 1e-3;
  bool in_bn_fix_gamma = true;
  float in_lower = -std::numeric_limits<float>::infinity();
  float in_upper = std::numeric_limits<float>::infinity();
};


class Convolution : public Operator {
 public:
  Convolution(std::vector<int64_t> kernel, std::vector<int64_t> stride,
              std::vector<int64_t> dilate, std::vector<int64_t> pad, int64_t num_filter,
              int64_t num_group, bool no_bias, Fusion fusion)
      : kernel_(std::move(kernel)),
        stride_(std::move(stride)),
        dilate_(std::move(dilate)),
        pad_(std::move(pad)),
        num_filter_(num_filter),
        num_group_(num_group),
        no_bias_(no_bias),
        fusion_(fusion) {}

  std::vector<std::string> InputNames() const override {
    std::vector<std::string> names = {"data", "weight"};
    if (!no_bias_) names.push_back("bias");
    if (fusion_.batch_norm) {
      for (const char* name : {"gamma", "beta", "moving_mean", "moving_var"}) names.push_back(name);
    }
    if (fusion_.residual) names.push_back("residual");
    if (fusion_.input_bn) {
      for (const char* name : {"in_gamma", "in_beta", "in_moving_mean", "in_moving_var"}) {
        names.push_back(name);
      }
    }
    return names;
  }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    const int nk = static_cast<int>(kernel_.size());
    const std::vector<std::string> names = InputNames();
    Shape data = (*in)[0];
    if (!data.rank_known()) return Status();
    MXL_CHECK(data.ndim() == nk + 2, "input 'data' has shape ", data.ToString(), " but a ", nk,
              "-D convolution needs ", nk + 2, "-D input (batch, channel, ",
              nk == 1 ? "width" : nk == 2 ? "height, width" : "depth, height, width", ")");

    // Channels: from the data, else from a known weight.
    int64_t channels = data[1];
    const Shape& weight = (*in)[1];
    if (channels < 0 && weight.rank_known() && weight.ndim() == nk + 2 && weight[1] >= 0) {
      channels = weight[1] * num_group_;
    }
    if (channels >= 0) {
      MXL_CHECK(channels % num_group_ == 0, "input 'data' has shape ", data.ToString(), ": its ",
                channels, " channels are not divisible by num_group=", num_group_);
    }
    std::vector<int64_t> wdims = {num_filter_, channels >= 0 ? channels / num_group_ : -1};
    wdims.insert(wdims.end(), kernel_.begin(), kernel_.end());
    MXL_RETURN_IF_ERROR(AssignShape(in, 1, Shape(wdims), "input", names));
    int next = 2;
    if (!no_bias_) MXL_RETURN_IF_ERROR(AssignShape(in, next++, Shape({num_filter_}), "input", names));
    if (fusion_.batch_norm) {
      for (int i = 0; i < 4; ++i) {
        MXL_RETURN_IF_ERROR(AssignShape(in, next++, Shape({num_filter_}), "input", names));
      }
    }

    std::vector<int64_t> odims = {data[0], num_filter_};
    for (int i = 0; i < nk; ++i) {
      const int64_t extent = data[2 + i];
      if (extent < 0) {
        odims.push_back(-1);
        continue;
      }
      const int64_t padded = extent + 2 * pad_[i];
      const int64_t dk = dilate_[i] * (kernel_[i] - 1) + 1;
      MXL_CHECK(padded >= dk, "input 'data' has shape ", data.ToString(), ": spatial dim ", i,
                " is ", extent, " (", padded, " with padding) but the dilated kernel spans ", dk);
      odims.push_back((padded - dk) / stride_[i] + 1);
    }
    MXL_RETURN_IF_ERROR(AssignShape(out, 0, Shape(odims), "output", OutputNames()));
    if (fusion_.residual) MXL_RETURN_IF_ERROR(AssignShape(in, next, (*out)[0], "input", names));
    if (fusion_.input_bn && channels >= 0) {
      for (int i = 0; i < 4; ++i) {
        MXL_RETURN_IF_ERROR(
            AssignShape(in, InputBnIndex() + i, Shape({channels}), "input", names));
      }
    }

    // Back-fill the data: batch size always, extents where the stride is 1.
    const Shape& oshape = (*out)[0];
    if (oshape.rank_known() && oshape.ndim() == nk + 2) {
      data[0] = oshape[0];
      for (int i = 0; i < nk; ++i) {
        if (data[2 + i] < 0 && oshape[2 + i] >= 0 && stride_[i] == 1) {
          data[2 + i] = oshape[2 + i] + dilate_[i] * (kernel_[i] - 1) - 2 * pad_[i];
        }
      }
    }
    if (data[1] < 0) data[1] = channels;
    return AssignShape(in, 0, data, "input", names);
  }

  Status Prepare(const std::vector<NDArray>& in, const std::vector<NDArray>& out,
                 size_t* workspace_bytes) override {
    const int nk = static_cast<int>(kernel_.size());
    const Shape& data = in[0].shape();
    const Shape& oshape = out[0].shape();
    MXL_CHECK(data.ndim() == nk + 2 && oshape.ndim() == nk + 2, "input 'data' has shape ",
              data.ToString(), " and output ", oshape.ToString(), "; expected rank ", nk + 2);
    Geometry& g = geometry_;
    g = Geometry();
    g.batch = data[0];
    g.channels = data[1];
    g.filters = num_filter_;
    g.groups = num_group_;
    for (int i = 0; i < nk; ++i) {
      const int d = 3 - nk + i;
      g.in[d] = data[2 + i];
      g.out[d] = oshape[2 + i];
      g.kernel[d] = kernel_[i];
      g.stride[d] = stride_[i];
      g.pad[d] = pad_[i];
      g.dilate[d] = dilate_[i];
    }
    MXL_CHECK(g.channels % g.groups == 0, "input 'data' has ", g.channels,
              " channels, not divisible by num_group=", g.groups);

    bool pointwise = true;
    for (int d = 0; d < 3; ++d) {
      if (g.kernel[d] != 1 || g.stride[d] != 1 || g.pad[d] != 0) pointwise = false;
    }
    rows_per_band_ = 0;
    if (g.groups == g.channels && g.groups == g.filters && g.groups > 1) {
      method_ = kDepthwise;
    } else if (pointwise) {
      method_ = kPointwise;
    } else if (g.kernel[0] == 1 && WinogradApplies(g.kernel[1], g.kernel[2], g.stride[1],
                                                   g.stride[2], g.dilate[1], g.dilate[2],
                                                   g.groups, g.channels, g.filters, g.out[1],
                                                   g.out[2]) &&
               !WinogradDisabled()) {
      method_ = kWinograd;
      winograd_.channels = g.channels;
      winograd_.filters = g.filters;
      winograd_.in_h = g.in[1];
      winograd_.in_w = g.in[2];
      winograd_.out_h = g.out[1];
      winograd_.out_w = g.out[2];
      winograd_.pad_h = g.pad[1];
      winograd_.pad_w = g.pad[2];
    } else if (g.kernel[0] == 1 && !WinogradDisabled() &&
               Winograd2x2Applies(g.kernel[1], g.kernel[2], g.stride[1], g.stride[2],
                                  g.dilate[1], g.dilate[2], g.groups, g.channels, g.filters,
                                  g.out[1], g.out[2])) {
      method_ = kWinograd2x2;
    } else if (g.kernel[0] == 1 && !WinogradDisabled() &&
               Winograd1dApplies(g.kernel[1], g.kernel[2], g.stride[1], g.stride[2],
                                 g.dilate[1], g.dilate[2], g.groups, g.channels, g.filters)) {
      method_ = kWinograd1d;
    } else if (g.in[0] == 1 && g.kernel[0] == 1 &&
               DirectConvApplies(g.channels, g.groups, g.kernel[1], g.kernel[2], g.stride[1],
                                 g.stride[2], g.dilate[1], g.dilate[2])) {
      method_ = kDirect;
      direct_ = DirectConvGeometry{g.channels, g.in[1], g.in[2], g.filters, g.kernel[1],
                                   g.kernel[2], g.stride[1], g.pad[1], g.pad[2],
                                   g.out[1], g.out[2]};
    } else if (!ShiftedDisabled() && PlanShifted(g, kColumnBytes, &shifted_)) {
      method_ = kShifted;
    } else {
      method_ = kIm2col;
    }
    depthwise3x3_ = method_ == kDepthwise && g.kernel[0] == 1 && g.kernel[1] == 3 &&
                    g.kernel[2] == 3 &&
                    DepthwiseConv3x3Supported(g.stride[1], g.stride[2], g.dilate[1],
                                              g.dilate[2], g.pad[1], g.pad[2]);
    depthwise_blocked_ = depthwise3x3_ && DepthwiseBlockedApplies(g.in[2]);
    MXL_RETURN_IF_ERROR(FoldWeights(in));
    *workspace_bytes = 0;
    if (fusion_.input_bn) {
      // The graph optimizer folds an input BatchNorm into 1x1 convolutions only.
      MXL_CHECK(method_ == kPointwise && g.groups == 1,
                "an input BatchNorm is folded into 1x1, stride-1, one-group convolutions only");
      const int first = InputBnIndex();
      const float* gamma = in[first].fdata();
      const float* beta = in[first + 1].fdata();
      const float* mean = in[first + 2].fdata();
      const float* var = in[first + 3].fdata();
      in_scale_.resize(static_cast<size_t>(4 * g.channels));
      for (int64_t c = 0; c < g.channels; ++c) {
        in_scale_[4 * c] = mean[c];
        in_scale_[4 * c + 1] = BatchNormInvStd(var[c], fusion_.in_bn_eps);
        in_scale_[4 * c + 2] = gamma[c];
        in_scale_[4 * c + 3] = beta[c];
      }
    }
    if (method_ == kWinograd) *workspace_bytes = winograd_.WorkspaceBytes();
    if (method_ == kWinograd2x2) *workspace_bytes = winograd2x2_.geometry().WorkspaceBytes();
    if (method_ == kWinograd1d) *workspace_bytes = Winograd1dGeometryOf(g).WorkspaceBytes();
    if (method_ == kShifted) *workspace_bytes = shifted_.WorkspaceBytes(g.channels);
    if (method_ == kIm2col) {
      const int64_t depth = g.channels / g.groups * g.KernelSize();
      const int64_t rows = g.out[0] * g.out[1];
      const int64_t row_bytes = std::max<int64_t>(1, depth * g.out[2] * int64_t{sizeof(float)});
      rows_per_band_ = std::max<int64_t>(1, std::min<int64_t>(rows, kColumnBytes / row_bytes));
      *workspace_bytes = static_cast<size_t>(rows_per_band_ * g.out[2] * depth) * sizeof(float);
    }
    return Status();
  }

  Status Forward(const OpContext& ctx, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const Geometry& g = geometry_;
    const float* data = in[0].fdata();
    float* output = out[0].fdata();
    const float* residual = fusion_.residual ? in[ResidualIndex()].fdata() : nullptr;
    const int64_t in_plane = g.InSpatial(), out_plane = g.OutSpatial();
    if (g.batch == 0 || out_plane == 0) return Status();

    if (method_ == kDepthwise) {
      const int64_t planes = g.batch * g.channels;
      if (depthwise_blocked_) {
        const int64_t lanes = kDepthwiseBlockChannels;
        const int64_t blocks = (g.channels + lanes - 1) / lanes;
        ParallelFor(ctx.pool, g.batch * blocks, [&](int64_t task) {
          const int64_t block = task % blocks;
          const int64_t first = (task / blocks) * g.channels + block * lanes;
          DepthwiseBlockArgs args;
          SetDepthwiseGeometry(&args);
          args.input = data + first * in_plane;
          args.channels = std::min(lanes, g.channels - block * lanes);
          args.in_plane = in_plane;
          args.weights = depthwise_block_weights_.data() + block * 9 * lanes;
          args.bias = depthwise_block_bias_.data() + block * lanes;
          args.output = output + first * out_plane;
          args.out_plane = out_plane;
          args.residual = residual ? residual + first * out_plane : nullptr;
          DepthwiseConv3x3Block(args);
        });
        return Status();
      }
      if (depthwise3x3_) {
        ParallelFor(ctx.pool, planes, [&](int64_t plane) {
          const int64_t c = plane % g.channels;
          DepthwisePlaneArgs args;
          SetDepthwiseGeometry(&args);
          args.input = data + plane * in_plane;
          args.weights = weights_.data() + c * 9;
          args.bias = bias_[c];
          args.output = output + plane * out_plane;
          args.residual = residual ? residual + plane * out_plane : nullptr;
          DepthwiseConv3x3Plane(args);
        });
        return Status();
      }
      ParallelFor(ctx.pool, planes, [&](int64_t plane) {
        const int64_t c = plane % g.channels;
        float* dst = output + plane * out_plane;
        std::fill(dst, dst + out_plane, bias_[c]);
        DepthwisePlane(g, data + plane * in_plane, weights_.data() + c * g.KernelSize(), dst);
        GemmEpilogue epilogue = Epilogue(nullptr, residual ? residual + plane * out_plane : nullptr,
                                         out_plane);
        if (epilogue.residual || epilogue.clamps()) {
          ApplyGemmEpilogue(epilogue, 0, 0, 1, out_plane, dst, out_plane);
        }
      });
      return Status();
    }

    if (method_ == kWinograd) {
      MXL_CHECK(ctx.workspace != nullptr && ctx.workspace_bytes >= winograd_.WorkspaceBytes(),
                "convolution needs ", winograd_.WorkspaceBytes(), " bytes of workspace but got ",
                ctx.workspace_bytes);
      for (int64_t n = 0; n < g.batch; ++n) {
        const int64_t out_offset = n * g.filters * out_plane;
        WinogradConvolve(winograd_, packed_, data + n * g.channels * in_plane, bias_.data(),
                         residual ? residual + out_offset : nullptr, fusion_.lower,
                         fusion_.upper, output + out_offset,
                         static_cast<float*>(ctx.workspace), ctx.pool);
      }
      return Status();
    }

    if (method_ == kWinograd2x2) return ConvolveImages(winograd2x2_, ctx, data, residual, output);
    if (method_ == kWinograd1d) return ConvolveImages(winograd1d_, ctx, data, residual, output);

    if (method_ == kDirect) {
      // Bands of up to 8 rows (each gathers its input rows once), at least
      // two per thread.
      const int64_t threads = ctx.pool ? ctx.pool->size() : 1;
      const int64_t band = std::max<int64_t>(1, std::min<int64_t>(8, g.out[1] / (2 * threads)));
      const int64_t bands = (g.out[1] + band - 1) / band;
      ParallelFor(ctx.pool, g.batch * bands, [&](int64_t task) {
        const int64_t n = task / bands, first = task % bands * band;
        const int64_t out_offset = n * g.filters * out_plane;
        DirectConvRows(direct_, data + n * g.channels * in_plane, direct_weights_.data(),
                       bias_.data(), first, std::min(g.out[1], first + band), output + out_offset,
                       residual ? residual + out_offset : nullptr, fusion_.lower, fusion_.upper);
      });
      return Status();
    }

    if (method_ == kShifted) {
      const size_t bytes = shifted_.WorkspaceBytes(g.channels);
      MXL_CHECK(ctx.workspace != nullptr && ctx.workspace_bytes >= bytes, "convolution needs ",
                bytes, " bytes of workspace but got ", ctx.workspace_bytes);
      for (int64_t n = 0; n < g.batch; ++n) {
        const int64_t out_offset = n * g.filters * out_plane;
        ForwardShifted(data + n * g.channels * in_plane,
                       residual ? residual + out_offset : nullptr, output + out_offset,
                       static_cast<float*>(ctx.workspace), ctx.pool);
      }
      return Status();
    }

    const int64_t group_in = g.channels / g.groups;
    const int64_t group_out = g.filters / g.groups;
    const int64_t depth = group_in * g.KernelSize();
    float* col = static_cast<float*>(ctx.workspace);
    if (method_ == kIm2col) {
      MXL_CHECK(col != nullptr && ctx.workspace_bytes >= static_cast<size_t>(rows_per_band_ *
                                                                              g.out[2] * depth) *
                                                             sizeof(float),
                "convolution needs ", rows_per_band_ * g.out[2] * depth * 4,
                " bytes of workspace but got ", ctx.workspace_bytes);
    }
    const int64_t rows = g.out[0] * g.out[1];
    for (int64_t n = 0; n < g.batch; ++n) {
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        const float* in_g = data + (n * g.channels + grp * group_in) * in_plane;
        const int64_t out_offset = (n * g.filters + grp * group_out) * out_plane;
        float* out_g = output + out_offset;
        const float* res_g = residual ? residual + out_offset : nullptr;
        const float* bias_g = bias_.data() + grp * group_out;
        if (method_ == kPointwise && fusion_.input_bn) {
          ForwardNormalised(ctx, in_g, res_g, out_g);
          continue;
        }
        if (method_ == kPointwise) {
          GemmPacked(packed_[grp], in_g, in_plane, out_plane, out_g, out_plane,
                     Epilogue(bias_g, res_g, out_plane), ctx.pool);
          continue;
        }
        for (int64_t row = 0; row < rows; row += rows_per_band_) {
          const int64_t row_end = std::min(rows, row + rows_per_band_);
          const int64_t columns = (row_end - row) * g.out[2];
          // The column matrix's rows for each (channel, kd, kh) are
          // independent tasks (not one per channel: a stem has only three).
          const int64_t kernel_rows = g.kernel[0] * g.kernel[1];
          ParallelFor(ctx.pool, group_in * kernel_rows, [&](int64_t task) {
            const int64_t c = task / kernel_rows, kd = task % kernel_rows / g.kernel[1],
                          kh = task % g.kernel[1];
            Im2ColTapRows(g, in_g + c * in_plane, kd, kh, row, row_end,
                          col + (task * g.kernel[2]) * columns);
          });
          GemmPacked(packed_[grp], col, columns, columns, out_g + row * g.out[2], out_plane,
                     Epilogue(bias_g, res_g ? res_g + row * g.out[2] : nullptr, out_plane),
                     ctx.pool);
        }
      }
    }
    return Status();
  }

  const char* KernelName() const override {
    static const char* const kNames[] = {"im2col+gemm",  "1x1 gemm",     "depthwise",
                                         "winograd 4x4", "direct",       "shifted gemm",
                                         "winograd 2x2", "winograd 1-D"};
    if (depthwise_blocked_) return "depthwise 16-channel blocks";
    return kNames[method_];
  }

 private:
  // The fields the 3x3 depthwise kernels' two argument structs share.
  template <typename Args>
  void SetDepthwiseGeometry(Args* args) const {
    const Geometry& g = geometry_;
    args->in_h = g.in[1];
    args->in_w = g.in[2];
    args->out_h = g.out[1];
    args->out_w = g.out[2];
    args->stride = g.stride[1];
    args->pad_h = g.pad[1];
    args->pad_w = g.pad[2];
    args->lower = fusion_.lower;
    args->upper = fusion_.upper;
  }

  // One image: per band of output rows, the views, then per group one
  // segmented GEMM writing the band's output rows.
  void ForwardShifted(const float* data, const float* residual, float* output, float* views,
                      ThreadPool* pool) const {
    const Geometry& g = geometry_;
    const ShiftedGeometry& p = shifted_;
    const int64_t in_plane = g.InSpatial(), out_plane = g.OutSpatial();
    const int64_t ow_count = g.out[2];
    const int64_t group_in = g.channels / g.groups, group_out = g.filters / g.groups;
    const int64_t taps = static_cast<int64_t>(p.tap_view.size());
    std::vector<const float*> segments(static_cast<size_t>(taps));
    for (int64_t row = 0; row < g.out[1]; row += p.rows_per_band) {
      const int64_t rows = std::min(p.rows_per_band, g.out[1] - row);
      // A channel's views one after another, while its input rows are in L1
      // (view-major tasks read each plane `views` times from L2: 1x7 layers
      // at 17x17 took 5% longer).
      ParallelFor(pool, p.views * g.channels, [&](int64_t task) {
        const int64_t c = task / p.views, view = task % p.views;
        const bool prefetch = p.first_with_rows[view] && c + p.prefetch_planes < g.channels;
        GatherRowsZeroPadded(data + c * in_plane, g.in[1], g.in[2],
                             p.first_row[view] + row * g.stride[1], g.stride[1],
                             rows + p.span_h, p.first_col[view], g.stride[2], ow_count,
                             views + (view * g.channels + c) * p.plane,
                             prefetch ? p.prefetch_planes * in_plane * int64_t{sizeof(float)} : 0);
      });
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        for (int64_t t = 0; t < taps; ++t) {
          segments[t] = views + (p.tap_view[t] * g.channels + grp * group_in) * p.plane +
                        p.tap_row[t] * ow_count;
        }
        const int64_t at = grp * group_out * out_plane + row * ow_count;
        GemmSegmentedB(packed_[grp], segments.data(), p.plane, rows * ow_count, output + at,
                       out_plane,
                       Epilogue(bias_.data() + grp * group_out,
                                residual ? residual + at : nullptr, out_plane),
                       pool);
      }
    }
  }

  // Inputs after data, weight and bias: the folded BatchNorm's four, then
  // the residual, then the input BatchNorm's four.
  int ResidualIndex() const { return 2 + (no_bias_ ? 0 : 1) + (fusion_.batch_norm ? 4 : 0); }
  int InputBnIndex() const { return ResidualIndex() + (fusion_.residual ? 1 : 0); }

  // A 1x1 convolution of one image whose input is normalised first
  // (BatchNorm, then the clamp): the GEMM normalises each depth block of
  // each column panel of the input as it reads it (GemmPackedTransformedB),
  // with BatchNormRow, the BatchNorm operator's own arithmetic, so the bits
  // are those of the unfused graph. The unfused graph writes the whole
  // normalised tensor and reads it back; its standalone BatchNorm took 1.0
  // of densenet121's 23 ms on one thread, and barely gained from a second.
  void ForwardNormalised(const OpContext& ctx, const float* data, const float* residual,
                         float* output) const {
    const int64_t plane = geometry_.InSpatial();
    GemmRowTransform transform;
    transform.context = this;
    transform.apply = [](const void* context, int64_t channel, const float* src, float* dst,
                         int64_t count) {
      const auto& self = *static_cast<const Convolution*>(context);
      const Fusion& f = self.fusion_;
      const float* s = self.in_scale_.data() + 4 * channel;
      const bool clamps = f.in_lower != -std::numeric_limits<float>::infinity() ||
                          f.in_upper != std::numeric_limits<float>::infinity();
      BatchNormRow(src, dst, count, s[0], s[1], !f.in_bn_fix_gamma, s[2], s[3], clamps,
                   f.in_lower, f.in_upper);
    };
    GemmPackedTransformedB(packed_[0], data, plane, plane, output, plane,
                           Epilogue(bias_.data(), residual, plane), transform, ctx.pool);
  }

  // Image by image through a Winograd plan (Winograd2x2Plan, Winograd1dPlan)
  // that holds the weights and geometry and takes the fused epilogue.
  template <class Plan>
  Status ConvolveImages(const Plan& plan, const OpContext& ctx, const float* data,
                        const float* residual, float* output) const {
    const Geometry& g = geometry_;
    const size_t bytes = plan.geometry().WorkspaceBytes();
    MXL_CHECK(ctx.workspace != nullptr && ctx.workspace_bytes >= bytes, "convolution needs ",
              bytes, " bytes of workspace but got ", ctx.workspace_bytes);
    const int64_t in_image = g.channels * g.InSpatial(), out_image = g.filters * g.OutSpatial();
    for (int64_t n = 0; n < g.batch; ++n) {
      plan.Convolve(data + n * in_image, bias_.data(),
                    residual ? residual + n * out_image : nullptr, fusion_.lower, fusion_.upper,
                    output + n * out_image, static_cast<float*>(ctx.workspace), ctx.pool);
    }
    return Status();
  }

  GemmEpilogue Epilogue(const float* bias, const float* residual, int64_t stride) const {
    GemmEpilogue epilogue;
    epilogue.bias = bias;
    epilogue.residual = residual;
    epilogue.residual_stride = stride;
    epilogue.lower = fusion_.lower;
    epilogue.upper = fusion_.upper;
    return epilogue;
  }

  // Final weights and per-filter bias, with a fused BatchNorm folded in:
  //   bn(conv(x) + b) = conv(x) * s + ((b - mean) * s + beta),
  //   s = gamma / sqrt(var + eps)        (gamma = 1 with fix_gamma)
  // then packed for the kernel that reads them (the depthwise plane paths
  // read them as they are).
  Status FoldWeights(const std::vector<NDArray>& in) {
    const Geometry& g = geometry_;
    const int64_t per_filter = g.channels / g.groups * g.KernelSize();
    const float* weight = in[1].fdata();
    weights_.assign(weight, weight + g.filters * per_filter);
    bias_.assign(static_cast<size_t>(g.filters), 0.f);
    if (!no_bias_) std::copy(in[2].fdata(), in[2].fdata() + g.filters, bias_.begin());
    if (fusion_.batch_norm) {
      const int first = no_bias_ ? 2 : 3;
      const float* gamma = in[first].fdata();
      const float* beta = in[first + 1].fdata();
      const float* mean = in[first + 2].fdata();
      const float* var = in[first + 3].fdata();
      for (int64_t f = 0; f < g.filters; ++f) {
        const float invstd = BatchNormInvStd(var[f], fusion_.bn_eps);  // as MXNet
        const float scale = (fusion_.bn_fix_gamma ? 1.f : gamma[f]) * invstd;
        for (int64_t i = 0; i < per_filter; ++i) weights_[f * per_filter + i] *= scale;
        bias_[f] = (bias_[f] - mean[f]) * scale + beta[f];
      }
    }
    packed_.clear();
    if (method_ == kDepthwise) {
      if (depthwise_blocked_) {
        PackDepthwiseBlockWeights(weights_.data(), bias_.data(), g.channels,
                                  &depthwise_block_weights_, &depthwise_block_bias_);
        weights_.clear();  // the packed copy is all the blocked path reads
        weights_.shrink_to_fit();
      }
      return Status();
    }
    if (method_ == kDirect) {
      PackDirectConvWeights(weights_.data(), direct_, &direct_weights_);
      weights_.clear();
      weights_.shrink_to_fit();
      return Status();
    }
    if (method_ == kWinograd) {
      MXL_RETURN_IF_ERROR(WinogradPackWeights(weights_.data(), g.filters, g.channels, &packed_));
      weights_.clear();
      weights_.shrink_to_fit();
      return Status();
    }
    if (method_ == kWinograd2x2) {
      const Winograd2x2Geometry geometry{g.channels, g.filters, g.in[1],  g.in[2],
                                         g.out[1],   g.out[2],  g.pad[1], g.pad[2]};
      MXL_RETURN_IF_ERROR(winograd2x2_.Prepare(geometry, weights_.data()));
      weights_.clear();
      weights_.shrink_to_fit();
      return Status();
    }
    if (method_ == kWinograd1d) {
      MXL_RETURN_IF_ERROR(winograd1d_.Prepare(Winograd1dGeometryOf(g), weights_.data()));
      weights_.clear();
      weights_.shrink_to_fit();
      return Status();
    }
    if (method_ == kShifted) {
      // Each group's depth in tap-major order (tap, channel): segment t is
      // tap t's view.
      const int64_t taps = g.KernelSize(), group_in = g.channels / g.groups;
      std::vector<float> reordered(weights_.size());
      for (int64_t f = 0; f < g.filters; ++f) {
        for (int64_t c = 0; c < group_in; ++c) {
          for (int64_t t = 0; t < taps; ++t) {
            reordered[(f * taps + t) * group_in + c] = weights_[(f * group_in + c) * taps + t];
          }
        }
      }
      weights_.swap(reordered);
    }
    const int64_t group_out = g.filters / g.groups;
    packed_.resize(static_cast<size_t>(g.groups));
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      MXL_RETURN_IF_ERROR(packed_[grp].Pack(
          weights_.data() + grp * group_out * per_filter, per_filter, group_out, per_filter,
          false, nullptr, SegmentDepth()));
    }
    weights_.clear();  // the packed copy is all the GEMM needs
    weights_.shrink_to_fit();
    return Status();
  }

  // The packed weights' depth segments: a tap's channels for shifted views
  // (GemmSegmentedB), or, for a 1x1 layer that normalises its input and is
  // deeper than one depth block, two halves, which two threads split on
  // small maps (see kSplitDepthMaxColumns in gemm.cc).
  int64_t SegmentDepth() const {
    const Geometry& g = geometry_;
    if (method_ == kShifted && !shifted_.plain) return g.channels / g.groups;
    if (method_ == kPointwise && fusion_.input_bn && g.groups == 1 && g.channels % 2 == 0 &&
        g.channels > 256) {
      return g.channels / 2;
    }
    return 0;
  }

  std::vector<int64_t> kernel_, stride_, dilate_, pad_;
  int64_t num_filter_, num_group_;
  bool no_bias_;
  Fusion fusion_;
  // Set by Prepare.
  Geometry geometry_;
  Method method_ = kIm2col;
  bool depthwise3x3_ = false;  // the specialised 3x3 depthwise kernel applies
  bool depthwise_blocked_ = false;  // it takes the channel-blocked path
  std::vector<float> depthwise_block_weights_, depthwise_block_bias_;  // packed for it
  WinogradGeometry winograd_;
  Winograd2x2Plan winograd2x2_;  // weights and geometry of the F(2x2, 3x3) path
  Winograd1dPlan winograd1d_;    // and of the F(2, 7) path
  ShiftedGeometry shifted_;
  DirectConvGeometry direct_{};
  std::vector<float> direct_weights_;  // packed for the direct kernel
  int64_t rows_per_band_ = 0;
  std::vector<float> weights_;        // depthwise plane paths: final weights
  std::vector<float> bias_;           // final per-filter bias
  std::vector<float> in_scale_;       // input BatchNorm: mean, invstd, gamma, beta a channel
  std::vector<PackedMatrix> packed_;  // per group, for the GEMM
};

Status CreateConvolution(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  std::vector<int64_t> kernel = attrs->Tuple("kernel");
  std::vector<int64_t> stride = attrs->Tuple("stride", {});
  std::vector<int64_t> dilate = attrs->Tuple("dilate", {});
  std::vector<int64_t> pad = attrs->Tuple("pad", {});
  int64_t num_filter = attrs->Int("num_filter");
  int64_t num_group = attrs->Int("num_group", 1);
  bool no_bias = attrs->Bool("no_bias", false);
  std::string layout = attrs->String("layout", "None");
  attrs->Ignore("workspace");
  attrs->Ignore("cudnn_tune");
  attrs->Ignore("cudnn_off");
  Fusion fusion;
  if (attrs->op_name() == "_FusedConvolution") {
    // Written by the graph optimizer (graph/fuse.cc), never by MXNet.
    fusion.batch_norm = attrs->Bool("with_bn", false);
    fusion.bn_eps = attrs->Float("bn_eps", 1e-3);
    fusion.bn_fix_gamma = attrs->Bool("bn_fix_gamma", true);
    fusion.residual = attrs->Bool("with_residual", false);
    fusion.lower = static_cast<float>(attrs->Float("clamp_min", -HUGE_VAL));
    fusion.upper = static_cast<float>(attrs->Float("clamp_max", HUGE_VAL));
    fusion.input_bn = attrs->Bool("with_input_bn", false);
    fusion.in_bn_eps = attrs->Float("in_bn_eps", 1e-3);
    fusion.in_bn_fix_gamma = attrs->Bool("in_bn_fix_gamma", true);
    fusion.in_lower = static_cast<float>(attrs->Float("in_clamp_min", -HUGE_VAL));
    fusion.in_upper = static_cast<float>(attrs->Float("in_clamp_max", HUGE_VAL));
  }
  MXL_RETURN_IF_ERROR(attrs->Finish());

  const size_t nk = kernel.size();
  if (nk < 1 || nk > 3) {
    attrs->Fail("kernel", StrCat(TupleString(kernel), ": only 1-D, 2-D and 3-D kernels exist"));
    return attrs->Finish();
  }
  // Unset tuples default to 1 (stride, dilate) and 0 (pad) per dim.
  if (stride.empty()) stride.assign(nk, 1);
  if (dilate.empty()) dilate.assign(nk, 1);
  if (pad.empty()) pad.assign(nk, 0);
  struct Check {
    const char* key;
    const std::vector<int64_t>* values;
    int64_t minimum;
  };
  const Check checks[] = {{"kernel", &kernel, 1}, {"stride", &stride, 1},
                          {"dilate", &dilate, 1}, {"pad", &pad, 0}};
  for (const Check& check : checks) {
    if (check.values->size() != nk) {
      attrs->Fail(check.key, StrCat(TupleString(*check.values), " has ", check.values->size(),
                                    " entries but kernel ", TupleString(kernel), " has ", nk));
      return attrs->Finish();
    }
    for (int64_t value : *check.values) {
      if (value < check.minimum) {
        attrs->Fail(check.key, StrCat(TupleString(*check.values), ": entries must be >= ",
                                      check.minimum));
        return attrs->Finish();
      }
    }
  }
  if (num_filter < 1) {
    attrs->Fail("num_filter", StrCat(num_filter, " must be at least 1"));
    return attrs->Finish();
  }
  if (num_group < 1 || num_filter % num_group != 0) {
    attrs->Fail("num_group", StrCat(num_group, " must be positive and divide num_filter=",
                                    num_filter));
    return attrs->Finish();
  }
  static const char* const kLayouts[] = {"NCW", "NCHW", "NCDHW"};
  if (layout != "None" && layout != kLayouts[nk - 1]) {
    bool channel_first = layout == "NCW" || layout == "NCHW" || layout == "NCDHW";
    attrs->Fail("layout", channel_first
                              ? StrCat("layout ", layout, " does not match the ", nk,
                                       "-D kernel (expected ", kLayouts[nk - 1], ")")
                              : StrCat("layout ", layout, " is not supported (mxlite runs ",
                                       kLayouts[nk - 1], " only)"));
    return attrs->Finish();
  }
  out->reset(new Convolution(kernel, stride, dilate, pad, num_filter, num_group, no_bias, fusion));
  return Status();
}

}  // namespace convolution_op
}  // namespace mxlite
