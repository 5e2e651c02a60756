/*
 * Shape: the dimensions of an array, with room for "not known yet".
 *
 * During shape inference a shape may be unknown as a whole (ndim() == -1) or
 * in single dimensions (a dim of -1). MXNet's classic "__shape__" hints write
 * an unknown dim as 0; the graph loader converts those to -1 on entry, so
 * inside mxlite 0 is a real (empty) dimension and -1 means unknown.
 */
#ifndef MXLITE_BASE_SHAPE_H_
#define MXLITE_BASE_SHAPE_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace mxlite {

class Shape {
 public:
  Shape() = default;  // unknown
  Shape(std::initializer_list<int64_t> dims) : known_(true), dims_(dims) {}
  explicit Shape(std::vector<int64_t> dims) : known_(true), dims_(std::move(dims)) {}

  // A shape of known rank whose dims are all unknown.
  static Shape OfRank(int ndim) { return Shape(std::vector<int64_t>(ndim, -1)); }

  // Rank, or -1 while unknown.
  int ndim() const { return known_ ? static_cast<int>(dims_.size()) : -1; }
  bool rank_known() const { return known_; }
  // True when the rank and every dim are known.
  bool is_complete() const {
    if (!known_) return false;
    for (int64_t d : dims_) {
      if (d < 0) return false;
    }
    return true;
  }
  int64_t operator[](int i) const { return dims_[i]; }
  int64_t& operator[](int i) { return dims_[i]; }
  const std::vector<int64_t>& dims() const { return dims_; }

  // Number of elements (1 for a 0-d shape); meaningful only when complete.
  // -1 when the count exceeds kMaxElements (as CheckedSize), so that a
  // hostile shape neither overflows int64 (undefined) nor wraps around to a
  // count that matches another shape's.
  int64_t Size() const {
    int64_t size = 1;
    for (int64_t d : dims_) {
      if (d > kMaxElements || d < -kMaxElements) return -1;
      const int64_t magnitude = d < 0 ? -d : d, current = size < 0 ? -size : size;
      if (magnitude != 0 && current > kMaxElements / magnitude) return -1;
      size *= d;
    }
    return size;
  }
  // a * b for counts a, b >= 0, or -1 when the product exceeds kMaxElements
  // or either is negative.
  static int64_t CheckedProduct(int64_t a, int64_t b) {
    if (a < 0 || b < 0 || (b != 0 && a > kMaxElements / b)) return -1;
    return a * b;
  }
  // Number of elements, or -1 when it exceeds kMaxElements (a corrupt or
  // hostile shape must not wrap around to a small allocation).
  static constexpr int64_t kMaxElements = int64_t(1) << 48;
  int64_t CheckedSize() const {
    int64_t size = 1;
    for (int64_t d : dims_) {
      if (d < 0) return -1;
      if (d != 0 && size > kMaxElements / d) return -1;
      size *= d;
    }
    return size;
  }
  // Product of dims [begin, end).
  int64_t ProdRange(int begin, int end) const {
    int64_t size = 1;
    for (int i = begin; i < end; ++i) size *= dims_[i];
    return size;
  }

  bool operator==(const Shape& other) const {
    return known_ == other.known_ && dims_ == other.dims_;
  }
  bool operator!=(const Shape& other) const { return !(*this == other); }

  // "(1,3,224,224)", "(1,-1,7)" with unknown dims, "?" when the rank is unknown.
  std::string ToString() const {
    if (!known_) return "?";
    std::string text = "(";
    for (size_t i = 0; i < dims_.size(); ++i) {
      if (i) text += ",";
      text += std::to_string(dims_[i]);
    }
    if (dims_.size() == 1) text += ",";
    return text + ")";
  }

 private:
  bool known_ = false;
  std::vector<int64_t> dims_;
};

// Merges what `incoming` knows into `target`. Returns false when both know a
// value and the values differ (a genuine conflict).
inline bool MergeShape(Shape* target, const Shape& incoming) {
  if (!incoming.rank_known()) return true;
  if (!target->rank_known()) {
    *target = incoming;
    return true;
  }
  if (target->ndim() != incoming.ndim()) return false;
  for (int i = 0; i < target->ndim(); ++i) {
    int64_t want = incoming[i];
    if (want < 0) continue;
    if ((*target)[i] < 0) {
      (*target)[i] = want;
    } else if ((*target)[i] != want) {
      return false;
    }
  }
  return true;
}

}  // namespace mxlite

#endif  // MXLITE_BASE_SHAPE_H_
