/*
 * Deconvolution (transposed convolution) and UpSampling.
 *
 * Deconvolution, 1-D to 3-D, channel-first: every input pixel scatters its
 * value times the filter into the output. With the weight stored as
 * (C_in, F/groups, kd, kh, kw), per image and group the whole scatter is
 *
 *   col[F/g * K, positions] = W_g^T [F/g * K, C_in/g] * X_g[C_in/g, positions]
 *
 * (one GEMM), followed by col2im: column (f, kd, kh, kw) of input position
 * (id, ih, iw) adds into output (f, id*s - p + kd*d, ...) when that lies
 * inside the output. The input positions are processed in bands so the
 * columns stay within kColumnBytes. The output starts from the bias (or
 * zero). 1-D and 2-D run in the 3-D form with unit dims in front. Constant
 * weights are packed for the GEMM once, at Prepare; the GEMM and col2im
 * (by filter) split over the pool.
 *
 * Shapes (MXNet's DeconvolutionParam::InferPad): out = s*(in - 1) +
 * d*(k - 1) + 1 - 2*pad + adj. When target_shape has a non-zero entry, pad
 * and adj are derived from it instead: t = s*(in - 1) + d*(k - 1) + 1 -
 * target, adj = t % 2, pad = (t + 1) / 2. no_bias defaults to True.
 *
 * UpSampling: nearest repeats every pixel scale x scale times; with several
 * inputs (num_args), each is enlarged to the first one's output size (its
 * own factor is that size over its size) and the results are concatenated
 * on channels or summed (multi_input_mode). bilinear is MXNet's grouped
 * Deconvolution with the learned (C, 1, k, k) weight: k = 2*scale -
 * scale % 2, stride scale, pad ceil((scale - 1) / 2), one group per channel.
 */
#include <algorithm>
#include <cstring>
#include <memory>

#include "../kernels/gemm.h"
#include "operator.h"
#include "tensor_util.h"

namespace mxlite {
namespace deconvolution_op {

// Upper bound of the column scratch; a band is never less than one position.
constexpr int64_t kColumnBytes = int64_t{8} << 20;

struct DeconvParams {
  std::vector<int64_t> kernel, stride, dilate, pad, adj, target_shape;
  int64_t num_filter = 0, num_group = 1;
  bool no_bias = true;
};

// One spatial axis; unused leading axes keep the neutral values.
struct Axis {
  int64_t in = 1, out = 1, kernel = 1, stride = 1, pad = 0, dilate = 1;
  // The output position that input position i feeds through kernel tap k.
  int64_t Target(int64_t i, int64_t k) const { return i * stride - pad + k * dilate; }
};

// All sizes in the three-spatial-dims form (depth, height, width).
struct Geometry {
  int64_t batch = 0, channels = 0, filters = 0, groups = 1;
  Axis axis[3];
  int64_t InSpatial() const { return axis[0].in * axis[1].in * axis[2].in; }
  int64_t OutSpatial() const { return axis[0].out * axis[1].out * axis[2].out; }
  int64_t KernelSize() const { return axis[0].kernel * axis[1].kernel * axis[2].kernel; }
};

// Output extents and the effective pads for `data`'s spatial extents.
Status OutputExtents(const DeconvParams& p, const Shape& data, std::vector<int64_t>* out,
                     std::vector<int64_t>* pads) {
  const int nk = static_cast<int>(p.kernel.size());
  bool use_target = false;
  for (int64_t t : p.target_shape) use_target |= t != 0;
  out->assign(nk, -1);
  pads->assign(p.pad.begin(), p.pad.end());
  for (int i = 0; i < nk; ++i) {
    const int64_t extent = data[2 + i];
    if (extent < 0) continue;
    const int64_t full = p.stride[i] * (extent - 1) + p.dilate[i] * (p.kernel[i] - 1) + 1;
    int64_t pad = p.pad[i], adj = p.adj[i];
    if (use_target) {
      const int64_t excess = full - p.target_shape[i];
      MXL_CHECK(excess >= 0, "attribute target_shape=", TupleText(p.target_shape),
                " is larger than the ", full, " the input ", data.ToString(), " can give");
      adj = excess % 2;
      pad = (excess + 1) / 2;
    }
    (*pads)[i] = pad;
    (*out)[i] = full - 2 * pad + adj;
    MXL_CHECK((*out)[i] > 0, "input 'data' has shape ", data.ToString(),
              ": the output would have extent ", (*out)[i], " along spatial dim ", i);
  }
  return Status();
}

// Adds the columns of input positions [begin, end) into the output planes
// of filters [f_begin, f_end) (col: every filter's columns, from filter 0).
// The band is walked one input row at a time: its output row is found and
// checked once per run, not divided out of each element's position.
void Col2Im(const Geometry& g, const float* col, int64_t f_begin, int64_t f_end, int64_t begin,
            int64_t end, float* out) {
  const Axis& d = g.axis[0];
  const Axis& h = g.axis[1];
  const Axis& w = g.axis[2];
  const int64_t positions = end - begin;
  const int64_t out_plane = g.OutSpatial();
  const int64_t taps = g.KernelSize();
  for (int64_t f = f_begin; f < f_end; ++f) {
    float* plane = out + f * out_plane;
    const float* tap_col = col + f * taps * positions;
    for (int64_t kd = 0; kd < d.kernel; ++kd) {
      for (int64_t kh = 0; kh < h.kernel; ++kh) {
        for (int64_t kw = 0; kw < w.kernel; ++kw, tap_col += positions) {
          // Input column iw lands on output column iw * stride + shift; the
          // ones inside the output row are [iw_first, iw_last].
          const int64_t shift = w.Target(0, kw);
          const int64_t iw_first = shift >= 0 ? 0 : (-shift + w.stride - 1) / w.stride;
          const int64_t iw_last =
              w.out - 1 - shift >= 0 ? (w.out - 1 - shift) / w.stride : int64_t{-1};
          // Walk the band one input row (fixed id, ih) at a time.
          int64_t p = begin;
          while (p < end) {
            const int64_t iw0 = p % w.in, row = p / w.in;
            const int64_t run_end = std::min(end, p + (w.in - iw0));
            const int64_t od = d.Target(row / h.in, kd), oh = h.Target(row % h.in, kh);
            if (od >= 0 && od < d.out && oh >= 0 && oh < h.out) {
              float* const out_row = plane + (od * h.out + oh) * w.out + shift;
              const float* const src = tap_col + (p - begin) - iw0;  // src[iw]: column iw
              const int64_t last = std::min(iw_last, iw0 + (run_end - p) - 1);
              for (int64_t iw = std::max(iw_first, iw0); iw <= last; ++iw) {
                out_row[iw * w.stride] += src[iw];
              }
            }
            p = run_end;
          }
        }
      }
    }
  }
}

class Deconvolution : public Operator {
 public:
  explicit Deconvolution(DeconvParams params) : p_(std::move(params)) {}

