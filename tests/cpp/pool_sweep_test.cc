/*
 * pool_sweep_test: the differential net under Pooling. Every algorithm of
 * the table (predict/operators/pool_algorithms.h) whose applies() accepts a
 * geometry is forced on it, in turn, and compared with a scalar reference
 * written here from MXNet's CPU kernels (src/operator/nn/pool.h); so is the
 * algorithm the table chooses.
 *
 * Every path promises MXNet's float operations in MXNet's order (a running
 * maximum from -FLT_MAX that keeps its value on NaN and ties; each term
 * divided by the window's divisor before it is added, in row-major window
 * order; sqrt and cbrt for lp), so outputs are compared bit for bit (any
 * NaN equals any NaN; an output never written keeps a marker NaN and
 * fails).
 *
 * Geometries come from a seeded generator: 1-D, 2-D and 3-D (and 2-D
 * embedded as 3-D of depth 1); odd and prime extents; kernels 1-7, strides
 * 1-3, pads up to the kernel (windows wholly in the padding); now and then
 * 2-D extents of 41-115 (the stems' planes); max, avg
 * (count_include_pad both ways), sum, lp with p 1, 2, 3; valid, full
 * (windows that hang past the padding) and same conventions; global
 * pooling; a few planes or 16 and more; data with ties, signed zeros and
 * NaNs. Half of them are shaped for the vector paths (planar max or
 * average, strides 1 and 2), so that each algorithm meets the edges of its
 * own predicate.
 *
 * With --mxnet DIR it first replays pooling computed by MXNet 1.9.1
 * (scripts/pool_sweep_cases.py): DIR/cases.txt, one case a line,
 *   name batch channels rank type p count_include_pad in... kernel... stride... pad... out...
 * (type max, avg, sum or lp; per-axis values for the case's rank) and raw
 * little-endian float32 arrays name.data, name.out. The reference and every
 * applicable algorithm must match MXNet's output to the bit.
 *
 * Usage: pool_sweep_test [--cases N] [--seed S] [--mxnet DIR] [--quiet]
 * The ISA is the one MXLITE_ISA leaves (run once per cap). Prints
 * "N cases, M algorithm runs, F failures" last.
 */
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "../../predict/c_api/environment.h"
#include "../../predict/kernels/cpu_features.h"
#include "../../predict/kernels/thread_pool.h"
#include "../../predict/operators/pool_algorithms.h"
#include "sweep_support.h"

