/*
 * Opening cuDNN with dlopen and resolving the functions of cudnn_library.h.
 * Libraries stay open for the life of the process (predictors made later
 * reuse them; unloading cuDNN under a live handle would crash).
 */
#include "cudnn_library.h"

#ifndef MXLITE_NO_CUDA

#include <dlfcn.h>

#include <map>
#include <memory>
#include <mutex>

namespace mxlite {
namespace cudnn_library_cc {

// Resolves `name` into *slot; false (and *missing = name) when absent.
template <typename Function>
bool Resolve(void* handle, const char* name, Function* slot, std::string* missing) {
  void* symbol = dlsym(handle, name);
  if (!symbol) {
    *missing = name;
    return false;
  }
  *slot = reinterpret_cast<Function>(symbol);
  return true;
}

// The library at `path` (a file name searched as dlopen does, or a path),
// or null with the reason in *why.
std::unique_ptr<CudnnLibrary> Open(const std::string& path, std::string* why) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* error = dlerror();
    *why = StrCat("cannot open ", path, ": ", error ? error : "unknown error");
    return nullptr;
  }
  std::unique_ptr<CudnnLibrary> dnn(new CudnnLibrary());
  dnn->path = path;
  std::string missing;
  const bool complete =
      Resolve(handle, "cudnnGetVersion", &dnn->GetVersion, &missing) &&
      Resolve(handle, "cudnnGetErrorString", &dnn->GetErrorString, &missing) &&
      Resolve(handle, "cudnnCreate", &dnn->Create, &missing) &&
      Resolve(handle, "cudnnDestroy", &dnn->Destroy, &missing) &&
      Resolve(handle, "cudnnSetStream", &dnn->SetStream, &missing) &&
      Resolve(handle, "cudnnCreateTensorDescriptor", &dnn->CreateTensorDescriptor, &missing) &&
      Resolve(handle, "cudnnDestroyTensorDescriptor", &dnn->DestroyTensorDescriptor, &missing) &&
      Resolve(handle, "cudnnSetTensor4dDescriptor", &dnn->SetTensor4dDescriptor, &missing) &&
      Resolve(handle, "cudnnCreateFilterDescriptor", &dnn->CreateFilterDescriptor, &missing) &&
      Resolve(handle, "cudnnDestroyFilterDescriptor", &dnn->DestroyFilterDescriptor, &missing) &&
      Resolve(handle, "cudnnSetFilter4dDescriptor", &dnn->SetFilter4dDescriptor, &missing) &&
      Resolve(handle, "cudnnCreateConvolutionDescriptor", &dnn->CreateConvolutionDescriptor,
              &missing) &&
      Resolve(handle, "cudnnDestroyConvolutionDescriptor", &dnn->DestroyConvolutionDescriptor,
              &missing) &&
      Resolve(handle, "cudnnSetConvolution2dDescriptor", &dnn->SetConvolution2dDescriptor,
              &missing) &&
      Resolve(handle, "cudnnSetConvolutionGroupCount", &dnn->SetConvolutionGroupCount,
              &missing) &&
      Resolve(handle, "cudnnSetConvolutionMathType", &dnn->SetConvolutionMathType, &missing) &&
      Resolve(handle, "cudnnGetConvolution2dForwardOutputDim",
              &dnn->GetConvolution2dForwardOutputDim, &missing) &&
      Resolve(handle, "cudnnGetConvolutionForwardAlgorithm_v7",
              &dnn->GetConvolutionForwardAlgorithm_v7, &missing) &&
      Resolve(handle, "cudnnGetConvolutionForwardWorkspaceSize",
              &dnn->GetConvolutionForwardWorkspaceSize, &missing) &&
      Resolve(handle, "cudnnConvolutionForward", &dnn->ConvolutionForward, &missing);
  if (!complete) {
    *why = StrCat(path, " has no function ", missing, " (mxlite needs cuDNN 8 or 9)");
    dlclose(handle);
    return nullptr;
  }
  dnn->version = dnn->GetVersion();
  if (dnn->version < 8000) {
    *why = StrCat(path, " is cuDNN version ", dnn->version, " (mxlite needs cuDNN 8 or 9)");
    dlclose(handle);
    return nullptr;
  }
  return dnn;
}

}  // namespace cudnn_library_cc

std::string CudnnVersionText(size_t version) {
  const size_t major_unit = version >= 90000 ? 10000 : 1000;
  return StrCat(version / major_unit, ".", version % major_unit / 100, ".", version % 100);
}

Status LoadCudnn(const std::string& choice, const CudnnLibrary** out, std::string* why) {
  *out = nullptr;
  why->clear();
  if (choice == "off") {
    *why = "cuDNN is off (option cudnn)";
    return Status();
  }
  // Per name tried: the library, or null with why it did not load. Kept
  // for the process, failures too, so each name is tried once.
  static std::mutex mutex;
  static std::map<std::string, std::pair<std::unique_ptr<CudnnLibrary>, std::string>> opened;
  std::lock_guard<std::mutex> lock(mutex);
  auto open = [](const std::string& path) -> const std::pair<std::unique_ptr<CudnnLibrary>,
                                                             std::string>& {
    auto found = opened.find(path);
    if (found == opened.end()) {
      std::string reason;
      std::unique_ptr<CudnnLibrary> library = cudnn_library_cc::Open(path, &reason);
      found = opened.emplace(path, std::make_pair(std::move(library), reason)).first;
    }
    return found->second;
  };
  if (choice != "auto") {
    const auto& result = open(choice);
    MXL_CHECK(result.first != nullptr, "option cudnn: ", result.second);
    *out = result.first.get();
    return Status();
  }
  for (const char* name : {"libcudnn.so.9", "libcudnn.so.8"}) {
    const auto& result = open(name);
    if (result.first) {
      *out = result.first.get();
      return Status();
    }
    *why += StrCat(why->empty() ? "" : "; ", result.second);
  }
  return Status();
}

}  // namespace mxlite

#endif  // MXLITE_NO_CUDA