  std::vector<std::string> InputNames() const override {
    if (p_.no_bias) return {"data", "weight"};
    return {"data", "weight", "bias"};
  }

  bool ComputesImagesApart(const std::vector<Shape>& image_in) const override {
    (void)image_in;
    return true;
  }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    const int nk = static_cast<int>(p_.kernel.size());
    const std::vector<std::string> names = InputNames();
    const Shape& data = (*in)[0];
    if (!data.rank_known()) return Status();
    MXL_CHECK(data.ndim() == nk + 2, "input 'data' has shape ", data.ToString(), " but a ", nk,
              "-D deconvolution needs ", nk + 2, "-D input (batch, channel, spatial...)");
    const int64_t channels = data[1];
    if (channels >= 0) {
      MXL_CHECK(channels % p_.num_group == 0, "input 'data' has ", channels,
                " channels, not divisible by num_group=", p_.num_group);
    }
    std::vector<int64_t> wdims = {channels, p_.num_filter / p_.num_group};
    wdims.insert(wdims.end(), p_.kernel.begin(), p_.kernel.end());
    MXL_RETURN_IF_ERROR(AssignShape(in, 1, Shape(wdims), "input", names));
    if (!p_.no_bias) MXL_RETURN_IF_ERROR(AssignShape(in, 2, Shape({p_.num_filter}), "input", names));
    std::vector<int64_t> extents, pads;
    MXL_RETURN_IF_ERROR(OutputExtents(p_, data, &extents, &pads));
    std::vector<int64_t> odims = {data[0], p_.num_filter};
    odims.insert(odims.end(), extents.begin(), extents.end());
    return AssignShape(out, 0, Shape(odims), "output", OutputNames());
  }

