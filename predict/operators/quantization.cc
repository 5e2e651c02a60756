/*
 * MXNet's int8 operators, as its MKLDNN quantization pass writes them
 * (mx.contrib.quantization with the MKLDNN backend; GluonCV's *_int8 zoo):
 *
 *   _contrib_quantize_v2        float32 -> int8/uint8 codes, with min/max outputs
 *   _sg_mkldnn_conv             quantized Convolution [+BatchNorm][+relu][+sum][+relu],
 *                               the float graph it fuses held in the node's "subgraphs"
 *   _contrib_quantized_pooling  max/avg pooling on codes
 *   _contrib_dequantize         codes -> float32
 *
 * Every quantized tensor travels with two float32 scalars (its min and max),
 * extra inputs and outputs as MXNet has them. The arithmetic is that of
 * MXNet 1.9.1 on a CPU with AVX512-VNNI, where each of these runs through
 * oneDNN (src/operator/quantization/mkldnn/, subgraph/mkldnn/mkldnn_conv.cc):
 *
 *   - a scale is GetQuantizeScale's: 127.5 (int8) or 255.5 (uint8) over
 *     max(|min|, |max|) (INT32_MAX when that is 0);
 *   - float -> code (quantize_v2 with or without calibrated ranges, and every
 *     oneDNN store): x * scale in float32, saturated to the type's range
 *     ([-128, 127] or [0, 255]), rounded to nearest even;
 *   - code -> float (dequantize): code * (max(|min|, |max|) / 127.5 or 255.5);
 *   - _sg_mkldnn_conv: BatchNorm folded into the float weights and bias first
 *     (alpha = gamma / sqrt(var + eps) in double, stored as float); a scale
 *     per output channel, 127.5 / max|w_c|, lowered where the bias would pass
 *     INT32_MAX / 2; weights quantized at it (a grouped convolution's group g
 *     at channel g's scale: see QuantizeWeights); bias rounded to int32 at
 *     data_scale * weight_scale_c; int32 accumulation (exact); then in float32
 *     ((float)acc + (float)bias) * requantize_scale_c, relu, the sum post-op
 *     (fma(previous code, sum_scale, v), a plain add when sum_scale is 1),
 *     relu, saturate and round. With a sum the result is stored in the sum
 *     input's type (MXNet writes into that buffer) and read back as the
 *     output's type, byte for byte;
 *   - avg pooling sums codes in int32 and multiplies by the float 1/divisor
 *     before rounding (oneDNN's int8 pooling), max pooling ignores padding.
 *
 * Storage: the executor keeps each tensor in its MXNet dtype (int8/uint8
 * codes take one byte) and hands operators float32 copies; a code is an
 * integer from -128 to 255, exact in float32, and converting back truncates
 * an integral value to itself, so the operators below read and write codes
 * as floats without loss. The convolution lays its input codes out as int16
 * im2col columns, two rows to a word, once per image and group, and
 * multiplies them by the weight codes with Int16PairGemm (int32 sums; AVX2's
 * pmaddwd where there is one); a depthwise one sums each channel's taps
 * directly.
 *
 * Left undone: a VNNI (vpdpbusd) kernel and blocked layouts for speed; the float (quantized=false) and the
 * uncalibrated (int32 output) forms of _sg_mkldnn_conv; activations other
 * than relu inside it; 3-D kernels; pooling other than 2-D NCHW.
 */
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "../kernels/int16_pair_gemm.h"
#include "../kernels/thread_pool.h"
#include "operator.h"

namespace mxlite {

namespace pooling_op {
Status CreatePooling(AttrParser* attrs, std::unique_ptr<Operator>* out);
}  // namespace pooling_op

namespace quantization_op {

constexpr float kUint8Range = 255.5f;
constexpr float kInt8Range = 127.5f;

inline bool IsCodeType(int dtype) { return dtype == kInt8 || dtype == kUint8; }

inline float MaxAbs(float a, float b) { return std::max(std::fabs(a), std::fabs(b)); }

// MXNet's GetQuantizeScale.
inline float QuantizeScale(int dtype, float min_value, float max_value) {
  const float range = MaxAbs(min_value, max_value);
  const float quantized = dtype == kInt8 ? kInt8Range : kUint8Range;
  return range != 0.0f ? quantized / range : static_cast<float>(INT32_MAX);
}

inline float CodeMin(int dtype) { return dtype == kInt8 ? -128.0f : 0.0f; }
inline float CodeMax(int dtype) { return dtype == kInt8 ? 127.0f : 255.0f; }

// How oneDNN stores a float32 as an integer code: saturate, then round to
// nearest even (NaN becomes 0 here; it never arises from finite inputs).
inline float StoreCode(float value, int dtype) {
  if (std::isnan(value)) return 0.0f;
  value = std::min(std::max(value, CodeMin(dtype)), CodeMax(dtype));
  return std::nearbyint(value);
}

// Reads the byte of a `from` code as a `to` code (uint8 200 is int8 -56).
inline float Reinterpret(float code, int from, int to) {
  if (from == to) return code;
  const int byte = static_cast<int>(code) & 0xff;
  return static_cast<float>(to == kInt8 && byte > 127 ? byte - 256 : byte);
}

// Sets (*types)[i] to `want`, or checks it against a known one.
Status AssignType(std::vector<int>* types, int i, int want, const std::string& what) {
  int& have = (*types)[i];
  if (have == kUnknownDType) {
    have = want;
    return Status();
  }
  MXL_CHECK(have == want, what, " is ", DTypeName(have), " but must be ", DTypeName(want));
  return Status();
}

Status CheckCodeType(const std::vector<int>& types, int i, const std::string& what) {
  const int have = types[i];
  MXL_CHECK(have == kUnknownDType || IsCodeType(have), what, " is ", DTypeName(have),
            " but must be int8 or uint8 (the output of a quantize or quantized operator)");
  return Status();
}

Status SetScalarShapes(const Operator& op, std::vector<Shape>* shapes, int from,
                       const std::vector<std::string>& names) {
  for (int i = from; i < static_cast<int>(shapes->size()); ++i) {
    MXL_RETURN_IF_ERROR(AssignShape(shapes, i, Shape({1}), "input", names));
  }
  (void)op;
  return Status();
}

// ---------------------------------------------------------------------------
// _contrib_quantize_v2

enum OutType { kOutAuto = 0, kOutInt8 = 1, kOutUint8 = 2 };

class QuantizeV2 : public Operator {
 public:
  QuantizeV2(int out_type, bool calibrated, float min_calib, float max_calib)
      : calibrated_(calibrated), min_calib_(min_calib), max_calib_(max_calib) {
    // GetQuantizeOutputType: auto is uint8 only for a calibrated range that
    // starts at 0 or above.
    code_type_ = out_type == kOutUint8 ? kUint8 : kInt8;
    if (out_type == kOutAuto && calibrated && min_calib >= 0.0f) code_type_ = kUint8;
  }

