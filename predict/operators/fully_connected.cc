/*
 * FullyConnected: y = x * W^T + b with W of shape (num_hidden, K).
 *
 * With flatten (the default) the data (d0, d1, ...) is read as the matrix
 * (d0, d1*...) and the output is (d0, num_hidden); without it the operator
 * acts on the last axis: (..., K) -> (..., num_hidden). The bias has shape
 * (num_hidden,), and like MXNet a bias already declared (num_hidden, 1) is
 * accepted too.
 *
 * The product runs through the first algorithm of FcAlgorithmTable()
 * (fully_connected.h) that covers and pays for the layer's sizes.
 */
#include "fully_connected.h"

#include "../kernels/gemm.h"
#include "operator.h"

namespace mxlite {
namespace fully_connected_op {

class GemvRowsKernel : public FcKernel {
 public:
  explicit GemvRowsKernel(const FcGeometry& g) : g_(g) {}
  Status Forward(const FcCall& call) const override {
    for (int64_t row = 0; row < call.rows; ++row) {
      SgemvRows(g_.hidden, g_.depth, call.weight, call.x + row * g_.depth,
                call.y + row * g_.hidden, call.pool);
    }
    return Status();
  }

 private:
  FcGeometry g_;
};

class PrepackedGemmKernel : public FcKernel {
 public:
  PrepackedGemmKernel(const FcGeometry& g, const float* weight) : g_(g) {
    PackBMatrix(weight, g.depth, /*transposed=*/true, g.depth, g.hidden, &packed_weight_);
  }
  size_t PreparedBytes() const override { return HeldBytes(packed_weight_); }
  Status Forward(const FcCall& call) const override {
    MXL_CHECK(call.packed_x != nullptr, "FullyConnected: no scratch to pack the data into");
    MXL_RETURN_IF_ERROR(
        call.packed_x->Pack(call.x, g_.depth, call.rows, g_.depth, /*transposed=*/false, call.pool));
    GemmPrepackedB(*call.packed_x, packed_weight_.data(), g_.hidden, call.y, g_.hidden,
                   GemmEpilogue(), call.pool);
    return Status();
  }

 private:
  FcGeometry g_;
  std::vector<float> packed_weight_;  // W^T in GemmPrepackedB's layout
};

class GemmKernel : public FcKernel {
 public:
  explicit GemmKernel(const FcGeometry& g) : g_(g) {}
  Status Forward(const FcCall& call) const override {
    Sgemm(false, true, call.rows, g_.hidden, g_.depth, call.x, g_.depth, call.weight, g_.depth,
          0.f, call.y, g_.hidden, call.pool);
    return Status();
  }

 private:
  FcGeometry g_;
};

bool Always(const FcGeometry&) { return true; }
bool FewRows(const FcGeometry& g) { return g.rows <= kFcGemvRows; }
bool WeightsFitPacked(const FcGeometry& g) {
  return g.constant_weight && g.depth * g.hidden <= kFcMaxPackedWeights;
}

Status PrepareGemvRows(const FcGeometry& g, const float*, std::unique_ptr<FcKernel>* kernel) {
  kernel->reset(new GemvRowsKernel(g));
  return Status();
}
Status PreparePrepackedGemm(const FcGeometry& g, const float* weight,
                            std::unique_ptr<FcKernel>* kernel) {
  kernel->reset(new PrepackedGemmKernel(g, weight));
  return Status();
}
Status PrepareGemm(const FcGeometry& g, const float*, std::unique_ptr<FcKernel>* kernel) {
  kernel->reset(new GemmKernel(g));
  return Status();
}

}  // namespace fully_connected_op

const std::vector<FcAlgorithm>& FcAlgorithmTable() {
  using namespace fully_connected_op;
  static const std::vector<FcAlgorithm> table = {
      {"gemv rows", Always, FewRows, PrepareGemvRows},
      {"prepacked gemm", WeightsFitPacked, Always, PreparePrepackedGemm},
      {"gemm", Always, Always, PrepareGemm},
  };
  return table;
}

const FcAlgorithm* ChooseFcAlgorithm(const FcGeometry& g) {
  for (const FcAlgorithm& algorithm : FcAlgorithmTable()) {
    if (algorithm.applies(g) && algorithm.pays(g)) return &algorithm;
  }
  return nullptr;
}

namespace fully_connected_op {

class FullyConnected : public Operator {
 public:
  FullyConnected(int64_t num_hidden, bool no_bias, bool flatten)
      : num_hidden_(num_hidden), no_bias_(no_bias), flatten_(flatten) {}

  std::vector<std::string> InputNames() const override {
    if (no_bias_) return {"data", "weight"};
    return {"data", "weight", "bias"};
  }

  bool ComputesImagesApart(const std::vector<Shape>& image_in) const override {
    (void)image_in;
    return true;
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
    FcGeometry g;
    g.depth = in[1].shape()[1];
    g.hidden = num_hidden_;
    g.rows = num_hidden_ > 0 ? out[0].Size() / num_hidden_ : 0;
    // Under compact_weights no algorithm keeps a packed copy of W.
    g.constant_weight = input_is_constant(1) && !runtime_options().compact_weights;
    algorithm_ = ChooseFcAlgorithm(g);
    MXL_CHECK(algorithm_ != nullptr, "no FullyConnected algorithm covers ", g.rows, " x ",
              g.depth, " x ", g.hidden);
    // A kernel serves any number of rows, so its form leaves them out.
    kernel_.reset();
    return SharedPrepared<FcKernel>(
        {1}, StrCat("fc ", algorithm_->name, "; ", g.depth, " x ", g.hidden),
        [&](std::shared_ptr<const FcKernel>* made) {
          std::unique_ptr<FcKernel> kernel;
          MXL_RETURN_IF_ERROR(algorithm_->prepare(g, in[1].fdata(), &kernel));
          *made = std::move(kernel);
          return Status();
        },
        &kernel_);
  }

  Status Forward(const OpContext& ctx, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const int64_t n = num_hidden_;
    const int64_t m = out[0].Size() / n;
    float* y = out[0].fdata();
    MXL_CHECK(kernel_ != nullptr, "FullyConnected run before it was prepared");
    FcCall call;
    call.rows = m;
    call.packed_x = &packed_x_;
    call.x = in[0].fdata();
    call.weight = in[1].fdata();
    call.y = y;
    call.pool = ctx.pool;
    MXL_RETURN_IF_ERROR(kernel_->Forward(call));
    if (!no_bias_) {
      const float* b = in[2].fdata();
      for (int64_t row = 0; row < m; ++row) {
        float* dst = y + row * n;
        for (int64_t j = 0; j < n; ++j) dst[j] += b[j];
      }
    }
    return Status();
  }

  const char* KernelName() const override { return algorithm_ ? algorithm_->name : ""; }
  size_t PreparedBytes() const override { return kernel_ ? kernel_->PreparedBytes() : 0; }

 private:
  int64_t num_hidden_;
  bool no_bias_;
  bool flatten_;
  const FcAlgorithm* algorithm_ = nullptr;  // from Prepare
  std::shared_ptr<const FcKernel> kernel_;  // shared by the model's executors
  // The data packed for a prepacked GEMM, kept between calls so that its
  // buffer is reused rather than faulted in afresh each call.
  PackedMatrix packed_x_;
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
