#include "ndarray_io.h"

#include <cstring>
#include <type_traits>

namespace mxlite {

namespace ndarray_io_cc {

constexpr uint64_t kListMagic = 0x112;
constexpr uint32_t kV1Magic = 0xF993FAC8u;
constexpr uint32_t kV2Magic = 0xF993FAC9u;
constexpr uint32_t kV3Magic = 0xF993FACAu;
// No real tensor has more dims than this; a larger count means corruption.
constexpr int64_t kMaxNDim = 32;

// Bounds-checked little-endian reader over a byte range. Every read names
// the byte offset and what was being read when the data runs out.
class Reader {
 public:
  Reader(const unsigned char* data, size_t size, const std::string& source)
      : data_(data), size_(size), source_(source) {}

  template <typename T>
  Status Read(T* value, const char* what) {
    MXL_RETURN_IF_ERROR(Need(sizeof(T), what));
    uint64_t bits = 0;
    for (size_t i = 0; i < sizeof(T); ++i) {
      bits |= static_cast<uint64_t>(data_[pos_ + i]) << (8 * i);
    }
    // Two's complement narrowing: well defined for unsigned, and the
    // implementation-defined signed case is two's complement everywhere.
    *value = static_cast<T>(static_cast<typename std::make_unsigned<T>::type>(bits));
    pos_ += sizeof(T);
    return Status();
  }
  Status ReadBytes(void* dst, size_t count, const char* what) {
    MXL_RETURN_IF_ERROR(Need(count, what));
    if (count) std::memcpy(dst, data_ + pos_, count);
    pos_ += count;
    return Status();
  }
  Status Need(size_t count, const char* what) const {
    MXL_CHECK(count <= size_ - pos_, source_, ": truncated at byte ", pos_, " while reading ",
              what, " (", count, " bytes needed, ", size_ - pos_, " left)");
    return Status();
  }
  size_t pos() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }
  Status Fail(const std::string& what) const {
    return Status::Error(StrCat(source_, ": ", what, " (at byte ", pos_, ")"));
  }

 private:
  const unsigned char* data_;
  size_t size_;
  size_t pos_ = 0;
  const std::string& source_;
};

// Reads i32 ndim + i64 dims. `allow_scalar` is V3's "ndim 0 is a scalar".
Status ReadShape(Reader* reader, Shape* shape, bool* is_none, bool numpy_semantics) {
  int32_t ndim = 0;
  MXL_RETURN_IF_ERROR(reader->Read(&ndim, "shape rank"));
  if (numpy_semantics ? ndim < 0 : ndim == 0) {
    *is_none = true;
    return Status();
  }
  if (ndim < 0 || ndim > kMaxNDim) return reader->Fail(StrCat("invalid shape rank ", ndim));
  std::vector<int64_t> dims(ndim);
  for (int32_t i = 0; i < ndim; ++i) {
    MXL_RETURN_IF_ERROR(reader->Read(&dims[i], "shape dims"));
    if (dims[i] < 0) return reader->Fail(StrCat("invalid negative dimension ", dims[i]));
  }
  *is_none = false;
  *shape = Shape(std::move(dims));
  return Status();
}

Status ReadRecord(Reader* reader, size_t index, NDArray* out) {
  uint32_t magic = 0;
  MXL_RETURN_IF_ERROR(reader->Read(&magic, "array header"));
  Shape shape;
  bool is_none = false;
  if (magic == kV2Magic || magic == kV3Magic) {
    int32_t storage_type = 0;
    MXL_RETURN_IF_ERROR(reader->Read(&storage_type, "storage type"));
    if (storage_type == 1 || storage_type == 2) {
      return reader->Fail(StrCat("array #", index, " is stored as ",
                                 storage_type == 1 ? "row_sparse" : "csr",
                                 "; mxlite supports dense arrays only"));
    }
    if (storage_type != 0 && storage_type != -1) {
      return reader->Fail(StrCat("array #", index, " has unknown storage type ", storage_type));
    }
    MXL_RETURN_IF_ERROR(ReadShape(reader, &shape, &is_none, magic == kV3Magic));
  } else if (magic == kV1Magic) {
    MXL_RETURN_IF_ERROR(ReadShape(reader, &shape, &is_none, false));
  } else {
    // Legacy record: the first word is the rank, dims are u32.
    if (magic > kMaxNDim) {
      return reader->Fail(StrCat("array #", index, " has unknown header 0x", std::hex, magic,
                                 std::dec, " (not an NDArray record, or the file is corrupt)"));
    }
    if (magic == 0) {
      is_none = true;
    } else {
      std::vector<int64_t> dims(magic);
      for (uint32_t i = 0; i < magic; ++i) {
        uint32_t dim = 0;
        MXL_RETURN_IF_ERROR(reader->Read(&dim, "shape dims"));
        dims[i] = dim;
      }
      shape = Shape(std::move(dims));
    }
  }
  if (is_none) {
    *out = NDArray();
    return Status();
  }
  int32_t dev_type = 0, dev_id = 0, type_flag = 0;
  MXL_RETURN_IF_ERROR(reader->Read(&dev_type, "device type"));
  MXL_RETURN_IF_ERROR(reader->Read(&dev_id, "device id"));
  MXL_RETURN_IF_ERROR(reader->Read(&type_flag, "dtype"));
  if (!IsValidDType(type_flag)) {
    return reader->Fail(StrCat("array #", index, " has unknown dtype flag ", type_flag));
  }
  // Check the payload fits before allocating, so a corrupt shape cannot ask
  // for terabytes.
  long double want = static_cast<long double>(DTypeSize(type_flag));
  for (int64_t d : shape.dims()) want *= static_cast<long double>(d);
  if (want > static_cast<long double>(reader->remaining())) {
    return reader->Fail(StrCat("truncated: array #", index, " of shape ", shape.ToString(), " ",
                               DTypeName(type_flag), " needs ", static_cast<double>(want),
                               " bytes but only ", reader->remaining(), " remain"));
  }
  MXL_RETURN_IF_ERROR(NDArray::Create(shape, type_flag, out));
  return reader->ReadBytes(out->data(), out->bytes(), "array data");
}

void PutU32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void PutU64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

}  // namespace ndarray_io_cc

