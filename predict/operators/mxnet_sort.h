// MXNet's CPU sort order, ties included.
//
// MXNet 1.9.1's topk, sort and argsort (TopKSort<cpu> in
// src/operator/tensor/ordering_op-inl.h) order each row's indices with the C++
// library of the compiler that built it: std::sort when k * 8 > n, else
// std::partial_sort(first, first + k, last), with the comparator
// `vals[a] < vals[b]` (is_ascend) or `vals[a] > vals[b]` (descending). Neither
// is stable, so the order of equal values is whatever libstdc++'s algorithms
// leave, and that is what its wheels return. This file restates those two
// algorithms (introsort: median-of-three quicksort down to 16-element runs,
// heapsort past depth 2*floor(log2 n), then one insertion sort; partial sort:
// a max-heap over the first k, replaced into from the rest, then sorted) step
// for step, so every front end, whatever its C++ library (libc++, the wasm and
// iOS builds), orders ties as MXNet does. tests/cpp/mxnet_sort_test.cc checks
// them against libstdc++'s std::sort and std::partial_sort; the op fixtures
// with many ties check the result against MXNet itself.
//
// With a comparator that is not a strict weak order (NaN compares false both
// ways) libstdc++'s unguarded loops may walk past the range; here every such
// loop also stops at the range's ends, so the results agree wherever
// libstdc++ stays in bounds and the code stays in bounds everywhere.
#ifndef MXLITE_OPERATORS_MXNET_SORT_H_
#define MXLITE_OPERATORS_MXNET_SORT_H_

#include <cstdint>
#include <utility>

namespace mxlite {
namespace mxnet_sort {

// The heap helpers: a max-heap under `less` over [first, first + len).
template <class T, class Less>
void PushHeap(T* first, int64_t hole, int64_t top, T value, Less& less) {
  int64_t parent = (hole - 1) / 2;
  while (hole > top && less(first[parent], value)) {
    first[hole] = first[parent];
    hole = parent;
    parent = (hole - 1) / 2;
  }
  first[hole] = value;
}

template <class T, class Less>
void AdjustHeap(T* first, int64_t hole, int64_t len, T value, Less& less) {
  const int64_t top = hole;
  int64_t child = hole;
  while (child < (len - 1) / 2) {
    child = 2 * (child + 1);
    if (less(first[child], first[child - 1])) --child;
    first[hole] = first[child];
    hole = child;
  }
  if ((len & 1) == 0 && child == (len - 2) / 2) {
    child = 2 * (child + 1);
    first[hole] = first[child - 1];
    hole = child - 1;
  }
  PushHeap(first, hole, top, value, less);
}

template <class T, class Less>
void MakeHeap(T* first, T* last, Less& less) {
  const int64_t len = last - first;
  if (len < 2) return;
  for (int64_t parent = (len - 2) / 2;; --parent) {
    AdjustHeap(first, parent, len, first[parent], less);
    if (parent == 0) return;
  }
}

// Moves the heap's top to *result and puts *result's old value in the heap.
template <class T, class Less>
void PopHeap(T* first, T* last, T* result, Less& less) {
  T value = *result;
  *result = *first;
  AdjustHeap(first, 0, last - first, value, less);
}

// std::partial_sort: the first middle - first elements in order, the rest in
// an unspecified (but fixed) order.
template <class T, class Less>
void PartialSort(T* first, T* middle, T* last, Less less) {
  MakeHeap(first, middle, less);
  for (T* i = middle; i < last; ++i) {
    if (less(*i, *first)) PopHeap(first, middle, i, less);
  }
  while (middle - first > 1) {
    --middle;
    PopHeap(first, middle, middle, less);
  }
}

namespace detail {

constexpr int64_t kThreshold = 16;  // libstdc++'s _S_threshold

inline int64_t FloorLog2(int64_t n) {
  int64_t log = 0;
  while (n > 1) {
    n >>= 1;
    ++log;
  }
  return log;
}

// Swaps the median of *a, *b, *c (by libstdc++'s comparisons) into *result.
template <class T, class Less>
void MoveMedianToFirst(T* result, T* a, T* b, T* c, Less& less) {
  T* median;
  if (less(*a, *b)) {
    median = less(*b, *c) ? b : (less(*a, *c) ? c : a);
  } else if (less(*a, *c)) {
    median = a;
  } else {
    median = less(*b, *c) ? c : b;
  }
  std::swap(*result, *median);
}

// Hoare partition of [first, last) around *pivot (which lies before first).
template <class T, class Less>
T* Partition(T* first, T* last, T* pivot, Less& less) {
  T* const end = last;
  while (true) {
    while (first < end && less(*first, *pivot)) ++first;
    --last;
    while (last > pivot && less(*pivot, *last)) --last;
    if (!(first < last)) return first;
    std::swap(*first, *last);
    ++first;
  }
}

// Inserts *position into the sorted run that ends before it, starting at begin.
template <class T, class Less>
void LinearInsert(T* begin, T* position, Less& less) {
  T value = *position;
  T* next = position - 1;
  while (position > begin && less(value, *next)) {
    *position = *next;
    position = next;
    --next;
  }
  *position = value;
}

template <class T, class Less>
void InsertionSort(T* first, T* last, Less& less) {
  if (first == last) return;
  for (T* i = first + 1; i != last; ++i) {
    if (less(*i, *first)) {
      T value = *i;
      for (T* j = i; j != first; --j) *j = *(j - 1);
      *first = value;
    } else {
      LinearInsert(first, i, less);
    }
  }
}

template <class T, class Less>
void IntroSortLoop(T* first, T* last, int64_t depth_limit, Less& less) {
  while (last - first > kThreshold) {
    if (depth_limit == 0) {
      PartialSort(first, last, last, less);
      return;
    }
    --depth_limit;
    T* mid = first + (last - first) / 2;
    MoveMedianToFirst(first, first + 1, mid, last - 1, less);
    T* cut = Partition(first + 1, last, first, less);
    IntroSortLoop(cut, last, depth_limit, less);
    last = cut;
  }
}

}  // namespace detail

// std::sort as libstdc++ does it.
template <class T, class Less>
void Sort(T* first, T* last, Less less) {
  if (first == last) return;
  detail::IntroSortLoop(first, last, 2 * detail::FloorLog2(last - first), less);
  if (last - first > detail::kThreshold) {
    detail::InsertionSort(first, first + detail::kThreshold, less);
    for (T* i = first + detail::kThreshold; i != last; ++i) detail::LinearInsert(first, i, less);
  } else {
    detail::InsertionSort(first, last, less);
  }
}

// MXNet's TopKSort<cpu> for one row: orders `order` (n indices into the row)
// so that its first k are the row's top k, as MXNet 1.9.1 orders them.
template <class T, class Less>
void TopKOrder(T* order, int64_t n, int64_t k, Less less) {
  if (k * 8 > n) {
    Sort(order, order + n, less);
  } else {
    PartialSort(order, order + k, order + n, less);
  }
}

}  // namespace mxnet_sort
}  // namespace mxlite

#endif  // MXLITE_OPERATORS_MXNET_SORT_H_
