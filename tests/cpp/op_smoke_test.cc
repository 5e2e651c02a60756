/*
 * op_smoke_test: checks Convolution, Pooling, BatchNorm, FullyConnected,
 * Concat and the softmax family against naive references written here, on
 * awkward sizes (odd extents, groups, dilation, full versus valid pooling),
 * plus their shape inference and attribute errors. With a directory
 * argument it also replays reference cases computed by MXNet 1.9.1: a
 * cases.txt manifest, one case per line
 *   name op nattrs (key value)... ninputs shape... noutputs shape...
 * (a shape is "d0,d1,...", "-" for 0-d), and raw little-endian float32
 * arrays <name>.in<i> and <name>.out<j> beside it.
 *
 * Build from the repository root, compiling with it operator.cc,
 * attr_parser.cc, every operator file, the kernels, ndarray/ndarray.cc and
 * base/dtype.cc (operator.cc references every factory in op_list.inc).
 * Run: op_smoke_test [mxnet_case_dir]
 */
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "../../predict/c_api/environment.h"
#include "../../predict/kernels/thread_pool.h"
#include "../../predict/operators/operator.h"

#include "op_smoke_pooling.h"
#include "op_smoke_support.h"

namespace op_smoke_test {

// ---------------------------------------------------------------------------
// Naive references

struct ConvConfig {
  int64_t n, c, f, group;
  std::vector<int64_t> spatial, kernel, stride, pad, dilate;
  bool no_bias;
};

std::vector<float> NaiveConv(const ConvConfig& cfg, const std::vector<float>& x,
                             const std::vector<float>& w, const std::vector<float>& b,
                             std::vector<int64_t>* out_spatial) {
  const int nk = static_cast<int>(cfg.kernel.size());
  int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, p[3] = {0, 0, 0},
          d[3] = {1, 1, 1}, o[3] = {1, 1, 1};
  out_spatial->clear();
  for (int i = 0; i < nk; ++i) {
    int j = 3 - nk + i;
    in[j] = cfg.spatial[i];
    k[j] = cfg.kernel[i];
    s[j] = cfg.stride[i];
    p[j] = cfg.pad[i];
    d[j] = cfg.dilate[i];
    o[j] = (in[j] + 2 * p[j] - d[j] * (k[j] - 1) - 1) / s[j] + 1;
    out_spatial->push_back(o[j]);
  }
  const int64_t cg = cfg.c / cfg.group, fg = cfg.f / cfg.group;
  std::vector<float> y(static_cast<size_t>(cfg.n * cfg.f * o[0] * o[1] * o[2]));
  size_t index = 0;
  for (int64_t n = 0; n < cfg.n; ++n)
    for (int64_t f = 0; f < cfg.f; ++f)
      for (int64_t z = 0; z < o[0]; ++z)
        for (int64_t yy = 0; yy < o[1]; ++yy)
          for (int64_t xx = 0; xx < o[2]; ++xx) {
            double sum = cfg.no_bias ? 0.0 : b[f];
            const int64_t g = f / fg;
            for (int64_t c = 0; c < cg; ++c)
              for (int64_t kz = 0; kz < k[0]; ++kz)
                for (int64_t ky = 0; ky < k[1]; ++ky)
                  for (int64_t kx = 0; kx < k[2]; ++kx) {
                    int64_t iz = z * s[0] - p[0] + kz * d[0];
                    int64_t iy = yy * s[1] - p[1] + ky * d[1];
                    int64_t ix = xx * s[2] - p[2] + kx * d[2];
                    if (iz < 0 || iz >= in[0] || iy < 0 || iy >= in[1] || ix < 0 || ix >= in[2])
                      continue;
                    double xv = x[(((n * cfg.c + g * cg + c) * in[0] + iz) * in[1] + iy) * in[2] +
                                  ix];
                    double wv = w[(((f * cg + c) * k[0] + kz) * k[1] + ky) * k[2] + kx];
                    sum += xv * wv;
                  }
            y[index++] = static_cast<float>(sum);
          }
  return y;
}

// With `residual_relu`, the graph optimizer's fused form: relu(conv + residual).
// A non-empty `kernel_name` is the method the layer must take (unless
// MXLITE_SHIFTED_GEMM=0 turns the shifted views off).
void TestConvolution(const std::string& name, const ConvConfig& cfg,
                     const std::string& kernel_name = "", bool residual_relu = false,
                     double atol = 1e-5) {
  AttrMap attrs = {{"kernel", Dims(cfg.kernel)}, {"num_filter", std::to_string(cfg.f)}};
  if (residual_relu) {
    attrs["with_residual"] = "True";
    attrs["clamp_min"] = "0";
  }
  if (!cfg.stride.empty()) attrs["stride"] = Dims(cfg.stride);
  if (!cfg.pad.empty()) attrs["pad"] = Dims(cfg.pad);
  if (!cfg.dilate.empty()) attrs["dilate"] = Dims(cfg.dilate);
  if (cfg.group != 1) attrs["num_group"] = std::to_string(cfg.group);
  if (cfg.no_bias) attrs["no_bias"] = "True";
  ConvConfig full = cfg;
  const size_t nk = cfg.kernel.size();
  if (full.stride.empty()) full.stride.assign(nk, 1);
  if (full.pad.empty()) full.pad.assign(nk, 0);
  if (full.dilate.empty()) full.dilate.assign(nk, 1);
  std::vector<int64_t> dshape = {cfg.n, cfg.c};
  dshape.insert(dshape.end(), cfg.spatial.begin(), cfg.spatial.end());
  std::vector<std::vector<float>> inputs;
  Run run;
  Status status = Execute(residual_relu ? "_FusedConvolution" : "Convolution", attrs,
                          {Shape(dshape)}, &inputs, &run);
  ExpectOk("conv " + name, status);
  if (!status.ok()) return;
  const char* shifted = std::getenv("MXLITE_SHIFTED_GEMM");
  if (!kernel_name.empty() && !(shifted && shifted[0] == '0')) {
    Expect(run.op->KernelName() == kernel_name,
           "conv " + name + ": took " + run.op->KernelName() + ", want " + kernel_name);
  }
  std::vector<int64_t> wshape = {cfg.f, cfg.c / cfg.group};
  wshape.insert(wshape.end(), cfg.kernel.begin(), cfg.kernel.end());
  Expect(run.in_shapes[1] == Shape(wshape), "conv " + name + ": weight shape " +
                                                run.in_shapes[1].ToString());
  std::vector<int64_t> ospatial;
  std::vector<float> want = NaiveConv(full, inputs[0], inputs[1],
                                      cfg.no_bias ? std::vector<float>() : inputs[2], &ospatial);
  std::vector<int64_t> oshape = {cfg.n, cfg.f};
  oshape.insert(oshape.end(), ospatial.begin(), ospatial.end());
  Expect(run.out_shapes[0] == Shape(oshape),
         "conv " + name + ": output shape " + run.out_shapes[0].ToString() + " want " +
             Shape(oshape).ToString());
  if (residual_relu) {
    const std::vector<float>& residual = inputs.back();
    for (size_t i = 0; i < want.size(); ++i) want[i] = std::max(want[i] + residual[i], 0.f);
  }
  ExpectClose("conv " + name, run.outputs[0], want, 1e-4, atol);
  // Threads split the work, never a sum: two threads give the same bits.
  static ThreadPool two_threads(2);
  Run threaded;
  status = Execute(residual_relu ? "_FusedConvolution" : "Convolution", attrs, {Shape(dshape)},
                   &inputs, &threaded, false, &two_threads);
  ExpectOk("conv " + name + " (2 threads)", status);
  Expect(status.ok() && threaded.outputs[0].size() == run.outputs[0].size() &&
             std::memcmp(threaded.outputs[0].data(), run.outputs[0].data(),
                         run.outputs[0].size() * sizeof(float)) == 0,
         "conv " + name + ": 2 threads changed the result");
}

void TestBatchNorm(const std::string& name, const std::vector<int64_t>& shape, int axis,
                   const AttrMap& attrs, bool fix_gamma, double eps) {
  const int ndim = static_cast<int>(shape.size());
  const int real_axis = axis < 0 ? axis + ndim : axis;
  const int64_t channels = shape[real_axis];
  std::vector<std::vector<float>> inputs(5);
  inputs[0] = Random(Shape(shape).Size(), -3.f, 3.f);
  inputs[1] = Random(channels, 0.5f, 1.5f);
  inputs[2] = Random(channels);
  inputs[3] = Random(channels);
  inputs[4] = Random(channels, 0.1f, 2.f);
  Run run;
  Status status = Execute("BatchNorm", attrs, {Shape(shape)}, &inputs, &run);
  ExpectOk("bn " + name, status);
  if (!status.ok()) return;
  for (int i = 1; i < 5; ++i) {
    Expect(run.in_shapes[i] == Shape({channels}), "bn " + name + ": parameter shape");
  }
  const int64_t inner = Shape(shape).ProdRange(real_axis + 1, ndim);
  std::vector<float> want(inputs[0].size());
  for (size_t i = 0; i < want.size(); ++i) {
    const int64_t c = (static_cast<int64_t>(i) / inner) % channels;
    const double g = fix_gamma ? 1.0 : inputs[1][c];
    want[i] = static_cast<float>((inputs[0][i] - inputs[3][c]) / std::sqrt(inputs[4][c] + eps) *
                                     g + inputs[2][c]);
  }
  ExpectClose("bn " + name, run.outputs[0], want, 1e-5, 1e-5);
  ExpectClose("bn " + name + " mean", run.outputs[1], inputs[3], 0, 0);
  std::vector<float> invstd(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) {
    invstd[c] = static_cast<float>(1.0 / std::sqrt(double(inputs[4][c]) + eps));
  }
  ExpectClose("bn " + name + " var (invstd)", run.outputs[2], invstd, 1e-6, 0);
}

// The vector paths against the scalar code's float expression, bit for
// bit: planes of 1 to 77 elements (whole vectors, runs of four, tails),
// NaN and -0 in the data, and the clamp of a fused activation
// (_FusedBatchNorm, as the graph optimizer writes it).
void TestBatchNormBitExact(const std::string& name, const std::vector<int64_t>& shape,
                           bool fix_gamma, bool fused) {
  const int64_t channels = shape[1];
  const int64_t inner = Shape(shape).ProdRange(2, static_cast<int>(shape.size()));
  std::vector<std::vector<float>> inputs(5);
  inputs[0] = Random(Shape(shape).Size(), -3.f, 3.f);
  for (size_t i = 0; i < inputs[0].size(); i += 13) inputs[0][i] = i % 2 ? NAN : -0.f;
  inputs[1] = Random(channels, 0.5f, 1.5f);
  inputs[2] = Random(channels);
  inputs[3] = Random(channels);
  inputs[4] = Random(channels, 0.1f, 2.f);
  AttrMap attrs = {{"fix_gamma", fix_gamma ? "True" : "False"}, {"eps", "1e-3"}};
  if (fused) {
    attrs["clamp_min"] = "0";
    attrs["clamp_max"] = "6";
  }
  Run run;
  Status status =
      Execute(fused ? "_FusedBatchNorm" : "BatchNorm", attrs, {Shape(shape)}, &inputs, &run);
  ExpectOk("bn exact " + name, status);
  if (!status.ok()) return;
  const float eps = 1e-3f;
  const std::vector<float>& got = run.outputs[0];
  for (size_t i = 0; i < got.size(); ++i) {
    const int64_t c = (static_cast<int64_t>(i) / inner) % channels;
    const float invstd = static_cast<float>(1.0 / std::sqrt(inputs[4][c] + eps));
    float want = (inputs[0][i] - inputs[3][c]) * invstd;
    if (!fix_gamma) want = want * inputs[1][c];
    want = want + inputs[2][c];
    if (fused) want = std::min(std::max(want, 0.f), 6.f);
    const bool same = std::isnan(got[i]) ? std::isnan(want)
                                         : std::memcmp(&got[i], &want, sizeof(float)) == 0;
    if (!same) {
      Expect(false, "bn exact " + name + ": element " + std::to_string(i) + " is " +
                        std::to_string(got[i]) + ", the scalar expression gives " +
                        std::to_string(want));
      return;
    }
  }
}

void TestFullyConnected(const std::string& name, const std::vector<int64_t>& shape,
                        int64_t hidden, bool flatten, bool no_bias) {
  AttrMap attrs = {{"num_hidden", std::to_string(hidden)}};
  if (!flatten) attrs["flatten"] = "False";
  if (no_bias) attrs["no_bias"] = "True";
  std::vector<std::vector<float>> inputs;
  Run run;
  Status status = Execute("FullyConnected", attrs, {Shape(shape)}, &inputs, &run);
  ExpectOk("fc " + name, status);
  if (!status.ok()) return;
  const Shape data(shape);
  const int64_t k = flatten ? data.ProdRange(1, data.ndim()) : shape.back();
  const int64_t m = data.Size() / k;
  Expect(run.in_shapes[1] == Shape({hidden, k}), "fc " + name + ": weight shape");
  std::vector<float> want(static_cast<size_t>(m * hidden));
  for (int64_t r = 0; r < m; ++r)
    for (int64_t j = 0; j < hidden; ++j) {
      double sum = no_bias ? 0.0 : inputs[2][j];
      for (int64_t i = 0; i < k; ++i) sum += double(inputs[0][r * k + i]) * inputs[1][j * k + i];
      want[r * hidden + j] = static_cast<float>(sum);
    }
  ExpectClose("fc " + name, run.outputs[0], want, 1e-4, 1e-5);
}

// Softmax over the middle dim of (outer, extent, inner), in double.
std::vector<float> NaiveSoftmax(const std::vector<float>& x, int64_t outer, int64_t extent,
                                int64_t inner, double temperature = 1.0) {
  std::vector<float> y(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t j) { return static_cast<size_t>((o * extent + j) * inner + i); };
      double mx = -INFINITY, sum = 0;
      for (int64_t j = 0; j < extent; ++j) mx = std::max<double>(mx, x[at(j)]);
      for (int64_t j = 0; j < extent; ++j) sum += std::exp((x[at(j)] - mx) / temperature);
      for (int64_t j = 0; j < extent; ++j) {
        y[at(j)] = static_cast<float>(std::exp((x[at(j)] - mx) / temperature) / sum);
      }
    }
  return y;
}

