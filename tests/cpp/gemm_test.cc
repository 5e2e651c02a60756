/*
 * gemm_test: the blocked GEMM (packed and unpacked forms, every epilogue,
 * 1 and 3 threads) and the GEMV against a naive double-precision product,
 * on awkward sizes that exercise every edge tile (and the AVX-512 kernel's
 * single-column tails) and depth block, with B read in place and packed, and
 * B in scattered depth segments (GemmSegmentedB), products over a range of
 * A's depth segments (GemmPackedSegments, GemmPrepackedBSegments), whose
 * halves add up to the whole product's bits; and the vector GEMVs' order
 * of summation, bit for bit. The
 * micro-kernel is the one MXLITE_ISA allows, so running this under
 * MXLITE_ISA=scalar / avx2 / unset covers every variant.
 */
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "../../predict/c_api/environment.h"
#include "../../predict/kernels/gemm.h"
#include "test_random.h"

namespace gemm_test {

using namespace mxlite;

int g_failures = 0;
int g_checks = 0;

std::vector<float> Random(int64_t count, unsigned seed) {
  std::vector<float> values(static_cast<size_t>(count));
  TestRandom next(seed * 2654435761u + 1);
  for (float& v : values) v = next();
  return values;
}

void Compare(const std::vector<float>& got, const std::vector<double>& want, double scale,
             const char* what, int64_t m, int64_t n, int64_t k) {
  ++g_checks;
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    // A NaN is the worst error; std::max would pass over it.
    const double error = std::fabs(got[i] - want[i]);
    worst = std::max(worst, std::isnan(error) ? INFINITY : error);
  }
  // float accumulation over k terms of magnitude <= scale
  if (!(worst <= 1e-5 * scale * std::sqrt(static_cast<double>(k) + 1) + 1e-6)) {
    ++g_failures;
    std::printf("FAIL %s m=%lld n=%lld k=%lld: max error %g\n", what, (long long)m, (long long)n,
                (long long)k, worst);
  }
}

// Packs A (m x k) with depth segments of `segment` steps; a failure is
// counted and reported under `what`.
bool PackInSegments(const std::vector<float>& a, int64_t m, int64_t k, int64_t segment,
                    const char* what, PackedMatrix* packed, int64_t max_block_depth = 0) {
  if (packed->Pack(a.data(), k, m, k, false, nullptr, segment, max_block_depth).ok()) return true;
  ++g_failures;
  std::printf("FAIL %s pack m=%lld k=%lld\n", what, (long long)m, (long long)k);
  return false;
}

// Checks that two results have the same bits.
void CheckSameBits(const std::vector<float>& got, const std::vector<float>& want,
                   const char* what, int64_t m, int64_t n, int64_t k) {
  ++g_checks;
  if (got.size() != want.size() ||
      std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) != 0) {
    ++g_failures;
    std::printf("FAIL %s m=%lld n=%lld k=%lld: bits differ\n", what, (long long)m, (long long)n,
                (long long)k);
  }
}

// GemmPackedSegments and GemmPrepackedBSegments: A packed in two segments
// of `half` depth steps, each segment's product into its own C; the two
// added (second + first, as the output transforms of a split Winograd do)
// are the whole product's bits when each segment is one depth block.
void TestDepthSegments(int64_t m, int64_t n, int64_t half, ThreadPool* pool) {
  const int64_t k = 2 * half;
  std::vector<float> a = Random(m * k, 15), b = Random(k * n, 16);
  PackedMatrix packed;
  if (!PackInSegments(a, m, k, half, "depth-segment", &packed)) return;
  std::vector<float> b_packed;
  PackBMatrix(b.data(), n, false, k, n, &b_packed);
  const size_t size = static_cast<size_t>(m * n);
  std::vector<float> whole(size, NAN), plain[2], prepacked[2];
  GemmPacked(packed, b.data(), n, n, whole.data(), n, GemmEpilogue(), pool);
  for (int64_t s = 0; s < 2; ++s) {
    plain[s].assign(size, NAN);
    prepacked[s].assign(size, NAN);
    GemmPackedSegments(packed, s, s + 1, b.data(), n, n, plain[s].data(), n, GemmEpilogue(),
                       pool);
    GemmPrepackedBSegments(packed, s, s + 1, b_packed.data(), n, prepacked[s].data(), n,
                           GemmEpilogue(), pool);
  }
  const bool one_block_each = half <= 256;
  std::vector<double> want(size);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < k; ++p) sum += double(a[i * k + p]) * b[p * n + j];
      want[i * n + j] = sum;
    }
  }
  for (const auto* parts : {plain, prepacked}) {
    std::vector<float> added(size);
    for (size_t i = 0; i < size; ++i) added[i] = parts[1][i] + parts[0][i];
    Compare(added, want, 1.0, "GemmPackedSegments", m, n, k);
    if (one_block_each) {
      CheckSameBits(added, whole, "depth segments added against the whole product", m, n, k);
    }
  }
}