  std::vector<std::string> OutputNames() const override {
    return {"output", "min_output", "max_output"};
  }
  int NumVisibleOutputs() const override { return 3; }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    MXL_RETURN_IF_ERROR(SameShapeInference(*this, in, out));
    MXL_RETURN_IF_ERROR(AssignShape(out, 1, Shape({1}), "output", OutputNames()));
    return AssignShape(out, 2, Shape({1}), "output", OutputNames());
  }

  Status InferType(std::vector<int>* in, std::vector<int>* out) const override {
    const int data = (*in)[0];
    MXL_CHECK(data == kUnknownDType || data == kFloat32 || IsCodeType(data),
              "input 'data' is ", DTypeName(data), " but must be float32, int8 or uint8");
    if (IsCodeType(data)) {
      MXL_CHECK(data == code_type_, "input 'data' holds ", DTypeName(data), " codes but the ",
                "node quantizes to ", DTypeName(code_type_), " (out_type)");
    }
    MXL_RETURN_IF_ERROR(AssignType(out, 0, code_type_, "output 'output'"));
    MXL_RETURN_IF_ERROR(AssignType(out, 1, kFloat32, "output 'min_output'"));
    return AssignType(out, 2, kFloat32, "output 'max_output'");
  }

  void SetDTypes(const std::vector<int>& in, const std::vector<int>& out) override {
    (void)out;
    in_type_ = in[0];
  }

  Status Forward(const OpContext& ctx, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    (void)ctx;
    const float* x = in[0].fdata();
    float* y = out[0].fdata();
    const int64_t size = in[0].Size();
    if (IsCodeType(in_type_)) {  // already codes: passed through
      if (y != x) std::memcpy(y, x, static_cast<size_t>(size) * sizeof(float));
      out[1].fdata()[0] = calibrated_ ? min_calib_ : (in_type_ == kUint8 ? 0.0f : -kInt8Range);
      out[2].fdata()[0] = calibrated_ ? max_calib_ : (in_type_ == kUint8 ? kUint8Range : kInt8Range);
      return Status();
    }
    float data_min = min_calib_, data_max = max_calib_;
    if (!calibrated_) {
      data_min = FLT_MAX;
      data_max = -FLT_MAX;
      for (int64_t i = 0; i < size; ++i) {
        if (x[i] > data_max) data_max = x[i];
        if (x[i] < data_min) data_min = x[i];
      }
    }
    const float real_range = MaxAbs(data_min, data_max);
    const float scale =
        (code_type_ == kUint8 ? kUint8Range : kInt8Range) / real_range;
    for (int64_t i = 0; i < size; ++i) y[i] = StoreCode(x[i] * scale, code_type_);
    out[1].fdata()[0] = code_type_ == kUint8 ? data_min : -real_range;
    out[2].fdata()[0] = code_type_ == kUint8 ? data_max : real_range;
    return Status();
  }

 private:
  bool calibrated_;
  float min_calib_, max_calib_;
  int code_type_ = kInt8;
  int in_type_ = kFloat32;
};

Status CreateQuantizeV2(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  const int out_type = attrs->Enum("out_type", {"auto", "int8", "uint8"}, kOutInt8);
  double min_calib = 0, max_calib = 0;
  const bool has_min = attrs->OptionalFloat("min_calib_range", &min_calib);
  const bool has_max = attrs->OptionalFloat("max_calib_range", &max_calib);
  MXL_RETURN_IF_ERROR(attrs->Finish());
  // MXNet uses the calibrated range only when both ends are given.
  const bool calibrated = has_min && has_max;
  if (calibrated && !(min_calib <= max_calib)) {
    attrs->Fail("min_calib_range", StrCat(min_calib, " is above max_calib_range ", max_calib));
    return attrs->Finish();
  }
  out->reset(new QuantizeV2(out_type, calibrated, static_cast<float>(min_calib),
                            static_cast<float>(max_calib)));
  return Status();
}

// ---------------------------------------------------------------------------
// _contrib_dequantize

class Dequantize : public Operator {
 public:
  std::vector<std::string> InputNames() const override {
    return {"data", "min_range", "max_range"};
  }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    MXL_RETURN_IF_ERROR(SetScalarShapes(*this, in, 1, InputNames()));
    Shape shape = (*in)[0];
    MXL_RETURN_IF_ERROR(AssignShape(out, 0, shape, "output", OutputNames()));
    return AssignShape(in, 0, (*out)[0], "input", InputNames());
  }

