/*
 * LRN: local response normalisation across channels (AlexNet, GoogLeNet).
 * For channel c of an (N, C, ...) input, with half = nsize / 2,
 *
 *   norm = knorm + (alpha / nsize) * sum_{c' = c-half..c+half, in range} x_c'^2
 *   y    = x_c * norm^(-beta)
 *
 * computed in float as MXNet's lrn-inl.h does (the window summed in channel
 * order, powf for the power). The second, hidden output is norm itself
 * (MXNet's tmp_norm).
 */
#include <algorithm>
#include <cmath>

#include "operator.h"

namespace mxlite {
namespace lrn_op {

class LRN : public Operator {
 public:
  LRN(float alpha, float beta, float knorm, int64_t nsize)
      : alpha_(alpha), beta_(beta), knorm_(knorm), nsize_(nsize) {}

  std::vector<std::string> OutputNames() const override { return {"output", "tmp_norm"}; }

  bool ComputesImagesApart(const std::vector<Shape>& image_in) const override {
    (void)image_in;
    return true;
  }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    MXL_RETURN_IF_ERROR(SameShapeInference(*this, in, out));
    MXL_RETURN_IF_ERROR(AssignShape(out, 1, (*in)[0], "output", OutputNames()));
    const Shape& data = (*in)[0];
    if (data.rank_known()) {
      MXL_CHECK(data.ndim() >= 2, "input 'data' has shape ", data.ToString(),
                " but LRN needs a channel axis (N, C, ...)");
    }
    return Status();
  }

  Status Forward(const OpContext&, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const Shape& shape = in[0].shape();
    const int64_t batch = shape[0], channels = shape[1], plane = shape.ProdRange(2, shape.ndim());
    const float* x = in[0].fdata();
    float* y = out[0].fdata();
    float* norm = out[1].fdata();
    const float scaled_alpha = alpha_ / static_cast<float>(nsize_);
    const int64_t half = nsize_ / 2;
    for (int64_t n = 0; n < batch; ++n) {
      const float* xn = x + n * channels * plane;
      for (int64_t c = 0; c < channels; ++c) {
        float* norm_plane = norm + (n * channels + c) * plane;
        std::fill(norm_plane, norm_plane + plane, 0.f);
        const int64_t first = std::max<int64_t>(0, c - half);
        const int64_t last = std::min<int64_t>(channels - 1, c + half);
        for (int64_t k = first; k <= last; ++k) {
          const float* src = xn + k * plane;
          for (int64_t i = 0; i < plane; ++i) norm_plane[i] += src[i] * src[i];
        }
        const float* src = xn + c * plane;
        float* dst = y + (n * channels + c) * plane;
        for (int64_t i = 0; i < plane; ++i) {
          norm_plane[i] = norm_plane[i] * scaled_alpha + knorm_;
          dst[i] = src[i] * std::pow(norm_plane[i], -beta_);
        }
      }
    }
    return Status();
  }

 private:
  float alpha_, beta_, knorm_;
  int64_t nsize_;
};

Status CreateLRN(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  const double alpha = attrs->Float("alpha", 1e-4);
  const double beta = attrs->Float("beta", 0.75);
  const double knorm = attrs->Float("knorm", 2.0);
  const int64_t nsize = attrs->Int("nsize");
  MXL_RETURN_IF_ERROR(attrs->Finish());
  if (nsize < 1 || nsize % 2 == 0) {
    attrs->Fail("nsize", StrCat(nsize, " must be odd and positive (MXNet's LRN needs an odd ",
                                "window)"));
    return attrs->Finish();
  }
  out->reset(new LRN(static_cast<float>(alpha), static_cast<float>(beta),
                     static_cast<float>(knorm), nsize));
  return Status();
}

}  // namespace lrn_op
}  // namespace mxlite
