/*
 * NDArray: a dense CPU array: shape, element type and a view into refcounted
 * storage. Copies of an NDArray share the storage (like MXNet's NDArray), so
 * a predictor made by MXPredReshape shares its weights with the original.
 */
#ifndef MXLITE_NDARRAY_NDARRAY_H_
#define MXLITE_NDARRAY_NDARRAY_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "../base/dtype.h"
#include "../base/shape.h"
#include "../base/status.h"

namespace mxlite {

// Alignment of every buffer mxlite allocates: one AVX-512 register / cache line.
constexpr size_t kBufferAlignment = 64;

// A zero-filled block of bytes aligned to kBufferAlignment, freed with the
// last owner.
class Storage {
 public:
  // Allocates `bytes` (zero-filled). Fails cleanly when memory runs out.
  static Status Allocate(size_t bytes, std::shared_ptr<Storage>* out);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }

  // Points this storage at `data`, memory owned elsewhere and at least
  // bytes() long, and returns the pointer it had. Every array viewing this
  // storage follows, wherever it was copied to: the executor reads a
  // caller's input in place this way for one pass, then points it back.
  void* ExchangeData(void* data) {
    void* previous = data_;
    data_ = data;
    return previous;
  }
  // Moves this storage's memory, contents included, into a new Storage
  // (*out) and gives this one fresh zero-filled memory of the same size.
  // Arrays viewing this storage now see the fresh memory; the old contents
  // live on in *out for as long as its new owner keeps it.
  Status HandOver(std::shared_ptr<Storage>* out);

 private:
  Storage(void* raw, void* data, size_t bytes) : raw_(raw), data_(data), bytes_(bytes) {}
  void* raw_;   // what calloc returned
  void* data_;  // raw_ rounded up to kBufferAlignment
  size_t bytes_;
};

class NDArray {
 public:
  NDArray() = default;
  // Allocates a zero-filled array of a complete shape.
  static Status Create(const Shape& shape, int dtype, NDArray* out);
  // A view of `bytes_offset` into existing storage (no allocation).
  NDArray(const Shape& shape, int dtype, std::shared_ptr<Storage> storage,
          size_t bytes_offset = 0)
      : shape_(shape), dtype_(dtype), storage_(std::move(storage)), offset_(bytes_offset) {}

  bool is_none() const { return storage_ == nullptr; }
  const Shape& shape() const { return shape_; }
  int dtype() const { return dtype_; }
  int64_t Size() const { return shape_.Size(); }
  size_t bytes() const { return static_cast<size_t>(Size()) * DTypeSize(dtype_); }
  void* data() const {
    return storage_ ? static_cast<char*>(storage_->data()) + offset_ : nullptr;
  }
  float* fdata() const { return static_cast<float*>(data()); }
  const std::shared_ptr<Storage>& storage() const { return storage_; }

  // Same storage, another shape of equal element count.
  NDArray Reshaped(const Shape& shape) const { return NDArray(shape, dtype_, storage_, offset_); }
  // A new array with its own storage and the same contents.
  Status Clone(NDArray* out) const;
  // Copies the contents converted to float32 into a new array.
  Status ToFloat32(NDArray* out) const;

 private:
  Shape shape_;
  int dtype_ = kFloat32;
  std::shared_ptr<Storage> storage_;
  size_t offset_ = 0;
};

}  // namespace mxlite

#endif  // MXLITE_NDARRAY_NDARRAY_H_
