/*
 * Cast (alias cast) and amp_cast: the input converted to the type the dtype
 * attribute names. mxlite computes in float32 and carries each array's MXNet
 * type alongside (see the executor), so a cast is a rounding of every value
 * to what the target type can hold: half and bfloat16 round to nearest even,
 * integer types truncate towards zero and wrap to their width, bool maps
 * non-zero to 1 (RoundToDType in base/dtype.h). The input may have any type.
 */
#include "operator.h"

namespace mxlite {
namespace cast_op {

class Cast : public Operator {
 public:
  explicit Cast(int dtype) : dtype_(dtype) {}

  std::vector<InplacePair> InplaceOptions() const override { return {{0, 0, false}}; }

  bool ComputesImagesApart(const std::vector<Shape>& image_in) const override {
    (void)image_in;
    return true;
  }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    return SameShapeInference(*this, in, out);
  }

  Status InferType(std::vector<int>* in, std::vector<int>* out) const override {
    (void)in;
    (*out)[0] = dtype_;
    return Status();
  }

  Status Forward(const OpContext&, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const float* x = in[0].fdata();
    float* y = out[0].fdata();
    const int64_t size = out[0].Size();
    for (int64_t i = 0; i < size; ++i) y[i] = RoundToDType(dtype_, x[i]);
    return Status();
  }

 private:
  int dtype_;
};

Status CreateCast(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  // The names MXNet's Cast accepts (amp_cast: the same less bool).
  static const std::vector<std::string> kCastTypes = {
      "float32", "float64", "float16", "uint8", "int32", "int8", "int64", "bool", "bfloat16"};
  static const std::vector<std::string> kAmpCastTypes = {
      "float32", "float64", "float16", "uint8", "int32", "int8", "int64", "bfloat16"};
  const bool amp = attrs->op_name() == "amp_cast";
  const int choice = attrs->Enum("dtype", amp ? kAmpCastTypes : kCastTypes, -1);
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new Cast(DTypeFromName((amp ? kAmpCastTypes : kCastTypes)[choice].c_str())));
  return Status();
}

}  // namespace cast_op
}  // namespace mxlite
