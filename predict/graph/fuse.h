/*
 * Graph optimisation for inference: fold chains of operators into one.
 *
 * OptimizeGraph is the one entry point (executors and the memory report
 * call it). A graph reaches it pruned to its outputs (PruneToOutputs, at
 * load); its fusion runs named analysis passes in order over one plan of
 * the input graph (fuse.cc's kFusionPasses: convolution chains, input
 * BatchNorm, average pooling, BatchNorm clamp, dropout), then one rewrite
 * builds the new
 * graph. What comes after belongs to binding, which knows the shapes:
 * in-place Concat inputs (FindEntryParts) and the memory plan (PlanMemory),
 * both in executor/memory_plan.h. The passes:
 *
 * A Convolution whose output is read only by the next link of a chain
 *
 *   Convolution -> BatchNorm -> elemwise_add(residual) -> relu / clip
 *
 * (each link optional, in this order) becomes one _FusedConvolution node:
 * the BatchNorm's statistics are folded into the weights and bias when the
 * operator is prepared, the residual is added and the clamp applied while
 * each output tile is still in cache. For the CPU, a 1x1 one-group
 * convolution's output may also take over its residual's buffer
 * (residual_in_place; the memory plan decides): its GEMM reads each
 * residual element before writing the output there, which saves a third of
 * the layer's memory traffic. A chain without a residual whose
 * convolution is a stem (2-D, one group, dilation 1, stride 1 or 2, reading
 * a graph input or a BatchNorm of one) takes a following 2-D max pooling
 * too, where the direct convolution kernels run (DirectConvKernelsPay): the
 * operator then pools bands of its output rows while they are in cache
 * (convolution.cc).
 * A link is taken only when the previous output has exactly one reader
 * and is not a graph output, and, for BatchNorm, when its hidden outputs
 * are unused and it normalises axis 1; so the rewritten graph computes
 * the same values (up to float rounding of the folded weights) and exposes
 * the same outputs.
 *
 * A BatchNorm that no convolution absorbed (pre-activation networks such
 * as ResNet v2 and DenseNet normalise before convolving), whose result
 * (after an optional relu/clip) only a 1x1, stride-1, one-group Convolution
 * reads, goes into that convolution too (with_input_bn): it reads the
 * BatchNorm's input and normalises it as the GEMM reads it, with the
 * BatchNorm operator's own arithmetic, so the values are those of the
 * unfused graph. Any other standing BatchNorm takes a following relu/clip
 * as _FusedBatchNorm.
 *
 * A 2-D average pooling beside a 2-D 1x1 convolution goes into it too
 * (with_input_avg_pool): a pooling that only the convolution reads (before
 * its chain), or a pooling without padding that alone reads a convolution
 * and at most its BatchNorm. The two commute, so the operator computes
 * them in the cheaper order (convolution.cc): DenseNet's transitions pool
 * first and convolve a quarter of the map, Inception's pooling branches
 * convolve first and pool a quarter of the planes. The values differ from
 * the unfused graph's by rounding only.
 *
 * Dropout (the identity at inference) is removed when neither its output is
 * a graph output nor its mask is read: its readers read its input.
 *
 * For the CUDA backend (FusionTarget::kCuda) a chain takes no pooling and
 * no BatchNorm is fused into the convolution after it: its kernels run the
 * convolution and then the rest of the chain as one epilogue.
 *
 * The fused node takes the place of the last link, which is valid because
 * nothing between the convolution and that link reads the convolution's
 * result. Node names stay those of the last link, so graph outputs keep
 * their names.
 */
#ifndef MXLITE_GRAPH_FUSE_H_
#define MXLITE_GRAPH_FUSE_H_

#include "graph.h"

namespace mxlite {

// Which kernels will run the graph. The CUDA backend (cuda/cuda_ops.cc)
// runs convolution chains and BatchNorm clamps fused, but neither a stem's
// pooling, an average pooling nor input BatchNorms: for kCuda those passes
// are left out.
enum class FusionTarget { kCpu, kCuda };

// The graph an executor runs: `graph` optimised by the passes above for
// `target`, or `graph` as it is when `optimize` is off (RuntimeOptions::
// graph_optimization). *out shares nothing mutable with `graph`:
// operators of rewritten nodes are created anew.
Status OptimizeGraph(const Graph& graph, bool optimize, FusionTarget target, Graph* out);

// The fusion passes and rewrite alone (OptimizeGraph with `optimize` on).
Status FuseOperators(const Graph& graph, FusionTarget target, Graph* out);

}  // namespace mxlite

#endif  // MXLITE_GRAPH_FUSE_H_