void TestSoftmaxCase(const std::string& name, const std::string& op, const AttrMap& attrs,
                     const std::vector<int64_t>& shape, int64_t outer, int64_t extent,
                     int64_t inner, double temperature = 1.0) {
  for (int inplace = 0; inplace < 2; ++inplace) {
    std::vector<std::vector<float>> inputs = {Random(Shape(shape).Size(), -8.f, 8.f)};
    Run run;
    std::string label = name + (inplace ? " (in place)" : "");
    Status status = Execute(op, attrs, {Shape(shape)}, &inputs, &run, inplace != 0);
    ExpectOk(label, status);
    if (!status.ok()) return;
    ExpectClose(label, run.outputs[0], NaiveSoftmax(inputs[0], outer, extent, inner, temperature),
                1e-5, 1e-7);
    if (op == "SoftmaxActivation") break;  // no in-place option in MXNet
  }
}

// ---------------------------------------------------------------------------

void ConvolutionTests() {
  TestConvolution("2d pad", {2, 3, 5, 1, {13, 7}, {3, 3}, {}, {1, 1}, {}, false});
  TestConvolution("2d group dilate", {2, 6, 4, 2, {13, 11}, {3, 2}, {2, 1}, {1, 0}, {2, 1}, true});
  TestConvolution("depthwise", {2, 13, 13, 13, {13, 13}, {3, 3}, {2, 2}, {1, 1}, {}, false});
  TestConvolution("depthwise dilate", {1, 5, 5, 5, {9, 7}, {3, 3}, {}, {2, 2}, {2, 2}, false});
  TestConvolution("depthwise stride3 asym", {2, 3, 3, 3, {13, 7}, {5, 3}, {3, 2}, {2, 0}, {},
                                              true});
  TestConvolution("pointwise", {2, 13, 5, 1, {7, 5}, {1, 1}, {}, {}, {}, false});
  TestConvolution("pointwise group", {2, 6, 4, 2, {7, 5}, {1, 1}, {}, {}, {}, true});
  TestConvolution("1x1 stride 2", {2, 5, 3, 1, {13, 7}, {1, 1}, {2, 2}, {}, {}, false});
  TestConvolution("1x7 pad 0,3", {2, 3, 5, 1, {13, 7}, {1, 7}, {}, {0, 3}, {}, false});
  TestConvolution("7x1 pad 3,0", {2, 3, 5, 1, {13, 7}, {7, 1}, {}, {3, 0}, {}, false});
  // 8 filters: below the Winograd threshold; the views come in two bands.
  TestConvolution("big (banded views)", {1, 64, 8, 1, {64, 65}, {3, 3}, {}, {1, 1}, {}, false},
                  "shifted gemm");
  // Shifted views (more than 4 channels, so never the direct stem kernel):
  // stride 2 with and without padding, odd extents, a stride larger than the
  // kernel (phases that skip rows), dilation with a per-axis stride, groups,
  // two bands at stride 2, and the fused residual + relu written directly
  // (7x1) and at stride 2.
  const std::string views = "shifted gemm";
  TestConvolution("views s2 pad 1", {2, 6, 7, 1, {15, 17}, {3, 3}, {2, 2}, {1, 1}, {}, false},
                  views);
  TestConvolution("views s2 pad 0", {1, 8, 5, 1, {17, 17}, {3, 3}, {2, 2}, {}, {}, false}, views);
  TestConvolution("views s3 k2", {1, 6, 4, 1, {11, 13}, {2, 2}, {3, 3}, {1, 0}, {}, false},
                  views);
  TestConvolution("views 5x3 dilate s(1,2)",
                  {2, 6, 5, 1, {13, 11}, {5, 3}, {1, 2}, {3, 1}, {2, 1}, false}, views);
  TestConvolution("views group s2 dilate",
                  {2, 9, 6, 3, {12, 10}, {3, 3}, {2, 2}, {1, 2}, {1, 2}, true}, views);
  TestConvolution("views s2 banded", {1, 48, 8, 1, {120, 100}, {3, 3}, {2, 2}, {1, 1}, {}, false},
                  views);
  TestConvolution("views 7x1 residual relu", {2, 6, 5, 1, {9, 7}, {7, 1}, {}, {3, 0}, {}, false},
                  views, true);
  TestConvolution("views s2 residual relu", {2, 6, 5, 1, {9, 8}, {3, 3}, {2, 2}, {1, 1}, {}, true},
                  views, true);
  // Larger views, where two threads split every GEMM: groups, stride 2 with
  // residual + relu, a 1x7 (plain views) and a 5x5.
  TestConvolution("views group threads", {1, 12, 6, 3, {40, 36}, {3, 3}, {}, {1, 1}, {}, false},
                  views);
  TestConvolution("views s2 residual relu threads",
                  {1, 16, 8, 1, {30, 34}, {3, 3}, {2, 2}, {1, 1}, {}, false}, views, true);
  TestConvolution("views 1x7 threads", {1, 8, 6, 1, {19, 17}, {1, 7}, {}, {0, 3}, {}, false},
                  views);
  TestConvolution("views 5x5 threads", {1, 8, 6, 1, {35, 35}, {5, 5}, {}, {2, 2}, {}, false},
                  views);
  // A 3x3 layer's kx taps are one depth segment of 3 x C: 288 deep (one
  // block where the GEMM reads the views in place, two elsewhere), and
  // 1152 deep (two blocks), with a residual and relu.
  TestConvolution("views joined taps", {1, 96, 7, 1, {20, 18}, {3, 3}, {2, 2}, {1, 1}, {}, true},
                  views);
  TestConvolution("views joined taps deep",
                  {1, 384, 5, 1, {9, 10}, {3, 3}, {2, 2}, {1, 1}, {}, false}, views, true);
  // Winograd with vector transforms (AVX2, AVX-512), elsewhere shifted views.
  // Winograd's error grows with the terms summed, as winograd_test's bound:
  // 2e-5 per channel and tap.
  TestConvolution("3x3 32->32 at 64x64", {1, 32, 32, 1, {64, 64}, {3, 3}, {}, {1, 1}, {}, true},
                  "", true, 2e-5 * 32 * 9);
  TestConvolution("kernel = input", {2, 3, 5, 1, {7, 7}, {7, 7}, {}, {}, {}, false});
  TestConvolution("pad > kernel", {1, 2, 3, 1, {5, 5}, {2, 2}, {3, 3}, {3, 3}, {}, false});
  TestConvolution("1d", {2, 3, 5, 1, {13}, {3}, {2}, {1}, {2}, false});
  TestConvolution("1d depthwise", {2, 5, 5, 5, {13}, {3}, {1}, {1}, {}, false});
  TestConvolution("3d", {2, 3, 4, 1, {5, 7, 6}, {3, 3, 3}, {1, 2, 1}, {1, 1, 0}, {}, false});
  TestConvolution("3d depthwise", {1, 3, 3, 3, {5, 7, 6}, {3, 3, 3}, {}, {1, 1, 1}, {}, false});
  TestConvolution("channel multiplier", {2, 3, 6, 3, {7, 7}, {3, 3}, {}, {1, 1}, {}, false});

  // Shape inference and errors.
  std::unique_ptr<Operator> op;
  std::vector<Shape> in, out;
  AttrMap attrs = {{"kernel", "(3,3)"}, {"num_filter", "8"}, {"stride", "(2,2)"}, {"pad", "(1,1)"}};
  ExpectOk("conv create", Create("Convolution", attrs, &op));
  ExpectOk("conv partial", Infer(op.get(), {Shape({-1, 3, 224, -1})}, &in, &out));
  Expect(in[1] == Shape({8, 3, 3, 3}) && in[2] == Shape({8}) &&
             out[0] == Shape({-1, 8, 112, -1}),
         "conv partial shapes " + in[1].ToString() + " " + out[0].ToString());
  ExpectOk("conv unknown", Infer(op.get(), {Shape()}, &in, &out));
  ExpectError("conv bad weight",
              Infer(op.get(), {Shape({1, 3, 9, 9}), Shape({8, 4, 3, 3})}, &in, &out), "weight");
  ExpectError("conv rank", Infer(op.get(), {Shape({1, 3, 9})}, &in, &out), "4-D");
  ExpectError("conv too small", Infer(op.get(), {Shape({1, 3, 0, 9})}, &in, &out), "kernel");
  attrs["num_group"] = "2";
  ExpectOk("conv group create", Create("Convolution", attrs, &op));
  ExpectError("conv group channels", Infer(op.get(), {Shape({1, 3, 9, 9})}, &in, &out),
              "num_group");
  ExpectError("conv stride rank",
              Create("Convolution", {{"kernel", "(3,3)"}, {"num_filter", "8"}, {"stride", "(2,)"}},
                     &op),
              "stride");
  ExpectError("conv layout",
              Create("Convolution", {{"kernel", "(3,3)"}, {"num_filter", "8"}, {"layout", "NHWC"}},
                     &op),
              "layout NHWC is not supported");
  ExpectError("conv unknown attr",
              Create("Convolution", {{"kernel", "(3,3)"}, {"num_filter", "8"}, {"foo", "1"}}, &op),
              "unknown attribute 'foo'");
  ExpectOk("conv ignored attrs",
           Create("Convolution", {{"kernel", "(3,3)"}, {"num_filter", "8"}, {"workspace", "512"},
                                  {"cudnn_tune", "fastest"}, {"cudnn_off", "True"},
                                  {"layout", "NCHW"}},
                  &op));
  // Back-inference of the data extent when the stride is 1.
  ExpectOk("conv create s1", Create("Convolution", {{"kernel", "(3,3)"}, {"num_filter", "4"},
                                                    {"pad", "(1,1)"}},
                                    &op));
  in = {Shape({-1, 3, -1, -1}), Shape(), Shape()};
  out = {Shape({2, 4, 9, 7})};
  ExpectOk("conv back", op->InferShape(&in, &out));
  Expect(in[0] == Shape({2, 3, 9, 7}), "conv back-inferred data " + in[0].ToString());
}

