// libFuzzer harness over all three inputs of MXPredCreate at once. The input
// is split as
//   byte 0: number of input dims (1-5); bytes 1..5: the dims, each 1-32;
//   bytes 6-7: the symbol's length L (little endian, clipped to what is
//   left); then L bytes of symbol JSON; the rest is the params file.
// Sizes stay small (at most 32^5 floats... clipped to 2^20), so the harness
// explores loading, shape inference and the operators rather than the
// memory limit.
#include <algorithm>

#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 8) return 0;
  const mx_uint ndim = 1 + data[0] % 5;
  std::vector<mx_uint> dims(ndim);
  size_t elements = 1;
  for (mx_uint d = 0; d < ndim; ++d) {
    dims[d] = 1 + data[1 + d] % 32;
    elements *= dims[d];
  }
  if (elements > (size_t{1} << 20)) return 0;
  size_t json_length = data[6] | (size_t{data[7]} << 8);
  json_length = std::min(json_length, size - 8);
  const std::string json(reinterpret_cast<const char*>(data + 8), json_length);
  const char* params = reinterpret_cast<const char*>(data + 8 + json_length);
  const int params_size = static_cast<int>(size - 8 - json_length);
  const char* keys[] = {"data"};
  const mx_uint indptr[] = {0, ndim};
  PredictorHandle handle = nullptr;
  const int status = MXPredCreate(json.c_str(), params, params_size, 1, 0, 1, keys, indptr,
                                  dims.data(), &handle);
  mxlite_fuzz::CheckFailure(status);
  if (status != 0) return 0;
  mxlite_fuzz::Exercise(handle, keys, 1, {dims});
  MXPredFree(handle);
  return 0;
}
