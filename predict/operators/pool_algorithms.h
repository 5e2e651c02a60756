/*
 * Pooling algorithms as one ordered table.
 *
 * A pooling layer is described once, by PoolGeometry: the kind (max, avg,
 * sum, lp), its options, and every size in a three-spatial-dims form (1-D
 * and 2-D pooling get unit dims in front: extent 1, kernel 1, stride 1,
 * pad 0, which changes neither the arithmetic nor the memory layout).
 * Layout is channel-first (NCW, NCHW, NCDHW) and the data float32; the
 * batch and channel axes fold into independent planes.
 *
 * The arithmetic is MXNet's CPU kernels' (src/operator/nn/pool.h), to the
 * bit, on every path:
 *   - a window starts at o*stride - pad and spans kernel taps;
 *   - max: the window clipped to the input (padding never wins), the running
 *     maximum starting from -FLT_MAX;
 *   - avg: the divisor is the window clipped to [-pad, in + pad) when
 *     count_include_pad, else the window clipped to the input; each element
 *     is divided by it before it is added, in row-major window order;
 *   - sum: the plain sum over the clipped window; lp: (sum x^p)^(1/p), with
 *     x^1 = x (no absolute value), sqrt for p = 2 and cbrt for p = 3;
 *   - a 3-D avg window whose divisor is 0 gives NaN (MXNet's 3-D kernel;
 *     the 1-D and 2-D ones write the empty sum, 0).
 *
 * Each algorithm is one entry of PoolAlgorithmTable(), in priority order:
 *   - applies(geometry): everything the algorithm computes correctly.
 *     It is the only statement of coverage: the differential sweep
 *     (tests/cpp/pool_sweep_test.cc) forces every algorithm on every
 *     geometry its predicate accepts and compares with a reference;
 *   - pays(geometry): a performance heuristic, asked only where
 *     applies holds: whether the algorithm is the one to take before the
 *     entries after it;
 *   - prepare: builds a PoolKernel for the geometry, which runs the forward
 *     pass over all planes.
 * ChoosePoolAlgorithm takes the first entry that applies and pays. The last
 * entry (the scalar reference loops) applies to every geometry and always
 * pays. The vector entries ask the family's implementation, PoolKernels()
 * (chosen once from the CPU and the MXLITE_ISA cap), which kernels run
 * here, never the ISA itself: an AVX2 kernel applies under AVX-512 too
 * (every AVX-512 machine mxlite selects has AVX2 and FMA) but pays only
 * where the AVX2 kernels are the preferred ones.
 */
#ifndef MXLITE_OPERATORS_POOL_ALGORITHMS_H_
#define MXLITE_OPERATORS_POOL_ALGORITHMS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../base/status.h"
#include "../kernels/cpu_features.h"
#include "../kernels/thread_pool.h"

namespace mxlite {

// In the order of the pool_type attribute's values.
enum class PoolType { kMax = 0, kAvg = 1, kSum = 2, kLp = 3 };

struct PoolGeometry {
  PoolType type = PoolType::kMax;
  int p = 1;                      // lp's exponent (1, 2 or 3)
  bool count_include_pad = true;  // avg: the divisor counts the padding
  bool nan_on_empty = false;      // an avg window whose divisor is 0 gives NaN (3-D pooling)
  int64_t planes = 0;             // batch * channels
  // Per spatial axis: depth, height, width.
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  int64_t kernel[3] = {1, 1, 1}, stride[3] = {1, 1, 1}, pad[3] = {0, 0, 0};