void BatchNormTests() {
  TestBatchNorm("default (fix_gamma, eps 1e-3)", {2, 5, 7, 3}, 1, {}, true, 1e-3);
  TestBatchNorm("gamma", {2, 5, 7, 3}, 1, {{"fix_gamma", "False"}, {"eps", "1e-5"}}, false, 1e-5);
  TestBatchNorm("axis -1", {2, 7, 13}, -1, {{"fix_gamma", "False"}, {"axis", "-1"}}, false, 1e-3);
  TestBatchNorm("axis 2", {2, 3, 13, 5}, 2,
                {{"fix_gamma", "False"}, {"axis", "2"}, {"momentum", "0.9"},
                 {"use_global_stats", "True"}, {"cudnn_off", "False"}},
                false, 1e-3);
  TestBatchNorm("2d", {7, 13}, 1, {{"fix_gamma", "false"}}, false, 1e-3);
  for (bool fused : {false, true}) {
    for (bool fix_gamma : {false, true}) {
      const std::string kind = std::string(fused ? "fused " : "") + (fix_gamma ? "fix_gamma" : "");
      TestBatchNormBitExact("77 a plane " + kind, {2, 3, 7, 11}, fix_gamma, fused);
      TestBatchNormBitExact("5 a plane " + kind, {1, 4, 5, 1}, fix_gamma, fused);
      TestBatchNormBitExact("64 a plane " + kind, {1, 3, 8, 8}, fix_gamma, fused);
      TestBatchNormBitExact("1 a plane " + kind, {3, 6}, fix_gamma, fused);
    }
  }
  std::unique_ptr<Operator> op;
  std::vector<Shape> in, out;
  ExpectOk("bn create", Create("BatchNorm", {}, &op));
  Expect(op->NumVisibleOutputs() == 1 && op->MutatedInputs() == std::vector<int>({3, 4}) &&
             op->OutputNames().size() == 3,
         "bn structure");
  ExpectOk("bn create mv", Create("BatchNorm", {{"output_mean_var", "True"}}, &op));
  Expect(op->NumVisibleOutputs() == 3, "bn output_mean_var visible outputs");
  ExpectOk("bn axis valid", Infer(op.get(), {Shape({2, 3, 4})}, &in, &out));
  ExpectOk("bn create axis", Create("BatchNorm", {{"axis", "-4"}}, &op));
  ExpectError("bn axis range", Infer(op.get(), {Shape({2, 3, 4})}, &in, &out), "axis=-4");
  ExpectOk("bn create again", Create("BatchNorm", {}, &op));
  ExpectError("bn gamma", Infer(op.get(), {Shape({2, 3, 4, 4}), Shape({4})}, &in, &out),
              "gamma");
  ExpectOk("bn from gamma", Infer(op.get(), {Shape({2, -1, 4, 4}), Shape({6})}, &in, &out));
  Expect(in[0] == Shape({2, 6, 4, 4}) && out[2] == Shape({6}), "bn channel from gamma");
}

