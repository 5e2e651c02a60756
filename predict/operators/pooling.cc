/*
 * Pooling: max, avg, sum and lp (p = 1, 2, 3) over 1-D, 2-D and 3-D windows
 * in channel-first layouts (NCW, NCHW, NCDHW), or over the whole spatial
 * extent with global_pool.
 *
 * The operator parses the attributes, infers shapes and hands the layer, as
 * one PoolGeometry, to the algorithm table (pool_algorithms.h, which also
 * states the arithmetic, MXNet's to the bit): the first algorithm that
 * covers the geometry and pays for it is chosen once, in Prepare; Forward
 * runs it and KernelName names it.
 *
 * Output extents (MXNet's PoolingShape): valid 1 + floor((in + 2p - k) / s),
 * full 1 + ceil((in + 2p - k) / s), whose last window may hang past the
 * padding and is clipped; same (1-D only, pad 0) ceil(in / s); global 1.
 * The window must fit the padded input (k <= in + 2p).
 */
#include <memory>

#include "operator.h"
#include "pool_algorithms.h"

namespace mxlite {
namespace pooling_op {

enum Convention { kValid, kFull, kSame };

class Pooling : public Operator {
 public:
  Pooling(PoolType type, Convention convention, bool global, std::vector<int64_t> kernel,
          std::vector<int64_t> stride, std::vector<int64_t> pad, int p_value,
          bool count_include_pad, int layout_rank)
      : type_(type),
        convention_(convention),
        global_(global),
        kernel_(std::move(kernel)),
        stride_(std::move(stride)),
        pad_(std::move(pad)),
        p_value_(p_value),
        count_include_pad_(count_include_pad),
        layout_rank_(layout_rank) {}

  bool ComputesImagesApart(const std::vector<Shape>& image_in) const override {
    (void)image_in;
    return true;
  }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    const Shape& data = (*in)[0];
    if (!data.rank_known()) return Status();
    if (global_) {
      MXL_CHECK(data.ndim() >= 3 && data.ndim() <= 5, "input 'data' has shape ",
                data.ToString(), " but pooling needs 3-D, 4-D or 5-D input (batch, channel, ",
                "spatial...)");
      MXL_CHECK(layout_rank_ == 0 || layout_rank_ == data.ndim() - 2, "input 'data' has shape ",
                data.ToString(), " which does not match the ", layout_rank_, "-D layout");
      Shape oshape = data;
      for (int i = 2; i < data.ndim(); ++i) oshape[i] = 1;
      MXL_RETURN_IF_ERROR(AssignShape(out, 0, oshape, "output", OutputNames()));
      Shape back = data;
      back[0] = (*out)[0][0];
      back[1] = (*out)[0][1];
      return AssignShape(in, 0, back, "input", InputNames());
    }
    const int nk = static_cast<int>(kernel_.size());
    MXL_CHECK(data.ndim() == nk + 2, "input 'data' has shape ", data.ToString(), " but ", nk,
              "-D pooling needs ", nk + 2, "-D input (batch, channel, ",
              nk == 1 ? "width" : nk == 2 ? "height, width" : "depth, height, width", ")");
    Shape oshape = data;
    for (int i = 0; i < nk; ++i) {
      const int64_t extent = data[2 + i];
      if (extent < 0) continue;
      const int64_t padded = extent + 2 * pad_[i];
      MXL_CHECK(kernel_[i] <= padded, "input 'data' has shape ", data.ToString(),
                ": kernel size ", kernel_[i], " exceeds spatial dim ", i, " (", extent,
                " padded to ", padded, ")");
      if (convention_ == kSame) {
        oshape[2 + i] = (padded + stride_[i] - 1) / stride_[i];
      } else {
        oshape[2 + i] =
            PoolOutputExtent(extent, kernel_[i], stride_[i], pad_[i], convention_ == kFull);
      }
    }
    MXL_RETURN_IF_ERROR(AssignShape(out, 0, oshape, "output", OutputNames()));
    Shape back = data;
    back[0] = (*out)[0][0];
    back[1] = (*out)[0][1];
    return AssignShape(in, 0, back, "input", InputNames());
  }

  Status Prepare(const std::vector<NDArray>& in, const std::vector<NDArray>& out,
                 size_t* workspace_bytes) override {
    *workspace_bytes = 0;
    const Shape& data = in[0].shape();
    const Shape& oshape = out[0].shape();
    const int nk = data.ndim() - 2;
    MXL_CHECK(nk >= 1 && nk <= 3 && oshape.ndim() == data.ndim(), "input 'data' has shape ",
              data.ToString(), " and output ", oshape.ToString(), "; pooling needs 3-D to 5-D");
    PoolGeometry g;
    g.type = type_;
    g.p = type_ == PoolType::kLp ? p_value_ : 1;
    g.count_include_pad = count_include_pad_;
    // MXNet's 3-D kernel writes NaN for an average whose divisor is 0; the
    // 1-D and 2-D kernels write the empty sum.
    g.nan_on_empty = nk == 3;
    g.planes = data[0] * data[1];
    for (int i = 0; i < nk; ++i) {
      const int d = 3 - nk + i;
      g.in[d] = data[2 + i];
      g.out[d] = oshape[2 + i];
      g.kernel[d] = global_ ? data[2 + i] : kernel_[i];
      g.stride[d] = global_ ? 1 : stride_[i];
      g.pad[d] = global_ ? 0 : pad_[i];
    }
    algorithm_ = ChoosePoolAlgorithm(g);
    MXL_CHECK(algorithm_ != nullptr, "no pooling algorithm covers ", g.ToString());
    return algorithm_->prepare(g, &kernel_impl_);
  }

