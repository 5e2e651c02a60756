/*
 * Deformable convolution: _contrib_DeformableConvolution (v1) and
 * _contrib_ModulatedDeformableConvolution (v2, "DCNv2", GluonCV's CenterNet
 * dcnv2 heads), 2-D, channel-first.
 *
 * Each kernel tap (i, j) of output position (y, x) reads the input not at
 * the grid point (y*s - p + i*d, x*s - p + j*d) but that point moved by a
 * learned offset (the `offset` input, per position, tap and deformable
 * group: channel 2*k holds the row offset of tap k = i*kw + j, 2*k + 1 the
 * column offset), sampled bilinearly. v2 also multiplies the sample by a
 * per-position, per-tap `mask`. Per image and group the convolution is then
 *
 *   out[F/g, positions] = W_g[F/g, C/g * K] * col[C/g * K, positions]
 *
 * with col the deformed samples (one GEMM), plus the bias. Channels fall
 * into num_deformable_group equal groups, each with its own offsets (and
 * mask). Output positions go in bands of rows so that col and the band's
 * sample plan stay within kColumnBytes. Constant weights are packed for the
 * GEMM once, at Prepare.
 *
 * Sampling at (h, w), as MXNet 1.9.1 does it (the two versions differ at
 * the border):
 *   v1: zero unless 0 <= h < H and 0 <= w < W; a low corner on the last
 *       row (column) or beyond is clamped to it, the position with it, so
 *       the last row is repeated rather than faded to zero;
 *   v2: zero unless -1 < h < H and -1 < w < W; each of the four corners
 *       outside the map counts as zero.
 */
#include <algorithm>
#include <cmath>
#include <memory>

#include "../kernels/gemm.h"
#include "operator.h"
#include "tensor_util.h"

