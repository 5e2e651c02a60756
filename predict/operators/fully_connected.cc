/*
 * FullyConnected: y = x * W^T + b with W of shape (num_hidden, K).
 *
 * With flatten (the default) the data (d0, d1, ...) is read as the matrix
 * (d0, d1*...) and the output is (d0, num_hidden); without it the operator
 * acts on the last axis: (..., K) -> (..., num_hidden). The bias has shape
 * (num_hidden,), and like MXNet a bias already declared (num_hidden, 1) is
 * accepted too.
 *
 * A few rows (batch <= kGemvRows) are computed one matrix-vector product at
 * a time: that reads W once per row, which is the whole cost at batch 1,
 * without packing it. Larger batches go through the blocked GEMM with W^T
 * packed once, when the operator is prepared (up to kMaxPackedWeights
 * elements; a larger W is packed per call, to keep memory at one copy); the
 * data is packed per call, split over the threads, into a buffer the
 * operator keeps (one packed copy of its input).
 */
#include "../kernels/gemm.h"
#include "operator.h"

namespace mxlite {
namespace fully_connected_op {

constexpr int64_t kGemvRows = 4;
constexpr int64_t kMaxPackedWeights = int64_t{16} << 20;  // 64 MiB of float32

class FullyConnected : public Operator {
 public:
  FullyConnected(int64_t num_hidden, bool no_bias, bool flatten)
      : num_hidden_(num_hidden), no_bias_(no_bias), flatten_(flatten) {}

  std::vector<std::string> InputNames() const override {
    if (no_bias_) return {"data", "weight"};
    return {"data", "weight", "bias"};
  }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    const std::vector<std::string> names = InputNames();
    Shape data = (*in)[0];
    if (!data.rank_known()) return Status();
    const int ndim = data.ndim();
    MXL_CHECK(ndim >= 1, "input 'data' has shape ", data.ToString(),
              " but FullyConnected needs at least one dimension");

    // K: the last dim, or the product of all but the first.
    int64_t k = 1;
    if (flatten_) {
      for (int i = 1; i < ndim && k >= 0; ++i) k = data[i] < 0 ? -1 : k * data[i];
    } else {
      k = data[ndim - 1];
    }
    MXL_RETURN_IF_ERROR(AssignShape(in, 1, Shape({num_hidden_, k}), "input", names));
    if (!no_bias_) {
      const Shape& bias = (*in)[2];
      Shape column({num_hidden_, 1});
      bool is_column = bias.rank_known() && bias.ndim() == 2 && MergeShape(&column, bias);
      if (!is_column) MXL_RETURN_IF_ERROR(AssignShape(in, 2, Shape({num_hidden_}), "input", names));
    }

    Shape oshape;
    if (flatten_) {
      oshape = Shape({data[0], num_hidden_});
    } else {
      oshape = data;
      oshape[ndim - 1] = num_hidden_;
    }
    MXL_RETURN_IF_ERROR(AssignShape(out, 0, oshape, "output", OutputNames()));

    // Back-fill what the output knows about the data.
    const Shape& known = (*out)[0];
    if (flatten_) {
      data[0] = known[0];
    } else {
      for (int i = 0; i + 1 < ndim; ++i) data[i] = known[i];
    }
    if (!flatten_ || ndim == 2) {
      const Shape& weight = (*in)[1];
      if (data[ndim - 1] < 0 && weight[1] >= 0) data[ndim - 1] = weight[1];
    }
    return AssignShape(in, 0, data, "input", names);
  }

  Status Prepare(const std::vector<NDArray>& in, const std::vector<NDArray>& out,
                 size_t* workspace_bytes) override {
    *workspace_bytes = 0;
    packed_weight_.clear();
    const int64_t k = in[1].shape()[1];
    const int64_t m = num_hidden_ > 0 ? out[0].Size() / num_hidden_ : 0;
    if (m > kGemvRows && k * num_hidden_ <= kMaxPackedWeights) {
      PackBMatrix(in[1].fdata(), k, /*transposed=*/true, k, num_hidden_, &packed_weight_);
    }
    return Status();
  }

  Status Forward(const OpContext& ctx, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const int64_t k = in[1].shape()[1];
    const int64_t n = num_hidden_;
    const int64_t m = out[0].Size() / n;
    const float* x = in[0].fdata();
    const float* w = in[1].fdata();
    float* y = out[0].fdata();
    if (m <= kGemvRows) {
      for (int64_t row = 0; row < m; ++row) {
        SgemvRows(n, k, w, x + row * k, y + row * n, ctx.pool);
      }
    } else if (!packed_weight_.empty()) {
      MXL_RETURN_IF_ERROR(packed_data_.Pack(x, k, m, k, /*transposed=*/false, ctx.pool));
      GemmPrepackedB(packed_data_, packed_weight_.data(), n, y, n, GemmEpilogue(), ctx.pool);
    } else {
      Sgemm(false, true, m, n, k, x, k, w, k, 0.f, y, n, ctx.pool);
    }
    if (!no_bias_) {
      const float* b = in[2].fdata();
      for (int64_t row = 0; row < m; ++row) {
        float* dst = y + row * n;
        for (int64_t j = 0; j < n; ++j) dst[j] += b[j];
      }
    }
    return Status();
  }

 private:
  int64_t num_hidden_;
  bool no_bias_;
  bool flatten_;
  std::vector<float> packed_weight_;  // W^T for GemmPrepackedB, from Prepare
  // The data packed for the GEMM, kept between calls so that its buffer is
  // reused (a fresh 16 MiB one per call cost 4096 page faults at 2048^2).
  PackedMatrix packed_data_;
};

Status CreateFullyConnected(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  int64_t num_hidden = attrs->Int("num_hidden");
  bool no_bias = attrs->Bool("no_bias", false);
  bool flatten = attrs->Bool("flatten", true);
  MXL_RETURN_IF_ERROR(attrs->Finish());
  if (num_hidden < 1) {
    attrs->Fail("num_hidden", StrCat(num_hidden, " must be at least 1"));
    return attrs->Finish();
  }
  out->reset(new FullyConnected(num_hidden, no_bias, flatten));
  return Status();
}

}  // namespace fully_connected_op
}  // namespace mxlite
