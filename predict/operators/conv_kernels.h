/*
 * The prepare functions of the convolution algorithms (the table in
 * conv_algorithms.cc names them): the GEMM family in conv_gemm.cc, the
 * depthwise, Winograd and direct kernels in conv_special.cc. Each takes a
 * geometry its algorithm's applies() accepted.
 */
#ifndef MXLITE_OPERATORS_CONV_KERNELS_H_
#define MXLITE_OPERATORS_CONV_KERNELS_H_

#include <memory>

#include "conv_algorithms.h"

namespace mxlite {

using ConvPrepareFn = Status(const ConvGeometry&, ConvWeights, std::unique_ptr<ConvKernel>*);

ConvPrepareFn PrepareIm2colConv;
ConvPrepareFn PreparePointwiseConv;
ConvPrepareFn PrepareShiftedConv;
ConvPrepareFn PrepareDepthwiseConv;
ConvPrepareFn PrepareDepthwise3x3Conv;
ConvPrepareFn PrepareDepthwiseBlockedConv;
ConvPrepareFn PrepareWinograd4x4Conv;
ConvPrepareFn PrepareWinograd2x2Conv;
ConvPrepareFn PrepareWinograd1dConv;
ConvPrepareFn PrepareDirectConv;

}  // namespace mxlite

#endif  // MXLITE_OPERATORS_CONV_KERNELS_H_
