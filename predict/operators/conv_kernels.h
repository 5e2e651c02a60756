/*
 * The prepare functions of the convolution algorithms (the table in
 * conv_algorithms.cc names them): the GEMM family in conv_gemm.cc, the
 * depthwise, Winograd and direct kernels in conv_special.cc. Each takes a
 * geometry its algorithm's applies() accepted.
 */
#ifndef MXLITE_OPERATORS_CONV_KERNELS_H_
#define MXLITE_OPERATORS_CONV_KERNELS_H_

#include <memory>
#include <utility>

#include "conv_algorithms.h"

namespace mxlite {

using ConvPrepareFn = Status(const ConvGeometry&, ConvWeights, std::unique_ptr<ConvKernel>*);

ConvPrepareFn PrepareIm2colConv;
ConvPrepareFn PreparePointwiseConv;
ConvPrepareFn PrepareShiftedConv;
ConvPrepareFn PrepareInPlaceConv;
ConvPrepareFn PrepareDepthwiseConv;
ConvPrepareFn PrepareDepthwise3x3Conv;
ConvPrepareFn PrepareDepthwiseBlockedConv;
ConvPrepareFn PrepareWinograd4x4Conv;
ConvPrepareFn PrepareWinograd2x2Conv;
ConvPrepareFn PrepareWinograd1dConv;
ConvPrepareFn PrepareDirectConv;

// Fails unless the call's workspace holds `bytes` (the kernel's
// WorkspaceBytes()).
inline Status CheckConvWorkspace(const ConvCall& call, size_t bytes) {
  MXL_CHECK(bytes == 0 || (call.workspace != nullptr && call.workspace_bytes >= bytes),
            "convolution needs ", bytes, " bytes of workspace but got ", call.workspace_bytes);
  return Status();
}

// A Kernel (with Status Prepare(const ConvGeometry&, ConvWeights)) prepared
// for the geometry: the body of every ConvPrepareFn.
template <class Kernel>
Status MakeConvKernel(const ConvGeometry& g, ConvWeights w, std::unique_ptr<ConvKernel>* out) {
  std::unique_ptr<Kernel> kernel(new Kernel());
  MXL_RETURN_IF_ERROR(kernel->Prepare(g, std::move(w)));
  *out = std::move(kernel);
  return Status();
}

}  // namespace mxlite

#endif  // MXLITE_OPERATORS_CONV_KERNELS_H_