namespace mxlite {
namespace deformable_convolution_op {

// Upper bound of the column scratch; a band is never less than one row.
constexpr int64_t kColumnBytes = int64_t{8} << 20;

struct DeformableParams {
  std::vector<int64_t> kernel, stride, dilate, pad;
  int64_t num_filter = 0, num_group = 1, num_deformable_group = 1;
  bool no_bias = false;
  bool modulated = false;  // v2: the mask input
};

struct Geometry {
  int64_t batch = 0, channels = 0, filters = 0, in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int64_t Taps(const DeformableParams& p) const { return p.kernel[0] * p.kernel[1]; }
};

// Where a bilinear sample reads and how it weighs what it reads. The
// position, its four corners and their weights depend on the deformable
// group, tap and output position, not on the channel, so they are worked
// out once per band and deformable group and used for each of its channels.
struct SamplePoint {
  int64_t corner[4];  // offsets in the plane: (low, low), (low, high), (high, low), (high, high)
  float weight[4];    // hh * hw, hh * lw, lh * hw, lh * lw
  float mask;         // v2's modulation; 1 for v1
  unsigned valid;     // bit k: corner k lies in the plane (none: the sample is 0)
};

// The sample at (h, w) of a height x width plane, by v1's rule.
SamplePoint PlanV1(int64_t height, int64_t width, float h, float w) {
  SamplePoint point = {};
  point.mask = 1.f;
  if (!(h >= 0 && w >= 0 && h < static_cast<float>(height) && w < static_cast<float>(width))) {
    return point;
  }
  int64_t h_low = static_cast<int64_t>(std::floor(h)), w_low = static_cast<int64_t>(std::floor(w));
  int64_t h_high = h_low + 1, w_high = w_low + 1;
  if (h_low >= height - 1) {
    h_high = h_low = height - 1;
    h = static_cast<float>(h_low);
  }
  if (w_low >= width - 1) {
    w_high = w_low = width - 1;
    w = static_cast<float>(w_low);
  }
  const float lh = h - static_cast<float>(h_low), lw = w - static_cast<float>(w_low);
  const float hh = 1.f - lh, hw = 1.f - lw;
  point = {{h_low * width + w_low, h_low * width + w_high, h_high * width + w_low,
            h_high * width + w_high},
           {hh * hw, hh * lw, lh * hw, lh * lw},
           1.f,
           0xfu};
  return point;
}

// The sample at (h, w), by v2's rule, times `mask`.
SamplePoint PlanV2(int64_t height, int64_t width, float h, float w, float mask) {
  SamplePoint point = {};
  point.mask = mask;
  if (!(h > -1.f && w > -1.f && h < static_cast<float>(height) &&
        w < static_cast<float>(width))) {
    return point;
  }
  const int64_t h_low = static_cast<int64_t>(std::floor(h));
  const int64_t w_low = static_cast<int64_t>(std::floor(w));
  const int64_t h_high = h_low + 1, w_high = w_low + 1;
  const float lh = h - static_cast<float>(h_low), lw = w - static_cast<float>(w_low);
  const float hh = 1.f - lh, hw = 1.f - lw;
  const bool top = h_low >= 0, bottom = h_high <= height - 1;
  const bool left = w_low >= 0, right = w_high <= width - 1;
  const unsigned valid = (top && left ? 1u : 0u) | (top && right ? 2u : 0u) |
                         (bottom && left ? 4u : 0u) | (bottom && right ? 8u : 0u);
  const int64_t corner[4] = {h_low * width + w_low, h_low * width + w_high,
                             h_high * width + w_low, h_high * width + w_high};
  for (int k = 0; k < 4; ++k) point.corner[k] = valid >> k & 1u ? corner[k] : 0;
  point.weight[0] = hh * hw;
  point.weight[1] = hh * lw;
  point.weight[2] = lh * hw;
  point.weight[3] = lh * lw;
  point.valid = valid;
  return point;
}

// The sample of `plane` that `point` describes: corners outside read as 0,
// summed in MXNet's order, then modulated.
inline float Sample(const SamplePoint& point, const float* plane) {
  float v[4];
  for (int k = 0; k < 4; ++k) v[k] = point.valid >> k & 1u ? plane[point.corner[k]] : 0.f;
  return (point.weight[0] * v[0] + point.weight[1] * v[1] + point.weight[2] * v[2] +
          point.weight[3] * v[3]) *
         point.mask;
}

class DeformableConvolution : public Operator {
 public:
  explicit DeformableConvolution(DeformableParams params) : p_(std::move(params)) {}

  std::vector<std::string> InputNames() const override {
    std::vector<std::string> names = {"data", "offset"};
    if (p_.modulated) names.push_back("mask");
    names.push_back("weight");
    if (!p_.no_bias) names.push_back("bias");
    return names;
  }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    const std::vector<std::string> names = InputNames();
    const int weight_index = p_.modulated ? 3 : 2;
    const Shape& data = (*in)[0];
    if (!data.rank_known()) return Status();
    MXL_CHECK(data.ndim() == 4, "input 'data' has shape ", data.ToString(),
              " but a deformable convolution needs 4-D input (batch, channel, height, width)");
    const int64_t channels = data[1];
    if (channels >= 0) {
      MXL_CHECK(channels % p_.num_group == 0, "input 'data' has ", channels,
                " channels, not divisible by num_group=", p_.num_group);
      MXL_CHECK(channels % p_.num_deformable_group == 0, "input 'data' has ", channels,
                " channels, not divisible by num_deformable_group=", p_.num_deformable_group);
    }
    MXL_RETURN_IF_ERROR(AssignShape(in, weight_index,
                                    Shape({p_.num_filter, channels < 0 ? -1 : channels /
                                           p_.num_group, p_.kernel[0], p_.kernel[1]}),
                                    "input", names));
    if (!p_.no_bias) {
      MXL_RETURN_IF_ERROR(AssignShape(in, weight_index + 1, Shape({p_.num_filter}), "input",
                                      names));
    }
    int64_t extent[2] = {-1, -1};
    for (int i = 0; i < 2; ++i) {
      const int64_t size = data[2 + i];
      if (size < 0) continue;
      extent[i] = (size + 2 * p_.pad[i] - p_.dilate[i] * (p_.kernel[i] - 1) - 1) / p_.stride[i] + 1;
      MXL_CHECK(extent[i] > 0 && size + 2 * p_.pad[i] >= p_.dilate[i] * (p_.kernel[i] - 1) + 1,
                "input 'data' has shape ", data.ToString(), ": the kernel ",
                TupleText(p_.kernel), " (dilate ", TupleText(p_.dilate), ", pad ",
                TupleText(p_.pad), ") does not fit spatial dim ", i);
    }
    const int64_t taps = p_.kernel[0] * p_.kernel[1] * p_.num_deformable_group;
    MXL_RETURN_IF_ERROR(AssignShape(in, 1, Shape({data[0], 2 * taps, extent[0], extent[1]}),
                                    "input", names));
    if (p_.modulated) {
      MXL_RETURN_IF_ERROR(
          AssignShape(in, 2, Shape({data[0], taps, extent[0], extent[1]}), "input", names));
    }
    return AssignShape(out, 0, Shape({data[0], p_.num_filter, extent[0], extent[1]}), "output",
                       OutputNames());
  }