  int64_t InPlane() const { return in[0] * in[1] * in[2]; }
  int64_t OutPlane() const { return out[0] * out[1] * out[2]; }
  bool MaxOrAvg() const { return type == PoolType::kMax || type == PoolType::kAvg; }
  // The depth axis is trivial (one input plane, a unit kernel along it, no
  // padding, hence one output plane): a 2-D problem on height and width.
  bool Planar() const { return in[0] == 1 && kernel[0] == 1 && pad[0] == 0; }
  // Every window is a whole unpadded plane (global pooling, or a kernel the
  // size of an unpadded input).
  bool WholePlanes() const;
  // Every window of every axis holds at least one input element.
  bool WindowsNonempty() const;
  // Pixels of a plane padded so that every window lies inside it (see
  // PoolPaddedExtent), over height and width.
  int64_t PaddedPlanePixels() const;
  // avg: the divisor, as a float, when every window of the height and
  // width axes has the same one (count_include_pad with windows inside the
  // padded input, as in Inception's 3x3 stride-1 pools), else 0.
  float UniformDivisor() const;
  // "12 planes, max, input 1x9x9, output 1x4x4, kernel 1x3x3, ..." for messages.
  std::string ToString() const;
};

// Output extent along one axis for the 'valid' and 'full' conventions
// (MXNet's PoolingShape): 1 + floor or ceil of (in + 2 pad - kernel) /
// stride. The caller has checked kernel <= in + 2 pad.
inline int64_t PoolOutputExtent(int64_t in, int64_t kernel, int64_t stride, int64_t pad,
                                bool full) {
  const int64_t span = in + 2 * pad - kernel;
  return 1 + (full ? (span + stride - 1) / stride : span / stride);
}

// One window's bounds along one axis.
struct PoolSpan {
  int64_t begin, end;     // clipped to the input
  int64_t padded_extent;  // end clipped to in + pad, minus the unclipped start
};

MXL_HOST_DEVICE inline PoolSpan PoolWindowSpan(int64_t o, int64_t in, int64_t kernel, int64_t stride,
                               int64_t pad) {
  const int64_t start = o * stride - pad;
  const int64_t padded_end = start + kernel < in + pad ? start + kernel : in + pad;
  PoolSpan span;
  span.padded_extent = padded_end - start;
  span.begin = start > 0 ? start : 0;
  span.end = padded_end < in ? padded_end : in;
  return span;
}

// Extent along one axis of the input with its padding, grown so that every
// output's whole window lies inside ('full' windows may hang past the pad).
inline int64_t PoolPaddedExtent(int64_t in, int64_t out, int64_t kernel, int64_t stride,
                                int64_t pad) {
  const int64_t windows = (out - 1) * stride + kernel;
  return windows > pad + in ? windows : pad + in;
}

// A prepared algorithm for one geometry.
class PoolKernel {
 public:
  virtual ~PoolKernel() = default;
  // x: planes x InPlane() floats; y: planes x OutPlane() floats.
  virtual void Forward(const float* x, float* y, ThreadPool* pool) const = 0;
};

struct PoolAlgorithm {
  const char* name;
  bool (*applies)(const PoolGeometry& g);
  bool (*pays)(const PoolGeometry& g);
  Status (*prepare)(const PoolGeometry& g, std::unique_ptr<PoolKernel>* kernel);
};

// One implementation of the pooling kernels: which vector kernels of the
// algorithm table run on this machine. A line of kPoolImplementations
// (pool_algorithms.cc); the kernels live one file per instruction set
// (pool_avx512.cc, pool_avx2.cc), the scalar reference in pool_algorithms.cc.
struct PoolImplementation {
  Isa isa;
  bool avx512;          // the AVX-512 kernels run
  bool avx2;            // the AVX2 kernels run
  bool avx2_preferred;  // and pay where an AVX-512 kernel would do the same
};

// The family's implementation for this machine, chosen once from
// SelectedIsa(): the algorithm table asks it, never the ISA.
const PoolImplementation& PoolKernels();

// The algorithms in priority order.
const std::vector<PoolAlgorithm>& PoolAlgorithmTable();

// The first entry that applies and pays (never null: the last entry
// applies to everything).
const PoolAlgorithm* ChoosePoolAlgorithm(const PoolGeometry& g);

// The entry of that name, or null.
const PoolAlgorithm* FindPoolAlgorithm(const std::string& name);

}  // namespace mxlite

#endif  // MXLITE_OPERATORS_POOL_ALGORITHMS_H_