  Status Prepare(const std::vector<NDArray>& in, const std::vector<NDArray>& out,
                 size_t* workspace_bytes) override {
    const int nk = static_cast<int>(p_.kernel.size());
    const Shape& data = in[0].shape();
    std::vector<int64_t> extents, pads;
    MXL_RETURN_IF_ERROR(OutputExtents(p_, data, &extents, &pads));
    Geometry& g = geometry_;
    g = Geometry();
    g.batch = data[0];
    g.channels = data[1];
    g.filters = p_.num_filter;
    g.groups = p_.num_group;
    for (int i = 0; i < nk; ++i) {
      Axis& axis = g.axis[3 - nk + i];
      axis.in = data[2 + i];
      axis.out = out[0].shape()[2 + i];
      axis.kernel = p_.kernel[i];
      axis.stride = p_.stride[i];
      axis.pad = pads[i];
      axis.dilate = p_.dilate[i];
    }
    const int64_t rows = g.filters / g.groups * g.KernelSize();
    const int64_t position_bytes = std::max<int64_t>(1, rows * int64_t{sizeof(float)});
    band_ = std::max<int64_t>(1, std::min<int64_t>(g.InSpatial(), kColumnBytes / position_bytes));
    // Several groups go to the threads whole (see Forward).
    group_workers_ = g.groups > 1 && thread_pool()
                         ? std::min<int64_t>(g.groups, thread_pool()->size())
                         : 1;
    *workspace_bytes = static_cast<size_t>(group_workers_ * rows * band_) * sizeof(float);
    // Constant weights are packed once; others (and compact_weights, which
    // keeps no packed copies) are packed by each call's Sgemm.
    packed_.reset();
    const int64_t group_in = g.channels / g.groups;
    if (!input_is_constant(1) || runtime_options().compact_weights || group_in == 0 ||
        rows == 0) {
      return Status();
    }
    // Group g's W_g^T: rows filters/groups x taps, depth channels/groups.
    // Packed per call, a 512 -> 256 4x4 layer on a 2x2 map (8 MB of
    // weights, 4 input positions) spent its time packing.
    return SharedPrepared<PackedGroups>(
        {1}, StrCat("deconv packed; ", g.groups, " x ", rows, " x ", group_in),
        [&](std::shared_ptr<const PackedGroups>* made) {
          auto packed = std::make_shared<PackedGroups>();
          MXL_RETURN_IF_ERROR(PackGroups(in[1].fdata(), g.groups, rows, group_in,
                                         /*transposed=*/true, thread_pool(), packed.get()));
          *made = std::move(packed);
          return Status();
        },
        &packed_);
  }

  size_t PreparedBytes() const override { return packed_ ? HeldBytes(packed_->groups) : 0; }

  Status Forward(const OpContext& ctx, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const Geometry& g = geometry_;
    const float* data = in[0].fdata();
    const float* weight = in[1].fdata();
    const float* bias = p_.no_bias ? nullptr : in[2].fdata();
    float* output = out[0].fdata();
    const int64_t in_plane = g.InSpatial(), out_plane = g.OutSpatial();
    const int64_t group_in = g.channels / g.groups, group_out = g.filters / g.groups;
    const int64_t rows = group_out * g.KernelSize();
    FillPlanesWithBias(output, g.batch, g.filters, out_plane, bias);
    if (g.batch == 0 || in_plane == 0 || rows == 0) return Status();
    const int64_t workers =
        std::min<int64_t>(group_workers_, ctx.pool ? ctx.pool->size() : int64_t{1});
    const int64_t col_floats = rows * band_;
    MXL_CHECK(ctx.workspace != nullptr &&
                  ctx.workspace_bytes >= static_cast<size_t>(workers * col_floats) * sizeof(float),
              "deconvolution needs ", workers * col_floats * 4, " bytes of workspace but got ",
              ctx.workspace_bytes);
    float* const columns = static_cast<float*>(ctx.workspace);
    // Group grp of image n, its product and its scatter split over `pool`.
    const auto run_group = [&](int64_t n, int64_t grp, float* col, ThreadPool* pool) {
      const float* x = data + (n * g.channels + grp * group_in) * in_plane;
      const float* w = weight + grp * group_in * rows;
      float* y = output + (n * g.filters + grp * group_out) * out_plane;
      for (int64_t begin = 0; begin < in_plane; begin += band_) {
        const int64_t end = std::min(in_plane, begin + band_);
        const int64_t positions = end - begin;
        if (group_in == 0) {
          std::fill(col, col + rows * positions, 0.f);
        } else if (packed_) {
          GemmPacked(packed_->groups[grp], x + begin, in_plane, positions, col, positions,
                     GemmEpilogue(), pool);
        } else {
          Sgemm(true, false, rows, positions, group_in, w, rows, x + begin, in_plane, 0.f, col,
                positions, pool);
        }
        // Each filter adds into its own output plane.
        const int64_t parts = pool ? std::min<int64_t>(group_out, pool->size()) : 1;
        ParallelFor(pool, parts, [&](int64_t part) {
          Col2Im(g, col, part * group_out / parts, (part + 1) * group_out / parts, begin, end, y);
        });
      }
    };
    if (workers > 1) {
      // Whole groups per thread, each with its own column scratch: a
      // bilinear UpSampling is one group per channel, each product far too
      // small to split.
      const int64_t tasks = g.batch * g.groups;
      ParallelFor(ctx.pool, workers, [&](int64_t worker) {
        for (int64_t task = worker * tasks / workers; task < (worker + 1) * tasks / workers;
             ++task) {
          run_group(task / g.groups, task % g.groups, columns + worker * col_floats, nullptr);
        }
      });
    } else {
      for (int64_t n = 0; n < g.batch; ++n) {
        for (int64_t grp = 0; grp < g.groups; ++grp) run_group(n, grp, columns, ctx.pool);
      }
    }
    return Status();
  }