  Status Prepare(const std::vector<NDArray>& in, const std::vector<NDArray>& out,
                 size_t* workspace_bytes) override {
    Geometry& g = geometry_;
    const Shape& data = in[0].shape();
    g.batch = data[0];
    g.channels = data[1];
    g.in_h = data[2];
    g.in_w = data[3];
    g.filters = p_.num_filter;
    g.out_h = out[0].shape()[2];
    g.out_w = out[0].shape()[3];
    const int64_t depth = g.channels / p_.num_group * g.Taps(p_);
    // A band's column matrix and sample plan together within kColumnBytes.
    const int64_t row_bytes = std::max<int64_t>(
        1, (depth * int64_t{sizeof(float)} + g.Taps(p_) * int64_t{sizeof(SamplePoint)}) * g.out_w);
    band_rows_ = std::max<int64_t>(1, std::min<int64_t>(g.out_h, kColumnBytes / row_bytes));
    *workspace_bytes = PlanOffset() + PlanBytes();
    // Constant weights are packed once; others (and compact_weights, which
    // keeps no packed copies) are packed by each call's Sgemm.
    packed_.reset();
    const int weight_index = p_.modulated ? 3 : 2;
    const int64_t group_out = g.filters / p_.num_group;
    if (!input_is_constant(weight_index) || runtime_options().compact_weights || depth == 0) {
      return Status();
    }
    // Group g's weights: filters/groups x C/groups * taps.
    return SharedPrepared<PackedGroups>(
        {weight_index}, StrCat("deformable packed; ", p_.num_group, " x ", group_out, " x ", depth),
        [&](std::shared_ptr<const PackedGroups>* made) {
          auto packed = std::make_shared<PackedGroups>();
          MXL_RETURN_IF_ERROR(PackGroups(in[weight_index].fdata(), p_.num_group, group_out, depth,
                                         /*transposed=*/false, thread_pool(), packed.get()));
          *made = std::move(packed);
          return Status();
        },
        &packed_);
  }

  size_t PreparedBytes() const override { return packed_ ? HeldBytes(packed_->groups) : 0; }