  Status Forward(const OpContext& ctx, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    MXL_CHECK(kernel_impl_ != nullptr, "pooling ran before Prepare");
    kernel_impl_->Forward(in[0].fdata(), out[0].fdata(), ctx.pool);
    return Status();
  }

  const char* KernelName() const override { return algorithm_ ? algorithm_->name : ""; }

 private:
  PoolType type_;
  Convention convention_;
  bool global_;
  std::vector<int64_t> kernel_, stride_, pad_;
  int p_value_;
  bool count_include_pad_;
  int layout_rank_;  // spatial rank the layout attribute names, 0 when unset
  // Set by Prepare.
  const PoolAlgorithm* algorithm_ = nullptr;
  std::unique_ptr<PoolKernel> kernel_impl_;
};

Status CreatePooling(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  std::vector<int64_t> kernel = attrs->Tuple("kernel", {});
  int type = attrs->Enum("pool_type", {"max", "avg", "sum", "lp"},
                         static_cast<int>(PoolType::kMax));
  bool global = attrs->Bool("global_pool", false);
  int convention = attrs->Enum("pooling_convention", {"valid", "full", "same"}, kValid);
  std::vector<int64_t> stride = attrs->Tuple("stride", {});
  std::vector<int64_t> pad = attrs->Tuple("pad", {});
  std::string p_text = attrs->String("p_value", "None");
  int64_t p_value = p_text == "None" ? 0 : attrs->Int("p_value", 0);
  std::string include_text = attrs->String("count_include_pad", "None");
  bool count_include_pad = include_text == "None" ? true : attrs->Bool("count_include_pad", true);
  int layout = attrs->Enum("layout", {"None", "NCW", "NCHW", "NCDHW", "NWC", "NHWC", "NDHWC"}, 0);
  attrs->IgnoreBool("cudnn_off");
  MXL_RETURN_IF_ERROR(attrs->Finish());

  static constexpr char kLayoutNames[][6] = {"None", "NCW", "NCHW", "NCDHW",
                                            "NWC",  "NHWC", "NDHWC"};
  if (layout >= 4) {
    attrs->Fail("layout", StrCat("layout ", kLayoutNames[layout],
                                 " is not supported (mxlite runs NCW, NCHW and NCDHW only)"));
    return attrs->Finish();
  }
  const int layout_rank = layout;  // NCW 1, NCHW 2, NCDHW 3, unset 0
  if (type == static_cast<int>(PoolType::kLp) && (p_value < 1 || p_value > 3)) {
    attrs->Fail("p_value", p_value == 0 ? std::string("is required for pool_type 'lp' (1, 2 or 3)")
                                        : StrCat(p_value, " is not supported (1, 2 or 3)"));
    return attrs->Finish();
  }
  if (!global) {
    const size_t nk = kernel.size();
    if (nk < 1 || nk > 3) {
      attrs->Fail("kernel", StrCat(TupleText(kernel), ": pooling needs a 1-D, 2-D or 3-D kernel",
                                   " unless global_pool is set"));
      return attrs->Finish();
    }
    // Unset tuples default to 1 (stride) and 0 (pad) per dim; like MXNet,
    // entries past the kernel's rank are not used.
    if (!CheckWindowAttrs(attrs, {{"kernel", &kernel, 1, 1}, {"stride", &stride, 1, 1},
                                  {"pad", &pad, 0, 0}},
                          nk, StrCat("kernel ", TupleText(kernel), " has ", nk),
                          /*extra_allowed=*/true)) {
      return attrs->Finish();
    }
    if (layout_rank != 0 && layout_rank != static_cast<int>(nk)) {
      attrs->Fail("layout", StrCat("layout ", kLayoutNames[layout], " does not match the ", nk,
                                   "-D kernel ", TupleText(kernel)));
      return attrs->Finish();
    }
    if (convention == kSame) {
      if (nk != 1) {
        attrs->Fail("pooling_convention", "'same' is supported for 1-D pooling only");
        return attrs->Finish();
      }
      // MXNet 1.9.1 checks pad[0..2] here, so a working 'same' node carries
      // pad (0, 0, 0).
      for (int64_t value : pad) {
        if (value != 0) {
          attrs->Fail("pooling_convention", "'same' does not allow padding");
          return attrs->Finish();
        }
      }
    }
    stride.resize(nk);
    pad.resize(nk);
  }
  out->reset(new Pooling(static_cast<PoolType>(type), static_cast<Convention>(convention), global,
                         kernel, stride, pad, static_cast<int>(p_value), count_include_pad,
                         layout_rank));
  return Status();
}

}  // namespace pooling_op
}  // namespace mxlite