 private:
  DeconvParams p_;
  Geometry geometry_;
  int64_t band_ = 1;
  int64_t group_workers_ = 1;  // threads that take whole groups
  std::shared_ptr<const PackedGroups> packed_;  // null: pack per call
};

// Reads and checks the window attributes shared by Deconvolution's forms.
Status ValidateDeconvParams(AttrParser* attrs, DeconvParams* p) {
  const size_t nk = p->kernel.size();
  if (nk < 1 || nk > 3) {
    attrs->Fail("kernel", StrCat(TupleText(p->kernel), ": only 1-D, 2-D and 3-D kernels exist"));
    return attrs->Finish();
  }
  if (!CheckWindowAttrs(attrs,
                        {{"kernel", &p->kernel, 1, 1}, {"stride", &p->stride, 1, 1},
                         {"dilate", &p->dilate, 1, 1}, {"pad", &p->pad, 0, 0},
                         {"adj", &p->adj, 0, 0}, {"target_shape", &p->target_shape, 0, 0}},
                        nk, StrCat("kernel ", TupleText(p->kernel), " has ", nk))) {
    return attrs->Finish();
  }
  if (p->num_filter < 1) attrs->Fail("num_filter", StrCat(p->num_filter, " must be at least 1"));
  if (p->num_group < 1 || p->num_filter % p->num_group != 0) {
    attrs->Fail("num_group", StrCat(p->num_group, " must be positive and divide num_filter=",
                                    p->num_filter));
  }
  return attrs->Finish();
}

Status CreateDeconvolution(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  DeconvParams p;
  p.kernel = attrs->Tuple("kernel");
  p.stride = attrs->Tuple("stride", {});
  p.dilate = attrs->Tuple("dilate", {});
  p.pad = attrs->Tuple("pad", {});
  p.adj = attrs->Tuple("adj", {});
  p.target_shape = attrs->Tuple("target_shape", {});
  p.num_filter = attrs->Int("num_filter");
  p.num_group = attrs->Int("num_group", 1);
  p.no_bias = attrs->Bool("no_bias", true);
  const std::string layout = attrs->String("layout", "None");
  attrs->Ignore("workspace");
  attrs->IgnoreEnum("cudnn_tune", {"None", "off", "limited_workspace", "fastest"});
  attrs->IgnoreBool("cudnn_off");
  MXL_RETURN_IF_ERROR(attrs->Finish());
  MXL_RETURN_IF_ERROR(ValidateDeconvParams(attrs, &p));
  static constexpr char kLayouts[][6] = {"NCW", "NCHW", "NCDHW"};
  if (layout != "None" && layout != kLayouts[p.kernel.size() - 1]) {
    attrs->Fail("layout", StrCat("layout ", layout, " is not supported for a ", p.kernel.size(),
                                 "-D kernel (mxlite runs ", kLayouts[p.kernel.size() - 1],
                                 " only)"));
    return attrs->Finish();
  }
  out->reset(new Deconvolution(std::move(p)));
  return Status();
}

// ---------------------------------------------------------------------------
// UpSampling, nearest

class UpSamplingNearest : public Operator {
 public:
  UpSamplingNearest(int64_t scale, int num_args, bool sum)
      : scale_(scale), num_args_(num_args), sum_(sum) {}

  std::vector<std::string> InputNames() const override { return NumberedNames("arg", num_args_); }