  Status InferType(std::vector<int>* in, std::vector<int>* out) const override {
    MXL_RETURN_IF_ERROR(CheckCodeType(*in, 0, "input 'data'"));
    MXL_RETURN_IF_ERROR(AssignType(in, 1, kFloat32, "input 'min_range'"));
    MXL_RETURN_IF_ERROR(AssignType(in, 2, kFloat32, "input 'max_range'"));
    return AssignType(out, 0, kFloat32, "output 'output'");
  }

  void SetDTypes(const std::vector<int>& in, const std::vector<int>& out) override {
    (void)out;
    in_type_ = in[0];
  }

  Status Forward(const OpContext& ctx, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    (void)ctx;
    const float real_range = MaxAbs(in[1].fdata()[0], in[2].fdata()[0]);
    const float scale = real_range / (in_type_ == kUint8 ? kUint8Range : kInt8Range);
    const float* x = in[0].fdata();
    float* y = out[0].fdata();
    const int64_t size = in[0].Size();
    for (int64_t i = 0; i < size; ++i) y[i] = x[i] * scale;
    return Status();
  }

 private:
  int in_type_ = kInt8;
};

Status CreateDequantize(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  attrs->Enum("out_type", {"float32"}, 0);
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new Dequantize());
  return Status();
}

// ---------------------------------------------------------------------------
// _contrib_quantized_pooling

class QuantizedPooling : public Operator {
 public:
  QuantizedPooling(std::unique_ptr<Operator> shape_op, bool is_max, bool global,
                   std::vector<int64_t> kernel, std::vector<int64_t> stride,
                   std::vector<int64_t> pad, bool count_include_pad)
      : shape_op_(std::move(shape_op)),
        is_max_(is_max),
        global_(global),
        kernel_(std::move(kernel)),
        stride_(std::move(stride)),
        pad_(std::move(pad)),
        count_include_pad_(count_include_pad) {}

  std::vector<std::string> InputNames() const override { return {"data", "min_data", "max_data"}; }
  std::vector<std::string> OutputNames() const override {
    return {"output", "min_output", "max_output"};
  }
  int NumVisibleOutputs() const override { return 3; }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    MXL_RETURN_IF_ERROR(SetScalarShapes(*this, in, 1, InputNames()));
    const Shape& data = (*in)[0];
    MXL_CHECK(!data.rank_known() || data.ndim() == 4, "input 'data' has shape ",
              data.ToString(), " but quantized pooling runs 4-D NCHW input only");
    std::vector<Shape> data_in = {(*in)[0]};
    std::vector<Shape> data_out = {(*out)[0]};
    MXL_RETURN_IF_ERROR(shape_op_->InferShape(&data_in, &data_out));
    (*in)[0] = data_in[0];
    (*out)[0] = data_out[0];
    MXL_RETURN_IF_ERROR(AssignShape(out, 1, Shape({1}), "output", OutputNames()));
    return AssignShape(out, 2, Shape({1}), "output", OutputNames());
  }

  Status InferType(std::vector<int>* in, std::vector<int>* out) const override {
    MXL_RETURN_IF_ERROR(CheckCodeType(*in, 0, "input 'data'"));
    MXL_RETURN_IF_ERROR(AssignType(in, 1, kFloat32, "input 'min_data'"));
    MXL_RETURN_IF_ERROR(AssignType(in, 2, kFloat32, "input 'max_data'"));
    if ((*in)[0] != kUnknownDType) {
      MXL_RETURN_IF_ERROR(AssignType(out, 0, (*in)[0], "output 'output'"));
    }
    MXL_RETURN_IF_ERROR(AssignType(out, 1, kFloat32, "output 'min_output'"));
    return AssignType(out, 2, kFloat32, "output 'max_output'");
  }

  void SetDTypes(const std::vector<int>& in, const std::vector<int>& out) override {
    (void)out;
    code_type_ = in[0];
  }

  Status Forward(const OpContext& ctx, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const Shape& data = in[0].shape();
    const Shape& oshape = out[0].shape();
    const int64_t planes = data[0] * data[1];
    const int64_t H = data[2], W = data[3], OH = oshape[2], OW = oshape[3];
    const int64_t kh = global_ ? H : kernel_[0], kw = global_ ? W : kernel_[1];
    const int64_t sh = global_ ? 1 : stride_[0], sw = global_ ? 1 : stride_[1];
    const int64_t ph = global_ ? 0 : pad_[0], pw = global_ ? 0 : pad_[1];
    const float* x = in[0].fdata();
    float* y = out[0].fdata();
    const float lowest = CodeMin(code_type_);
    const int type = code_type_;
    ParallelFor(ctx.pool, planes, [&](int64_t plane) {
      const float* xp = x + plane * H * W;
      float* yp = y + plane * OH * OW;
      for (int64_t oh = 0; oh < OH; ++oh) {
        const int64_t h0 = oh * sh - ph;
        const int64_t hs = std::max<int64_t>(h0, 0), he = std::min(h0 + kh, H);
        for (int64_t ow = 0; ow < OW; ++ow) {
          const int64_t w0 = ow * sw - pw;
          const int64_t ws = std::max<int64_t>(w0, 0), we = std::min(w0 + kw, W);
          if (is_max_) {
            float best = lowest;
            for (int64_t h = hs; h < he; ++h) {
              for (int64_t w = ws; w < we; ++w) best = std::max(best, xp[h * W + w]);
            }
            yp[oh * OW + ow] = best;
            continue;
          }
          int32_t sum = 0;
          for (int64_t h = hs; h < he; ++h) {
            for (int64_t w = ws; w < we; ++w) sum += static_cast<int32_t>(xp[h * W + w]);
          }
          const int64_t count = count_include_pad_ ? kh * kw
                                                   : std::max<int64_t>(he - hs, 0) *
                                                         std::max<int64_t>(we - ws, 0);
          const float divider = count > 0 ? 1.0f / static_cast<float>(count) : 0.0f;
          yp[oh * OW + ow] = StoreCode(static_cast<float>(sum) * divider, type);
        }
      }
    });
    out[1].fdata()[0] = in[1].fdata()[0];
    out[2].fdata()[0] = in[2].fdata()[0];
    return Status();
  }

 private:
  std::unique_ptr<Operator> shape_op_;  // the float Pooling: shapes only
  bool is_max_;
  bool global_;
  std::vector<int64_t> kernel_, stride_, pad_;
  bool count_include_pad_;
  int code_type_ = kUint8;
};

