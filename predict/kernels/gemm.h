/*
 * Single-precision matrix multiply, the engine under Convolution,
 * FullyConnected and Deconvolution.
 *
 *   C[M,N] = epilogue(A[M,K] * B[K,N])        (row-major)
 *
 * Algorithm (Goto/BLIS): A is packed into MR-tall strips, depth-major, in
 * blocks of KC; for weights this happens once, at load time (PackedMatrix).
 * B is packed per call, one KC x NC panel at a time, into NR-wide strips,
 * except where the micro-kernel can read it in place at its row stride
 * (AVX-512: a 1x1 convolution's input needs no copy). The micro-kernel
 * (gemm_microkernels.h) then keeps an MR x NR tile of C in registers over a
 * whole KC block, streaming both strips from cache. When
 * the last depth block of a tile is done, the epilogue runs on it while it
 * is still in L1: add a per-row bias, add a residual matrix, clamp (relu,
 * relu6). That is how convolution, batch norm, bias, activation and the
 * residual add of a ResNet block cost one pass over memory.
 *
 * Threads split C into column ranges (or row ranges when those divide more
 * evenly); each packs its own B panels, so nothing is shared but the
 * read-only packed A.
 */
#ifndef MXLITE_KERNELS_GEMM_H_
#define MXLITE_KERNELS_GEMM_H_

#include <cstdint>
#include <limits>
#include <vector>

#include "../base/large_pages.h"
#include "../base/status.h"
#include "gemm_microkernels.h"
#include "thread_pool.h"

namespace mxlite {

// Whether a clamp to [lower, upper] changes anything: a bound is finite.
inline bool ClampIsSet(float lower, float upper) {
  return lower != -std::numeric_limits<float>::infinity() ||
         upper != std::numeric_limits<float>::infinity();
}

// What happens to each element of C after the product, in this order.
struct GemmEpilogue {
  const float* bias = nullptr;      // per row of C, or null
  const float* residual = nullptr;  // same shape as C, or null
  int64_t residual_stride = 0;      // row stride of residual
  float lower = -std::numeric_limits<float>::infinity();  // clamp
  float upper = std::numeric_limits<float>::infinity();
  bool accumulate = false;          // add to C's previous contents

  bool clamps() const { return ClampIsSet(lower, upper); }
};

// A matrix packed for the micro-kernel in use: MR-row strips per KC block.
class PackedMatrix {
 public:
  // Packs A (rows x depth, row stride lda; transposed = A is stored as
  // depth x rows) for the micro-kernel chosen now, strips split over pool
  // if given. Packing again at the same size reuses the buffer.
  // segment_depth > 0 (a divisor of depth) keeps every depth block inside
  // one segment of that many depth steps, for GemmSegmentedB; each segment
  // is cut into near-equal blocks of at most KC.
  // max_block_depth > 0 allows blocks that deep instead of KC (see
  // kGemmInPlaceBlockDepth).
  Status Pack(const float* a, int64_t lda, int64_t rows, int64_t depth, bool transposed = false,
              ThreadPool* pool = nullptr, int64_t segment_depth = 0,
              int64_t max_block_depth = 0);
  // Multiplies row r of the packed matrix by scale[r]: a per-row factor
  // (a BatchNorm's) applied to weights packed as they are stored.
  void ScaleRows(const float* scale);
  int64_t rows() const { return rows_; }
  int64_t depth() const { return depth_; }
  int64_t segment_depth() const { return segment_depth_; }
  const MicroKernel& kernel() const { return *kernel_; }
  // Strip `strip` (rows strip*MR...) of depth block `block`.
  const float* Strip(int64_t block, int64_t strip) const {
    return data_.data() + block_offset_[block] + strip * kernel_->mr * BlockDepth(block);
  }
  int64_t blocks() const { return static_cast<int64_t>(block_start_.size()); }
  // The deepest of its blocks.
  int64_t max_block_depth() const { return max_block_depth_; }
  // The memory it holds (for the memory budget).
  size_t bytes() const {
    return data_.capacity() * sizeof(float) +
           (block_start_.capacity() + block_offset_.capacity()) * sizeof(int64_t);
  }
  // First depth step of block `block`, and its number of depth steps.
  int64_t BlockStart(int64_t block) const { return block_start_[block]; }
  int64_t BlockDepth(int64_t block) const {
    return (block + 1 < blocks() ? block_start_[block + 1] : depth_) - block_start_[block];
  }