void FullyConnectedTests() {
  TestFullyConnected("batch 1 flatten", {1, 3, 5, 7}, 13, true, false);
  TestFullyConnected("batch 3", {3, 37}, 13, true, true);
  TestFullyConnected("batch 4", {4, 37}, 9, true, false);
  TestFullyConnected("batch 7", {7, 3, 13}, 19, true, false);
  TestFullyConnected("batch 33", {33, 70}, 130, true, false);
  TestFullyConnected("no flatten", {2, 7, 13}, 11, false, false);
  TestFullyConnected("1-d data", {5}, 3, true, false);
  std::unique_ptr<Operator> op;
  std::vector<Shape> in, out;
  ExpectOk("fc create", Create("FullyConnected", {{"num_hidden", "10"}}, &op));
  ExpectOk("fc column bias",
           Infer(op.get(), {Shape({2, 4}), Shape(), Shape({10, 1})}, &in, &out));
  ExpectError("fc weight", Infer(op.get(), {Shape({2, 4}), Shape({10, 5})}, &in, &out),
              "weight");
  ExpectError("fc num_hidden", Create("FullyConnected", {}, &op), "num_hidden");
}

void ConcatTests() {
  struct Case {
    std::string name;
    std::vector<std::vector<int64_t>> shapes;
    int dim;
  };
  const Case cases[] = {{"dim 1", {{2, 3, 5, 7}, {2, 1, 5, 7}, {2, 13, 5, 7}}, 1},
                        {"dim -1", {{2, 3, 5}, {2, 3, 7}}, -1},
                        {"dim 0", {{2, 3}, {5, 3}}, 0},
                        {"single", {{2, 3}}, 1},
                        // Rows of 160 KB and 68 KB: copied in 64 KB pieces.
                        {"large rows", {{2, 40000}, {2, 3}, {2, 17001}}, 1}};
  for (const Case& c : cases) {
    std::vector<Shape> shapes;
    for (const auto& s : c.shapes) shapes.push_back(Shape(s));
    std::vector<std::vector<float>> inputs;
    Run run;
    Status status = Execute("Concat", {{"num_args", std::to_string(c.shapes.size())},
                                       {"dim", std::to_string(c.dim)}},
                            shapes, &inputs, &run);
    ExpectOk("concat " + c.name, status);
    if (!status.ok()) continue;
    const int ndim = static_cast<int>(c.shapes[0].size());
    const int axis = c.dim < 0 ? c.dim + ndim : c.dim;
    const int64_t outer = shapes[0].ProdRange(0, axis);
    std::vector<float> want;
    for (int64_t o = 0; o < outer; ++o) {
      for (size_t i = 0; i < shapes.size(); ++i) {
        const int64_t row = shapes[i].ProdRange(axis, ndim);
        want.insert(want.end(), inputs[i].begin() + o * row, inputs[i].begin() + (o + 1) * row);
      }
    }
    ExpectClose("concat " + c.name, run.outputs[0], want, 0, 0);
  }
  std::unique_ptr<Operator> op;
  std::vector<Shape> in, out;
  ExpectOk("concat create", Create("concat", {{"num_args", "3"}}, &op));
  Expect(op->InputNames() == std::vector<std::string>({"arg0", "arg1", "arg2"}), "concat names");
  ExpectError("concat mismatch", Infer(op.get(), {Shape({2, 3, 4}), Shape({2, 3, 5})}, &in, &out),
              "arg1");
  in = {Shape({2, 3, 4}), Shape(), Shape({2, 5, -1})};
  out = {Shape({-1, 10, -1})};
  ExpectOk("concat back", op->InferShape(&in, &out));
  Expect(in[1] == Shape({2, 2, 4}) && in[2] == Shape({2, 5, 4}) && out[0] == Shape({2, 10, 4}),
         "concat back-inferred " + in[1].ToString() + " " + out[0].ToString());
  ExpectOk("concat create dim", Create("Concat", {{"num_args", "2"}, {"dim", "2"}}, &op));
  ExpectError("concat dim", Infer(op.get(), {Shape({2, 3})}, &in, &out), "dim=2");
}

