/*
 * conv_sweep_test: the differential net under Convolution. Every algorithm
 * of the table (predict/operators/conv_algorithms.h) whose applies()
 * accepts a geometry is forced on it, in turn, and compared with a scalar
 * reference in double precision; so is the algorithm the table chooses.
 *
 * Geometries come from a seeded generator over what the model zoo never
 * uses: 1-D, 2-D and 3-D; depth 1 and more; unit kernel axes; odd and prime
 * extents; groups and depthwise; dilation; per-axis pads up to the kernel;
 * strides up to 3; tiny and larger channel counts; batch up to 3; a fused
 * residual, clamp and input BatchNorm. Half of them are shaped for one of
 * the fast paths (3x3 stride 1, depthwise 3x3, 1x1, stems, 1x7 / 7x1 / 5x5,
 * (1,3,3) over depth > 1), so that each algorithm meets edge cases of its
 * own predicate.
 *
 * With --mxnet DIR it first replays convolutions computed by MXNet 1.9.1
 * (scripts/conv_sweep_cases.py): DIR/cases.txt, one case a line,
 *   name batch channels filters groups rank in... kernel... stride... pad... dilate...
 * (per-axis values for the case's rank) and raw little-endian float32
 * arrays name.data, name.weight, name.bias, name.out. The reference and
 * every applicable algorithm must match MXNet's output.
 *
 * Usage: conv_sweep_test [--cases N] [--seed S] [--mxnet DIR] [--quiet]
 * The ISA is the one MXLITE_ISA leaves (run once per cap). Prints
 * "N cases, M algorithm runs, F failures" last.
 */
#include <algorithm>
#include <cmath>
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
#include "../../predict/operators/conv_algorithms.h"
#include "sweep_support.h"

namespace conv_sweep_test {

using namespace mxlite;
using namespace sweep_support;

// A layer plus its operands: weights (filters x C/g x taps), bias, input,
// residual (may be empty), clamp, input BatchNorm (mean, invstd, gamma,
// beta per channel; empty when the layer does not normalise its input).
struct Case {
  std::string name;
  ConvGeometry g;
  std::vector<float> data, weights, bias, residual, input_scale;
  bool input_has_gamma = false;
  float lower = -INFINITY, upper = INFINITY, input_lower = -INFINITY, input_upper = INFINITY;
  std::vector<float> expected;  // MXNet's output, when replayed
};

int64_t OutExtent(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  return (in + 2 * p - (d * (k - 1) + 1)) / s + 1;
}

// The reference: clamp(sum + bias + residual) in double, the input first
// normalised and clamped where the layer says so (in float, as the kernels
// and MXNet's BatchNorm do). *scale gets the largest magnitude before the
// clamp: the kernels' rounding scales with it, and a clamp never enlarges
// an error, but a clamp to [0, 0.5] would shrink max |output| below it.
std::vector<double> Reference(const Case& c, double* scale) {
  *scale = 0;
  const ConvGeometry& g = c.g;
  const int64_t group_in = g.channels / g.groups, group_out = g.filters / g.groups;
  const int64_t in_plane = g.InSpatial(), out_plane = g.OutSpatial(), taps = g.KernelSize();
  std::vector<float> input = c.data;
  if (g.normalises_input) {
    for (int64_t n = 0; n < g.batch; ++n) {
      for (int64_t ch = 0; ch < g.channels; ++ch) {
        const float* s = c.input_scale.data() + 4 * ch;
        for (int64_t i = 0; i < in_plane; ++i) {
          float& x = input[(n * g.channels + ch) * in_plane + i];
          float y = (x - s[0]) * s[1];
          if (c.input_has_gamma) y = y * s[2];
          y = y + s[3];
          x = std::min(std::max(y, c.input_lower), c.input_upper);
        }
      }
    }
  }
  std::vector<double> out(static_cast<size_t>(g.batch * g.filters * out_plane));
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t f = 0; f < g.filters; ++f) {
      const int64_t grp = f / group_out;
      for (int64_t od = 0; od < g.out[0]; ++od) {
        for (int64_t oh = 0; oh < g.out[1]; ++oh) {
          for (int64_t ow = 0; ow < g.out[2]; ++ow) {
            const int64_t o = (od * g.out[1] + oh) * g.out[2] + ow;
            double sum = c.bias[f];
            for (int64_t ci = 0; ci < group_in; ++ci) {
              const int64_t channel = grp * group_in + ci;
              const float* plane = input.data() + (n * g.channels + channel) * in_plane;
              const float* w = c.weights.data() + (f * group_in + ci) * taps;
              for (int64_t kd = 0; kd < g.kernel[0]; ++kd) {
                const int64_t id = od * g.stride[0] - g.pad[0] + kd * g.dilate[0];
                if (id < 0 || id >= g.in[0]) continue;
                for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
                  const int64_t ih = oh * g.stride[1] - g.pad[1] + kh * g.dilate[1];
                  if (ih < 0 || ih >= g.in[1]) continue;
                  for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
                    const int64_t iw = ow * g.stride[2] - g.pad[2] + kw * g.dilate[2];
                    if (iw < 0 || iw >= g.in[2]) continue;
                    sum += double(w[(kd * g.kernel[1] + kh) * g.kernel[2] + kw]) *
                           plane[(id * g.in[1] + ih) * g.in[2] + iw];
                  }
                }
              }
            }
            const int64_t index = (n * g.filters + f) * out_plane + o;
            if (!c.residual.empty()) sum += c.residual[index];
            *scale = std::max(*scale, std::fabs(sum));
            out[index] = std::min<double>(std::max<double>(sum, c.lower), c.upper);
          }
        }
      }
    }
  }
  return out;
}