// B's rows scaled and shifted per row as the GEMM reads them.
void ScaleRow(const void*, int64_t row, const float* src, float* dst, int64_t count) {
  const float scale = 0.5f + 0.01f * static_cast<float>(row % 7), shift = -0.25f;
  for (int64_t j = 0; j < count; ++j) dst[j] = src[j] * scale + shift;
}

// A in two depth halves, which the threads split on few columns
// (kGemmSplitDepthMaxColumns; GemmPackedTransformedB, GemmPackedDepthHalves):
// right against the naive product, with bias, residual and clamp, and the
// same bits on 1, 2, 3 and 4 threads.
void TestDepthHalves(int64_t m, int64_t n, int64_t half, bool transformed,
                     int64_t max_block_depth = 0) {
  const int64_t k = 2 * half;
  std::vector<float> a = Random(m * k, 17), b = Random(k * n, 18), bias = Random(m, 19),
                     residual = Random(m * n, 20);
  PackedMatrix packed;
  if (!PackInSegments(a, m, k, half, "depth-half", &packed, max_block_depth)) return;
  GemmEpilogue ep;
  ep.bias = bias.data();
  ep.residual = residual.data();
  ep.residual_stride = n;
  ep.lower = -1.5f;
  ep.upper = 1.5f;
  GemmRowTransform transform;
  transform.apply = &ScaleRow;
  std::vector<double> want(static_cast<size_t>(m * n));
  std::vector<float> row(static_cast<size_t>(n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = bias[i] + double(residual[i * n + j]);
      for (int64_t p = 0; p < k; ++p) {
        if (transformed) {
          ScaleRow(nullptr, p, b.data() + p * n + j, row.data(), 1);
        } else {
          row[0] = b[p * n + j];
        }
        sum += double(a[i * k + p]) * row[0];
      }
      want[i * n + j] = std::min(std::max(sum, -1.5), 1.5);
    }
  }
  const char* what = transformed ? "GemmPackedTransformedB depth halves" : "GemmPackedDepthHalves";
  ThreadPool one(1), two(2), three(3), four(4);
  std::vector<float> first;
  for (ThreadPool* pool : {&one, &two, &three, &four}) {
    std::vector<float> c(static_cast<size_t>(m * n), NAN);
    if (transformed) {
      GemmPackedTransformedB(packed, b.data(), n, n, c.data(), n, ep, transform, pool);
    } else {
      GemmPackedDepthHalves(packed, b.data(), n, n, c.data(), n, ep, pool);
    }
    Compare(c, want, 1.0, what, m, n, k);
    if (first.empty()) {
      first = c;
      continue;
    }
    const std::string against = StrCat(what, ", ", pool->size(), " threads against 1");
    CheckSameBits(c, first, against.c_str(), m, n, k);
  }
}

