/*
 * mxnet_sort_test: predict/operators/mxnet_sort.h against libstdc++'s
 * std::sort and std::partial_sort, which MXNet's CPU topk/sort/argsort use,
 * index for index. Rows of 0-300 values drawn from 1-4 distinct integers
 * (nearly every comparison a tie), from many values (few ties), sorted and
 * reversed rows (the introsort's depth limit and heapsort fallback), and rows
 * with NaN, ascending (`<`) and descending (`>`), every k through
 * TopKOrder's switch between the two algorithms. Build it with g++ (the
 * reference is libstdc++'s); prints "<n> failures" last.
 */
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "../../predict/operators/mxnet_sort.h"
#include "test_random.h"

#if !defined(__GLIBCXX__)
#error "the reference is libstdc++'s std::sort: build this test with g++ and libstdc++"
#endif  // !defined(__GLIBCXX__)

namespace {

int failures = 0;
int cases = 0;

// One row through both, for one direction and k.
void Check(const std::vector<float>& row, int64_t k, bool ascending, const char* what) {
  const int64_t n = static_cast<int64_t>(row.size());
  const float* v = row.data();
  auto less = [v, ascending](int64_t a, int64_t b) {
    return ascending ? v[a] < v[b] : v[a] > v[b];
  };
  std::vector<int64_t> expected(static_cast<size_t>(n)), actual(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) expected[i] = actual[i] = i;
  if (k * 8 > n) {
    std::sort(expected.begin(), expected.end(), less);
  } else {
    std::partial_sort(expected.begin(), expected.begin() + k, expected.end(), less);
  }
  mxlite::mxnet_sort::TopKOrder(actual.data(), n, k, less);
  ++cases;
  // The whole permutation, not only the first k: both algorithms must leave
  // the same state.
  if (actual != expected) {
    if (++failures <= 10) {
      std::printf("FAIL %s: n=%lld k=%lld %s\n", what, static_cast<long long>(n),
                  static_cast<long long>(k), ascending ? "ascending" : "descending");
    }
  }
}

void CheckAllK(const std::vector<float>& row, const char* what) {
  const int64_t n = static_cast<int64_t>(row.size());
  for (bool ascending : {true, false}) {
    if (n == 0) {
      Check(row, 0, ascending, what);
      continue;
    }
    for (int64_t k = 1; k <= n; k += (k < 40 ? 1 : 7)) Check(row, k, ascending, what);
    Check(row, n, ascending, what);
  }
}

}  // namespace

int main() {
  TestRandom random(29);
  const int sizes[] = {0, 1, 2, 3, 15, 16, 17, 18, 31, 33, 64, 100, 129, 257, 300};
  for (int n : sizes) {
    for (int distinct : {1, 2, 3, 4, 1000}) {
      for (int repeat = 0; repeat < 3; ++repeat) {
        std::vector<float> row(static_cast<size_t>(n));
        for (float& value : row) {
          value = std::floor((random() + 1.f) * 0.5f * static_cast<float>(distinct));
        }
        CheckAllK(row, distinct == 1000 ? "few ties" : "many ties");
        std::vector<float> sorted = row;
        std::sort(sorted.begin(), sorted.end());
        CheckAllK(sorted, "sorted");
        std::reverse(sorted.begin(), sorted.end());
        CheckAllK(sorted, "reversed");
        // An organ pipe (ascending then descending) drives quicksort deep.
        std::vector<float> pipe(static_cast<size_t>(n));
        for (int i = 0; i < n; ++i) {
          pipe[i] = static_cast<float>(std::min(i, n - 1 - i) % (distinct + 1));
        }
        CheckAllK(pipe, "organ pipe");
        // NaN in a few places: libstdc++ stays in its range for these.
        if (n > 0) {
          std::vector<float> with_nan = row;
          for (int i = 0; i < n; i += 7) with_nan[i] = NAN;
          CheckAllK(with_nan, "NaN");
        }
      }
    }
  }
  std::printf("%d cases, %d failures\n", cases, failures);
  return failures == 0 ? 0 : 1;
}
