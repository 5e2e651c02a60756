/*
 * FullyConnected's algorithms as one ordered table (the pattern of
 * conv_algorithms.h): y[m, n] = x[m, k] * W[n, k]^T, the bias added by the
 * operator afterwards.
 *   - "gemv rows": one matrix-vector product a row of x, reading W once per
 *     row without packing it: the whole cost at batch 1; pays up to
 *     kFcGemvRows rows;
 *   - "prepacked gemm": W^T packed once, at Prepare, for the blocked GEMM;
 *     applies while W is a parameter (not computed by the graph, as BERT's
 *     fused query/key/value weight is) and has at most kFcMaxPackedWeights
 *     elements (a larger W would double the weight memory);
 *   - "gemm": both operands packed per call (last: covers everything).
 * applies() states what each computes; pays() the heuristic; the operator
 * takes the first entry that does both.
 */
#ifndef MXLITE_OPERATORS_FULLY_CONNECTED_H_
#define MXLITE_OPERATORS_FULLY_CONNECTED_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "../base/status.h"
#include "../kernels/gemm.h"
#include "../kernels/thread_pool.h"

namespace mxlite {

constexpr int64_t kFcGemvRows = 4;
constexpr int64_t kFcMaxPackedWeights = int64_t{16} << 20;  // 64 MiB of float32

struct FcGeometry {
  int64_t rows = 0, depth = 0, hidden = 0;  // m, k, n
  // W keeps its Prepare-time value (a parameter), and a packed copy of it
  // may be kept (not under compact_weights).
  bool constant_weight = true;
};

// One call: x (rows x depth), W (hidden x depth) as the operator holds it,
// y (rows x hidden). A prepared kernel serves any number of rows; the
// caller owns the scratch a kernel packs x into, so kernels are immutable
// and executors of one model share them.
struct FcCall {
  int64_t rows = 0;
  PackedMatrix* packed_x = nullptr;  // scratch kept between calls (needed by "prepacked gemm")
  const float* x = nullptr;
  const float* weight = nullptr;
  float* y = nullptr;
  ThreadPool* pool = nullptr;
};

class FcKernel {
 public:
  virtual ~FcKernel() = default;
  // The memory the kernel holds (a packed copy of W, if it keeps one).
  virtual size_t PreparedBytes() const { return 0; }
  virtual Status Forward(const FcCall& call) const = 0;
};

struct FcAlgorithm {
  const char* name;
  bool (*applies)(const FcGeometry& g);
  bool (*pays)(const FcGeometry& g);
  // weight: hidden x depth, read at Prepare only by the entries that copy it.
  Status (*prepare)(const FcGeometry& g, const float* weight, std::unique_ptr<FcKernel>* kernel);
};

const std::vector<FcAlgorithm>& FcAlgorithmTable();
const FcAlgorithm* ChooseFcAlgorithm(const FcGeometry& g);

}  // namespace mxlite

#endif  // MXLITE_OPERATORS_FULLY_CONNECTED_H_
