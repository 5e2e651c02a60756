/*
 * cuDNN, loaded at run time when present (never required, never linked).
 *
 * The CUDA backend links only the CUDA runtime and cuBLAS. Where cuDNN 8 or
 * 9 is installed (a PyTorch environment has it), its convolutions are
 * several times faster at large batches than im2col + SGEMM, so the backend
 * opens the library with dlopen when a GPU predictor is created and takes
 * the few functions it needs with dlsym. The declarations below are the
 * subset of cuDNN's C API ("legacy" convolution API, unchanged since cuDNN
 * 7) that the backend calls: opaque handles, enumerators by their
 * documented values, and the one struct it reads. scripts/gpu/gpu_check.sh
 * checks them against the real headers where those are installed.
 *
 * Which library: RuntimeOptions::cudnn, "auto" (libcudnn.so.9, then .so.8,
 * from the dynamic loader's search path; absent is not an error), "off", or
 * a path (which must load). A library is opened once per process and path.
 */
#ifndef MXLITE_CUDA_CUDNN_LIBRARY_H_
#define MXLITE_CUDA_CUDNN_LIBRARY_H_

#include "../base/config.h"

#ifndef MXLITE_NO_CUDA

#include <cuda_runtime.h>

#include <cstddef>
#include <string>

#include "../base/status.h"