void TestPacked(int64_t m, int64_t n, int64_t k, ThreadPool* pool, int64_t max_block_depth = 0) {
  std::vector<float> a = Random(m * k, 1), b = Random(k * n, 2), bias = Random(m, 3),
                     residual = Random(m * n, 4), c(static_cast<size_t>(m * n), 7.f);
  PackedMatrix packed;
  packed.Pack(a.data(), k, m, k, false, nullptr, 0, max_block_depth);
  GemmEpilogue ep;
  ep.bias = bias.data();
  ep.residual = residual.data();
  ep.residual_stride = n;
  ep.lower = 0.f;
  ep.upper = 2.f;
  GemmPacked(packed, b.data(), n, n, c.data(), n, ep, pool);
  std::vector<double> want(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = bias[i] + residual[i * n + j];
      for (int64_t p = 0; p < k; ++p) sum += double(a[i * k + p]) * b[p * n + j];
      want[i * n + j] = std::min(std::max(sum, 0.0), 2.0);
    }
  }
  Compare(c, want, 1.0, "GemmPacked+epilogue", m, n, k);
}

// B's depth in `segments` segments of `segment` steps, each at its own
// place in one buffer (in reverse order, with gaps), all rows ldb apart:
// segments deeper than a depth block are cut into several blocks.
void TestSegmented(int64_t m, int64_t n, int64_t segment, int64_t segments, ThreadPool* pool) {
  const int64_t k = segment * segments, ldb = n + 3;
  std::vector<float> a = Random(m * k, 11), bias = Random(m, 12),
                     buffer = Random((segment + 2) * ldb * segments, 13),
                     c(static_cast<size_t>(m * n), 7.f);
  std::vector<const float*> starts(static_cast<size_t>(segments));
  for (int64_t s = 0; s < segments; ++s) {
    starts[s] = buffer.data() + ((segments - 1 - s) * (segment + 2) + 1) * ldb + 2;
  }
  PackedMatrix packed;
  if (!PackInSegments(a, m, k, segment, "segmented", &packed)) return;
  GemmEpilogue ep;
  ep.bias = bias.data();
  GemmSegmentedB(packed, starts.data(), ldb, n, c.data(), n, ep, pool);
  std::vector<double> want(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = bias[i];
      for (int64_t p = 0; p < k; ++p) {
        sum += double(a[i * k + p]) * starts[p / segment][(p % segment) * ldb + j];
      }
      want[i * n + j] = sum;
    }
  }
  Compare(c, want, 1.0, "GemmSegmentedB", m, n, k);
}

void TestSgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float beta, ThreadPool* pool) {
  std::vector<float> a = Random(m * k, 5), b = Random(k * n, 6), c = Random(m * n, 8);
  std::vector<double> want(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = double(beta) * c[i * n + j];
      for (int64_t p = 0; p < k; ++p) {
        sum += double(ta ? a[p * m + i] : a[i * k + p]) * (tb ? b[j * k + p] : b[p * n + j]);
      }
      want[i * n + j] = sum;
    }
  }
  Sgemm(ta, tb, m, n, k, a.data(), ta ? m : k, b.data(), tb ? k : n, beta, c.data(), n, pool);
  Compare(c, want, 1.0, "Sgemm", m, n, k);
}

void TestGemv(int64_t n, int64_t k, ThreadPool* pool) {
  std::vector<float> w = Random(n * k, 9), x = Random(k, 10), y(static_cast<size_t>(n));
  SgemvRows(n, k, w.data(), x.data(), y.data(), pool);
  std::vector<double> want(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    double sum = 0;
    for (int64_t p = 0; p < k; ++p) sum += double(w[i * k + p]) * x[p];
    want[i] = sum;
  }
  Compare(y, want, 1.0, "SgemvRows", n, 1, k);
}