Status CreateQuantizedPooling(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  // Pooling's attributes, checked (and documented) by Pooling's factory.
  std::unique_ptr<Operator> shape_op;
  MXL_RETURN_IF_ERROR(pooling_op::CreatePooling(attrs, &shape_op));
  MXL_RETURN_IF_ERROR(attrs->Finish());
  AttrParser again(attrs->node_name(), attrs->op_name(), attrs->attrs());
  const int type = again.Enum("pool_type", {"max", "avg", "sum", "lp"}, 0);
  const bool global = again.Bool("global_pool", false);
  std::vector<int64_t> kernel = again.Tuple("kernel", {});
  std::vector<int64_t> stride = again.Tuple("stride", {});
  std::vector<int64_t> pad = again.Tuple("pad", {});
  const std::string include_text = again.String("count_include_pad", "None");
  const bool count_include_pad =
      include_text == "None" ? true : again.Bool("count_include_pad", true);
  const std::string layout = again.String("layout", "None");
  if (type != 0 && type != 1) {
    attrs->Fail("pool_type", "quantized pooling supports max and avg only");
    return attrs->Finish();
  }
  if (layout != "None" && layout != "NCHW") {
    attrs->Fail("layout", StrCat(layout, ": quantized pooling runs NCHW only"));
    return attrs->Finish();
  }
  if (!global) {
    if (kernel.size() != 2) {
      attrs->Fail("kernel", StrCat(TupleText(kernel), ": quantized pooling runs 2-D kernels only"));
      return attrs->Finish();
    }
    if (stride.empty()) stride = {1, 1};
    if (pad.empty()) pad = {0, 0};
    stride.resize(2, 1);
    pad.resize(2, 0);
  }
  out->reset(new QuantizedPooling(std::move(shape_op), type == 0, global, kernel, stride, pad,
                                  count_include_pad));
  return Status();
}

// ---------------------------------------------------------------------------
// _sg_mkldnn_conv

// Convolution geometry, read from the subgraph's Convolution node.
struct ConvGeometry {
  std::vector<int64_t> kernel, stride, dilate, pad;
  int64_t num_filter = 0, num_group = 1;
  bool no_bias = false;
};

// The quantized weights for one data (and sum) range.
struct QuantizedWeights {
  float data_min = 0, data_max = 0, sum_min = 0, sum_max = 0;
  // [num_filter][pairs]: the codes of a filter's C/g * kh * kw weights two
  // to a word (PackInt16Pair), a last odd one with 0.
  std::vector<int32_t> weight_pairs;
  int64_t pairs = 0;
  std::vector<int32_t> bias;     // [num_filter], when there is one
  std::vector<float> requantize; // [num_filter]
  float sum_scale = 1.0f;
};

class SgMkldnnConv : public Operator {
 public:
  SgMkldnnConv(std::string node_name, bool with_bn, bool with_act, bool with_sum,
               bool with_postsum_act, float min_calib, float max_calib)
      : node_name_(std::move(node_name)),
        with_bn_(with_bn),
        with_act_(with_act),
        with_sum_(with_sum),
        with_postsum_act_(with_postsum_act),
        min_calib_(min_calib),
        max_calib_(max_calib) {}

  bool TakesSubgraph() const override { return true; }

  Status SetSubgraph(const Subgraph& subgraph) override;