// The oracle criterion: max |got - want| <= 1e-4 * scale, scale being max
// |want| (MXNet's outputs) or the reference's largest magnitude before its
// clamp. A NaN (an output never written: outputs start as NaN) fails.
bool Matches(const std::vector<float>& got, const std::vector<double>& want, double scale,
             double* error_out) {
  double error = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double e = std::fabs(double(got[i]) - want[i]);
    if (std::isnan(e)) {
      error = INFINITY;
      break;
    }
    error = std::max(error, e);
  }
  *error_out = error;
  return error <= 1e-4 * std::max(scale, 1e-30);
}

// Runs one algorithm on the case; false (with the reason) if it fails.
bool RunAlgorithm(const ConvAlgorithm& algorithm, const Case& c, ThreadPool* pool,
                  std::vector<float>* output, std::string* reason) {
  ConvWeights w;
  w.weights = c.weights;
  w.bias = c.bias;
  w.lower = c.lower;
  w.upper = c.upper;
  w.input_scale = c.input_scale;
  w.input_has_gamma = c.input_has_gamma;
  w.input_lower = c.input_lower;
  w.input_upper = c.input_upper;
  std::unique_ptr<ConvKernel> kernel;
  // Prepared for one image and run on the case's batch: a prepared kernel
  // serves every batch size (executors of a model share it).
  ConvGeometry one_image = c.g;
  one_image.batch = 1;
  Status status = algorithm.prepare(one_image, std::move(w), &kernel);
  if (!status.ok()) {
    *reason = "prepare: " + status.message();
    return false;
  }
  // Exactly the bytes asked for, on the heap, so that a sanitizer sees an
  // overrun.
  const size_t bytes = kernel->WorkspaceBytes();
  std::unique_ptr<float[]> workspace(bytes ? new float[(bytes + 3) / 4] : nullptr);
  output->assign(static_cast<size_t>(c.g.batch * c.g.filters * c.g.OutSpatial()), NAN);
  ConvCall call;
  call.batch = c.g.batch;
  call.data = c.data.data();
  call.residual = c.residual.empty() ? nullptr : c.residual.data();
  call.output = output->data();
  call.workspace = workspace.get();
  call.workspace_bytes = bytes;
  call.pool = pool;
  status = kernel->Forward(call);
  if (!status.ok()) {
    *reason = "forward: " + status.message();
    return false;
  }
  return true;
}

// Every applicable algorithm (and the chosen one among them) against
// `want`: the reference, or MXNet's output when replaying.
void CheckCase(const Case& c, const std::vector<double>& want, double scale, ThreadPool* pool,
               Stats* stats) {
  ++stats->cases;
  const ConvAlgorithm* chosen = ChooseConvAlgorithm(c.g, ConvOptions());
  if (chosen == nullptr || !chosen->applies(c.g)) {
    Fail(stats, c.name + ": the table chose no applicable algorithm for " + c.g.ToString());
  }
  int applicable = 0;
  for (const ConvAlgorithm& algorithm : ConvAlgorithmTable()) {
    if (!algorithm.applies(c.g)) continue;
    ++applicable;
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
    double error = 0;
    if (!Matches(output, want, scale, &error)) {
      char text[128];
      std::snprintf(text, sizeof text, ": max abs error %.3g > 1e-4 x %.3g", error, scale);
      Fail(stats, what + text);
    }
  }
  if (applicable == 0) Fail(stats, c.name + ": no algorithm applies to " + c.g.ToString());
}