  Status Forward(const OpContext& ctx, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const Geometry& g = geometry_;
    const int weight_index = p_.modulated ? 3 : 2;
    const float* data = in[0].fdata();
    const float* offset = in[1].fdata();
    const float* mask = p_.modulated ? in[2].fdata() : nullptr;
    const float* weight = in[weight_index].fdata();
    const float* bias = p_.no_bias ? nullptr : in[weight_index + 1].fdata();
    float* output = out[0].fdata();
    const int64_t taps = g.Taps(p_), positions = g.out_h * g.out_w;
    const int64_t group_in = g.channels / p_.num_group, group_out = g.filters / p_.num_group;
    const int64_t depth = group_in * taps;
    FillPlanesWithBias(output, g.batch, g.filters, positions, bias);
    if (g.batch == 0 || positions == 0 || depth == 0) return Status();
    MXL_CHECK(ctx.workspace != nullptr && ctx.workspace_bytes >= PlanOffset() + PlanBytes(),
              "deformable convolution needs ", PlanOffset() + PlanBytes(),
              " bytes of workspace but got ", ctx.workspace_bytes);
    float* col = static_cast<float*>(ctx.workspace);
    SamplePoint* plan =
        reinterpret_cast<SamplePoint*>(static_cast<char*>(ctx.workspace) + PlanOffset());
    for (int64_t n = 0; n < g.batch; ++n) {
      for (int64_t grp = 0; grp < p_.num_group; ++grp) {
        const float* w = weight + grp * group_out * depth;
        float* y = output + (n * g.filters + grp * group_out) * positions;
        for (int64_t row = 0; row < g.out_h; row += band_rows_) {
          const int64_t rows = std::min(band_rows_, g.out_h - row);
          const int64_t columns = rows * g.out_w;
          Gather(n, grp * group_in, group_in, row, rows, data, offset, mask, plan, col,
                 ctx.pool);
          if (packed_) {
            GemmEpilogue add_to_bias;
            add_to_bias.accumulate = true;
            GemmPacked(packed_->groups[grp], col, columns, columns, y + row * g.out_w, positions,
                       add_to_bias, ctx.pool);
          } else {
            Sgemm(false, false, group_out, columns, depth, w, depth, col, columns, 1.f,
                  y + row * g.out_w, positions, ctx.pool);
          }
        }
      }
    }
    return Status();
  }

 private:
  // The workspace: the column matrix of a band, then (64-byte aligned) the
  // sample plan of one deformable group for a band.
  size_t PlanOffset() const {
    const int64_t depth = geometry_.channels / p_.num_group * geometry_.Taps(p_);
    const size_t col_bytes =
        static_cast<size_t>(depth * band_rows_ * geometry_.out_w) * sizeof(float);
    return (col_bytes + 63) / 64 * 64;
  }
  size_t PlanBytes() const {
    return static_cast<size_t>(geometry_.Taps(p_) * band_rows_ * geometry_.out_w) *
           sizeof(SamplePoint);
  }

  // col[(c - first) * taps + tap][(row - row0) * out_w + x]: the deformed
  // samples of channels [first, first + count) for output rows
  // [row0, row0 + rows) of image n. Per deformable group among them, its
  // sample plan (plan[tap * columns + column]) is made split over the pool by
  // tap, then its channels are sampled split by channel.
  void Gather(int64_t n, int64_t first, int64_t count, int64_t row0, int64_t rows,
              const float* data, const float* offset, const float* mask, SamplePoint* plan,
              float* col, ThreadPool* pool) const {
    const Geometry& g = geometry_;
    const int64_t taps = g.Taps(p_), positions = g.out_h * g.out_w, columns = rows * g.out_w;
    const int64_t group_channels = g.channels / p_.num_deformable_group;
    for (int64_t c0 = 0; c0 < count;) {
      const int64_t dgroup = (first + c0) / group_channels;
      const int64_t c1 = std::min(count, (dgroup + 1) * group_channels - first);
      const float* offsets =
          offset + (n * p_.num_deformable_group + dgroup) * 2 * taps * positions;
      const float* masks =
          mask ? mask + (n * p_.num_deformable_group + dgroup) * taps * positions : nullptr;
      ParallelFor(pool, taps, [&](int64_t tap) {
        const int64_t i = tap / p_.kernel[1], j = tap % p_.kernel[1];
        const float* dy = offsets + 2 * tap * positions;
        const float* dx = offsets + (2 * tap + 1) * positions;
        SamplePoint* points = plan + tap * columns;
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t y = row0 + r;
          for (int64_t x = 0; x < g.out_w; ++x) {
            const int64_t at = y * g.out_w + x;
            const float h =
                static_cast<float>(y * p_.stride[0] - p_.pad[0] + i * p_.dilate[0]) + dy[at];
            const float w =
                static_cast<float>(x * p_.stride[1] - p_.pad[1] + j * p_.dilate[1]) + dx[at];
            points[r * g.out_w + x] =
                masks ? PlanV2(g.in_h, g.in_w, h, w, masks[tap * positions + at])
                      : PlanV1(g.in_h, g.in_w, h, w);
          }
        }
      });
      ParallelFor(pool, c1 - c0, [&](int64_t k) {
        const int64_t c = c0 + k;
        const float* plane = data + (n * g.channels + first + c) * g.in_h * g.in_w;
        float* dst = col + c * taps * columns;
        for (int64_t e = 0; e < taps * columns; ++e) dst[e] = Sample(plan[e], plane);
      });
      c0 = c1;
    }
  }

