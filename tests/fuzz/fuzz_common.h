/*
 * What the libFuzzer harnesses share: loading a fixed companion file named
 * by an environment variable (the symbol for the params harness, the params
 * for the symbol harness), and running a predictor once it was created.
 * Every C API call must return 0 or -1 with a message; a crash, a sanitizer
 * report, a leak or a hang is a finding.
 */
#ifndef MXLITE_TESTS_FUZZ_FUZZ_COMMON_H_
#define MXLITE_TESTS_FUZZ_FUZZ_COMMON_H_

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "c_predict_api.h"

namespace mxlite_fuzz {

// The bytes of the file the environment variable names ("" when unset).
inline std::string ReadFileFromEnv(const char* variable) {
  const char* path = std::getenv(variable);
  if (path == nullptr) return std::string();
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    std::fprintf(stderr, "%s=%s cannot be read\n", variable, path);
    std::abort();  // a harness set-up error, not a finding
  }
  return std::string(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
}

// A failure must say why.
inline void CheckFailure(int status) {
  if (status != 0 && (MXGetLastError() == nullptr || MXGetLastError()[0] == '\0')) {
    std::fprintf(stderr, "a C API call failed without a message\n");
    std::abort();
  }
}

// Feeds ones to every input that the shapes name, runs, reads every output.
inline void Exercise(PredictorHandle handle, const char* const* keys, mx_uint count,
                     const std::vector<std::vector<mx_uint>>& shapes) {
  for (mx_uint i = 0; i < count; ++i) {
    size_t size = 1;
    for (mx_uint d : shapes[i]) size *= d;
    std::vector<mx_float> ones(size, 1.f);
    CheckFailure(MXPredSetInput(handle, keys[i], ones.data(), static_cast<mx_uint>(size)));
  }
  const int forward = MXPredForward(handle);
  CheckFailure(forward);
  if (forward != 0) return;
  for (mx_uint index = 0;; ++index) {
    mx_uint* shape = nullptr;
    mx_uint ndim = 0;
    if (MXPredGetOutputShape(handle, index, &shape, &ndim) != 0) break;
    size_t size = 1;
    for (mx_uint d = 0; d < ndim; ++d) size *= shape[d];
    if (size > (size_t{1} << 24)) break;
    // As in MXNet, an output comes out in its own dtype: the buffer holds
    // `size` elements of that type (MXPredGetOutputType), whatever the
    // pointer's declared type.
    int dtype = 0;
    CheckFailure(MXPredGetOutputType(handle, index, &dtype));
    static const size_t kBytes[] = {4, 8, 2, 1, 4, 1, 8};  // MXNet's dtype flags 0-6
    const size_t element = dtype >= 0 && dtype <= 6 ? kBytes[dtype] : 8;
    std::vector<double> out((size * element + 7) / 8);
    CheckFailure(MXPredGetOutput(handle, index, reinterpret_cast<mx_float*>(out.data()),
                                 static_cast<mx_uint>(size)));
  }
}

}  // namespace mxlite_fuzz

#endif  // MXLITE_TESTS_FUZZ_FUZZ_COMMON_H_
