#include "tensor_util.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace mxlite {

bool ResolveAxis(int64_t axis, int ndim, int* out) {
  if (axis < -ndim || axis >= ndim) return false;
  *out = static_cast<int>(axis < 0 ? axis + ndim : axis);
  return true;
}

Status CheckAxis(int64_t axis, const Shape& shape, const char* attr, int* out) {
  MXL_CHECK(ResolveAxis(axis, shape.ndim(), out), "attribute ", attr, "=", axis,
            " is out of range for input of shape ", shape.ToString(), " (valid: ", -shape.ndim(),
            " to ", shape.ndim() - 1, ")");
  return Status();
}

std::vector<int64_t> RowMajorStrides(const Shape& shape) {
  std::vector<int64_t> strides(shape.ndim() > 0 ? shape.ndim() : 0);
  int64_t stride = 1;
  for (int d = shape.ndim() - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= shape[d];
  }
  return strides;
}

Status BroadcastShapes(const Shape& lhs, const Shape& rhs, Shape* out) {
  if (!lhs.is_complete() || !rhs.is_complete()) return Status();
  const int ndim = std::max(lhs.ndim(), rhs.ndim());
  std::vector<int64_t> dims(ndim);
  for (int d = 0; d < ndim; ++d) {
    const int dl = d - (ndim - lhs.ndim()), dr = d - (ndim - rhs.ndim());
    const int64_t a = dl >= 0 ? lhs[dl] : 1, b = dr >= 0 ? rhs[dr] : 1;
    MXL_CHECK(a == b || a == 1 || b == 1, "shapes ", lhs.ToString(), " and ", rhs.ToString(),
              " cannot be broadcast together (dim ", d, ": ", a, " versus ", b, ")");
    dims[d] = a == 1 ? b : a;
  }
  *out = Shape(std::move(dims));
  return Status();
}

std::vector<int64_t> BroadcastStrides(const Shape& in, const Shape& out) {
  const std::vector<int64_t> dense = RowMajorStrides(in);
  std::vector<int64_t> strides(out.ndim(), 0);
  const int shift = out.ndim() - in.ndim();
  for (int d = 0; d < in.ndim(); ++d) {
    strides[d + shift] = in[d] == 1 && out[d + shift] != 1 ? 0 : dense[d];
  }
  return strides;
}

RowWalker::RowWalker(const Shape& shape, std::vector<std::vector<int64_t>> strides,
                     std::vector<int64_t> offsets)
    : offsets_(std::move(offsets)) {
  const size_t operands = strides.size();
  // Keep the dims that matter (extent != 1), then merge neighbours that are
  // contiguous for every operand.
  std::vector<int64_t> extents;
  std::vector<std::vector<int64_t>> kept(operands);
  for (int d = 0; d < shape.ndim(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = !extents.empty();
    for (size_t k = 0; k < operands && merge; ++k) {
      merge = kept[k].back() == strides[k][d] * shape[d];
    }
    if (merge) {
      extents.back() *= shape[d];
      for (size_t k = 0; k < operands; ++k) kept[k].back() = strides[k][d];
    } else {
      extents.push_back(shape[d]);
      for (size_t k = 0; k < operands; ++k) kept[k].push_back(strides[k][d]);
    }
  }
  if (extents.empty()) {  // a single element
    extents.push_back(1);
    for (size_t k = 0; k < operands; ++k) kept[k].push_back(0);
  }
  row_length_ = extents.back();
  extents.pop_back();
  rows_ = row_length_ > 0 ? 1 : 0;
  for (int64_t extent : extents) rows_ *= extent;
  row_strides_.resize(operands);
  strides_.resize(operands);
  for (size_t k = 0; k < operands; ++k) {
    row_strides_[k] = kept[k].back();
    kept[k].pop_back();
    strides_[k] = std::move(kept[k]);
  }
  extents_ = std::move(extents);
  index_.assign(extents_.size(), 0);
}

void RowWalker::Next() {
  for (int d = static_cast<int>(extents_.size()) - 1; d >= 0; --d) {
    for (size_t k = 0; k < offsets_.size(); ++k) offsets_[k] += strides_[k][d];
    if (++index_[d] < extents_[d]) return;
    for (size_t k = 0; k < offsets_.size(); ++k) offsets_[k] -= strides_[k][d] * extents_[d];
    index_[d] = 0;
  }
}

void GatherStrided(const float* in, int64_t offset, const std::vector<int64_t>& strides,
                   const Shape& shape, float* out) {
  RowWalker walker(shape, {strides}, {offset});
  const int64_t length = walker.row_length();
  const int64_t step = walker.row_stride(0);
  for (int64_t row = 0; row < walker.rows(); ++row, walker.Next(), out += length) {
    const float* src = in + walker.offset(0);
    if (step == 1) {
      std::memcpy(out, src, sizeof(float) * static_cast<size_t>(length));
    } else {
      for (int64_t i = 0; i < length; ++i) out[i] = src[i * step];
    }
  }
}

void CopyIfDistinct(const float* in, float* out, int64_t count) {
  if (in != out && count > 0) std::memcpy(out, in, sizeof(float) * static_cast<size_t>(count));
}

void FillPlanesWithBias(float* out, int64_t images, int64_t channels, int64_t plane,
                        const float* bias) {
  for (int64_t n = 0; n < images; ++n) {
    for (int64_t c = 0; c < channels; ++c) {
      float* start = out + (n * channels + c) * plane;
      std::fill(start, start + plane, bias ? bias[c] : 0.f);
    }
  }
}

}  // namespace mxlite