Status LoadNDArrayList(const void* bytes, size_t size, const std::string& source,
                       std::vector<NDArray>* arrays, std::vector<std::string>* names) {
  using namespace ndarray_io_cc;
  arrays->clear();
  names->clear();
  MXL_CHECK(bytes != nullptr || size == 0, source, ": no data");
  Reader reader(static_cast<const unsigned char*>(bytes), size, source);
  uint64_t magic = 0, reserved = 0, count = 0;
  MXL_RETURN_IF_ERROR(reader.Read(&magic, "file header"));
  if (magic != kListMagic) {
    return Status::Error(StrCat(source, ": not an MXNet NDArray file (header 0x", std::hex, magic,
                                ", expected 0x112)"));
  }
  MXL_RETURN_IF_ERROR(reader.Read(&reserved, "file header"));
  MXL_RETURN_IF_ERROR(reader.Read(&count, "array count"));
  // Each record takes at least 4 bytes: a count that cannot fit in what is
  // left means the file was cut short (or its header is corrupt).
  if (count > reader.remaining() / 4) {
    return Status::Error(StrCat(source, ": truncated: the header lists ", count,
                                " arrays, which take at least ", count, " x 4 bytes, but only ",
                                reader.remaining(), " of the file's ", size,
                                " bytes follow it"));
  }
  arrays->resize(count);
  for (uint64_t i = 0; i < count; ++i) {
    MXL_RETURN_IF_ERROR(ReadRecord(&reader, i, &(*arrays)[i]));
  }
  uint64_t name_count = 0;
  MXL_RETURN_IF_ERROR(reader.Read(&name_count, "name count"));
  if (name_count != 0 && name_count != count) {
    // A name takes at least its 8-byte length: more names than fit means
    // the file was cut short.
    if (name_count > reader.remaining() / 8) {
      return Status::Error(StrCat(source, ": truncated: ", name_count,
                                  " names take at least ", name_count, " x 8 bytes, but only ",
                                  reader.remaining(), " of the file's ", size,
                                  " bytes remain"));
    }
    return reader.Fail(StrCat("has ", count, " arrays but ", name_count, " names"));
  }
  names->resize(name_count);
  for (uint64_t i = 0; i < name_count; ++i) {
    uint64_t length = 0;
    MXL_RETURN_IF_ERROR(reader.Read(&length, "name length"));
    MXL_RETURN_IF_ERROR(reader.Need(length, "name"));
    (*names)[i].resize(length);
    MXL_RETURN_IF_ERROR(reader.ReadBytes(&(*names)[i][0], length, "name"));
  }
  if (reader.remaining() != 0) {
    return reader.Fail(StrCat(reader.remaining(), " unexpected bytes after the last name"));
  }
  return Status();
}

Status SaveNDArrayList(const std::vector<NDArray>& arrays, const std::vector<std::string>& names,
                       std::string* out) {
#ifdef MXLITE_NO_NDARRAY_SAVE
  (void)arrays;
  (void)names;
  (void)out;
  return Status::Error("saving NDArrays is left out of this build (MXLITE_NO_NDARRAY_SAVE)");
#else
  using namespace ndarray_io_cc;
  MXL_CHECK(names.empty() || names.size() == arrays.size(), "cannot save ", arrays.size(),
            " arrays with ", names.size(), " names");
  out->clear();
  PutU64(out, kListMagic);
  PutU64(out, 0);
  PutU64(out, arrays.size());
  for (const NDArray& array : arrays) {
    PutU32(out, kV2Magic);
    PutU32(out, 0);  // dense storage
    if (array.is_none()) {
      PutU32(out, 0);  // ndim 0: a none array
      continue;
    }
    MXL_CHECK(array.shape().ndim() > 0, "MXNet's V2 format cannot hold a 0-d array");
    PutU32(out, static_cast<uint32_t>(array.shape().ndim()));
    for (int64_t d : array.shape().dims()) PutU64(out, static_cast<uint64_t>(d));
    PutU32(out, 1);  // cpu
    PutU32(out, 0);  // device id
    PutU32(out, static_cast<uint32_t>(array.dtype()));
    // Element data is written in host order, as MXNet does; mxlite targets
    // little-endian hosts only.
    out->append(static_cast<const char*>(array.data()), array.bytes());
  }
  PutU64(out, names.size());
  for (const std::string& name : names) {
    PutU64(out, name.size());
    out->append(name);
  }
  return Status();
#endif  // MXLITE_NO_NDARRAY_SAVE
}

}  // namespace mxlite