void SoftmaxTests() {
  const std::vector<int64_t> shape = {2, 5, 3, 7};
  TestSoftmaxCase("softmax last", "softmax", {}, shape, 30, 7, 1);
  TestSoftmaxCase("softmax axis 1", "softmax", {{"axis", "1"}}, shape, 2, 5, 21);
  TestSoftmaxCase("softmax axis 0", "softmax", {{"axis", "0"}}, shape, 1, 2, 105);
  TestSoftmaxCase("softmax temperature", "softmax",
                  {{"temperature", "2.5"}, {"dtype", "float32"}, {"use_length", "False"}}, shape,
                  30, 7, 1, 2.5);
  TestSoftmaxCase("SoftmaxOutput", "SoftmaxOutput", {}, shape, 2, 105, 1);
  TestSoftmaxCase("SoftmaxOutput multi", "SoftmaxOutput", {{"multi_output", "True"}}, shape, 2, 5,
                  21);
  TestSoftmaxCase("SoftmaxOutput preserve", "SoftmaxOutput", {{"preserve_shape", "True"}}, shape,
                  30, 7, 1);
  TestSoftmaxCase("Softmax alias", "Softmax",
                  {{"grad_scale", "1"}, {"normalization", "batch"}, {"smooth_alpha", "0.1"},
                   {"out_grad", "False"}, {"use_ignore", "True"}, {"ignore_label", "-1"}},
                  {3, 13}, 3, 13, 1);
  TestSoftmaxCase("SoftmaxActivation instance", "SoftmaxActivation", {}, shape, 30, 7, 1);
  TestSoftmaxCase("SoftmaxActivation channel", "SoftmaxActivation", {{"mode", "channel"}}, shape,
                  2, 5, 21);

  std::unique_ptr<Operator> op;
  std::vector<Shape> in, out;
  ExpectOk("so create", Create("SoftmaxOutput", {}, &op));
  Expect(op->UnreadInputs() == std::vector<int>({1}) &&
             op->InputNames() == std::vector<std::string>({"data", "label"}),
         "SoftmaxOutput structure");
  ExpectOk("so label", Infer(op.get(), {Shape({4, 10})}, &in, &out));
  Expect(in[1] == Shape({4}), "SoftmaxOutput label " + in[1].ToString());
  ExpectOk("so label 4d", Infer(op.get(), {Shape({2, 5, 3, 7})}, &in, &out));
  Expect(in[1] == Shape({2, 5, 3}), "SoftmaxOutput label 4d " + in[1].ToString());
  ExpectOk("so label = data", Infer(op.get(), {Shape({4, 10}), Shape({4, 10})}, &in, &out));
  ExpectError("so bad label", Infer(op.get(), {Shape({4, 10}), Shape({5})}, &in, &out), "label");
  ExpectOk("so multi create", Create("SoftmaxOutput", {{"multi_output", "True"}}, &op));
  ExpectOk("so multi label", Infer(op.get(), {Shape({2, 5, 3, 7})}, &in, &out));
  Expect(in[1] == Shape({2, 21}), "SoftmaxOutput multi label " + in[1].ToString());
  ExpectOk("so multi label 2", Infer(op.get(), {Shape({2, 5, 3, 7}), Shape({2, 3, 7})}, &in, &out));
  ExpectOk("so multi label 3",
           Infer(op.get(), {Shape({2, 5, 3, 7}), Shape({2, 1, 3, 7})}, &in, &out));
  ExpectError("so multi bad", Infer(op.get(), {Shape({2, 5, 3, 7}), Shape({2, 5})}, &in, &out),
              "label");
  ExpectError("log_softmax length", Create("log_softmax", {{"use_length", "True"}}, &op),
              "use_length");
  ExpectOk("softmax length create", Create("softmax", {{"use_length", "True"}, {"axis", "1"}}, &op));
  ExpectOk("softmax length infer", Infer(op.get(), {Shape({2, 5, 3})}, &in, &out));
  Expect(in[1] == Shape({2, 3}), "softmax length shape " + in[1].ToString());
  ExpectError("softmax dtype", Create("softmax", {{"dtype", "float16"}}, &op), "dtype");
  ExpectOk("softmax none", Create("softmax", {{"temperature", "None"}, {"dtype", "None"},
                                              {"use_length", "None"}},
                                  &op));
  ExpectOk("softmax axis create", Create("softmax", {{"axis", "3"}}, &op));
  ExpectError("softmax axis", Infer(op.get(), {Shape({2, 3})}, &in, &out), "axis");
  ExpectOk("sa create", Create("SoftmaxActivation", {{"mode", "channel"}}, &op));
  ExpectError("sa channel rank", Infer(op.get(), {Shape({2, 3})}, &in, &out), "3 dims");
}

