/*
 * op_smoke_test's Pooling checks: a naive reference over every pooling
 * convention and option, and MXNet's own float order for the vectorised
 * 2-D paths, which must reproduce it bit for bit. Included once, by
 * op_smoke_test.cc, after op_smoke_support.h.
 */
#ifndef MXLITE_TESTS_CPP_OP_SMOKE_POOLING_H_
#define MXLITE_TESTS_CPP_OP_SMOKE_POOLING_H_

#include "op_smoke_support.h"

namespace op_smoke_test {

struct PoolConfig {
  std::string type, convention;
  std::vector<int64_t> shape, kernel, stride, pad;
  bool global = false;
  int count_include_pad = -1;  // -1 unset
  int p_value = 0;
};

std::vector<float> NaivePool(const PoolConfig& cfg, const std::vector<float>& x,
                             std::vector<int64_t>* oshape) {
  const int nk = static_cast<int>(cfg.shape.size()) - 2;
  std::vector<int64_t> k(3, 1), s(3, 1), p(3, 0), in(3, 1), o(3, 1);
  *oshape = {cfg.shape[0], cfg.shape[1]};
  for (int i = 0; i < nk; ++i) {
    int j = 3 - nk + i;
    in[j] = cfg.shape[2 + i];
    if (cfg.global) {
      k[j] = in[j];
    } else {
      k[j] = cfg.kernel[i];
      s[j] = cfg.stride.empty() ? 1 : cfg.stride[i];
      p[j] = cfg.pad.empty() ? 0 : cfg.pad[i];
    }
    const int64_t span = in[j] + 2 * p[j] - k[j];
    if (cfg.global) {
      o[j] = 1;
    } else if (cfg.convention == "full") {
      o[j] = 1 + static_cast<int64_t>(std::ceil(static_cast<double>(span) / s[j]));
    } else if (cfg.convention == "same") {
      o[j] = static_cast<int64_t>(std::ceil(static_cast<double>(in[j]) / s[j]));
    } else {
      o[j] = 1 + span / s[j];
    }
    oshape->push_back(o[j]);
  }
  const bool include = cfg.count_include_pad != 0;
  const int64_t planes = cfg.shape[0] * cfg.shape[1];
  std::vector<float> y;
  for (int64_t plane = 0; plane < planes; ++plane) {
    const float* src = x.data() + plane * in[0] * in[1] * in[2];
    for (int64_t a = 0; a < o[0]; ++a)
      for (int64_t b = 0; b < o[1]; ++b)
        for (int64_t c = 0; c < o[2]; ++c) {
          int64_t pos[3] = {a, b, c};
          int64_t lo[3], hi[3], padded = 1, clipped = 1;
          for (int j = 0; j < 3; ++j) {
            int64_t start = pos[j] * s[j] - p[j];
            int64_t end = std::min(start + k[j], in[j] + p[j]);
            padded *= end - start;
            lo[j] = std::max<int64_t>(start, 0);
            hi[j] = std::min(end, in[j]);
            clipped *= std::max<int64_t>(hi[j] - lo[j], 0);
          }
          double acc = cfg.type == "max" ? -FLT_MAX : 0.0;
          for (int64_t i0 = lo[0]; i0 < hi[0]; ++i0)
            for (int64_t i1 = lo[1]; i1 < hi[1]; ++i1)
              for (int64_t i2 = lo[2]; i2 < hi[2]; ++i2) {
                double v = src[(i0 * in[1] + i1) * in[2] + i2];
                if (cfg.type == "max") {
                  acc = std::max(acc, v);
                } else if (cfg.type == "lp") {
                  acc += std::pow(v, cfg.p_value);
                } else {
                  acc += v;
                }
              }
          // MXNet's 1-D and 2-D kernels leave an empty window at 0, the 3-D
          // one writes NaN when the divisor is 0.
          const int64_t divisor = cfg.type == "avg" ? (include ? padded : clipped) : 1;
          if (divisor == 0) {
            y.push_back(nk == 3 ? NAN : 0.f);
            continue;
          }
          if (cfg.type == "avg") acc /= static_cast<double>(divisor);
          if (cfg.type == "lp" && cfg.p_value == 2) acc = std::sqrt(acc);
          if (cfg.type == "lp" && cfg.p_value == 3) acc = std::cbrt(acc);
          y.push_back(static_cast<float>(acc));
        }
  }
  return y;
}

AttrMap PoolAttrs(const PoolConfig& cfg) {
  AttrMap attrs = {{"pool_type", cfg.type}};
  if (!cfg.kernel.empty()) attrs["kernel"] = Dims(cfg.kernel);
  if (!cfg.stride.empty()) attrs["stride"] = Dims(cfg.stride);
  if (!cfg.pad.empty()) attrs["pad"] = Dims(cfg.pad);
  if (!cfg.convention.empty()) attrs["pooling_convention"] = cfg.convention;
  if (cfg.global) attrs["global_pool"] = "True";
  if (cfg.count_include_pad >= 0) {
    attrs["count_include_pad"] = cfg.count_include_pad ? "True" : "False";
  }
  if (cfg.p_value) attrs["p_value"] = std::to_string(cfg.p_value);
  return attrs;
}

void TestPooling(const std::string& name, const PoolConfig& cfg) {
  const AttrMap attrs = PoolAttrs(cfg);
  std::vector<std::vector<float>> inputs;
  Run run;
  Status status = Execute("Pooling", attrs, {Shape(cfg.shape)}, &inputs, &run);
  ExpectOk("pool " + name, status);
  if (!status.ok()) return;
  std::vector<int64_t> oshape;
  std::vector<float> want = NaivePool(cfg, inputs[0], &oshape);
  Expect(run.out_shapes[0] == Shape(oshape), "pool " + name + ": output shape " +
                                                 run.out_shapes[0].ToString() + " want " +
                                                 Shape(oshape).ToString());
  ExpectClose("pool " + name, run.outputs[0], want, 1e-5, 1e-6);
}

// MXNet's CPU pooling in its own float order (2-D, max or avg): the
// vectorised paths must reproduce it bit for bit.
std::vector<float> MxnetOrderPool2d(const PoolConfig& cfg, const std::vector<float>& x,
                                    const std::vector<int64_t>& oshape) {
  const int64_t planes = cfg.shape[0] * cfg.shape[1], in_h = cfg.shape[2], in_w = cfg.shape[3];
  const int64_t out_h = oshape[2], out_w = oshape[3];
  const int64_t kh = cfg.global ? in_h : cfg.kernel[0], kw = cfg.global ? in_w : cfg.kernel[1];
  const int64_t sh = cfg.global ? 1 : cfg.stride[0], sw = cfg.global ? 1 : cfg.stride[1];
  const int64_t ph = cfg.global || cfg.pad.empty() ? 0 : cfg.pad[0];
  const int64_t pw = cfg.global || cfg.pad.empty() ? 0 : cfg.pad[1];
  std::vector<float> y;
  for (int64_t plane = 0; plane < planes; ++plane) {
    const float* src = x.data() + plane * in_h * in_w;
    for (int64_t oh = 0; oh < out_h; ++oh) {
      for (int64_t ow = 0; ow < out_w; ++ow) {
        const int64_t h0 = oh * sh - ph, w0 = ow * sw - pw;
        const int64_t h1 = std::min(h0 + kh, in_h + ph), w1 = std::min(w0 + kw, in_w + pw);
        const int64_t include = (h1 - h0) * (w1 - w0);
        const int64_t hb = std::max<int64_t>(h0, 0), wb = std::max<int64_t>(w0, 0);
        const int64_t he = std::min(h1, in_h), we = std::min(w1, in_w);
        const float divisor =
            static_cast<float>(cfg.count_include_pad != 0 ? include : (he - hb) * (we - wb));
        float acc = cfg.type == "max" ? -FLT_MAX : 0.f;
        for (int64_t h = hb; h < he; ++h) {
          for (int64_t w = wb; w < we; ++w) {
            const float v = src[h * in_w + w];
            if (cfg.type == "max") {
              if (v > acc) acc = v;
            } else {
              acc += v / divisor;
            }
          }
        }
        y.push_back(acc);
      }
    }
  }
  return y;
}

// Values on a coarse grid (so that windows hold ties, +0 against -0 among
// them) with a few NaNs.
std::vector<float> TieValues(int64_t count) {
  const float grid[] = {-2.f, -1.f, -0.f, 0.f, 0.5f, 1.f};
  std::vector<float> values(static_cast<size_t>(count));
  for (float& v : values) {
    const float u = g_rng.Uniform(0.f, 1.f);
    v = u < 0.02f ? NAN : grid[static_cast<int>(g_rng.Uniform(0.f, 5.999f))];
  }
  return values;
}

void TestPoolingBitExact(const std::string& name, const PoolConfig& cfg, bool ties) {
  const AttrMap attrs = PoolAttrs(cfg);
  std::vector<std::vector<float>> inputs(1);
  if (ties) inputs[0] = TieValues(cfg.shape[0] * cfg.shape[1] * cfg.shape[2] * cfg.shape[3]);
  Run run;
  Status status = Execute("Pooling", attrs, {Shape(cfg.shape)}, &inputs, &run);
  ExpectOk("pool exact " + name, status);
  if (!status.ok()) return;
  std::vector<int64_t> oshape(run.out_shapes[0].dims().begin(), run.out_shapes[0].dims().end());
  const std::vector<float> want = MxnetOrderPool2d(cfg, inputs[0], oshape);
  const std::vector<float>& got = run.outputs[0];
  Expect(got.size() == want.size(), "pool exact " + name + ": output size");
  if (got.size() != want.size()) return;
  for (size_t i = 0; i < got.size(); ++i) {
    const bool same = std::isnan(got[i]) ? std::isnan(want[i])
                                         : std::memcmp(&got[i], &want[i], sizeof(float)) == 0;
    if (!same) {
      Expect(false, "pool exact " + name + ": element " + std::to_string(i) + " is " +
                        std::to_string(got[i]) + (std::signbit(got[i]) ? " (sign set)" : "") +
                        ", MXNet's order gives " + std::to_string(want[i]) +
                        (std::signbit(want[i]) ? " (sign set)" : ""));
      return;
    }
  }
}

// Shapes wide enough for the vector paths (several 16-column blocks, edge
// blocks, more than 16 planes for global pooling).
void PoolingBitExactTests() {
  const std::vector<int64_t> wide = {2, 3, 37, 41};
  for (bool ties : {false, true}) {
    const std::string data = ties ? " ties+NaN" : "";
    for (std::string conv : {"valid", "full"}) {
      for (int64_t pad : {0, 1}) {
        TestPoolingBitExact("max k3 s2 " + conv + " pad " + std::to_string(pad) + data,
                            {"max", conv, wide, {3, 3}, {2, 2}, {pad, pad}}, ties);
        // Rows of more than 24 outputs: the separable row path (35 outputs
        // a row: a whole block and masked ones at both ends).
        TestPoolingBitExact("max k3 s2 71 wide " + conv + " pad " + std::to_string(pad) + data,
                            {"max", conv, {2, 3, 29, 71}, {3, 3}, {2, 2}, {pad, pad}}, ties);
        PoolConfig avg{"avg", conv, wide, {3, 3}, {2, 2}, {pad, pad}};
        for (int cip : {0, 1}) {
          avg.count_include_pad = cip;
          TestPoolingBitExact("avg k3 s2 " + conv + " pad " + std::to_string(pad) + " cip " +
                                  std::to_string(cip) + data,
                              avg, ties);
        }
      }
    }
    TestPoolingBitExact("max k3 s1 pad 1" + data, {"max", "valid", wide, {3, 3}, {1, 1}, {1, 1}},
                        ties);
    TestPoolingBitExact("avg k3 s1 pad 1 (uniform divisor)" + data,
                        {"avg", "valid", wide, {3, 3}, {1, 1}, {1, 1}}, ties);
    TestPoolingBitExact("max k2 s2" + data, {"max", "valid", wide, {2, 2}, {2, 2}, {0, 0}}, ties);
    TestPoolingBitExact("max k5 s1 pad 2" + data, {"max", "valid", wide, {5, 4}, {1, 1}, {2, 1}},
                        ties);
    // Small planes go sixteen at a time through the blocked path (AVX-512):
    // 37 planes = two whole blocks and a partial one. Inception's shapes.
    const std::vector<int64_t> small = {1, 37, 17, 17}, tiny = {1, 20, 8, 8};
    for (int cip : {0, 1}) {
      PoolConfig avg{"avg", "valid", small, {3, 3}, {1, 1}, {1, 1}};
      avg.count_include_pad = cip;
      TestPoolingBitExact("avg k3 s1 pad 1 17x17 cip " + std::to_string(cip) + data, avg, ties);
      avg.shape = tiny;
      TestPoolingBitExact("avg k3 s1 pad 1 8x8 cip " + std::to_string(cip) + data, avg, ties);
      PoolConfig full{"avg", "full", small, {3, 3}, {2, 2}, {1, 1}};
      full.count_include_pad = cip;
      TestPoolingBitExact("avg k3 s2 pad 1 full 17x17 cip " + std::to_string(cip) + data, full,
                          ties);
    }
    TestPoolingBitExact("max k3 s2 17x17" + data, {"max", "valid", small, {3, 3}, {2, 2}, {0, 0}},
                        ties);
    TestPoolingBitExact("max k3 s1 pad 1 8x8" + data,
                        {"max", "valid", tiny, {3, 3}, {1, 1}, {1, 1}}, ties);
    TestPoolingBitExact("max k2 s2 full 17x17" + data,
                        {"max", "full", small, {2, 2}, {2, 2}, {0, 0}}, ties);
    // Planes too large for the blocked path's scratch keep the row path.
    TestPoolingBitExact("avg k3 s1 pad 1 70x70" + data,
                        {"avg", "valid", {1, 2, 70, 70}, {3, 3}, {1, 1}, {1, 1}}, ties);
    // The row path's edges in eight-lane blocks (AVX2): rows of 42, 35 and
    // 38 outputs (a partial block at the end), stride 2 with the average's
    // divisors, two taps and a five-wide window (the generic tap loop).
    for (int cip : {0, 1}) {
      PoolConfig avg{"avg", "valid", {1, 2, 67, 83}, {3, 3}, {2, 2}, {1, 1}};
      avg.count_include_pad = cip;
      TestPoolingBitExact("avg k3 s2 pad 1 67x83 cip " + std::to_string(cip) + data, avg, ties);
    }
    TestPoolingBitExact("max k2 s2 29x71" + data,
                        {"max", "valid", {2, 3, 29, 71}, {2, 2}, {2, 2}, {0, 0}}, ties);
    TestPoolingBitExact("max k5 s2 pad 2 29x75" + data,
                        {"max", "valid", {1, 3, 29, 75}, {5, 5}, {2, 2}, {2, 2}}, ties);
    TestPoolingBitExact("max k3 s2 pad 1 full 30x61" + data,
                        {"max", "full", {1, 3, 30, 61}, {3, 3}, {2, 2}, {1, 1}}, ties);
    // The AVX2 max row path: blocks that load past the row's end (odd
    // widths, the last row of the last plane masked), a ring of kernel_h
    // rows (4 and 5 rows: slots wrap), windows clipped by pad and 'full'.
    TestPoolingBitExact("max k3 s2 9x9 full pad 1" + data,
                        {"max", "full", {1, 5, 9, 9}, {3, 3}, {2, 2}, {1, 1}}, ties);
    TestPoolingBitExact("max k3 s2 11x19" + data,
                        {"max", "valid", {2, 3, 11, 19}, {3, 3}, {2, 2}, {0, 0}}, ties);
    TestPoolingBitExact("max k4x3 s1 13x37 full pad 1" + data,
                        {"max", "full", {1, 3, 13, 37}, {4, 3}, {1, 1}, {1, 1}}, ties);
    TestPoolingBitExact("max k1x3 s2 7x23" + data,
                        {"max", "valid", {1, 3, 7, 23}, {1, 3}, {2, 2}, {0, 0}}, ties);
    TestPoolingBitExact("max k5x2 s2 pad 2 full 14x9" + data,
                        {"max", "full", {1, 4, 14, 9}, {5, 2}, {2, 2}, {2, 1}}, ties);
    // The AVX2 average row path (uniform divisors): row tails, a ring of
    // 8 rows wrapping (kernel 5), stride 2 with 2- and 1-wide windows, odd
    // row counts (the last pair of output rows is a single one).
    TestPoolingBitExact("avg k3 s1 pad 1 9x9" + data,
                        {"avg", "valid", {1, 5, 9, 9}, {3, 3}, {1, 1}, {1, 1}}, ties);
    TestPoolingBitExact("avg k5 s1 pad 2 11x21" + data,
                        {"avg", "valid", {1, 3, 11, 21}, {5, 5}, {1, 1}, {2, 2}}, ties);
    TestPoolingBitExact("avg k2 s2 13x29" + data,
                        {"avg", "valid", {2, 3, 13, 29}, {2, 2}, {2, 2}, {0, 0}}, ties);
    TestPoolingBitExact("avg k1 s2 9x19" + data,
                        {"avg", "valid", {1, 3, 9, 19}, {1, 1}, {2, 2}, {0, 0}}, ties);
    TestPoolingBitExact("avg k3x2 s2x1 pad 1 full 15x33" + data,
                        {"avg", "full", {1, 3, 15, 33}, {3, 2}, {2, 1}, {1, 0}}, ties);
    PoolConfig global{"avg", "", {1, 37, 9, 11}, {}, {}, {}, true};
    TestPoolingBitExact("global avg 37 planes" + data, global, ties);
    global.type = "max";
    TestPoolingBitExact("global max 37 planes" + data, global, ties);
  }
}

void PoolingTests() {
  PoolingBitExactTests();
  const std::vector<int64_t> s2 = {2, 3, 13, 7};
  for (std::string type : {"max", "avg", "sum"}) {
    for (std::string conv : {"valid", "full"}) {
      for (int64_t pad : {0, 1}) {
        for (int cip = -1; cip < 2; ++cip) {
          if (type != "avg" && cip != -1) continue;
          PoolConfig cfg{type, conv, s2, {3, 3}, {2, 2}, {pad, pad}};
          cfg.count_include_pad = cip;
          TestPooling(type + " " + conv + " pad " + std::to_string(pad) + " cip " +
                          std::to_string(cip),
                      cfg);
        }
      }
    }
  }
  PoolConfig edge{"avg", "full", {2, 3, 8, 8}, {3, 3}, {2, 2}, {}};
  TestPooling("avg full past input", edge);
  PoolConfig k4{"avg", "full", s2, {4, 4}, {3, 3}, {2, 2}};
  TestPooling("avg full k4 s3 p2", k4);
  k4.count_include_pad = 0;
  TestPooling("avg full k4 s3 p2 no cip", k4);
  PoolConfig asym{"max", "valid", s2, {2, 3}, {}, {}};
  TestPooling("max default stride", asym);
  for (int p = 1; p <= 3; ++p) {
    PoolConfig lp{"lp", "", s2, {3, 3}, {2, 1}, {1, 0}};
    lp.p_value = p;
    TestPooling("lp " + std::to_string(p), lp);
  }
  PoolConfig global{"avg", "full", s2, {}, {}, {}, true};
  TestPooling("global avg", global);
  global.type = "max";
  TestPooling("global max", global);
  PoolConfig global1{"sum", "", {2, 3, 13}, {}, {}, {}, true};
  TestPooling("global sum 1d", global1);
  PoolConfig global3{"avg", "", {2, 3, 5, 7, 6}, {}, {}, {}, true};
  TestPooling("global avg 3d", global3);
  TestPooling("1d avg full", {"avg", "full", {2, 3, 13}, {3}, {2}, {1}});
  TestPooling("1d max same", {"max", "same", {2, 3, 13}, {3}, {2}, {}});
  TestPooling("1d avg same", {"avg", "same", {2, 3, 13}, {4}, {3}, {}});
  PoolConfig p3{"avg", "full", {2, 3, 5, 7, 6}, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}};
  p3.count_include_pad = 0;
  TestPooling("3d avg full", p3);
  TestPooling("3d max", {"max", "valid", {2, 3, 5, 7, 6}, {2, 3, 2}, {1, 2, 2}, {}});
  TestPooling("empty windows max", {"max", "full", {1, 2, 5, 7}, {1, 1}, {3, 3}, {}});
  TestPooling("empty windows avg", {"avg", "full", {1, 2, 5, 7}, {1, 1}, {3, 3}, {}});