  std::vector<std::string> InputNames() const override {
    std::vector<std::string> names = {"data", "weight"};
    if (!geometry_.no_bias) names.push_back("bias");
    if (with_bn_) {
      for (const char* name : {"gamma", "beta", "mean", "var"}) names.push_back(name);
    }
    if (with_sum_) names.push_back("sum");
    names.push_back("data_min");
    names.push_back("data_max");
    if (with_sum_) {
      names.push_back("sum_min");
      names.push_back("sum_max");
    }
    return names;
  }
  std::vector<std::string> OutputNames() const override {
    return {"output", "output_min", "output_max"};
  }
  int NumVisibleOutputs() const override { return 3; }
  std::vector<int> MutatedInputs() const override {
    if (!with_bn_) return {};
    return {MeanIndex(), MeanIndex() + 1};
  }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    MXL_CHECK(conv_ != nullptr, "_sg_mkldnn_conv has no subgraph: it runs only as a node of a symbol file, which holds the graph it fuses");
    const std::vector<std::string> names = InputNames();
    const int base = geometry_.no_bias ? 2 : 3;
    std::vector<Shape> conv_in(in->begin(), in->begin() + base);
    std::vector<Shape> conv_out = {(*out)[0]};
    MXL_RETURN_IF_ERROR(conv_->InferShape(&conv_in, &conv_out));
    for (int i = 0; i < base; ++i) {
      MXL_RETURN_IF_ERROR(AssignShape(in, i, conv_in[i], "input", names));
    }
    MXL_RETURN_IF_ERROR(AssignShape(out, 0, conv_out[0], "output", OutputNames()));
    int next = base;
    if (with_bn_) {
      for (int i = 0; i < 4; ++i) {
        MXL_RETURN_IF_ERROR(AssignShape(in, next++, Shape({geometry_.num_filter}), "input", names));
      }
    }
    if (with_sum_) {
      MXL_RETURN_IF_ERROR(AssignShape(in, next, (*out)[0], "input", names));
      MXL_RETURN_IF_ERROR(AssignShape(out, 0, (*in)[next], "output", OutputNames()));
      ++next;
    }
    for (; next < static_cast<int>(in->size()); ++next) {
      MXL_RETURN_IF_ERROR(AssignShape(in, next, Shape({1}), "input", names));
    }
    MXL_RETURN_IF_ERROR(AssignShape(out, 1, Shape({1}), "output", OutputNames()));
    return AssignShape(out, 2, Shape({1}), "output", OutputNames());
  }

  Status InferType(std::vector<int>* in, std::vector<int>* out) const override {
    MXL_CHECK(conv_ != nullptr, "_sg_mkldnn_conv has no subgraph: it runs only as a node of a symbol file, which holds the graph it fuses");
    const std::vector<std::string> names = InputNames();
    MXL_RETURN_IF_ERROR(CheckCodeType(*in, 0, "input 'data'"));
    for (int i = 1; i < static_cast<int>(in->size()); ++i) {
      if (with_sum_ && i == SumIndex()) {
        MXL_RETURN_IF_ERROR(CheckCodeType(*in, i, "input 'sum'"));
      } else {
        MXL_RETURN_IF_ERROR(AssignType(in, i, kFloat32, StrCat("input '", names[i], "'")));
      }
    }
    MXL_RETURN_IF_ERROR(AssignType(out, 0, OutputType(), "output 'output'"));
    MXL_RETURN_IF_ERROR(AssignType(out, 1, kFloat32, "output 'output_min'"));
    return AssignType(out, 2, kFloat32, "output 'output_max'");
  }

  void SetDTypes(const std::vector<int>& in, const std::vector<int>& out) override {
    (void)out;
    data_type_ = in[0];
    sum_type_ = with_sum_ ? in[SumIndex()] : OutputType();
  }

  Status Prepare(const std::vector<NDArray>& in, const std::vector<NDArray>& out,
                 size_t* workspace_bytes) override {
    (void)in;
    (void)out;
    *workspace_bytes = 0;
    MXL_CHECK(conv_ != nullptr, "_sg_mkldnn_conv has no subgraph: it runs only as a node of a symbol file, which holds the graph it fuses");
    weights_.reset();  // the weights may have changed
    return Status();
  }

  Status Forward(const OpContext& ctx, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override;

  // The quantized weights, once the first Forward has made them (they
  // depend on the data's range, known only then).
  size_t PreparedBytes() const override {
    if (!weights_) return 0;
    return weights_->weight_pairs.size() * sizeof(int32_t) + weights_->bias.size() * sizeof(int32_t) +
           weights_->requantize.size() * sizeof(float);
  }

 private:
  int MeanIndex() const { return geometry_.no_bias ? 4 : 5; }
  int SumIndex() const { return (geometry_.no_bias ? 2 : 3) + (with_bn_ ? 4 : 0); }
  // IsOutputUInt8: relu last (before any sum, or after it) gives uint8.
  int OutputType() const {
    if (!with_sum_ && with_act_) return kUint8;
    if (with_postsum_act_) return kUint8;
    return kInt8;
  }
  Status QuantizeWeights(const std::vector<NDArray>& in, float data_min, float data_max,
                         float sum_min, float sum_max);

  std::string node_name_;
  bool with_bn_, with_act_, with_sum_, with_postsum_act_;
  float min_calib_, max_calib_;
  ConvGeometry geometry_;
  std::unique_ptr<Operator> conv_;  // the float Convolution: shapes only
  double bn_eps_ = 1e-3;
  bool bn_fix_gamma_ = true;
  int data_type_ = kUint8, sum_type_ = kUint8;
  std::unique_ptr<QuantizedWeights> weights_;
  std::vector<int32_t> column_pairs_;  // [pairs][columns], see Forward
  std::vector<int32_t> accumulators_;  // [filters per group][columns]
};