namespace mxlite {

// cuDNN's types, as its headers define them.
typedef struct cudnnContext* cudnnHandle_t;
typedef struct cudnnTensorStruct* cudnnTensorDescriptor_t;
typedef struct cudnnFilterStruct* cudnnFilterDescriptor_t;
typedef struct cudnnConvolutionStruct* cudnnConvolutionDescriptor_t;
typedef int cudnnStatus_t;                // CUDNN_STATUS_SUCCESS = 0
typedef int cudnnConvolutionFwdAlgo_t;    // IMPLICIT_GEMM = 0 ... WINOGRAD_NONFUSED = 7
constexpr int kCudnnSuccess = 0;          // CUDNN_STATUS_SUCCESS
constexpr int kCudnnTensorNCHW = 0;       // cudnnTensorFormat_t CUDNN_TENSOR_NCHW
constexpr int kCudnnFloat = 0;            // cudnnDataType_t CUDNN_DATA_FLOAT
constexpr int kCudnnCrossCorrelation = 1; // cudnnConvolutionMode_t (MXNet's convolution)
constexpr int kCudnnDefaultMath = 0;      // cudnnMathType_t CUDNN_DEFAULT_MATH
constexpr int kCudnnFmaMath = 3;          // cudnnMathType_t CUDNN_FMA_MATH: no TF32
constexpr int kCudnnForwardAlgorithms = 8;  // CUDNN_CONVOLUTION_FWD_ALGO_COUNT

struct CudnnForwardAlgoPerf {  // cudnnConvolutionFwdAlgoPerf_t
  cudnnConvolutionFwdAlgo_t algo;
  cudnnStatus_t status;
  float time;
  size_t memory;
  int determinism;
  int math_type;
  int reserved[3];
};

// The functions the backend calls, resolved from the loaded library.
struct CudnnLibrary {
  std::string path;  // what was opened
  size_t version = 0;  // cudnnGetVersion(): 90100 for 9.1.0
  size_t (*GetVersion)();
  const char* (*GetErrorString)(cudnnStatus_t);
  cudnnStatus_t (*Create)(cudnnHandle_t*);
  cudnnStatus_t (*Destroy)(cudnnHandle_t);
  cudnnStatus_t (*SetStream)(cudnnHandle_t, cudaStream_t);
  cudnnStatus_t (*CreateTensorDescriptor)(cudnnTensorDescriptor_t*);
  cudnnStatus_t (*DestroyTensorDescriptor)(cudnnTensorDescriptor_t);
  cudnnStatus_t (*SetTensor4dDescriptor)(cudnnTensorDescriptor_t, int format, int dtype, int n,
                                         int c, int h, int w);
  cudnnStatus_t (*CreateFilterDescriptor)(cudnnFilterDescriptor_t*);
  cudnnStatus_t (*DestroyFilterDescriptor)(cudnnFilterDescriptor_t);
  cudnnStatus_t (*SetFilter4dDescriptor)(cudnnFilterDescriptor_t, int dtype, int format, int k,
                                         int c, int h, int w);
  cudnnStatus_t (*CreateConvolutionDescriptor)(cudnnConvolutionDescriptor_t*);
  cudnnStatus_t (*DestroyConvolutionDescriptor)(cudnnConvolutionDescriptor_t);
  cudnnStatus_t (*SetConvolution2dDescriptor)(cudnnConvolutionDescriptor_t, int pad_h, int pad_w,
                                              int stride_h, int stride_w, int dilation_h,
                                              int dilation_w, int mode, int compute_type);
  cudnnStatus_t (*SetConvolutionGroupCount)(cudnnConvolutionDescriptor_t, int groups);
  cudnnStatus_t (*SetConvolutionMathType)(cudnnConvolutionDescriptor_t, int math_type);
  cudnnStatus_t (*GetConvolution2dForwardOutputDim)(cudnnConvolutionDescriptor_t,
                                                    cudnnTensorDescriptor_t,
                                                    cudnnFilterDescriptor_t, int* n, int* c,
                                                    int* h, int* w);
  cudnnStatus_t (*GetConvolutionForwardAlgorithm_v7)(cudnnHandle_t, cudnnTensorDescriptor_t,
                                                     cudnnFilterDescriptor_t,
                                                     cudnnConvolutionDescriptor_t,
                                                     cudnnTensorDescriptor_t, int requested,
                                                     int* returned, CudnnForwardAlgoPerf*);
  cudnnStatus_t (*GetConvolutionForwardWorkspaceSize)(cudnnHandle_t, cudnnTensorDescriptor_t,
                                                      cudnnFilterDescriptor_t,
                                                      cudnnConvolutionDescriptor_t,
                                                      cudnnTensorDescriptor_t,
                                                      cudnnConvolutionFwdAlgo_t, size_t*);
  cudnnStatus_t (*ConvolutionForward)(cudnnHandle_t, const void* alpha, cudnnTensorDescriptor_t,
                                      const void* x, cudnnFilterDescriptor_t, const void* w,
                                      cudnnConvolutionDescriptor_t, cudnnConvolutionFwdAlgo_t,
                                      void* workspace, size_t workspace_bytes, const void* beta,
                                      cudnnTensorDescriptor_t, void* y);
};

// The library `choice` names (RuntimeOptions::cudnn), opened once per
// process: *out is null for "off", and for "auto" when no cuDNN is found
// (*why then says what was tried). A named path that does not load, or a
// library without one of the functions above, is an error.
Status LoadCudnn(const std::string& choice, const CudnnLibrary** out, std::string* why);

// "9.1.0" for cudnnGetVersion()'s 90100 (cuDNN 8 counted 8907 for 8.9.7).
std::string CudnnVersionText(size_t version);

// A cuDNN call that must succeed; the error names the call.
#define MXL_CUDNN_RETURN_IF_ERROR(dnn, call)                                              \
  do {                                                                                   \
    const ::mxlite::cudnnStatus_t mxl_cudnn_status = (dnn)->call;                        \
    if (mxl_cudnn_status != ::mxlite::kCudnnSuccess) {                                   \
      return ::mxlite::Status::Error(::mxlite::StrCat(                                   \
          "cuDNN error in ", #call, ": ", (dnn)->GetErrorString(mxl_cudnn_status)));     \
    }                                                                                    \
  } while (0)

}  // namespace mxlite

#endif  // MXLITE_NO_CUDA
#endif  // MXLITE_CUDA_CUDNN_LIBRARY_H_
