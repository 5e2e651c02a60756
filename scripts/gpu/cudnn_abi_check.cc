// Checks predict/cuda/cudnn_library.h's declarations of cuDNN against the
// real headers: enumerator values, the sizes of the enums passed as int, the
// layout of the algorithm-ranking struct, and that each function pointer
// accepts the real function after its enums are read as ints. Compiles or
// fails; nothing to run. scripts/gpu/gpu_check.sh compiles it where cuDNN's
// headers are installed (nvcc, since the header under test is CUDA-only):
//   nvcc -x cu -std=c++17 -I<cudnn include> -c scripts/gpu/cudnn_abi_check.cc -o /dev/null
#include <cudnn.h>

#include <cstddef>
#include <type_traits>

#include "../../predict/cuda/cudnn_library.h"

namespace check {
using mxlite::CudnnForwardAlgoPerf;

static_assert(mxlite::kCudnnSuccess == CUDNN_STATUS_SUCCESS, "status");
static_assert(mxlite::kCudnnTensorNCHW == CUDNN_TENSOR_NCHW, "format");
static_assert(mxlite::kCudnnFloat == CUDNN_DATA_FLOAT, "dtype");
static_assert(mxlite::kCudnnCrossCorrelation == CUDNN_CROSS_CORRELATION, "mode");
static_assert(mxlite::kCudnnFmaMath == CUDNN_FMA_MATH, "math");
static_assert(mxlite::kCudnnDefaultMath == CUDNN_DEFAULT_MATH, "default math");
static_assert(mxlite::kCudnnForwardAlgorithms == CUDNN_CONVOLUTION_FWD_ALGO_COUNT, "count");
static_assert(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM == 0 &&
                  CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED == 7,
              "algorithm numbers, which Name() reads");
static_assert(sizeof(cudnnStatus_t) == sizeof(int) && sizeof(cudnnDataType_t) == sizeof(int) &&
                  sizeof(cudnnTensorFormat_t) == sizeof(int) &&
                  sizeof(cudnnConvolutionMode_t) == sizeof(int) &&
                  sizeof(cudnnMathType_t) == sizeof(int) &&
                  sizeof(cudnnConvolutionFwdAlgo_t) == sizeof(int),
              "enums passed as int");
static_assert(sizeof(CudnnForwardAlgoPerf) == sizeof(cudnnConvolutionFwdAlgoPerf_t), "perf size");
using RealPerf = cudnnConvolutionFwdAlgoPerf_t;
static_assert(offsetof(CudnnForwardAlgoPerf, algo) == offsetof(RealPerf, algo) &&
                  offsetof(CudnnForwardAlgoPerf, status) == offsetof(RealPerf, status) &&
                  offsetof(CudnnForwardAlgoPerf, memory) == offsetof(RealPerf, memory) &&
                  offsetof(CudnnForwardAlgoPerf, math_type) == offsetof(RealPerf, mathType),
              "perf layout");
// Each function pointer against the real function: the same number of
// parameters, each (and the result) of the same size. The order of
// parameters of one size was read off the headers by hand.
template <typename R, typename... A>
constexpr int Arity(R (*)(A...)) {
  return sizeof...(A);
}
template <typename R, typename... A>
constexpr size_t SizeAt(R (*)(A...), int i) {
  constexpr size_t sizes[] = {sizeof(R), sizeof(A)...};
  return sizes[i];
}
template <typename Real, typename Mine>
constexpr bool SameShape(Real real, Mine mine) {
  if (Arity(real) != Arity(mine)) return false;
  for (int i = 0; i <= Arity(real); ++i) {
    if (SizeAt(real, i) != SizeAt(mine, i)) return false;
  }
  return true;
}
#define MXL_CHECK_FUNCTION(name, field) \
  static_assert(SameShape(&name, decltype(mxlite::CudnnLibrary::field){}), #name)
MXL_CHECK_FUNCTION(cudnnGetVersion, GetVersion);
MXL_CHECK_FUNCTION(cudnnGetErrorString, GetErrorString);
MXL_CHECK_FUNCTION(cudnnCreate, Create);
MXL_CHECK_FUNCTION(cudnnDestroy, Destroy);
MXL_CHECK_FUNCTION(cudnnSetStream, SetStream);
MXL_CHECK_FUNCTION(cudnnCreateTensorDescriptor, CreateTensorDescriptor);
MXL_CHECK_FUNCTION(cudnnDestroyTensorDescriptor, DestroyTensorDescriptor);
MXL_CHECK_FUNCTION(cudnnSetTensor4dDescriptor, SetTensor4dDescriptor);
MXL_CHECK_FUNCTION(cudnnCreateFilterDescriptor, CreateFilterDescriptor);
MXL_CHECK_FUNCTION(cudnnDestroyFilterDescriptor, DestroyFilterDescriptor);
MXL_CHECK_FUNCTION(cudnnSetFilter4dDescriptor, SetFilter4dDescriptor);
MXL_CHECK_FUNCTION(cudnnCreateConvolutionDescriptor, CreateConvolutionDescriptor);
MXL_CHECK_FUNCTION(cudnnDestroyConvolutionDescriptor, DestroyConvolutionDescriptor);
MXL_CHECK_FUNCTION(cudnnSetConvolution2dDescriptor, SetConvolution2dDescriptor);
MXL_CHECK_FUNCTION(cudnnSetConvolutionGroupCount, SetConvolutionGroupCount);
MXL_CHECK_FUNCTION(cudnnSetConvolutionMathType, SetConvolutionMathType);
MXL_CHECK_FUNCTION(cudnnGetConvolution2dForwardOutputDim, GetConvolution2dForwardOutputDim);
MXL_CHECK_FUNCTION(cudnnGetConvolutionForwardAlgorithm_v7, GetConvolutionForwardAlgorithm_v7);
MXL_CHECK_FUNCTION(cudnnGetConvolutionForwardWorkspaceSize, GetConvolutionForwardWorkspaceSize);
MXL_CHECK_FUNCTION(cudnnConvolutionForward, ConvolutionForward);
}  // namespace check