Status SgMkldnnConv::SetSubgraph(const Subgraph& subgraph) {
  const std::string where = StrCat("node '", node_name_, "' (_sg_mkldnn_conv): its subgraph");
  // The operators in order, and what the flags say they must be.
  std::vector<const char*> want = {"Convolution"};
  if (with_bn_) want.push_back("BatchNorm");
  if (with_act_) want.push_back("Activation");
  if (with_sum_) want.push_back("elemwise_add");
  if (with_postsum_act_) want.push_back("Activation");
  std::vector<int> ops;
  for (size_t i = 0; i < subgraph.nodes.size(); ++i) {
    const SubgraphNode& node = subgraph.nodes[i];
    if (node.op == "null") {
      MXL_CHECK(node.inputs.empty(), where, ": variable '", node.name, "' has inputs");
      continue;
    }
    ops.push_back(static_cast<int>(i));
  }
  std::string listed, wanted;
  for (int i : ops) listed += (listed.empty() ? "" : ", ") + subgraph.nodes[i].op;
  for (const char* name : want) wanted += (wanted.empty() ? "" : ", ") + std::string(name);
  bool same = ops.size() == want.size();
  for (size_t k = 0; same && k < ops.size(); ++k) same = subgraph.nodes[ops[k]].op == want[k];
  MXL_CHECK(same, where, " holds [", listed, "] but its attributes (with_bn, with_act, with_sum, ",
            "with_postsum_act) call for [", wanted, "]");
  MXL_CHECK(subgraph.heads.size() == 1 && subgraph.heads[0].first == ops.back() &&
                subgraph.heads[0].second == 0,
            where, " must have one head: the output of its last operator");
  auto is_variable = [&](const std::pair<int, int>& entry) {
    return subgraph.nodes[entry.first].op == "null";
  };
  // Each operator reads the previous one's output first (elemwise_add
  // either way round), and variables otherwise.
  for (size_t k = 0; k < ops.size(); ++k) {
    const SubgraphNode& node = subgraph.nodes[ops[k]];
    std::unique_ptr<Operator> created;
    MXL_RETURN_IF_ERROR(CreateOperator(node.op, node.name, node.attrs, &created)
                            .WithContext(where + ": "));
    const size_t arity = created->InputNames().size();
    MXL_CHECK(node.inputs.size() == arity, where, ": node '", node.name, "' (", node.op,
              ") has ", node.inputs.size(), " input(s) but needs ", arity);
    // Which input carries the previous operator's output: the first, or
    // either one of elemwise_add's.
    int chain_input = k == 0 ? -1 : 0;
    if (node.op == "elemwise_add" && node.inputs.size() == 2 &&
        node.inputs[1].first == ops[k - 1]) {
      chain_input = 1;
    }
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const std::pair<int, int>& entry = node.inputs[i];
      if (static_cast<int>(i) == chain_input) {
        MXL_CHECK(entry.first == ops[k - 1] && entry.second == 0, where, ": input ", i, " of '",
                  node.name, "' must be the output of '", subgraph.nodes[ops[k - 1]].name, "'");
      } else {
        MXL_CHECK(is_variable(entry), where, ": input ", i, " of '", node.name,
                  "' must be a variable of the subgraph");
      }
    }
    AttrParser attrs(node.name, node.op, node.attrs);
    if (node.op == "Convolution") {
      geometry_.kernel = attrs.Tuple("kernel");
      geometry_.stride = attrs.Tuple("stride", {});
      geometry_.dilate = attrs.Tuple("dilate", {});
      geometry_.pad = attrs.Tuple("pad", {});
      geometry_.num_filter = attrs.Int("num_filter");
      geometry_.num_group = attrs.Int("num_group", 1);
      geometry_.no_bias = attrs.Bool("no_bias", false);
      const std::string layout = attrs.String("layout", "None");
      MXL_CHECK(geometry_.kernel.size() == 2, where, ": '", node.name, "' has kernel ",
                TupleText(geometry_.kernel), "; the quantized convolution runs 2-D kernels only");
      MXL_CHECK(layout == "None" || layout == "NCHW", where, ": '", node.name, "' has layout ",
                layout, "; the quantized convolution runs NCHW only");
      for (std::vector<int64_t>* tuple : {&geometry_.stride, &geometry_.dilate}) {
        if (tuple->empty()) *tuple = {1, 1};
      }
      if (geometry_.pad.empty()) geometry_.pad = {0, 0};
      conv_ = std::move(created);
    } else if (node.op == "BatchNorm") {
      bn_eps_ = attrs.Float("eps", 1e-3);
      bn_fix_gamma_ = attrs.Bool("fix_gamma", true);
      MXL_CHECK(attrs.Int("axis", 1) == 1, where, ": '", node.name,
                "' normalises an axis other than 1, which the fused convolution cannot fold");
    } else if (node.op == "Activation") {
      const std::string act = attrs.String("act_type", "");
      MXL_CHECK(act == "relu", where, ": '", node.name, "' has act_type '", act,
                "'; the quantized convolution supports relu only");
    }
  }
  return Status();
}

Status SgMkldnnConv::QuantizeWeights(const std::vector<NDArray>& in, float data_min,
                                     float data_max, float sum_min, float sum_max) {
  std::unique_ptr<QuantizedWeights> q(new QuantizedWeights());
  q->data_min = data_min;
  q->data_max = data_max;
  q->sum_min = sum_min;
  q->sum_max = sum_max;
  const int64_t channels = geometry_.num_filter;
  const int64_t per_channel = in[1].Size() / channels;
  const bool has_bias = with_bn_ || !geometry_.no_bias;
  std::vector<float> weight(in[1].fdata(), in[1].fdata() + in[1].Size());
  std::vector<float> bias(static_cast<size_t>(channels), 0.0f);
  if (!geometry_.no_bias) std::copy(in[2].fdata(), in[2].fdata() + channels, bias.begin());
  if (with_bn_) {  // UpdateConvWeightBias
    const int bn = geometry_.no_bias ? 2 : 3;
    const float* gamma = in[bn].fdata();
    const float* beta = in[bn + 1].fdata();
    const float* mean = in[bn + 2].fdata();
    const float* var = in[bn + 3].fdata();
    for (int64_t c = 0; c < channels; ++c) {
      const float g = bn_fix_gamma_ ? 1.0f : gamma[c];
      const float alpha = static_cast<float>(g / std::sqrt(static_cast<double>(var[c]) + bn_eps_));
      if (!geometry_.no_bias) {
        bias[c] = beta[c] + alpha * (bias[c] - mean[c]);
      } else {
        bias[c] = beta[c] - alpha * mean[c];
      }
      float* w = weight.data() + c * per_channel;
      for (int64_t k = 0; k < per_channel; ++k) w[k] = w[k] * alpha;
    }
  }
  const float data_scale = QuantizeScale(data_type_, data_min, data_max);
  const int out_type = OutputType();
  const float output_scale = QuantizeScale(out_type, min_calib_, max_calib_);
  q->pairs = (per_channel + 1) / 2;
  q->weight_pairs.assign(static_cast<size_t>(channels * q->pairs), 0);
  if (has_bias) q->bias.resize(static_cast<size_t>(channels));
  q->requantize.resize(static_cast<size_t>(channels));
  std::vector<float> scales(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) {  // GetWeightScales, channel-wise
    const float* w = weight.data() + c * per_channel;
    float lo = FLT_MAX, hi = -FLT_MAX;
    for (int64_t k = 0; k < per_channel; ++k) {
      lo = std::min(lo, w[k]);
      hi = std::max(hi, w[k]);
    }
    float scale = QuantizeScale(kInt8, lo, hi);
    if (has_bias && bias[c] != 0.0f) {
      // Keeps the int32 bias within INT32_MAX / 2.
      const float limit = bias[c] > 0 ? static_cast<float>(INT32_MAX) : static_cast<float>(INT32_MIN);
      const float scale_max = limit / 2 / bias[c] / data_scale;
      scale = std::min(scale, scale_max);
    }
    scales[c] = scale;
  }
  // MXNet hands oneDNN's weight reorder the channel scales with mask 1: the
  // first dimension of the weights, which for a grouped convolution is the
  // group (weights as [groups][filters per group]...). So group g's weights
  // are quantized at scales[g], whatever their channel; the bias and the
  // requantization below use each channel's own scale. Only plain (one
  // group) and depthwise convolutions come out as intended.
  const int64_t groups = geometry_.num_group, per_group = channels / groups;
  for (int64_t c = 0; c < channels; ++c) {
    const float* w = weight.data() + c * per_channel;
    const float weight_scale = scales[groups > 1 ? c / per_group : c];
    auto code = [&](int64_t k) {
      return k < per_channel ? static_cast<int16_t>(StoreCode(w[k] * weight_scale, kInt8))
                             : static_cast<int16_t>(0);
    };
    for (int64_t kp = 0; kp < q->pairs; ++kp) {
      q->weight_pairs[c * q->pairs + kp] = PackInt16Pair(code(2 * kp), code(2 * kp + 1));
    }
    const float scale = scales[c];
    if (has_bias) {
      const float bias_scale = scale * data_scale;
      double value = std::nearbyint(static_cast<double>(bias[c] * bias_scale));
      if (std::isnan(value)) value = 0.0;  // NaN parameters: defined, not MXNet's
      value = std::min(std::max(value, static_cast<double>(INT32_MIN)),
                       static_cast<double>(INT32_MAX));
      q->bias[c] = static_cast<int32_t>(value);
    }
    q->requantize[c] = output_scale / data_scale / scale;
  }
  if (with_sum_) q->sum_scale = output_scale / QuantizeScale(sum_type_, sum_min, sum_max);
  weights_ = std::move(q);
  return Status();
}

