/*
 * Helpers shared by the operators that move, broadcast or reduce data.
 *
 * Most data-movement operators (transpose, slice, tile, repeat, reverse,
 * broadcast_to, ...) are one strided gather: output element (i0, ..., in-1)
 * is input element base + offset + sum_k i_k * stride_k, where a stride may
 * be 0 (broadcast) or negative (reverse). Broadcasting binary operators walk
 * two such views at once. RowWalker does that walk for any number of
 * operands: it visits the output in row-major order one innermost row at a
 * time and keeps every operand's offset up to date, so the per-element work
 * is a tight loop over the row. Before walking, dims that are contiguous for
 * every operand are merged, so a (N, C, H, W) + (1, C, 1, 1) broadcast walks
 * N*C rows of H*W elements rather than N*C*H rows of W.
 */
#ifndef MXLITE_OPERATORS_TENSOR_UTIL_H_
#define MXLITE_OPERATORS_TENSOR_UTIL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "../base/shape.h"
#include "../base/status.h"
#include "attr_parser.h"  // TupleText

namespace mxlite {

// Resolves a possibly negative axis against `ndim`: valid axes are
// [-ndim, ndim). Returns false when out of range.
bool ResolveAxis(int64_t axis, int ndim, int* out);
// The same, with an error naming the attribute and the shape.
Status CheckAxis(int64_t axis, const Shape& shape, const char* attr, int* out);

// Row-major strides, in elements.
std::vector<int64_t> RowMajorStrides(const Shape& shape);

// numpy broadcasting of two shapes, aligned from the last dim: equal dims,
// or a 1 on either side. Leaves *out unknown while an input is incomplete.
Status BroadcastShapes(const Shape& lhs, const Shape& rhs, Shape* out);

// Strides for reading `in` as if it had shape `out` (same rank or lower,
// aligned to the right): 0 where `in` has extent 1 (or no dim) and `out`
// has more.
std::vector<int64_t> BroadcastStrides(const Shape& in, const Shape& out);

// Walks an index space row by row for several strided operands.
class RowWalker {
 public:
  // `strides[k]` holds operand k's stride per dim of `shape`; `offsets`
  // their starting offsets.
  RowWalker(const Shape& shape, std::vector<std::vector<int64_t>> strides,
            std::vector<int64_t> offsets);

  int64_t rows() const { return rows_; }
  int64_t row_length() const { return row_length_; }
  // Stride of operand k along the row.
  int64_t row_stride(int k) const { return row_strides_[k]; }
  // Offset of operand k at the start of the current row.
  int64_t offset(int k) const { return offsets_[k]; }
  // Moves to the next row.
  void Next();

 private:
  std::vector<int64_t> extents_;               // outer dims (all but the row)
  std::vector<std::vector<int64_t>> strides_;  // per operand, per outer dim
  std::vector<int64_t> index_;
  std::vector<int64_t> offsets_;
  std::vector<int64_t> row_strides_;
  int64_t rows_ = 0;
  int64_t row_length_ = 0;
};

// out (dense, of `shape`) = the strided view of `in`.
void GatherStrided(const float* in, int64_t offset, const std::vector<int64_t>& strides,
                   const Shape& shape, float* out);

// Copies `in` to `out` unless they already share the buffer (operators whose
// output may be an identity view of their input).
void CopyIfDistinct(const float* in, float* out, int64_t count);

// Sets every plane of `out` (images x channels planes of `plane` values) to
// its channel's bias, or to zero when `bias` is null: where the layers that
// add their products into the output start.
void FillPlanesWithBias(float* out, int64_t images, int64_t channels, int64_t plane,
                        const float* bias);

}  // namespace mxlite

#endif  // MXLITE_OPERATORS_TENSOR_UTIL_H_