// ---------------------------------------------------------------------------
// MXNet reference cases

Shape ParseShape(const std::string& token) {
  if (token == "-") return Shape(std::vector<int64_t>());
  std::vector<int64_t> dims;
  std::stringstream stream(token);
  std::string item;
  while (std::getline(stream, item, ',')) dims.push_back(std::stoll(item));
  return Shape(dims);
}

bool ReadFloats(const std::string& path, int64_t count, std::vector<float>* values) {
  std::ifstream file(path, std::ios::binary);
  values->resize(static_cast<size_t>(count));
  file.read(reinterpret_cast<char*>(values->data()), count * static_cast<int64_t>(sizeof(float)));
  return static_cast<bool>(file) && file.gcount() == count * static_cast<int64_t>(sizeof(float));
}

void MxnetCases(const std::string& dir) {
  std::ifstream manifest(dir + "/cases.txt");
  if (!manifest) {
    Expect(false, "cannot open " + dir + "/cases.txt");
    return;
  }
  std::string line;
  int count = 0;
  while (std::getline(manifest, line)) {
    std::stringstream tokens(line);
    std::string name, op;
    int nattrs = 0;
    tokens >> name >> op >> nattrs;
    AttrMap attrs;
    for (int i = 0; i < nattrs; ++i) {
      std::string key, value;
      tokens >> key >> value;
      attrs[key] = value;
    }
    int nin = 0;
    tokens >> nin;
    std::vector<Shape> in_shapes(nin);
    for (Shape& s : in_shapes) {
      std::string token;
      tokens >> token;
      s = ParseShape(token);
    }
    int nout = 0;
    tokens >> nout;
    std::vector<Shape> out_shapes(nout);
    for (Shape& s : out_shapes) {
      std::string token;
      tokens >> token;
      s = ParseShape(token);
    }
    std::vector<std::vector<float>> inputs(nin);
    bool read = true;
    for (int i = 0; i < nin; ++i) {
      read = read && ReadFloats(dir + "/" + name + ".in" + std::to_string(i), in_shapes[i].Size(),
                                &inputs[i]);
    }
    std::vector<std::vector<float>> want(nout);
    for (int j = 0; j < nout; ++j) {
      read = read && ReadFloats(dir + "/" + name + ".out" + std::to_string(j),
                                out_shapes[j].Size(), &want[j]);
    }
    Expect(read, "mxnet " + name + ": cannot read its arrays");
    if (!read) continue;
    // Only the data shape is given: the rest must be inferred.
    Run run;
    std::vector<Shape> given = {in_shapes[0]};
    if (op == "Concat") given = in_shapes;
    Status status = Execute(op, attrs, given, &inputs, &run);
    ExpectOk("mxnet " + name, status);
    if (!status.ok()) continue;
    for (int i = 0; i < nin; ++i) {
      Expect(run.in_shapes[i] == in_shapes[i], "mxnet " + name + ": input " + std::to_string(i) +
                                                   " inferred " + run.in_shapes[i].ToString() +
                                                   " mxnet " + in_shapes[i].ToString());
    }
    Expect(run.op->NumVisibleOutputs() == nout, "mxnet " + name + ": visible outputs");
    const bool gemm = op == "Convolution" || op == "FullyConnected";
    for (int j = 0; j < nout && j < static_cast<int>(run.outputs.size()); ++j) {
      Expect(run.out_shapes[j] == out_shapes[j], "mxnet " + name + ": output shape " +
                                                     run.out_shapes[j].ToString() + " mxnet " +
                                                     out_shapes[j].ToString());
      ExpectClose("mxnet " + name + " output " + std::to_string(j), run.outputs[j], want[j],
                  gemm ? 1e-4 : 2e-6, gemm ? 1e-5 : 1e-7);
    }
    ++count;
  }
  std::printf("replayed %d MXNet cases\n", count);
}

}  // namespace op_smoke_test

int main(int argc, char** argv) {
  // This driver is the API boundary: the environment (MXLITE_ISA caps the
  // kernels' instruction set) applies here.
  {
    const mxlite::Status environment = mxlite::ApplyProcessEnvironment();
    if (!environment.ok()) {
      std::fprintf(stderr, "%s\n", environment.message().c_str());
      return 2;
    }
  }
  using namespace op_smoke_test;
  ConvolutionTests();
  PoolingTests();
  BatchNormTests();
  FullyConnectedTests();
  ConcatTests();
  SoftmaxTests();
  if (argc > 1) MxnetCases(argv[1]);
  std::printf("%d checks, %d failures\n", g_checks, g_failures);
  return g_failures == 0 ? 0 : 1;
}