// The vector GEMVs (AVX2 and AVX-512) give the same bits: each row is 16
// partial sums, lane l taking the FMA chain over columns l, l + 16, ..., in
// order (the last, partial group masked to zero), added up in lane order.
// Emulated here with std::fma.
void TestGemvOrder(int64_t n, int64_t k) {
  std::vector<float> w = Random(n * k, 11), x = Random(k, 12), y(static_cast<size_t>(n));
  SgemvRows(n, k, w.data(), x.data(), y.data(), nullptr);
  ++g_checks;
  for (int64_t i = 0; i < n; ++i) {
    float lanes[16] = {};
    for (int64_t p = 0; p < (k + 15) / 16 * 16; ++p) {
      const float product_w = p < k ? w[i * k + p] : 0.f, product_x = p < k ? x[p] : 0.f;
      lanes[p % 16] = std::fma(product_w, product_x, lanes[p % 16]);
    }
    float want = 0.f;
    for (float lane : lanes) want += lane;
    if (std::memcmp(&want, &y[i], sizeof(float)) != 0) {
      ++g_failures;
      std::printf("FAIL SgemvRows order n=%lld k=%lld row %lld: %.9g, want %.9g\n",
                  (long long)n, (long long)k, (long long)i, y[i], want);
      return;
    }
  }
}

}  // namespace gemm_test

