/*
 * Conversions between Python objects and the core's types, for the binding
 * (core.cc, which includes this file once): errors, dtypes, arrays, shapes
 * and bytes.
 */
#ifndef MXLITE_BINDINGS_PYTHON_CONVERT_H_
#define MXLITE_BINDINGS_PYTHON_CONVERT_H_

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <utility>
#include <vector>

#include "executor/model.h"
#include "ndarray/ndarray.h"

namespace nb = nanobind;

namespace mxlite {
namespace python_core {

// mxlite.errors.MXLiteError, looked up once when the module loads.
inline PyObject* g_error_type = nullptr;

[[noreturn]] inline void RaiseError(const std::string& message) {
  PyErr_SetString(g_error_type, message.c_str());
  throw nb::python_error();
}

// Turns a failed Status into mxlite.MXLiteError. Needs the GIL.
inline void Check(const Status& status) {
  if (!status.ok()) RaiseError(status.message());
}

// --- dtypes: MXNet's type flags against DLPack's descriptions -------------

inline nb::dlpack::dtype DLPackDType(int flag) {
  using nb::dlpack::dtype_code;
  auto make = [](dtype_code code, int bits) {
    return nb::dlpack::dtype{static_cast<uint8_t>(code), static_cast<uint8_t>(bits), 1};
  };
  switch (flag) {
    case kFloat64: return make(dtype_code::Float, 64);
    case kFloat16: return make(dtype_code::Float, 16);
    case kUint8: return make(dtype_code::UInt, 8);
    case kInt32: return make(dtype_code::Int, 32);
    case kInt8: return make(dtype_code::Int, 8);
    case kInt64: return make(dtype_code::Int, 64);
    case kBool: return make(dtype_code::Bool, 8);
    case kInt16: return make(dtype_code::Int, 16);
    case kUint16: return make(dtype_code::UInt, 16);
    case kUint32: return make(dtype_code::UInt, 32);
    case kUint64: return make(dtype_code::UInt, 64);
    case kBfloat16: return make(dtype_code::Bfloat, 16);
    default: return make(dtype_code::Float, 32);
  }
}

// The MXNet flag of an array's element type, or kUnknownDType.
inline int FlagOf(nb::dlpack::dtype dtype) {
  for (int flag = 0; flag < kNumDTypes; ++flag) {
    if (DLPackDType(flag) == dtype) return flag;
  }
  return kUnknownDType;
}

// --- arrays crossing the boundary -----------------------------------------

using InputArray = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;

// A numpy array adopting `array`'s memory: the capsule owns a reference to
// the NDArray (and so to its storage) for as long as numpy needs it.
inline nb::object ToNumpy(const NDArray& array) {
  NDArray* owned = new NDArray(array);
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<NDArray*>(p); });
  std::vector<size_t> shape(array.shape().dims().begin(), array.shape().dims().end());
  nb::ndarray<nb::numpy> result(array.data(), shape.size(), shape.data(), owner, nullptr,
                                DLPackDType(array.dtype()));
  return result.cast();
}

inline std::string DescribeDType(nb::dlpack::dtype dtype) {
  const int flag = FlagOf(dtype);
  if (flag != kUnknownDType) return DTypeName(flag);
  return StrCat("an unsupported element type (DLPack code ", int(dtype.code), ", ",
                int(dtype.bits), " bits)");
}

// A Python sequence of non-negative integers as a complete Shape.
inline Shape ShapeFromPython(const std::string& name, nb::handle value) {
  std::vector<int64_t> dims;
  if (!PySequence_Check(value.ptr()) || nb::isinstance<nb::str>(value)) {
    RaiseError(StrCat("the shape of '", name, "' must be a sequence of integers, not ",
                      nb::type_name(value.type()).c_str()));
  }
  for (nb::handle item : value) {
    int64_t dim = 0;
    if (!nb::try_cast<int64_t>(item, dim, false) || dim < 0) {
      RaiseError(StrCat("the shape of '", name, "' must hold non-negative integers, got ",
                        nb::str(nb::repr(value)).c_str()));
    }
    dims.push_back(dim);
  }
  if (dims.empty()) RaiseError(StrCat("the shape of '", name, "' has no dimensions"));
  Shape shape(std::move(dims));
  Check(CheckInputShape(name, shape));  // zero dimensions too, as the C API
  return shape;
}

inline nb::tuple ShapeToPython(const Shape& shape) {
  nb::list dims;
  for (int64_t d : shape.dims()) dims.append(d);
  return nb::tuple(dims);
}

// The bytes of a bytes-like object (or the UTF-8 of a str, where allowed),
// read in place: the view holds the object until it is destroyed.
class BytesView {
 public:
  BytesView(nb::handle value, const char* what, bool allow_str) {
    if (allow_str && nb::isinstance<nb::str>(value)) {
      Py_ssize_t size = 0;
      data_ = PyUnicode_AsUTF8AndSize(value.ptr(), &size);
      if (data_ == nullptr) throw nb::python_error();
      size_ = static_cast<size_t>(size);
      text_ = nb::borrow(value);
      return;
    }
    if (PyObject_GetBuffer(value.ptr(), &view_, PyBUF_SIMPLE) != 0) {
      PyErr_Clear();
      RaiseError(StrCat(what, " must be ", allow_str ? "str, " : "",
                        "bytes or a bytes-like object, not ",
                        nb::type_name(value.type()).c_str()));
    }
    has_view_ = true;
    data_ = static_cast<const char*>(view_.buf);
    size_ = static_cast<size_t>(view_.len);
  }
  ~BytesView() {
    if (has_view_) PyBuffer_Release(&view_);
  }
  BytesView(const BytesView&) = delete;
  BytesView& operator=(const BytesView&) = delete;

  const char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  Py_buffer view_{};
  bool has_view_ = false;
  nb::object text_;
  const char* data_ = nullptr;
  size_t size_ = 0;
};

// Symbol JSON given as str or bytes, as text.
inline std::string SymbolText(nb::handle symbol_json) {
  std::string text;
  if (!nb::try_cast<std::string>(symbol_json, text, false)) {
    nb::bytes raw;
    if (!nb::try_cast<nb::bytes>(symbol_json, raw, false)) {
      RaiseError("symbol_json must be str or bytes");
    }
    text.assign(raw.c_str(), raw.size());
  }
  return text;
}

// A Python sequence of non-negative integers (possibly empty: a 0-d array).
inline Shape DimsFromPython(nb::handle shape) {
  std::vector<int64_t> dims;
  for (nb::handle item : shape) {
    int64_t dim = 0;
    if (!nb::try_cast<int64_t>(item, dim, false) || dim < 0) {
      RaiseError(StrCat("a shape must hold non-negative integers, got ",
                        nb::str(nb::repr(shape)).c_str()));
    }
    dims.push_back(dim);
  }
  return Shape(std::move(dims));
}

}  // namespace python_core
}  // namespace mxlite

#endif  // MXLITE_BINDINGS_PYTHON_CONVERT_H_