namespace pool_sweep_test {

using namespace mxlite;
using namespace sweep_support;

struct Case {
  std::string name;
  PoolGeometry g;
  std::vector<float> data;
  std::vector<float> expected;  // MXNet's output, when replayed
};

// MXNet's kernels, one output at a time, per pool.h: for max the window is
// [start, min(start + k, in)) clipped below at 0; for the sums the divisor
// is taken from [start, min(start + k, in + pad)) before the clip, or from
// the clipped window without count_include_pad, and the 3-D kernel writes
// NaN for a divisor of 0.
float ReferenceWindow(const Case& c, const float* plane, int64_t od, int64_t oh, int64_t ow) {
  const PoolGeometry& g = c.g;
  const int64_t o[3] = {od, oh, ow};
  int64_t start[3], end[3], padded_end[3];
  for (int d = 0; d < 3; ++d) {
    const int64_t s = o[d] * g.stride[d] - g.pad[d];
    padded_end[d] = std::min(s + g.kernel[d], g.in[d] + g.pad[d]);
    end[d] = std::min(s + g.kernel[d], g.in[d]);
    start[d] = s;
  }
  if (g.type == PoolType::kMax) {
    float best = -FLT_MAX;  // std::numeric_limits<float>::lowest()
    for (int64_t d = std::max<int64_t>(start[0], 0); d < end[0]; ++d) {
      for (int64_t h = std::max<int64_t>(start[1], 0); h < end[1]; ++h) {
        for (int64_t w = std::max<int64_t>(start[2], 0); w < end[2]; ++w) {
          const float v = plane[(d * g.in[1] + h) * g.in[2] + w];
          if (v > best) best = v;
        }
      }
    }
    return best;
  }
  const bool avg = g.type == PoolType::kAvg;
  int pool_size = 1;
  if (avg) {
    pool_size = static_cast<int>((padded_end[0] - start[0]) * (padded_end[1] - start[1]) *
                                 (padded_end[2] - start[2]));
  }
  int64_t first[3], last[3];
  for (int d = 0; d < 3; ++d) {
    first[d] = std::max<int64_t>(start[d], 0);
    last[d] = std::min(padded_end[d], g.in[d]);
  }
  if (avg && !g.count_include_pad) {
    pool_size = static_cast<int>((last[0] - first[0]) * (last[1] - first[1]) *
                                 (last[2] - first[2]));
  }
  if (g.nan_on_empty && pool_size == 0) return std::nanf("");
  const int p = g.type == PoolType::kLp ? g.p : 1;
  float sum = 0;
  for (int64_t d = first[0]; d < last[0]; ++d) {
    for (int64_t h = first[1]; h < last[1]; ++h) {
      for (int64_t w = first[2]; w < last[2]; ++w) {
        const float a = plane[(d * g.in[1] + h) * g.in[2] + w];
        const float power = p == 1 ? a : p == 2 ? a * a : a * a * a;
        sum += power / pool_size;
      }
    }
  }
  return p == 2 ? std::sqrt(sum) : p == 3 ? std::cbrt(sum) : sum;
}

std::vector<float> Reference(const Case& c) {
  const PoolGeometry& g = c.g;
  std::vector<float> out;
  out.reserve(static_cast<size_t>(g.planes * g.OutPlane()));
  for (int64_t n = 0; n < g.planes; ++n) {
    const float* plane = c.data.data() + n * g.InPlane();
    for (int64_t od = 0; od < g.out[0]; ++od) {
      for (int64_t oh = 0; oh < g.out[1]; ++oh) {
        for (int64_t ow = 0; ow < g.out[2]; ++ow) {
          out.push_back(ReferenceWindow(c, plane, od, oh, ow));
        }
      }
    }
  }
  return out;
}

// What an output starts as: a NaN no kernel computes.
constexpr uint32_t kUnwritten = 0x7fa5a5a5u;

uint32_t Bits(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  return bits;
}

// Bit for bit, any NaN equal to any NaN; the first mismatch in *where.
bool Identical(const std::vector<float>& got, const std::vector<float>& want,
               std::string* where) {
  for (size_t i = 0; i < want.size(); ++i) {
    const bool same = Bits(got[i]) != kUnwritten &&
                      (Bits(got[i]) == Bits(want[i]) || (std::isnan(got[i]) && std::isnan(want[i])));
    if (!same) {
      char text[160];
      std::snprintf(text, sizeof text, "output %zu is %.9g (0x%08x), want %.9g (0x%08x)", i,
                    got[i], Bits(got[i]), want[i], Bits(want[i]));
      *where = text;
      return false;
    }
  }
  return true;
}

// Runs one algorithm on the case; false (with the reason) if it fails.
bool RunAlgorithm(const PoolAlgorithm& algorithm, const Case& c, ThreadPool* pool,
                  std::vector<float>* output, std::string* reason) {
  std::unique_ptr<PoolKernel> kernel;
  const Status status = algorithm.prepare(c.g, &kernel);
  if (!status.ok()) {
    *reason = "prepare: " + status.message();
    return false;
  }
  float unwritten;
  std::memcpy(&unwritten, &kUnwritten, 4);
  output->assign(static_cast<size_t>(c.g.planes * c.g.OutPlane()), unwritten);
  kernel->Forward(c.data.data(), output->data(), pool);
  return true;
}

// Every applicable algorithm (and the chosen one among them) against
// `want`: the reference, or MXNet's output when replaying.
void CheckCase(const Case& c, const std::vector<float>& want, ThreadPool* pool, Stats* stats) {
  ++stats->cases;
  const PoolAlgorithm* chosen = ChoosePoolAlgorithm(c.g);
  if (chosen == nullptr || !chosen->applies(c.g)) {
    Fail(stats, c.name + ": the table chose no applicable algorithm for " + c.g.ToString());
  }
  for (const PoolAlgorithm& algorithm : PoolAlgorithmTable()) {
    if (!algorithm.applies(c.g)) continue;
    ++stats->runs;
    ++stats->runs_by_algorithm[algorithm.name];
    std::vector<float> output;
    std::string reason;
    const std::string what = c.name + " [" + algorithm.name + ", " +
                             std::to_string(pool ? pool->size() : 1) + " thread(s)] " +
                             c.g.ToString();
    if (!RunAlgorithm(algorithm, c, pool, &output, &reason)) {
      Fail(stats, what + ": " + reason);
      continue;
    }
    if (!Identical(output, want, &reason)) Fail(stats, what + ": " + reason);
  }
}

// MXNet's PoolingShape for one axis.
int64_t OutExtent(int64_t in, int64_t k, int64_t s, int64_t p, int convention) {
  const int64_t span = in + 2 * p - k;
  if (convention == 0) return 1 + span / s;          // valid
  if (convention == 1) return 1 + (span + s - 1) / s;  // full
  return (in + s - 1) / s;                           // same (1-D, pad 0)
}

// One random geometry; false if the sizes came out invalid (retry).
bool RandomGeometry(Rng* rng, PoolGeometry* out) {
  PoolGeometry g;
  int rank = static_cast<int>(rng->Pick<int64_t>({1, 2, 2, 2, 3, 3}));
  const bool shaped = rng->Chance(50);  // for the vector paths
  const int type = static_cast<int>(
      shaped ? rng->Pick<int64_t>({0, 1}) : rng->Pick<int64_t>({0, 0, 1, 1, 2, 3}));
  g.type = static_cast<PoolType>(type);
  g.p = g.type == PoolType::kLp ? static_cast<int>(rng->Int(1, 3)) : 1;
  g.count_include_pad = rng->Chance(50);
  int convention = rng->Chance(60) ? 0 : 1;
  if (shaped && rank == 1) rank = 2;
  for (int d = 3 - rank; d < 3; ++d) {
    g.in[d] = rng->Chance(70) ? rng->Int(1, rank == 3 ? 9 : rank == 2 ? 23 : 40)
                              : rng->Pick<int64_t>({2, 3, 5, 7, 11, 13, 17, 29, 31, 35});
    // Now and then a stem's extent for the vector paths: planes whose row
    // maxima exceed kWholePlaneRowMaxima take the separable max kernels'
    // ring of rows.
    if (shaped && rank == 2 && rng->Chance(15)) g.in[d] = rng->Int(41, 115);
    g.kernel[d] = rng->Chance(60) ? rng->Int(1, 3) : rng->Int(1, 7);
    g.stride[d] = shaped ? rng->Int(1, 2) : rng->Int(1, 3);
    // Pads below the kernel mostly; now and then up to it (windows wholly
    // in the padding).
    g.pad[d] = rng->Chance(85) ? rng->Int(0, g.kernel[d] - 1) : rng->Int(0, g.kernel[d]);
    if (rng->Chance(40)) g.pad[d] = 0;
  }
  if (rank == 3 && (shaped || rng->Chance(20))) {  // 2-D as 3-D of depth 1
    g.in[0] = 1, g.kernel[0] = 1, g.stride[0] = 1, g.pad[0] = 0;
    if (rng->Chance(10)) g.pad[0] = 1, g.stride[0] = 3;  // its one window in the padding
  }
  if (rank == 1 && rng->Chance(15)) {  // 'same': pad 0
    convention = 2;
    g.pad[2] = 0;
  }
  if (rng->Chance(10)) {  // global pooling
    for (int d = 0; d < 3; ++d) g.kernel[d] = g.in[d], g.stride[d] = 1, g.pad[d] = 0;
    convention = 0;
  }
  g.nan_on_empty = rank == 3;
  const int64_t batch = rng->Chance(70) ? 1 : rng->Int(2, 3);
  const int64_t channels =
      rng->Chance(65) ? rng->Int(1, 9) : rng->Pick<int64_t>({16, 17, 24, 31, 33, 48});
  g.planes = batch * channels;
  for (int d = 0; d < 3; ++d) {
    if (g.kernel[d] > g.in[d] + 2 * g.pad[d]) return false;  // MXNet refuses it
    g.out[d] = OutExtent(g.in[d], g.kernel[d], g.stride[d], g.pad[d], d < 3 - rank ? 0 : convention);
    if (g.out[d] < 1) return false;
  }
  if (g.planes * (g.InPlane() + g.OutPlane()) > (1 << 20)) return false;
  *out = g;
  return true;
}

void Randomize(Rng* rng, Case* c) {
  c->data.resize(static_cast<size_t>(c->g.planes * c->g.InPlane()));
  const int style = static_cast<int>(rng->Int(0, 9));
  for (float& x : c->data) {
    x = rng->Uniform();
    if (style == 0) x = rng->Pick<float>({-1.f, -0.f, 0.f, 0.5f});  // ties and signed zeros
    if (style == 1 && rng->Chance(3)) x = std::nanf("");
    if (style == 2) x = std::floor(x * 4) * 0.25f;  // many ties
  }
}

// ---------------------------------------------------------------------------
// MXNet's cases.

bool LoadMxnetCases(const std::string& dir, std::vector<Case>* cases) {
  std::ifstream manifest(dir + "/cases.txt");
  if (!manifest) {
    std::printf("FAIL: cannot read %s/cases.txt\n", dir.c_str());
    return false;
  }
  std::string line;
  while (std::getline(manifest, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    Case c;
    int64_t batch = 0, channels = 0;
    int rank = 0, include = 0;
    std::string type;
    fields >> c.name >> batch >> channels >> rank >> type >> c.g.p >> include;
    static const char* const kTypes[] = {"max", "avg", "sum", "lp"};
    const char* const* found = std::find(kTypes, kTypes + 4, type);
    if (!fields || rank < 1 || rank > 3 || found == kTypes + 4) {
      std::printf("FAIL: bad line in cases.txt: %s\n", line.c_str());
      return false;
    }
    c.g.type = static_cast<PoolType>(found - kTypes);
    c.g.count_include_pad = include != 0;
    c.g.nan_on_empty = rank == 3;
    c.g.planes = batch * channels;
    int64_t* axes[] = {c.g.in, c.g.kernel, c.g.stride, c.g.pad, c.g.out};
    for (int64_t* axis : axes) {
      for (int d = 3 - rank; d < 3; ++d) fields >> axis[d];
    }
    if (!fields) {
      std::printf("FAIL: bad line in cases.txt: %s\n", line.c_str());
      return false;
    }
    const std::string base = dir + "/" + c.name;
    if (!ReadFloats(base + ".data", static_cast<size_t>(c.g.planes * c.g.InPlane()), &c.data) ||
        !ReadFloats(base + ".out", static_cast<size_t>(c.g.planes * c.g.OutPlane()),
                    &c.expected)) {
      std::printf("FAIL: %s: missing or mis-sized arrays\n", c.name.c_str());
      return false;
    }
    cases->push_back(std::move(c));
  }
  return true;
}

int Main(int argc, char** argv) {
  SweepOptions options;
  Stats stats;
  if (!ParseSweepOptions(argc, argv, "pool_sweep_test", &options, &stats)) return 2;
  const int64_t count = options.count;
  const uint64_t seed = options.seed;
  const std::string& mxnet_dir = options.mxnet_dir;
  std::printf("ISA %s, seed %llu\n", IsaName(SelectedIsa()),
              static_cast<unsigned long long>(seed));
  ThreadPool two(2);
  if (!mxnet_dir.empty()) {
    std::vector<Case> cases;
    if (!LoadMxnetCases(mxnet_dir, &cases)) return 1;
    for (const Case& c : cases) {
      // The reference itself against MXNet first.
      std::string where;
      if (!Identical(Reference(c), c.expected, &where)) {
        Fail(&stats, c.name + ": the reference differs from MXNet: " + c.g.ToString() + ": " +
                         where);
      }
      CheckCase(c, c.expected, stats.cases % 2 ? &two : nullptr, &stats);
    }
    std::printf("%zu MXNet cases replayed\n", cases.size());
  }
  Rng rng(seed);
  for (int64_t made = 0; made < count;) {
    Case c;
    if (!RandomGeometry(&rng, &c.g)) continue;
    c.name = "random" + std::to_string(made);
    Randomize(&rng, &c);
    CheckCase(c, Reference(c), made % 3 == 2 ? &two : nullptr, &stats);
    ++made;
  }
  return FinishSweep(stats);
}

}  // namespace pool_sweep_test

int main(int argc, char** argv) {
  // This driver is the API boundary: the environment (MXLITE_ISA caps the
  // kernels' instruction set) applies here.
  const mxlite::Status environment = mxlite::ApplyProcessEnvironment();
  if (!environment.ok()) {
    std::fprintf(stderr, "%s\n", environment.message().c_str());
    return 2;
  }
  return pool_sweep_test::Main(argc, argv);
}
