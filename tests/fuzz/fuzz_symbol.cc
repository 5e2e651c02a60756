// libFuzzer harness: the input is a symbol JSON file, loaded with the params
// named by MXLITE_FUZZ_PARAMS (none when unset) and an input 'data' of
// shape (2, 3, 13, 13); a predictor that loads is run once.
#include "fuzz_common.h"

namespace {
std::string g_params;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  g_params = mxlite_fuzz::ReadFileFromEnv("MXLITE_FUZZ_PARAMS");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string json(reinterpret_cast<const char*>(data), size);  // NUL-terminated copy
  const char* keys[] = {"data"};
  const mx_uint indptr[] = {0, 4}, shape[] = {2, 3, 13, 13};
  PredictorHandle handle = nullptr;
  const int status = MXPredCreate(json.c_str(), g_params.data(), static_cast<int>(g_params.size()),
                                  1, 0, 1, keys, indptr, shape, &handle);
  mxlite_fuzz::CheckFailure(status);
  if (status != 0) return 0;
  mxlite_fuzz::Exercise(handle, keys, 1, {{2, 3, 13, 13}});
  MXPredFree(handle);
  return 0;
}