  // Shapes: resnet's 56 -> 28 with full, squeezenet style.
  std::unique_ptr<Operator> op;
  std::vector<Shape> in, out;
  ExpectOk("pool create", Create("Pooling", {{"kernel", "(3,3)"}, {"stride", "(2,2)"},
                                             {"pooling_convention", "full"}},
                                 &op));
  ExpectOk("pool full shape", Infer(op.get(), {Shape({1, 64, 56, 55})}, &in, &out));
  Expect(out[0] == Shape({1, 64, 28, 27}), "pool full 56 -> " + out[0].ToString());
  ExpectOk("pool partial", Infer(op.get(), {Shape({-1, 64, 56, -1})}, &in, &out));
  Expect(out[0] == Shape({-1, 64, 28, -1}), "pool partial " + out[0].ToString());
  ExpectError("pool kernel too big", Infer(op.get(), {Shape({1, 1, 2, 9})}, &in, &out),
              "exceeds");
  ExpectError("pool same 2d",
              Create("Pooling", {{"kernel", "(3,3)"}, {"pooling_convention", "same"}}, &op),
              "1-D");
  ExpectError("pool no kernel", Create("Pooling", {{"pool_type", "avg"}}, &op), "kernel");
  ExpectError("pool lp no p", Create("Pooling", {{"kernel", "(2,2)"}, {"pool_type", "lp"}}, &op),
              "p_value");
  ExpectError("pool layout", Create("Pooling", {{"kernel", "(2,2)"}, {"layout", "NHWC"}}, &op),
              "layout NHWC is not supported");
  ExpectError("pool layout rank", Create("Pooling", {{"kernel", "(2,2)"}, {"layout", "NCW"}}, &op),
              "does not match");
  ExpectOk("pool none values",
           Create("Pooling", {{"kernel", "(2,2)"}, {"p_value", "None"},
                              {"count_include_pad", "None"}, {"layout", "None"},
                              {"cudnn_off", "False"}},
                  &op));
}

}  // namespace op_smoke_test

#endif  // MXLITE_TESTS_CPP_OP_SMOKE_POOLING_H_