void Randomize(Rng* rng, Case* c) {
  const ConvGeometry& g = c->g;
  const auto fill = [rng](std::vector<float>* v, int64_t count) {
    v->resize(static_cast<size_t>(count));
    for (float& x : *v) x = rng->Uniform();
  };
  fill(&c->data, g.batch * g.channels * g.InSpatial());
  fill(&c->weights, g.filters * (g.channels / g.groups) * g.KernelSize());
  fill(&c->bias, g.filters);
  if (rng->Chance(25)) fill(&c->residual, g.batch * g.filters * g.OutSpatial());
  const int clamp = static_cast<int>(rng->Int(0, 3));
  if (clamp == 1) c->lower = 0;
  if (clamp == 2) c->lower = 0, c->upper = 0.5f;
  if (g.normalises_input) {
    c->input_scale.resize(static_cast<size_t>(4 * g.channels));
    for (int64_t ch = 0; ch < g.channels; ++ch) {
      c->input_scale[4 * ch] = 0.3f * rng->Uniform();
      c->input_scale[4 * ch + 1] = 1.f / std::sqrt(0.6f + 0.5f * rng->Uniform() + 1e-3f);
      c->input_scale[4 * ch + 2] = 1.f + 0.5f * rng->Uniform();
      c->input_scale[4 * ch + 3] = 0.2f * rng->Uniform();
    }
    c->input_has_gamma = rng->Chance(50);
    if (rng->Chance(50)) c->input_lower = 0;
  }
}

// Picks a channel count per group: mostly small, sometimes past a vector
// or a Winograd threshold.
int64_t PerGroup(Rng* rng) {
  if (rng->Chance(70)) return rng->Int(1, 9);
  return rng->Pick<int64_t>({13, 16, 17, 31, 32, 33, 48, 64});
}