 private:
  const MicroKernel* kernel_ = nullptr;
  int64_t rows_ = 0, depth_ = 0, strips_ = 0, segment_depth_ = 0, max_block_depth_ = 0;
  std::vector<int64_t> block_start_, block_offset_;
  // Streamed once a pass: in huge pages where there are (large_pages.h).
  std::vector<float, LargePageAllocator<float>> data_;
};

// One weight matrix per group, each packed for GemmPacked: for grouped
// operators (Deconvolution, the deformable convolutions) whose constant
// weights are packed once and shared (operators/prepared_cache.h).
struct PackedGroups {
  std::vector<PackedMatrix> groups;
};

// Packs `groups` matrices of rows x depth, group g's at weights + g * rows *
// depth, row-major (transposed: stored depth x rows), over pool if given.
Status PackGroups(const float* weights, int64_t groups, int64_t rows, int64_t depth,
                  bool transposed, ThreadPool* pool, PackedGroups* out);

// The bytes a vector holds (its capacity), for the memory budget; packed
// matrices count their buffers too.
template <typename T>
size_t HeldBytes(const std::vector<T>& values) {
  return values.capacity() * sizeof(T);
}
inline size_t HeldBytes(const std::vector<PackedMatrix>& matrices) {
  size_t bytes = matrices.capacity() * sizeof(PackedMatrix);
  for (const PackedMatrix& matrix : matrices) bytes += matrix.bytes();
  return bytes;
}

// Whether the GEMM reads a plain B of row stride ldb where it lies, with no
// packing pass: where the micro-kernel in use can (AVX-512), unless the rows
// are a multiple of 8 KiB apart (then a strip's rows fall into so few cache
// sets that they evict each other: N = 4096 ran at 0.83x the packed speed,
// N = 1024 at 1.07x).
bool GemmReadsBInPlace(int64_t ldb);

// The depth block A may be packed in (PackedMatrix::Pack, max_block_depth)
// for products whose B the GEMM reads in place: a 1x1 convolution's input.
// The KC of 256 keeps a packed B panel in L2 and a strip in L1; a B read in
// place has no panel, and each of its rows is read once per tile whatever
// the block's depth. Deeper blocks store and reload C's tiles fewer times,
// and a fused residual can then be read in C's own buffer
// (GemmReadsResidualFirst). Measured in BENCHMARKS.md ("1x1 weights in deep
// blocks"); blocks of 2048 gained nothing more.
constexpr int64_t kGemmInPlaceBlockDepth = 1024;

// The depth block for such a product of `columns` columns:
// kGemmInPlaceBlockDepth, except where each row's last columns go to a tail
// tile (41-50 columns, a 7x7 map's 49, on a kernel that reads B in place
// and has no wide tile for them): there kGemmTailTileBlockDepth, whose B rows (25 KB
// at 49 columns) stay in L1 while every row strip of A passes over them;
// the tail tile is bound by its loads and slows down when they come from
// L2 (BENCHMARKS.md, "7x7 maps in shallow blocks"). The same holds for a
// normalised input (GemmPackedTransformedB), whose blocks are written to a
// buffer as wide as the map and read there.
constexpr int64_t kGemmTailTileBlockDepth = 128;
int64_t GemmInPlaceBlockDepth(int64_t columns);

// C (rows x n, stride ldc) = epilogue(A * B), B is depth x n with stride ldb.
void GemmPacked(const PackedMatrix& a, const float* b, int64_t ldb, int64_t n, float* c,
                int64_t ldc, const GemmEpilogue& epilogue, ThreadPool* pool);

// Whether GemmPacked and GemmPackedTransformedB over `a` read each element
// of the epilogue's residual before they write C's element at the same
// place, so that the residual may be C itself (a fused residual add done
// in place): true when A is one depth block and the micro-kernel finishes
// its tiles in registers. With more blocks the first writes partial sums
// over the residual; other micro-kernels apply the epilogue after storing.
bool GemmReadsResidualFirst(const PackedMatrix& a);

// A product of at most this many columns whose A is packed in two depth
// halves splits its depth between the threads (GemmPackedTransformedB,
// GemmPackedDepthHalves): half of them multiply each half, the second into
// a scratch, then the halves are added and the epilogue applied. For a 1x1
// convolution that normalises its input (deeper than 256 channels, on a
// 14x14 or 7x7 map; see conv_gemm.cc): split by rows, each thread
// transformed all of B and one took 72 of DenseNet's 128 rows; by columns,
// 112 of 196. Measured, two threads: 128 x 1024 x 196 137 -> 118 us,
// 128 x 992 x 49 33.8 -> 29.9 (hot); densenet121 12.15 -> 11.90 ms,
// resnet50_v2 16.34 -> 16.22 (alternating in one process). On more columns
// the scratch and the sum cost more than they save.
constexpr int64_t kGemmSplitDepthMaxColumns = 256;

// GemmPacked for A packed in two depth halves (segment_depth = depth / 2),
// the depth split as above on at most kGemmSplitDepthMaxColumns columns.
// For a projection (a 1x1 convolution to far fewer channels than it reads)
// after a layer that split its output channels between the threads: each
// thread then reads the rows of B that it wrote, where a split of C by rows
// or columns has every thread read all of B's rows, half of them from
// another core's cache. Any thread count gives the bits of one thread.
void GemmPackedDepthHalves(const PackedMatrix& a, const float* b, int64_t ldb, int64_t n,
                           float* c, int64_t ldc, const GemmEpilogue& epilogue,
                           ThreadPool* pool);

// A per-row function of B applied as the GEMM reads it: apply(context,
// row, src, dst, count) writes count values of B's row `row` (from src,
// stored B) to dst. For a right-hand matrix that is a cheap function of a
// stored one (a 1x1 convolution's input normalised by the BatchNorm before
// it): each depth block of a column panel is transformed into a buffer that
// stays in cache until the micro-kernels have used it, where computing the
// whole matrix first would write it to memory and read it back.
struct GemmRowTransform {
  void (*apply)(const void* context, int64_t row, const float* src, float* dst,
                int64_t count) = nullptr;
  const void* context = nullptr;
};

// GemmPacked with B transformed row by row as it is read (see above).
void GemmPackedTransformedB(const PackedMatrix& a, const float* b, int64_t ldb, int64_t n,
                            float* c, int64_t ldc, const GemmEpilogue& epilogue,
                            const GemmRowTransform& transform, ThreadPool* pool);

// The same with B already in the micro-kernel's layout: strip s (columns
// s*NR ... s*NR+NR-1, zero or any finite value past n) is depth x NR floats,
// row-major, at b_packed + s * depth * NR, where NR = a.kernel().nr. For
// producers that can write B packed directly (Winograd's input transform).
void GemmPrepackedB(const PackedMatrix& a, const float* b_packed, int64_t n, float* c,
                    int64_t ldc, const GemmEpilogue& epilogue, ThreadPool* pool);

// GemmPacked and GemmPrepackedB over A's depth segments [segment_begin,
// segment_end) only (A packed with a segment_depth; without one its whole
// depth is one segment): C = epilogue(A[:, those depths] * B[those depths,
// :]), with b still the whole B (all depth rows, plain or prepacked). For a
// depth split between threads. Two parts of one depth block each (at most
// KC = 256 deep) added up give the bits of the whole product, whose
// micro-kernels add the second block's sum to the first's the same way.
void GemmPackedSegments(const PackedMatrix& a, int64_t segment_begin, int64_t segment_end,
                        const float* b, int64_t ldb, int64_t n, float* c, int64_t ldc,
                        const GemmEpilogue& epilogue, ThreadPool* pool);
void GemmPrepackedBSegments(const PackedMatrix& a, int64_t segment_begin, int64_t segment_end,
                            const float* b_packed, int64_t n, float* c, int64_t ldc,
                            const GemmEpilogue& epilogue, ThreadPool* pool);

// The same with B's depth cut into segments of a.segment_depth() steps
// that lie in different places: segment s (depth steps s*S ... s*S+S-1)
// starts at b_segments[s], its rows ldb floats apart. A convolution's taps
// are such segments: shifted views of one input, with no column matrix
// built (see convolution.cc).
void GemmSegmentedB(const PackedMatrix& a, const float* const* b_segments, int64_t ldb,
                    int64_t n, float* c, int64_t ldc, const GemmEpilogue& epilogue,
                    ThreadPool* pool);

// Packs B (depth x n, row stride ldb; transposed: stored n x depth) into
// the layout GemmPrepackedB reads, for the micro-kernel in use: for operands
// used many times, such as a FullyConnected weight at batch > 1.
void PackBMatrix(const float* b, int64_t ldb, bool transposed, int64_t depth, int64_t n,
                 std::vector<float>* packed);

// Applies the epilogue to rows [row0, row0 + rows) x columns [col0, col0 +
// cols) of C, stored at c with row stride ldc (for kernels other than the
// GEMM that finish their output the same way).
void ApplyGemmEpilogue(const GemmEpilogue& epilogue, int64_t row0, int64_t col0, int64_t rows,
                       int64_t cols, float* c, int64_t ldc);

// Unpacked convenience form: C = op(A) op(B) + beta * C, both operands
// packed on the fly (for matrices used once).
void Sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
           ThreadPool* pool = nullptr);

// y[n] = W[n,k] . x[k] for each row of W: the batch-1 FullyConnected case,
// bound by reading W once; rows are split over the pool.
void SgemvRows(int64_t n, int64_t k, const float* w, const float* x, float* y,
               ThreadPool* pool = nullptr);

// Name of the micro-kernel in use (for reports and tests).
const char* GemmKernelName();

}  // namespace mxlite

#endif  // MXLITE_KERNELS_GEMM_H_
