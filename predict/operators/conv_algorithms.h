/*
 * Convolution algorithms as one ordered table.
 *
 * A convolution layer is described once, by ConvGeometry: every size in a
 * three-spatial-dims form (a 1-D or 2-D layer gets unit dims in front:
 * extent 1, kernel 1, stride 1, pad 0, which changes neither the
 * arithmetic nor the memory layout), plus groups and whether the layer
 * normalises its input (a pre-activation BatchNorm folded into a 1x1
 * layer). Layout is always channel-first (NCW, NCHW, NCDHW) and the data
 * float32: those are checked when the operator is created.
 *
 * Each algorithm is one entry of ConvAlgorithmTable(), in priority order:
 *   - applies(geometry): everything the algorithm computes correctly.
 *     It is the only statement of coverage: the differential sweep
 *     (tests/cpp/conv_sweep_test.cc) forces every algorithm on every
 *     geometry its predicate accepts and compares with a reference;
 *   - pays(geometry): a performance heuristic, asked only where
 *     applies holds: whether the algorithm is the one to take before the
 *     entries after it;
 *   - prepare: transforms and packs the final weights (a folded BatchNorm
 *     already applied) into a ConvKernel, which knows its workspace size
 *     and runs the forward pass over the whole batch.
 * ChooseConvAlgorithm takes the first entry that applies, pays and is not
 * switched off by ConvOptions. The last entry (im2col + GEMM) applies to
 * every layer that does not normalise its input and always pays, so every
 * layer gets an algorithm. Under compact_weights the entry that reads the
 * weights in place comes right after the depthwise ones (whose copies are
 * a few KiB) and passes over the stems the direct kernel takes (as small),
 * so only those and a layer that normalises its input keep a packed copy
 * of their weights. Where an entry depends on the instruction set, its
 * predicates ask the kernel family what it has (WinogradKernels(),
 * DepthwiseBlockedPays, DirectConvPays: each family's table, chosen once
 * from the CPU and the MXLITE_ISA cap), never the ISA itself, so the
 * choice and the kernels that run always agree.
 */
#ifndef MXLITE_OPERATORS_CONV_ALGORITHMS_H_
#define MXLITE_OPERATORS_CONV_ALGORITHMS_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "../base/status.h"
#include "../ndarray/ndarray.h"
#include "../kernels/gemm.h"
#include "../kernels/thread_pool.h"

namespace mxlite {

struct ConvGeometry {
  int64_t batch = 0, channels = 0, filters = 0, groups = 1;
  // Per spatial axis: depth, height, width.
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  int64_t kernel[3] = {1, 1, 1}, stride[3] = {1, 1, 1}, pad[3] = {0, 0, 0},
          dilate[3] = {1, 1, 1};
  // The input passes through a BatchNorm (and clamp) as it is read.
  bool normalises_input = false;
  // The input is a depthwise convolution's output, which the threads write
  // by channels (each its own part of the channel blocks).
  bool input_from_depthwise = false;
  // The threads of the pool the layer runs on. Only the performance
  // predicates (pays) read it; what an algorithm computes never depends on
  // it, and ToString leaves it out.
  int threads = 1;

  int64_t InSpatial() const { return in[0] * in[1] * in[2]; }
  int64_t OutSpatial() const { return out[0] * out[1] * out[2]; }
  int64_t KernelSize() const { return kernel[0] * kernel[1] * kernel[2]; }
  // The depth axis is trivial (one input plane, a unit kernel along it, no
  // padding, hence one output plane): a 2-D problem on height and width.
  // Every algorithm that works on planes needs it.
  bool Planar() const { return in[0] == 1 && kernel[0] == 1 && pad[0] == 0; }
  // Kernel, stride all 1 and no padding: the input plane of a group is the
  // GEMM's right-hand matrix as it is.
  bool Pointwise() const;
  // One filter per channel, one channel per group.
  bool Depthwise() const { return groups == channels && filters == channels; }
  // Whether a planar layer's 2-D kernel, stride and dilation are these.
  bool Kernel2d(int64_t kh, int64_t kw) const { return kernel[1] == kh && kernel[2] == kw; }
  bool UnitStride2d() const { return stride[1] == 1 && stride[2] == 1; }
  bool UnitDilation2d() const { return dilate[1] == 1 && dilate[2] == 1; }
  // "batch 2, 8 -> 16 channels, in 1x9x9, kernel 1x3x3, ..." for messages.
  std::string ToString() const;
};

// What an algorithm prepares: the final weights (filters x channels/groups
// x taps, MXNet's order, a folded BatchNorm applied) and bias, the clamp
// after bias and residual, and for a layer that normalises its input, per
// channel (mean, invstd, gamma, beta), whether gamma is used, and its clamp.
struct ConvWeights {
  std::vector<float> weights;
  std::vector<float> bias;
  float lower = -std::numeric_limits<float>::infinity();
  float upper = std::numeric_limits<float>::infinity();
  // Kernels that read the weights in place (compact_weights) get the
  // parameter array itself here, `weights` left empty, and a folded
  // BatchNorm as a per-filter scale of the output (empty: none) with
  // `bias` its shift; they use `weights` when this is empty.
  NDArray weights_in_place;
  std::vector<float> filter_scale;
  std::vector<float> input_scale;
  bool input_has_gamma = false;
  float input_lower = -std::numeric_limits<float>::infinity();
  float input_upper = std::numeric_limits<float>::infinity();

