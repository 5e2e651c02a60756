#include "ndarray.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace mxlite {

Status Storage::Allocate(size_t bytes, std::shared_ptr<Storage>* out) {
  // Round up so that aligned_alloc's size is a multiple of the alignment,
  // and never ask for zero bytes (whose result may be null).
  size_t rounded = (bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
  if (rounded == 0) rounded = kBufferAlignment;
  if (rounded < bytes) return Status::Error(StrCat("cannot allocate ", bytes, " bytes"));
  void* data = nullptr;
#if defined(_WIN32)
  data = _aligned_malloc(rounded, kBufferAlignment);
#else
  if (posix_memalign(&data, kBufferAlignment, rounded) != 0) data = nullptr;
#endif
  if (data == nullptr) {
    return Status::Error(StrCat("out of memory allocating ", bytes, " bytes"));
  }
  std::memset(data, 0, rounded);
  Storage* storage = new (std::nothrow) Storage(data, bytes);
  if (storage == nullptr) {
#if defined(_WIN32)
    _aligned_free(data);
#else
    std::free(data);
#endif
    return Status::Error("out of memory");
  }
  out->reset(storage);
  return Status();
}

Storage::~Storage() {
#if defined(_WIN32)
  _aligned_free(data_);
#else
  std::free(data_);
#endif
}

Status NDArray::Create(const Shape& shape, int dtype, NDArray* out) {
  MXL_CHECK(shape.is_complete(), "cannot allocate an array of incomplete shape ",
            shape.ToString());
  MXL_CHECK(IsValidDType(dtype), "unknown dtype flag ", dtype);
  std::shared_ptr<Storage> storage;
  size_t bytes = static_cast<size_t>(shape.Size()) * DTypeSize(dtype);
  MXL_RETURN_IF_ERROR(Storage::Allocate(bytes, &storage));
  *out = NDArray(shape, dtype, std::move(storage));
  return Status();
}

Status NDArray::Clone(NDArray* out) const {
  MXL_RETURN_IF_ERROR(Create(shape_, dtype_, out));
  if (bytes() != 0) std::memcpy(out->data(), data(), bytes());
  return Status();
}

Status NDArray::ToFloat32(NDArray* out) const {
  MXL_RETURN_IF_ERROR(Create(shape_, kFloat32, out));
  MXL_CHECK(ConvertToFloat32(dtype_, data(), static_cast<size_t>(Size()), out->fdata()),
            "cannot convert dtype ", DTypeName(dtype_), " to float32");
  return Status();
}

}  // namespace mxlite