Status SgMkldnnConv::Forward(const OpContext& ctx, const std::vector<NDArray>& in,
                             const std::vector<NDArray>& out) {
  const int minmax = static_cast<int>(in.size()) - (with_sum_ ? 4 : 2);
  const float data_min = in[minmax].fdata()[0], data_max = in[minmax + 1].fdata()[0];
  const float sum_min = with_sum_ ? in[minmax + 2].fdata()[0] : 0.0f;
  const float sum_max = with_sum_ ? in[minmax + 3].fdata()[0] : 0.0f;
  MXL_CHECK(data_min >= 0.0f || data_type_ == kInt8, "input 'data' is uint8 but its range ",
            "starts below 0 (", data_min, "); MXNet requires int8 data then");
  bool constant = true;
  for (int i = 1; i < minmax; ++i) {
    if (!(with_sum_ && i == SumIndex())) constant &= input_is_constant(i);
  }
  if (!weights_ || !constant || weights_->data_min != data_min ||
      weights_->data_max != data_max || weights_->sum_min != sum_min ||
      weights_->sum_max != sum_max) {
    MXL_RETURN_IF_ERROR(QuantizeWeights(in, data_min, data_max, sum_min, sum_max));
  }
  const QuantizedWeights& q = *weights_;
  const Shape& data = in[0].shape();
  const Shape& oshape = out[0].shape();
  const int64_t batch = data[0], C = data[1], H = data[2], W = data[3];
  const int64_t F = oshape[1], OH = oshape[2], OW = oshape[3];
  const int64_t groups = geometry_.num_group, Cg = C / groups, Fg = F / groups;
  const int64_t kh = geometry_.kernel[0], kw = geometry_.kernel[1];
  const int64_t sh = geometry_.stride[0], sw = geometry_.stride[1];
  const int64_t dh = geometry_.dilate[0], dw = geometry_.dilate[1];
  const int64_t ph = geometry_.pad[0], pw = geometry_.pad[1];
  // The product runs as Int16PairGemm: the im2col columns of one image and
  // group hold their codes two rows to a word, [pairs][columns] with the
  // columns padded to the GEMM's step (zeros, never stored).
  const int64_t K = Cg * kh * kw, P = OH * OW, pairs = q.pairs;
  const int64_t columns = (P + kInt16PairColumnStep - 1) / kInt16PairColumnStep *
                          kInt16PairColumnStep;
  if (Cg != 1 || Fg != 1) {
    column_pairs_.assign(static_cast<size_t>(pairs * columns), 0);
    accumulators_.resize(static_cast<size_t>(Fg * columns));
  }
  const float* x = in[0].fdata();
  const float* sum = with_sum_ ? in[SumIndex()].fdata() : nullptr;
  float* y = out[0].fdata();
  const int out_type = OutputType();
  const int store_type = with_sum_ ? sum_type_ : out_type;
  const bool has_bias = !q.bias.empty();
  // Output channel oc of image n from its int32 sums: bias, requantization,
  // relu, the sum post-op, relu, stored as a code.
  auto finish = [&](int64_t n, int64_t oc, const int32_t* sums) {
    const float bias = has_bias ? static_cast<float>(q.bias[oc]) : 0.0f;
    const float scale = q.requantize[oc];
    const int64_t base = (n * F + oc) * P;
    for (int64_t p = 0; p < P; ++p) {
      float v = static_cast<float>(sums[p]);
      if (has_bias) v += bias;
      v *= scale;
      if (with_act_) v = v > 0.0f ? v : 0.0f;
      if (with_sum_) {
        const float previous = sum[base + p];
        v = q.sum_scale == 1.0f ? v + previous : std::fma(previous, q.sum_scale, v);
      }
      if (with_postsum_act_) v = v > 0.0f ? v : 0.0f;
      y[base + p] = Reinterpret(StoreCode(v, store_type), store_type, out_type);
    }
  };
  if (Cg == 1 && Fg == 1) {
    // Depthwise: each channel's taps summed directly (unsigned, wrapping as
    // the GEMM's sums do), one channel of one image per task.
    ParallelFor(ctx.pool, batch * C, [&](int64_t task) {
      const int64_t n = task / C, c = task % C;
      std::vector<uint32_t> sums(static_cast<size_t>(P), 0u);
      const float* plane = x + (n * C + c) * H * W;
      for (int64_t i = 0; i < kh; ++i) {
        for (int64_t j = 0; j < kw; ++j) {
          const int64_t k = i * kw + j;
          const int32_t pair = q.weight_pairs[c * pairs + k / 2];
          const int32_t tap = k % 2 ? Int16PairHigh(pair) : Int16PairLow(pair);
          if (tap == 0) continue;
          for (int64_t oh = 0; oh < OH; ++oh) {
            const int64_t h = oh * sh - ph + i * dh;
            if (h < 0 || h >= H) continue;
            const float* line = plane + h * W;
            uint32_t* out = sums.data() + oh * OW;
            for (int64_t ow = 0; ow < OW; ++ow) {
              const int64_t w = ow * sw - pw + j * dw;
              if (w >= 0 && w < W) {
                out[ow] += static_cast<uint32_t>(tap * static_cast<int32_t>(line[w]));
              }
            }
          }
        }
      }
      finish(n, c, reinterpret_cast<const int32_t*>(sums.data()));
    });
  } else {
    constexpr int64_t kFilterBlock = 8;  // the parallel work unit
    for (int64_t n = 0; n < batch; ++n) {
      for (int64_t g = 0; g < groups; ++g) {
        int32_t* cols = column_pairs_.data();
        ParallelFor(ctx.pool, pairs, [&](int64_t kp) {
          // Rows 2kp and 2kp + 1 of the columns, then packed: the input
          // codes a kernel tap reads at each output, 0 where padded or past
          // row K.
          std::vector<int16_t> rows(static_cast<size_t>(2 * P));
          for (int half = 0; half < 2; ++half) {
            const int64_t row = 2 * kp + half;
            int16_t* out_row = rows.data() + half * P;
            if (row >= K) {
              std::fill(out_row, out_row + P, static_cast<int16_t>(0));
              continue;
            }
            const int64_t c = row / (kh * kw), i = row / kw % kh, j = row % kw;
            const float* plane = x + (n * C + g * Cg + c) * H * W;
            for (int64_t oh = 0; oh < OH; ++oh) {
              int16_t* out = out_row + oh * OW;
              const int64_t h = oh * sh - ph + i * dh;
              if (h < 0 || h >= H) {
                std::fill(out, out + OW, static_cast<int16_t>(0));
                continue;
              }
              const float* line = plane + h * W;
              for (int64_t ow = 0; ow < OW; ++ow) {
                const int64_t w = ow * sw - pw + j * dw;
                out[ow] = w >= 0 && w < W ? static_cast<int16_t>(line[w]) : static_cast<int16_t>(0);
              }
            }
          }
          int32_t* dst = cols + kp * columns;
          for (int64_t p = 0; p < P; ++p) dst[p] = PackInt16Pair(rows[p], rows[P + p]);
        });
        const int64_t blocks = (Fg + kFilterBlock - 1) / kFilterBlock;
        ParallelFor(ctx.pool, blocks, [&](int64_t block) {
          const int64_t f0 = block * kFilterBlock, f1 = std::min(Fg, f0 + kFilterBlock);
          int32_t* acc = accumulators_.data();
          Int16PairGemm(q.weight_pairs.data() + (g * Fg + f0) * pairs, cols, f1 - f0, pairs,
                        columns, acc + f0 * columns);
          for (int64_t f = f0; f < f1; ++f) finish(n, g * Fg + f, acc + f * columns);
        });
      }
    }
  }
  out[1].fdata()[0] = min_calib_;
  out[2].fdata()[0] = max_calib_;
  return Status();
}