  // The memory its own vectors hold (not the parameter array it may point
  // at, which the model owns).
  size_t bytes() const {
    return HeldBytes(weights) + HeldBytes(bias) + HeldBytes(filter_scale) + HeldBytes(input_scale);
  }
};

// One forward call over the whole batch. residual (the output's shape) may
// be null, or the output itself where the kernel allows it
// (ResidualMayBeOutput); workspace holds at least the kernel's
// WorkspaceBytes().
struct ConvCall {
  int64_t batch = 0;  // images; a prepared kernel serves any batch size
  const float* data = nullptr;
  const float* residual = nullptr;
  float* output = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  ThreadPool* pool = nullptr;
};

// A prepared algorithm for one geometry: its weights in the form it reads.
class ConvKernel {
 public:
  virtual ~ConvKernel() = default;
  virtual size_t WorkspaceBytes() const = 0;
  // The memory the kernel holds: its weights in the form it reads them
  // (counted in the predictor's memory budget).
  virtual size_t PreparedBytes() const = 0;
  virtual Status Forward(const ConvCall& call) const = 0;
  // Whether Forward reads each residual element before it writes anything
  // over it, so that the residual may lie in the output's own buffer (the
  // memory plan's in-place pair, see the convolution operator). Kernels
  // that write partial results first, or add the residual in a later pass,
  // say no; the operator then hands them a copy.
  virtual bool ResidualMayBeOutput() const { return false; }
  // Whether ForwardRows computes bands of output rows of a planar layer,
  // so that a pooling fused after the convolution can read each band while
  // it is in cache (see the convolution operator). Kernels that compute
  // whole images only say no.
  virtual bool ComputesRowBands() const { return false; }
  // Output rows [row_begin, row_end) of out[1] for one image, every filter,
  // with the bias and clamp (no residual): filter f's row oy at
  // output + f * plane_stride + (oy - row_begin) * out[2].
  virtual void ForwardRows(const float* image, int64_t row_begin, int64_t row_end,
                           float* output, int64_t plane_stride) const {
    (void)image, (void)row_begin, (void)row_end, (void)output, (void)plane_stride;
  }
};

struct ConvAlgorithm {
  const char* name;
  bool (*applies)(const ConvGeometry& g);
  bool (*pays)(const ConvGeometry& g);
  Status (*prepare)(const ConvGeometry& g, ConvWeights weights,
                    std::unique_ptr<ConvKernel>* kernel);
  // The ConvOptions switch that turns this entry off, if any.
  // kCompactOnly: taken only under compact_weights, where it comes before
  // every entry that keeps a transformed copy of the weights.
  enum Switch { kAlways, kWinogradSwitch, kShiftedSwitch, kCompactOnly } switch_;
};

// Switches for comparing and debugging (RuntimeOptions::winograd turns the
// Winograd family off, RuntimeOptions::shifted_gemm the shifted-view GEMM)
// and for memory (RuntimeOptions::compact_weights).
struct ConvOptions {
  bool winograd = true;
  bool shifted_gemm = true;
  bool compact_weights = false;  // RuntimeOptions::compact_weights
};

// The algorithms in priority order.
const std::vector<ConvAlgorithm>& ConvAlgorithmTable();

// The first entry that applies, pays and is switched on; null only for a
// layer that normalises its input and is not pointwise with one group.
const ConvAlgorithm* ChooseConvAlgorithm(const ConvGeometry& g, const ConvOptions& options);

// Every entry that computes this layer and is switched on, in table order
// (what the tuner of conv_tuning.h times; kCompactOnly entries only under
// compact_weights).
std::vector<const ConvAlgorithm*> ApplicableConvAlgorithms(const ConvGeometry& g,
                                                          const ConvOptions& options);

// The entry of that name, or null.
const ConvAlgorithm* FindConvAlgorithm(const std::string& name);

}  // namespace mxlite

#endif  // MXLITE_OPERATORS_CONV_ALGORITHMS_H_