  DeformableParams p_;
  Geometry geometry_;
  int64_t band_rows_ = 1;
  std::shared_ptr<const PackedGroups> packed_;  // null: pack per call
};

Status CreateDeformable(AttrParser* attrs, bool modulated, std::unique_ptr<Operator>* out) {
  DeformableParams p;
  p.modulated = modulated;
  p.kernel = attrs->Tuple("kernel");
  p.stride = attrs->Tuple("stride", {});
  p.dilate = attrs->Tuple("dilate", {});
  p.pad = attrs->Tuple("pad", {});
  p.num_filter = attrs->Int("num_filter");
  p.num_group = attrs->Int("num_group", 1);
  p.num_deformable_group = attrs->Int("num_deformable_group", 1);
  p.no_bias = attrs->Bool("no_bias", false);
  const std::string layout = attrs->String("layout", "None");
  attrs->Ignore("workspace");
  if (modulated) attrs->Ignore("im2col_step");  // how MXNet batches its im2col
  MXL_RETURN_IF_ERROR(attrs->Finish());
  if (p.kernel.size() != 2) {
    attrs->Fail("kernel", StrCat(TupleText(p.kernel), ": only 2-D kernels exist for "
                                 "deformable convolution"));
    return attrs->Finish();
  }
  if (!CheckWindowAttrs(attrs,
                        {{"kernel", &p.kernel, 1, 1}, {"stride", &p.stride, 1, 1},
                         {"dilate", &p.dilate, 1, 1}, {"pad", &p.pad, 0, 0}},
                        2, "the kernel has 2")) {
    return attrs->Finish();
  }
  if (p.num_filter < 1) attrs->Fail("num_filter", StrCat(p.num_filter, " must be at least 1"));
  if (p.num_group < 1 || p.num_filter % p.num_group != 0) {
    attrs->Fail("num_group", StrCat(p.num_group, " must be positive and divide num_filter=",
                                    p.num_filter));
  }
  // MXNet refuses a num_filter that the deformable groups do not divide.
  if (p.num_deformable_group < 1 || p.num_filter % p.num_deformable_group != 0) {
    attrs->Fail("num_deformable_group", StrCat(p.num_deformable_group,
                                               " must be positive and divide num_filter=",
                                               p.num_filter));
  }
  if (layout != "None" && layout != "NCHW") {
    attrs->Fail("layout", StrCat("layout ", layout, " is not supported (NCHW only)"));
  }
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new DeformableConvolution(std::move(p)));
  return Status();
}

Status CreateDeformableConvolution(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  return CreateDeformable(attrs, false, out);
}

Status CreateModulatedDeformableConvolution(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  return CreateDeformable(attrs, true, out);
}

}  // namespace deformable_convolution_op
}  // namespace mxlite
