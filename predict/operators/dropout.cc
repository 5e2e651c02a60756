/*
 * Dropout: the identity at inference (mode "training", the default). Mode
 * "always" drops at inference too, which a deterministic predictor cannot
 * reproduce, so it is refused at load time. The hidden second output is the
 * mask, all ones at inference (nothing dropped); only a monitor callback
 * ever sees it.
 */
#include <algorithm>
#include <cstring>

#include "operator.h"

namespace mxlite {
namespace dropout_op {

class Dropout : public Operator {
 public:
  std::vector<std::string> OutputNames() const override { return {"output", "mask"}; }
  std::vector<InplacePair> InplaceOptions() const override { return {{0, 0, true}}; }

  bool ComputesImagesApart(const std::vector<Shape>& image_in) const override {
    (void)image_in;
    return true;
  }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    MXL_RETURN_IF_ERROR(AssignShape(out, 0, (*in)[0], "output", OutputNames()));
    MXL_RETURN_IF_ERROR(AssignShape(out, 1, (*in)[0], "output", OutputNames()));
    return AssignShape(in, 0, (*out)[0], "input", InputNames());
  }

  Status Forward(const OpContext&, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    if (out[0].data() != in[0].data()) std::memcpy(out[0].data(), in[0].data(), out[0].bytes());
    std::fill(out[1].fdata(), out[1].fdata() + out[1].Size(), 1.f);
    return Status();
  }
};

Status CreateDropout(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  attrs->Float("p", 0.5);
  int mode = attrs->Enum("mode", {"training", "always"}, 0);
  attrs->Tuple("axes", {});
  attrs->IgnoreBool("cudnn_off");
  MXL_RETURN_IF_ERROR(attrs->Finish());
  if (mode == 1) {
    attrs->Fail("mode", "'always' drops values at inference, which mxlite does not do");
    return attrs->Finish();
  }
  out->reset(new Dropout());
  return Status();
}

}  // namespace dropout_op
}  // namespace mxlite
