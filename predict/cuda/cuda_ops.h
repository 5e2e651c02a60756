/*
 * CUDA kernels for graph nodes (the list: cuda_op_list.inc).
 *
 * MakeCudaKernel looks at one node as bound (canonical operator name,
 * attributes, shapes, dtypes) and either makes a CudaKernel for it or says
 * why the GPU cannot run it, in which case the runner (cuda_runner.cc) runs
 * the node on the host. A kernel is made once per executor; Launch only
 * enqueues work on the stream it is given (no allocation, no
 * synchronisation), so a whole pass can be captured in a CUDA graph.
 *
 * Every kernel computes in float32 as MXNet's own GPU kernels do; cuBLAS is
 * asked for plain FP32 arithmetic (no TF32), so results match the CPU
 * path and MXNet's goldens to the tests' 1e-4 relative tolerance.
 */
#ifndef MXLITE_CUDA_CUDA_OPS_H_
#define MXLITE_CUDA_CUDA_OPS_H_

#include "../base/config.h"

#ifndef MXLITE_NO_CUDA

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <vector>

#include "../base/shape.h"
#include "../base/status.h"
#include "../operators/attr_parser.h"
#include "cudnn_library.h"

namespace mxlite {

// A CUDA runtime call that must succeed; the error names the call.
#define MXL_CUDA_RETURN_IF_ERROR(call)                                                    \
  do {                                                                                    \
    const cudaError_t mxl_cuda_status = (call);                                           \
    if (mxl_cuda_status != cudaSuccess) {                                                 \
      return ::mxlite::Status::Error(::mxlite::StrCat(                                    \
          "CUDA error in ", #call, ": ", cudaGetErrorString(mxl_cuda_status)));           \
    }                                                                                     \
  } while (0)

// The status of a CUDA runtime call's result, naming CUDA's reason.
inline Status StatusOfCuda(cudaError_t error) {
  return error == cudaSuccess ? Status()
                              : Status::Error(StrCat("CUDA error: ", cudaGetErrorString(error)));
}

#define MXL_CUBLAS_RETURN_IF_ERROR(call)                                                  \
  do {                                                                                    \
    const cublasStatus_t mxl_cublas_status = (call);                                      \
    if (mxl_cublas_status != CUBLAS_STATUS_SUCCESS) {                                     \
      return ::mxlite::Status::Error(::mxlite::StrCat("cuBLAS error in ", #call, ": ",    \
                                                      cublasGetStatusString(mxl_cublas_status))); \
    }                                                                                     \
  } while (0)

// What one launch works on: device pointers of the node's inputs and
// outputs, in the operator's order.
struct CudaLaunch {
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  cudnnHandle_t dnn = nullptr;  // set when the runner loaded cuDNN
  void* workspace = nullptr;  // WorkspaceBytes() of device scratch
  std::vector<const void*> in;
  std::vector<void*> out;
};

class CudaKernel {
 public:
  virtual ~CudaKernel() = default;
  virtual Status Launch(const CudaLaunch& launch) const = 0;
  virtual size_t WorkspaceBytes() const { return 0; }
  // Chooses among the kernel's forms by timing them on `launch` (the
  // runner calls it once, at bind, on the predictor's own buffers).
  virtual Status Tune(const CudaLaunch& launch) {
    (void)launch;
    return Status();
  }
  // Which form of the operator runs ("im2col GEMM", "depthwise"), for reports.
  virtual const char* Name() const { return ""; }
};

// One node as bound.
struct CudaNode {
  std::string op;  // canonical name (CanonicalOpName)
  std::string name;
  const AttrMap* attrs = nullptr;
  std::vector<Shape> in_shapes, out_shapes;
  std::vector<int> in_dtypes, out_dtypes;
  // cuDNN, when the runner loaded it: the library and the runner's handle
  // (bound to its stream), for convolutions to choose their algorithm.
  const CudnnLibrary* dnn = nullptr;
  cudnnHandle_t dnn_handle = nullptr;
  // RuntimeOptions::conv_tuning: a convolution offers the runner every
  // form it has to time at bind (Tune), not only its first choice.
  bool tune = false;
};

// The kernel for `node`, or null in *out with the reason in *unsupported.
Status MakeCudaKernel(const CudaNode& node, std::unique_ptr<CudaKernel>* out,
                      std::string* unsupported);

}  // namespace mxlite

#endif  // MXLITE_NO_CUDA
#endif  // MXLITE_CUDA_CUDA_OPS_H_
