/*
 * Flatten: (d0, d1, ..., dn) -> (d0, d1*...*dn). The data do not move, so
 * the output is declared an identity view of the input and the memory
 * planner makes them share one buffer; Forward copies only when it did not.
 */
#include <cstring>

#include "operator.h"

namespace mxlite {
namespace flatten_op {

class Flatten : public Operator {
 public:
  std::vector<InplacePair> InplaceOptions() const override { return {{0, 0, true}}; }

  bool ComputesImagesApart(const std::vector<Shape>& image_in) const override {
    (void)image_in;
    return true;
  }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    const Shape& data = (*in)[0];
    if (!data.is_complete()) return Status();
    MXL_CHECK(data.ndim() >= 1, "input 'data' must have at least one dimension");
    Shape flat = data.ndim() == 1 ? Shape({data[0], 1})
                                  : Shape({data[0], data.ProdRange(1, data.ndim())});
    return AssignShape(out, 0, flat, "output", OutputNames());
  }

  Status Forward(const OpContext&, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    if (out[0].data() != in[0].data()) std::memcpy(out[0].data(), in[0].data(), out[0].bytes());
    return Status();
  }
};

Status CreateFlatten(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new Flatten());
  return Status();
}

}  // namespace flatten_op
}  // namespace mxlite