  bool ComputesImagesApart(const std::vector<Shape>& image_in) const override {
    (void)image_in;
    return true;
  }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    const std::vector<std::string> names = InputNames();
    for (const Shape& shape : *in) {
      if (!shape.is_complete()) return Status();
    }
    const Shape& first = (*in)[0];
    MXL_CHECK(first.ndim() == 4, "input 'arg0' has shape ", first.ToString(),
              " but UpSampling needs 4-D input (N, C, H, W)");
    Shape oshape({first[0], 0, first[2] * scale_, first[3] * scale_});
    for (int i = 0; i < num_args_; ++i) {
      const Shape& shape = (*in)[i];
      MXL_CHECK(shape.ndim() == 4 && shape[0] == first[0] && shape[2] > 0 && shape[3] > 0 &&
                    oshape[2] % shape[2] == 0 && oshape[3] % shape[3] == 0 &&
                    oshape[2] / shape[2] == oshape[3] / shape[3],
                "input '", names[i], "' has shape ", shape.ToString(),
                ", which no integer factor enlarges to the output's ", oshape[2], "x", oshape[3]);
      if (sum_) {
        MXL_CHECK(shape[1] == first[1], "input '", names[i], "' has ", shape[1],
                  " channels but multi_input_mode 'sum' needs ", first[1], " (as arg0)");
        oshape[1] = first[1];
      } else {
        oshape[1] += shape[1];
      }
    }
    return AssignShape(out, 0, oshape, "output", OutputNames());
  }

  Status Forward(const OpContext&, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const Shape& oshape = out[0].shape();
    const int64_t oh = oshape[2], ow = oshape[3], out_plane = oh * ow;
    float* y = out[0].fdata();
    if (sum_) std::fill(y, y + out[0].Size(), 0.f);
    int64_t channel_base = 0;
    for (int i = 0; i < num_args_; ++i) {
      const Shape& shape = in[i].shape();
      const int64_t channels = shape[1], h = shape[2], w = shape[3];
      const int64_t factor = oh / h;
      const float* x = in[i].fdata();
      row_.resize(static_cast<size_t>(ow));
      for (int64_t n = 0; n < shape[0]; ++n) {
        for (int64_t c = 0; c < channels; ++c) {
          const float* src = x + (n * channels + c) * h * w;
          float* dst = y + (n * oshape[1] + channel_base + c) * out_plane;
          for (int64_t r = 0; r < h; ++r) {
            // One enlarged row, then `factor` output rows of it.
            float* wide = row_.data();
            for (int64_t col = 0; col < w; ++col) {
              std::fill(wide + col * factor, wide + (col + 1) * factor, src[r * w + col]);
            }
            for (int64_t copy = 0; copy < factor; ++copy) {
              float* dst_row = dst + (r * factor + copy) * ow;
              if (sum_) {
                for (int64_t col = 0; col < ow; ++col) dst_row[col] += wide[col];
              } else {
                std::memcpy(dst_row, wide, sizeof(float) * static_cast<size_t>(ow));
              }
            }
          }
        }
      }
      if (!sum_) channel_base += channels;
    }
    return Status();
  }

 private:
  int64_t scale_;
  int num_args_;
  bool sum_;
  std::vector<float> row_;
};

Status CreateUpSampling(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  const int64_t scale = attrs->Int("scale");
  const int64_t num_filter = attrs->Int("num_filter", 0);
  const int sample_type = attrs->Enum("sample_type", {"nearest", "bilinear"}, -1);
  const int mode = attrs->Enum("multi_input_mode", {"concat", "sum"}, 0);
  const int64_t num_args = attrs->Int("num_args");
  attrs->Ignore("workspace");
  MXL_RETURN_IF_ERROR(attrs->Finish());
  if (scale < 1) attrs->Fail("scale", StrCat(scale, " must be at least 1"));
  if (num_args < 1 || num_args > 100000) {
    attrs->Fail("num_args", StrCat(num_args, " is not a valid number of inputs"));
  }
  MXL_RETURN_IF_ERROR(attrs->Finish());
  if (sample_type == 0) {
    out->reset(new UpSamplingNearest(scale, static_cast<int>(num_args), mode == 1));
    return Status();
  }
  if (num_args != 1) attrs->Fail("num_args", "bilinear upsampling takes one input (data)");
  if (num_filter < 1) {
    attrs->Fail("num_filter", "bilinear upsampling needs num_filter = the input's channels");
  }
  MXL_RETURN_IF_ERROR(attrs->Finish());
  DeconvParams p;
  const int64_t kernel = 2 * scale - scale % 2;
  const int64_t pad = scale / 2;  // ceil((scale - 1) / 2)
  p.kernel = {kernel, kernel};
  p.stride = {scale, scale};
  p.dilate = {1, 1};
  p.pad = {pad, pad};
  p.adj = {0, 0};
  p.target_shape = {0, 0};
  p.num_filter = num_filter;
  p.num_group = num_filter;
  p.no_bias = true;
  out->reset(new Deconvolution(std::move(p)));
  return Status();
}

}  // namespace deconvolution_op
}  // namespace mxlite