Status CreateSgMkldnnConv(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  // MXNet renames the old with_relu / with_postsum_relu.
  const bool with_bn = attrs->Bool("with_bn", false);
  const bool with_act = attrs->Bool("with_act", false) || attrs->Bool("with_relu", false);
  const bool with_sum = attrs->Bool("with_sum", false);
  const bool with_postsum_act =
      attrs->Bool("with_postsum_act", false) || attrs->Bool("with_postsum_relu", false);
  const bool quantized = attrs->Bool("quantized", false);
  double min_calib = 0, max_calib = 0;
  const bool has_min = attrs->OptionalFloat("min_calib_range", &min_calib);
  const bool has_max = attrs->OptionalFloat("max_calib_range", &max_calib);
  MXL_RETURN_IF_ERROR(attrs->Finish());
  if (!quantized) {
    attrs->Fail("quantized", "is false: mxlite runs the quantized (int8) _sg_mkldnn_conv only, "
                             "not the float one");
    return attrs->Finish();
  }
  if (!has_min || !has_max) {
    attrs->Fail(has_min ? "max_calib_range" : "min_calib_range",
                "is required: mxlite runs calibrated quantized convolutions only (int8/uint8 "
                "output), not the int32-output form");
    return attrs->Finish();
  }
  out->reset(new SgMkldnnConv(attrs->node_name(), with_bn, with_act, with_sum, with_postsum_act,
                              static_cast<float>(min_calib), static_cast<float>(max_calib)));
  return Status();
}

}  // namespace quantization_op
}  // namespace mxlite
