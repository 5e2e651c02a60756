/*
 * The convolution algorithms outside the GEMM family (see
 * conv_algorithms.h), each a thin adapter from ConvGeometry to its kernel:
 *   - depthwise (one filter per channel, any rank): every filter tap adds a
 *     shifted, clipped row of the input into the output plane; a GEMM would
 *     have M = 1. Planar 3x3 layers have their own kernels, one plane at a
 *     time or sixteen channels in the lanes (kernels/depthwise.h);
 *   - Winograd F(4x4, 3x3) (kernels/winograd.h), F(2x2, 3x3)
 *     (kernels/winograd2x2.h) and the one-axis F(2, 7) / F(4, 5) down the
 *     rows (kernels/winograd1d.h), planar layers with a unit stride;
 *   - direct (kernels/direct_conv.h): few input channels (network stems),
 *     each output row computed from the input rows in place.
 * Every kernel applies the bias, the residual and the clamp as it writes.
 */
#include <algorithm>

#include "../kernels/depthwise.h"
#include "../kernels/direct_conv.h"
#include "../kernels/gemm.h"
#include "../kernels/winograd.h"
#include "../kernels/winograd1d.h"
#include "../kernels/winograd2x2.h"
#include "conv_kernels.h"

namespace mxlite {
namespace conv_special_cc {

// ceil(a / b) for b > 0 and any sign of a.
inline int64_t CeilDiv(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

// Output positions o in [*lo, *hi) whose input i = o*s + offset lies in
// [0, in), where offset = k*d - p; an empty range comes back as lo == hi.
inline void ValidRange(int64_t in, int64_t out, int64_t stride, int64_t offset, int64_t* lo,
                       int64_t* hi) {
  *lo = std::min<int64_t>(out, std::max<int64_t>(0, CeilDiv(-offset, stride)));
  *hi = std::max<int64_t>(*lo, std::min<int64_t>(out, CeilDiv(in - offset, stride)));
}

// ---------------------------------------------------------------------------
// Depthwise, any kernel and rank: one channel plane at a time.

// out += filter (*) in for one channel, the output plane already holding
// the bias.
void DepthwisePlane(const ConvGeometry& g, const float* in, const float* filter, float* out) {
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

// Holds the geometry and the final weights (and bias) as they are.
class ConvKernelBase : public ConvKernel {
 public:
  Status Prepare(const ConvGeometry& g, ConvWeights w) {
    g_ = g;
    w_ = std::move(w);
    return Status();
  }
  size_t WorkspaceBytes() const override { return 0; }
  size_t PreparedBytes() const override { return w_.bytes(); }

 protected:
  ConvGeometry g_;
  ConvWeights w_;
};

class DepthwiseKernel : public ConvKernelBase {
 public:
  Status Forward(const ConvCall& call) const override {
    const ConvGeometry& g = g_;
    const int64_t in_plane = g.InSpatial(), out_plane = g.OutSpatial();
    ParallelFor(call.pool, call.batch * g.channels, [&](int64_t plane) {
      const int64_t c = plane % g.channels;
      float* dst = call.output + plane * out_plane;
      std::fill(dst, dst + out_plane, w_.bias[c]);
      DepthwisePlane(g, call.data + plane * in_plane, w_.weights.data() + c * g.KernelSize(),
                     dst);
      GemmEpilogue epilogue;
      epilogue.residual = call.residual ? call.residual + plane * out_plane : nullptr;
      epilogue.residual_stride = out_plane;
      epilogue.lower = w_.lower;
      epilogue.upper = w_.upper;
      if (epilogue.residual || epilogue.clamps()) {
        ApplyGemmEpilogue(epilogue, 0, 0, 1, out_plane, dst, out_plane);
      }
    });
    return Status();
  }
};

// The fields the 3x3 depthwise kernels' two argument structs share.
template <typename Args>
void SetDepthwiseGeometry(const ConvGeometry& g, const ConvWeights& w, Args* args) {
  args->in_h = g.in[1];
  args->in_w = g.in[2];
  args->out_h = g.out[1];
  args->out_w = g.out[2];
  args->stride = g.stride[1];
  args->pad_h = g.pad[1];
  args->pad_w = g.pad[2];
  args->lower = w.lower;
  args->upper = w.upper;
}

// Planar 3x3, one plane at a time.
class Depthwise3x3Kernel : public ConvKernelBase {
 public:
  Status Forward(const ConvCall& call) const override {
    const ConvGeometry& g = g_;
    const int64_t in_plane = g.InSpatial(), out_plane = g.OutSpatial();
    ParallelFor(call.pool, call.batch * g.channels, [&](int64_t plane) {
      const int64_t c = plane % g.channels;
      DepthwisePlaneArgs args;
      SetDepthwiseGeometry(g, w_, &args);
      args.input = call.data + plane * in_plane;
      args.weights = w_.weights.data() + c * 9;
      args.bias = w_.bias[c];
      args.output = call.output + plane * out_plane;
      args.residual = call.residual ? call.residual + plane * out_plane : nullptr;
      DepthwiseConv3x3Plane(args);
    });
    return Status();
  }
};

// Planar 3x3, sixteen channels in the lanes.
class DepthwiseBlockedKernel : public ConvKernel {
 public:
  Status Prepare(const ConvGeometry& g, ConvWeights w) {
    g_ = g;
    lower_ = w.lower;
    upper_ = w.upper;
    PackDepthwiseBlockWeights(w.weights.data(), w.bias.data(), g.channels, &block_weights_,
                              &block_bias_);
    return Status();
  }
  size_t WorkspaceBytes() const override { return 0; }
  size_t PreparedBytes() const override {
    return HeldBytes(block_weights_) + HeldBytes(block_bias_);
  }
  Status Forward(const ConvCall& call) const override {
    const ConvGeometry& g = g_;
    const int64_t in_plane = g.InSpatial(), out_plane = g.OutSpatial();
    const int64_t lanes = kDepthwiseBlockChannels;
    const int64_t blocks = (g.channels + lanes - 1) / lanes;
    ConvWeights clamp;
    clamp.lower = lower_;
    clamp.upper = upper_;
    ParallelFor(call.pool, call.batch * blocks, [&](int64_t task) {
      const int64_t block = task % blocks;
      const int64_t first = (task / blocks) * g.channels + block * lanes;
      DepthwiseBlockArgs args;
      SetDepthwiseGeometry(g, clamp, &args);
      args.input = call.data + first * in_plane;
      args.channels = std::min(lanes, g.channels - block * lanes);
      args.in_plane = in_plane;
      args.weights = block_weights_.data() + block * 9 * lanes;
      args.bias = block_bias_.data() + block * lanes;
      args.output = call.output + first * out_plane;
      args.out_plane = out_plane;
      args.residual = call.residual ? call.residual + first * out_plane : nullptr;
      DepthwiseConv3x3Block(args);
    });
    return Status();
  }

 private:
  ConvGeometry g_;
  float lower_ = 0, upper_ = 0;
  std::vector<float> block_weights_, block_bias_;
};

// ---------------------------------------------------------------------------
// Winograd F(4x4, 3x3).

class Winograd4x4Kernel : public ConvKernel {
 public:
  Status Prepare(const ConvGeometry& g, ConvWeights w) {
    g_ = g;
    bias_ = std::move(w.bias);
    lower_ = w.lower;
    upper_ = w.upper;
    plan_.channels = g.channels;
    plan_.filters = g.filters;
    plan_.in_h = g.in[1];
    plan_.in_w = g.in[2];
    plan_.out_h = g.out[1];
    plan_.out_w = g.out[2];
    plan_.pad_h = g.pad[1];
    plan_.pad_w = g.pad[2];
    return WinogradPackWeights(w.weights.data(), g.filters, g.channels, &packed_);
  }
  size_t WorkspaceBytes() const override { return plan_.WorkspaceBytes(); }
  size_t PreparedBytes() const override { return HeldBytes(packed_) + HeldBytes(bias_); }
  Status Forward(const ConvCall& call) const override {
    MXL_RETURN_IF_ERROR(CheckConvWorkspace(call, WorkspaceBytes()));
    const ConvGeometry& g = g_;
    const int64_t in_image = g.channels * g.InSpatial(), out_image = g.filters * g.OutSpatial();
    for (int64_t n = 0; n < call.batch; ++n) {
      WinogradConvolve(plan_, packed_, call.data + n * in_image, bias_.data(),
                       call.residual ? call.residual + n * out_image : nullptr, lower_, upper_,
                       call.output + n * out_image, static_cast<float*>(call.workspace),
                       call.pool);
    }
    return Status();
  }

 private:
  ConvGeometry g_;
  WinogradGeometry plan_;
  std::vector<PackedMatrix> packed_;
  std::vector<float> bias_;
  float lower_ = 0, upper_ = 0;
};

// ---------------------------------------------------------------------------
// F(2x2, 3x3) and the one-axis Winograd: plans that hold the weights and
// geometry and take the fused epilogue, a few images of a batch a pass
// (Plan::ImagesPerPass: F(2x2) on maps of 8x8 and smaller, else one).

Winograd2x2Geometry Winograd2x2GeometryOf(const ConvGeometry& g) {
  return Winograd2x2Geometry{g.channels, g.filters, g.in[1],  g.in[2],
                             g.out[1],   g.out[2],  g.pad[1], g.pad[2]};
}

Winograd1dGeometry Winograd1dGeometryOf(const ConvGeometry& g) {
  return Winograd1dGeometry{g.channels, g.filters, g.in[1],  g.in[2],     g.out[1],
                            g.out[2],   g.pad[1],   g.pad[2], g.kernel[1], g.kernel[2]};
}

// Plan: Winograd2x2Plan or Winograd1dPlan; GeometryOf gives its geometry.
template <class Plan, class PlanGeometry, PlanGeometry (*GeometryOf)(const ConvGeometry&)>
class WinogradPlanKernel : public ConvKernel {
 public:
  Status Prepare(const ConvGeometry& g, ConvWeights w) {
    g_ = g;
    bias_ = std::move(w.bias);
    lower_ = w.lower;
    upper_ = w.upper;
    MXL_RETURN_IF_ERROR(plan_.Prepare(GeometryOf(g), w.weights.data()));
    images_per_pass_ = plan_.ImagesPerPass(g.batch);
    return Status();
  }
  size_t WorkspaceBytes() const override { return plan_.WorkspaceBytes(images_per_pass_); }
  size_t PreparedBytes() const override { return plan_.bytes() + HeldBytes(bias_); }
  Status Forward(const ConvCall& call) const override {
    MXL_RETURN_IF_ERROR(CheckConvWorkspace(call, WorkspaceBytes()));
    const ConvGeometry& g = g_;
    const int64_t in_image = g.channels * g.InSpatial(), out_image = g.filters * g.OutSpatial();
    for (int64_t n = 0, images = 0; n < call.batch; n += images) {
      images = std::min(images_per_pass_, call.batch - n);
      plan_.Convolve(images, call.data + n * in_image, bias_.data(),
                     call.residual ? call.residual + n * out_image : nullptr, lower_, upper_,
                     call.output + n * out_image, static_cast<float*>(call.workspace),
                     call.pool);
    }
    return Status();
  }

 private:
  ConvGeometry g_;
  Plan plan_;
  int64_t images_per_pass_ = 1;  // images of a batch taken together
  std::vector<float> bias_;
  float lower_ = 0, upper_ = 0;
};

// ---------------------------------------------------------------------------
// Direct.

class DirectKernel : public ConvKernel {
 public:
  Status Prepare(const ConvGeometry& g, ConvWeights w) {
    g_ = g;
    bias_ = std::move(w.bias);
    lower_ = w.lower;
    upper_ = w.upper;
    direct_ = DirectConvGeometry{g.channels, g.in[1],  g.in[2],  g.filters, g.kernel[1],
                                 g.kernel[2], g.stride[1], g.pad[1], g.pad[2],  g.out[1],
                                 g.out[2]};
    PackDirectConvWeights(w.weights.data(), direct_, &packed_);
    return Status();
  }
  size_t WorkspaceBytes() const override { return 0; }
  size_t PreparedBytes() const override { return HeldBytes(packed_) + HeldBytes(bias_); }
  Status Forward(const ConvCall& call) const override {
    const ConvGeometry& g = g_;
    const int64_t in_image = g.channels * g.InSpatial(), out_image = g.filters * g.OutSpatial();
    // Bands of up to 8 rows (each gathers its input rows once), at least
    // two per thread.
    const int64_t threads = call.pool ? call.pool->size() : 1;
    const int64_t band = std::max<int64_t>(1, std::min<int64_t>(8, g.out[1] / (2 * threads)));
    const int64_t bands = (g.out[1] + band - 1) / band;
    ParallelFor(call.pool, call.batch * bands, [&](int64_t task) {
      const int64_t n = task / bands, first = task % bands * band;
      DirectConvRows(direct_, call.data + n * in_image, packed_.data(), bias_.data(), first,
                     std::min(g.out[1], first + band), call.output + n * out_image,
                     call.residual ? call.residual + n * out_image : nullptr, lower_, upper_);
    });
    return Status();
  }
  bool ComputesRowBands() const override { return true; }
  void ForwardRows(const float* image, int64_t row_begin, int64_t row_end, float* output,
                   int64_t plane_stride) const override {
    DirectConvGeometry band = direct_;
    band.output_plane = plane_stride;
    band.output_first_row = row_begin;
    DirectConvRows(band, image, packed_.data(), bias_.data(), row_begin, row_end, output, nullptr,
                   lower_, upper_);
  }

 private:
  ConvGeometry g_;
  DirectConvGeometry direct_{};
  std::vector<float> packed_, bias_;
  float lower_ = 0, upper_ = 0;
};

}  // namespace conv_special_cc

Status PrepareDepthwiseConv(const ConvGeometry& g, ConvWeights w,
                            std::unique_ptr<ConvKernel>* kernel) {
  return MakeConvKernel<conv_special_cc::DepthwiseKernel>(g, std::move(w), kernel);
}

Status PrepareDepthwise3x3Conv(const ConvGeometry& g, ConvWeights w,
                               std::unique_ptr<ConvKernel>* kernel) {
  return MakeConvKernel<conv_special_cc::Depthwise3x3Kernel>(g, std::move(w), kernel);
}

Status PrepareDepthwiseBlockedConv(const ConvGeometry& g, ConvWeights w,
                                   std::unique_ptr<ConvKernel>* kernel) {
  return MakeConvKernel<conv_special_cc::DepthwiseBlockedKernel>(g, std::move(w), kernel);
}

Status PrepareWinograd4x4Conv(const ConvGeometry& g, ConvWeights w,
                              std::unique_ptr<ConvKernel>* kernel) {
  return MakeConvKernel<conv_special_cc::Winograd4x4Kernel>(g, std::move(w), kernel);
}

Status PrepareWinograd2x2Conv(const ConvGeometry& g, ConvWeights w,
                              std::unique_ptr<ConvKernel>* kernel) {
  using conv_special_cc::Winograd2x2GeometryOf;
  return MakeConvKernel<conv_special_cc::WinogradPlanKernel<
      Winograd2x2Plan, Winograd2x2Geometry, Winograd2x2GeometryOf>>(g, std::move(w), kernel);
}

Status PrepareWinograd1dConv(const ConvGeometry& g, ConvWeights w,
                             std::unique_ptr<ConvKernel>* kernel) {
  using conv_special_cc::Winograd1dGeometryOf;
  return MakeConvKernel<conv_special_cc::WinogradPlanKernel<
      Winograd1dPlan, Winograd1dGeometry, Winograd1dGeometryOf>>(g, std::move(w), kernel);
}

Status PrepareDirectConv(const ConvGeometry& g, ConvWeights w,
                         std::unique_ptr<ConvKernel>* kernel) {
  return MakeConvKernel<conv_special_cc::DirectKernel>(g, std::move(w), kernel);
}

}  // namespace mxlite