// One random geometry; false if the sizes came out invalid (retry).
bool RandomGeometry(Rng* rng, ConvGeometry* out) {
  ConvGeometry g;
  const int rank = static_cast<int>(rng->Pick<int64_t>({1, 2, 2, 2, 3, 3}));
  // Shape the case for a fast path half of the time.
  const int shape = rng->Chance(50) ? static_cast<int>(rng->Int(1, 7)) : 0;
  for (int d = 3 - rank; d < 3; ++d) {
    g.kernel[d] = rng->Pick<int64_t>({1, 1, 2, 3, 3, 3, 4, 5});
    g.stride[d] = rng->Chance(60) ? 1 : rng->Int(2, 3);
    g.dilate[d] = rng->Chance(75) ? 1 : rng->Int(2, 3);
    g.pad[d] = rng->Int(0, g.kernel[d]);
    g.in[d] = rng->Int(1, rank == 3 ? 9 : 23);
  }
  int64_t groups = rng->Chance(75) ? 1 : rng->Int(2, 4);
  int64_t group_in = PerGroup(rng), group_out = PerGroup(rng);
  const int first = 3 - rank;
  const auto planar_3x3 = [&](int64_t kh, int64_t kw) {
    g.kernel[1] = kh, g.kernel[2] = kw;
    g.stride[1] = g.stride[2] = 1;
    g.dilate[1] = g.dilate[2] = 1;
    if (rank == 3 && rng->Chance(50)) g.kernel[0] = 1, g.pad[0] = rng->Int(0, 1);
  };
  switch (shape) {
    case 1:  // Winograd F(4x4) / F(2x2): 3x3, stride 1
      if (rank == 1) return false;
      planar_3x3(3, 3);
      groups = 1;
      break;
    case 2:  // depthwise 3x3
      if (rank == 1) return false;
      g.kernel[1] = g.kernel[2] = 3;
      g.stride[1] = g.stride[2] = rng->Int(1, 2);
      g.dilate[1] = g.dilate[2] = 1;
      g.pad[1] = rng->Int(0, 2), g.pad[2] = rng->Int(0, 2);
      if (rank == 3 && rng->Chance(50)) g.kernel[0] = 1;
      groups = rng->Pick<int64_t>({1, 2, 5, 16, 17, 33});
      group_in = group_out = 1;
      break;
    case 3:  // pointwise, sometimes normalising its input
      for (int d = first; d < 3; ++d) g.kernel[d] = 1, g.stride[d] = 1, g.pad[d] = 0;
      if (groups == 1 && rng->Chance(50)) g.normalises_input = true;
      break;
    case 4:  // stems: few channels, equal strides
      if (rank == 1) return false;
      groups = 1;
      group_in = rng->Int(1, 4);
      g.stride[2] = g.stride[1];
      g.dilate[1] = g.dilate[2] = 1;
      if (rank == 3 && rng->Chance(50)) g.kernel[0] = 1;
      break;
    case 5: {  // one-axis Winograd kernels
      if (rank == 1) return false;
      const int64_t kh = rng->Pick<int64_t>({1, 7, 5, 2, 3}), kw = kh == 1 ? 7 : rng->Int(1, 7);
      planar_3x3(kh, kw);
      groups = 1;
      break;
    }
    case 6:  // a unit kernel axis over depth > 1 (GluonCV's video models)
      if (rank != 3) return false;
      g.kernel[0] = 1, g.pad[0] = 0, g.stride[0] = 1;
      g.in[0] = rng->Int(2, 5);
      break;
    case 7:  // depthwise, any kernel
      groups = rng->Int(2, 9);
      group_in = group_out = 1;
      break;
    default:
      break;
  }
  if (rng->Chance(10)) {  // a 1-D or 2-D layer embedded as 3-D with depth 1
    g.in[first] = 1;
  }
  g.groups = groups;
  g.channels = groups * group_in;
  g.filters = groups * group_out;
  g.batch = rng->Chance(70) ? 1 : rng->Int(2, 3);
  for (int d = 0; d < 3; ++d) {
    const int64_t padded = g.in[d] + 2 * g.pad[d], span = g.dilate[d] * (g.kernel[d] - 1) + 1;
    if (padded < span) return false;
    g.out[d] = OutExtent(g.in[d], g.kernel[d], g.stride[d], g.pad[d], g.dilate[d]);
  }
  // Keep the reference cheap: at most ~4 M multiply-adds.
  const int64_t macs = g.batch * g.filters * g.OutSpatial() * (g.channels / g.groups) *
                       g.KernelSize();
  if (macs > (int64_t{4} << 20) || g.batch * g.channels * g.InSpatial() > (1 << 20)) return false;
  *out = g;
  return true;
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
    int rank = 0;
    fields >> c.name >> c.g.batch >> c.g.channels >> c.g.filters >> c.g.groups >> rank;
    if (!fields || rank < 1 || rank > 3) {
      std::printf("FAIL: bad line in cases.txt: %s\n", line.c_str());
      return false;
    }
    int64_t* axes[] = {c.g.in, c.g.kernel, c.g.stride, c.g.pad, c.g.dilate};
    for (int64_t* axis : axes) {
      for (int d = 3 - rank; d < 3; ++d) fields >> axis[d];
    }
    if (!fields) {
      std::printf("FAIL: bad line in cases.txt: %s\n", line.c_str());
      return false;
    }
    for (int d = 0; d < 3; ++d) {
      c.g.out[d] = OutExtent(c.g.in[d], c.g.kernel[d], c.g.stride[d], c.g.pad[d], c.g.dilate[d]);
    }
    const ConvGeometry& g = c.g;
    const std::string base = dir + "/" + c.name;
    if (!ReadFloats(base + ".data", static_cast<size_t>(g.batch * g.channels * g.InSpatial()),
                    &c.data) ||
        !ReadFloats(base + ".weight",
                    static_cast<size_t>(g.filters * (g.channels / g.groups) * g.KernelSize()),
                    &c.weights) ||
        !ReadFloats(base + ".bias", static_cast<size_t>(g.filters), &c.bias) ||
        !ReadFloats(base + ".out", static_cast<size_t>(g.batch * g.filters * g.OutSpatial()),
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
  if (!ParseSweepOptions(argc, argv, "conv_sweep_test", &options, &stats)) return 2;
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
      const std::vector<double> want(c.expected.begin(), c.expected.end());
      double scale = 0, unused = 0, error = 0;
      for (double v : want) scale = std::max(scale, std::fabs(v));
      std::vector<float> reference;
      for (double v : Reference(c, &unused)) reference.push_back(static_cast<float>(v));
      if (!Matches(reference, want, scale, &error)) {
        Fail(&stats, c.name + ": the reference differs from MXNet: " + c.g.ToString());
      }
      CheckCase(c, want, scale, stats.cases % 2 ? &two : nullptr, &stats);
    }
    std::printf("%zu MXNet cases replayed\n", cases.size());
  }
  Rng rng(seed);
  for (int64_t made = 0; made < count;) {
    Case c;
    if (!RandomGeometry(&rng, &c.g)) continue;
    c.name = "random" + std::to_string(made);
    Randomize(&rng, &c);
    double scale = 0;
    const std::vector<double> want = Reference(c, &scale);
    CheckCase(c, want, scale, made % 3 == 2 ? &two : nullptr, &stats);
    ++made;
  }
  return FinishSweep(stats);
}

}  // namespace conv_sweep_test

int main(int argc, char** argv) {
  // This driver is the API boundary: the environment (MXLITE_ISA caps the
  // kernels' instruction set) applies here.
  const mxlite::Status environment = mxlite::ApplyProcessEnvironment();
  if (!environment.ok()) {
    std::fprintf(stderr, "%s\n", environment.message().c_str());
    return 2;
  }
  return conv_sweep_test::Main(argc, argv);
}
