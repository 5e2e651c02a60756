#include "ndarray.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include "../base/large_pages.h"

namespace mxlite {

Status Storage::Allocate(size_t bytes, std::shared_ptr<Storage>* out) {
  // Large blocks from the huge-page slabs (base/large_pages.h), cleared
  // unless fresh from the system; others, or where there is no slab, from
  // calloc rather than malloc + memset: large blocks come from fresh zero
  // pages that the OS maps lazily, so a big arena costs nothing until used.
  // The pointer is then aligned by hand inside the over-allocation.
  size_t padded = bytes + kBufferAlignment;
  if (padded < bytes) return Status::Error(StrCat("cannot allocate ", bytes, " bytes"));
  bool zeroed = false;
  void* raw = AllocateFromSlab(padded, &zeroed);
  if (raw != nullptr) {
    if (!zeroed) std::memset(raw, 0, padded);
  } else {
    raw = std::calloc(padded, 1);
  }
  if (raw == nullptr) {
    return Status::Error(StrCat("out of memory allocating ", bytes, " bytes"));
  }
  uintptr_t address = reinterpret_cast<uintptr_t>(raw);
  uintptr_t aligned = (address + kBufferAlignment - 1) & ~uintptr_t(kBufferAlignment - 1);
  Storage* storage = new (std::nothrow) Storage(raw, reinterpret_cast<void*>(aligned), bytes);
  if (storage == nullptr) {
    if (!FreeToSlab(raw, padded)) std::free(raw);
    return Status::Error("out of memory");
  }
  out->reset(storage);
  return Status();
}

Storage::~Storage() {
  if (!FreeToSlab(raw_, bytes_ + kBufferAlignment)) std::free(raw_);
}

Status Storage::HandOver(std::shared_ptr<Storage>* out) {
  std::shared_ptr<Storage> fresh;
  MXL_RETURN_IF_ERROR(Allocate(bytes_, &fresh));
  std::swap(raw_, fresh->raw_);
  std::swap(data_, fresh->data_);
  *out = std::move(fresh);
  return Status();
}

Status NDArray::Create(const Shape& shape, int dtype, NDArray* out) {
  MXL_CHECK(shape.is_complete(), "cannot allocate an array of incomplete shape ",
            shape.ToString());
  MXL_CHECK(IsValidDType(dtype), "unknown dtype flag ", dtype);
  MXL_CHECK(shape.CheckedSize() >= 0, "shape ", shape.ToString(), " is too large");
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