int main() {
  // This driver is the API boundary: the environment (MXLITE_ISA caps the
  // kernels' instruction set) applies here.
  {
    const mxlite::Status environment = mxlite::ApplyProcessEnvironment();
    if (!environment.ok()) {
      std::fprintf(stderr, "%s\n", environment.message().c_str());
      return 2;
    }
  }
  using namespace gemm_test;
  std::printf("micro-kernel: %s\n", GemmKernelName());
  ThreadPool single(1), three(3);
  const int64_t sizes[][3] = {{1, 1, 1},    {5, 7, 3},     {12, 32, 256}, {13, 33, 257},
                              {25, 100, 9}, {64, 49, 576}, {37, 401, 513}, {200, 13, 1000},
                              {6, 16, 0},   {20, 1000, 24}, {7, 777, 64}, {12, 96, 65},
                              // B rows 8 KiB apart: packed even where B could be read in place
                              {13, 2048, 20},
                              // edge columns in a tail of single columns (AVX-512), several
                              // depth blocks
                              {24, 22, 300}, {36, 3, 40}, {12, 56, 17}, {12, 21, 513},
                              // AVX-512's wide tiles (41...52 columns, as two half strips):
                              // masked third vector, tails of 1 and 4 columns, a partial
                              // last strip, a wide remainder of a second column panel
                              {25, 41, 300}, {36, 48, 40}, {13, 49, 513}, {24, 52, 19},
                              {12, 433, 30},
                              // AVX-512 without wide tiles: a 32-column tile with 1-4
                              // more columns in one pass, tails of 5-8 columns apart
                              {36, 196, 300}, {48, 289, 70}, {25, 98, 33}, {100, 200, 64},
                              {30, 37, 20}, {60, 7, 129},
                              // Inception's shapes where, on two threads, what each
                              // thread reads decides the split (GemmSplitCost): by
                              // columns, then by rows
                              {48, 1225, 192}, {320, 64, 130}};
  for (ThreadPool* pool : {&single, &three}) {
    for (const auto& s : sizes) {
      TestPacked(s[0], s[1], s[2], pool);
      for (int ta = 0; ta < 2; ++ta) {
        for (int tb = 0; tb < 2; ++tb) {
          TestSgemm(ta, tb, s[0], s[1], s[2], 0.f, pool);
          TestSgemm(ta, tb, s[0], s[1], s[2], 1.f, pool);
        }
      }
      TestSgemm(false, false, s[0], s[1], s[2], 0.5f, pool);
      TestGemv(s[0], s[2], pool);
      if (SelectedIsa() == Isa::kAvx2 || SelectedIsa() == Isa::kAvx512) {
        TestGemvOrder(s[0], s[2]);
      }
    }
    // Segments of one depth block, of two (300 = 2 x 150) and of three
    // uneven ones (520 = 173 + 173 + 174).
    const int64_t segmented[][4] = {{12, 50, 64, 9}, {13, 33, 300, 3}, {25, 100, 520, 2},
                                    {5, 7, 1, 4}};
    for (const auto& s : segmented) TestSegmented(s[0], s[1], s[2], s[3], pool);
    // Halves of one block each (Winograd's split depth), and of two.
    const int64_t depth_halves[][3] = {{32, 49, 64}, {13, 100, 36}, {25, 33, 300}};
    for (const auto& s : depth_halves) TestDepthSegments(s[0], s[1], s[2], pool);
    // The block depths a 1x1 convolution reading its input in place asks
    // for (GemmInPlaceBlockDepth): on 7x7 maps several shallow blocks, the
    // last one shorter, with the residual and clamp; elsewhere deep ones.
    const int64_t in_place[][3] = {{64, 49, 576}, {13, 49, 1100}, {25, 42, 300}, {36, 100, 1100}};
    for (const auto& s : in_place) TestPacked(s[0], s[1], s[2], pool, GemmInPlaceBlockDepth(s[1]));
  }
  // Halves of one depth block, of two (600 = 2 x 300), on 49 and 196
  // columns; 300 columns take the whole-depth path.
  const int64_t transformed[][3] = {{128, 196, 144}, {13, 49, 600}, {30, 300, 150}};
  for (const auto& s : transformed) TestDepthHalves(s[0], s[1], s[2], true);
  // A normalised input on a 7x7 map, as the 1x1 convolution packs it: each
  // half in blocks of GemmInPlaceBlockDepth(49).
  TestDepthHalves(13, 49, 600, true, GemmInPlaceBlockDepth(49));
  TestDepthHalves(160, 49, 480, false, GemmInPlaceBlockDepth(49));
  // MobileNetV2's projections: halves of one block, of two (960 = 2 x 480),
  // on 49 and 196 columns (3136 take the whole-depth path); rows of a
  // partial strip.
  const int64_t projections[][3] = {{64, 196, 192}, {160, 49, 480}, {24, 3136, 72}, {7, 50, 100}};
  for (const auto& s : projections) TestDepthHalves(s[0], s[1], s[2], false);
  // A segment depth that does not divide the depth is an error.
  {
    ++g_checks;
    std::vector<float> a = Random(4 * 10, 14);
    PackedMatrix packed;
    if (packed.Pack(a.data(), 10, 4, 10, false, nullptr, 3).ok()) {
      ++g_failures;
      std::printf("FAIL: segment depth 3 accepted for depth 10\n");
    }
  }
  // Every index exactly once, whatever the chunking (indices are handed out
  // several at a time): counts below, at and far above 8 per thread.
  ThreadPool two(2);
  for (ThreadPool* pool : {&two, &three}) {
    for (int64_t count : {0, 1, 2, 7, 15, 16, 17, 23, 24, 25, 100, 1001, 65537}) {
      ++g_checks;
      std::vector<std::atomic<int>> runs(static_cast<size_t>(count));
      for (auto& r : runs) r.store(0);
      pool->ParallelFor(count, [&](int64_t i) { runs[static_cast<size_t>(i)].fetch_add(1); });
      bool once = true;
      for (auto& r : runs) once = once && r.load() == 1;
      if (!once) {
        ++g_failures;
        std::printf("FAIL: ParallelFor(%lld) on %d threads did not run each index once\n",
                    static_cast<long long>(count), pool->size());
      }
    }
  }
  // A task that throws: the exception reaches the caller of ParallelFor,
  // not std::terminate on a worker, and the pool stays usable.
  for (int round = 0; round < 20; ++round) {
    ++g_checks;
    bool caught = false;
    try {
      three.ParallelFor(64, [](int64_t i) {
        if (i == 37) throw std::runtime_error("task 37");
      });
    } catch (const std::runtime_error& error) {
      caught = std::string(error.what()) == "task 37";
    }
    if (!caught) {
      ++g_failures;
      std::printf("FAIL: ParallelFor did not rethrow the task's exception\n");
    }
  }
  std::printf("%d checks, %d failures\n", g_checks, g_failures);
  return g_failures == 0 ? 0 : 1;
}
