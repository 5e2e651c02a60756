/*
 * The convolution algorithm table (see conv_algorithms.h): for each
 * algorithm, what it covers (applies) and where it is the one to take
 * (pays), in priority order. The coverage predicates are written here, in
 * one place, from what each kernel computes; the performance thresholds
 * stay beside their kernels (WinogradPays, DirectConvPays, ...), which
 * hold the measurements behind them.
 */
#include <cstdlib>
#include <cstring>

#include "../kernels/depthwise.h"
#include "../kernels/direct_conv.h"
#include "../kernels/winograd.h"
#include "../kernels/winograd1d.h"
#include "../kernels/winograd2x2.h"
#include "conv_kernels.h"

namespace mxlite {

bool ConvGeometry::Pointwise() const {
  for (int d = 0; d < 3; ++d) {
    if (kernel[d] != 1 || stride[d] != 1 || pad[d] != 0) return false;
  }
  return true;
}

std::string ConvGeometry::ToString() const {
  const auto triple = [](const int64_t v[3]) {
    return StrCat(v[0], "x", v[1], "x", v[2]);
  };
  return StrCat("batch ", batch, ", ", channels, " -> ", filters, " channels in ", groups,
                " group(s), input ", triple(in), ", output ", triple(out), ", kernel ",
                triple(kernel), ", stride ", triple(stride), ", pad ", triple(pad), ", dilate ",
                triple(dilate), normalises_input ? ", input normalised" : "");
}

namespace conv_algorithms_cc {

// Every float offset inside one image fits 32 bits (the vector kernels
// that index with 32-bit lanes need it).
bool PlanesFit32Bits(const ConvGeometry& g) {
  const int64_t limit = int64_t{1} << 30;
  return g.InSpatial() < limit && g.OutSpatial() < limit;
}

bool Always(const ConvGeometry&) { return true; }

// A planar layer that reads its input as it is (no input BatchNorm).
bool PlainPlanar(const ConvGeometry& g) { return !g.normalises_input && g.Planar(); }

// --- depthwise ---------------------------------------------------------------

bool DepthwiseApplies(const ConvGeometry& g) {
  return !g.normalises_input && g.Depthwise();
}

// A single channel is a plain convolution; one group of several, depthwise.
bool DepthwisePays(const ConvGeometry& g) { return g.groups > 1; }

// The 3x3 kernels: planar, equal strides of 1 or 2, dilation 1, pads below 3.
bool Depthwise3x3Applies(const ConvGeometry& g) {
  return DepthwiseApplies(g) && g.Planar() && g.Kernel2d(3, 3) &&
         DepthwiseConv3x3Supported(g.stride[1], g.stride[2], g.dilate[1], g.dilate[2],
                                   g.pad[1], g.pad[2]);
}

bool DepthwiseBlockedPays(const ConvGeometry& g) {
  return DepthwisePays(g) && ::mxlite::DepthwiseBlockedPays(g.in[2]);
}

// --- pointwise ---------------------------------------------------------------

// A layer that normalises its input does so only here, with one group.
bool PointwiseApplies(const ConvGeometry& g) {
  return g.Pointwise() && (!g.normalises_input || g.groups == 1);
}

// --- Winograd ----------------------------------------------------------------

// Planar, one group, stride and dilation 1: what every Winograd kernel needs.
bool WinogradCommon(const ConvGeometry& g) {
  return PlainPlanar(g) && g.groups == 1 && g.UnitStride2d() && g.UnitDilation2d() &&
         PlanesFit32Bits(g);
}

bool Winograd4x4Applies(const ConvGeometry& g) {
  return WinogradCommon(g) && g.Kernel2d(3, 3);
}

bool Winograd4x4Pays(const ConvGeometry& g) {
  return WinogradPays(g.kernel[1], g.kernel[2], g.stride[1], g.stride[2], g.dilate[1],
                      g.dilate[2], g.groups, g.channels, g.filters, g.out[1], g.out[2]);
}

// Where the family has the kernel (AVX-512); an output of at most
// kWinograd2x2MaxSide a side.
bool Winograd2x2Applies(const ConvGeometry& g) {
  return WinogradKernels().small_tiles && WinogradCommon(g) && g.Kernel2d(3, 3) &&
         g.out[1] <= kWinograd2x2MaxSide && g.out[2] <= kWinograd2x2MaxSide;
}

bool Winograd2x2Pays(const ConvGeometry& g) {
  return ::mxlite::Winograd2x2Pays(g.kernel[1], g.kernel[2], g.stride[1], g.stride[2],
                                   g.dilate[1], g.dilate[2], g.groups, g.channels, g.filters,
                                   g.out[1], g.out[2]);
}

// Where the family has the kernels (AVX-512); kernels of 2 to 7 rows and at
// most 7 columns, or 1 row of 2 to 7 columns (run transposed).
bool Winograd1dApplies(const ConvGeometry& g) {
  const int64_t kh = g.kernel[1], kw = g.kernel[2];
  const bool kernel =
      (kh >= 2 && kh <= 7 && kw >= 1 && kw <= 7) || (kh == 1 && kw >= 2 && kw <= 7);
  return WinogradKernels().small_tiles && WinogradCommon(g) && kernel;
}

bool Winograd1dPays(const ConvGeometry& g) {
  return ::mxlite::Winograd1dPays(g.kernel[1], g.kernel[2], g.stride[1], g.stride[2],
                                  g.dilate[1], g.dilate[2], g.groups, g.channels, g.filters,
                                  g.out[1], g.out[2], g.threads);
}

// --- direct ------------------------------------------------------------------

// Planar, one group, dilation 1, the same stride along both axes.
bool DirectApplies(const ConvGeometry& g) {
  return PlainPlanar(g) && g.groups == 1 && g.UnitDilation2d() && g.stride[1] == g.stride[2] &&
         PlanesFit32Bits(g);
}

bool DirectPays(const ConvGeometry& g) {
  return DirectConvPays(g.channels, g.groups, g.kernel[1], g.kernel[2], g.stride[1], g.stride[2],
                        g.dilate[1], g.dilate[2]);
}

// --- GEMM --------------------------------------------------------------------

bool ShiftedApplies(const ConvGeometry& g) { return PlainPlanar(g); }

// Under compact_weights, every layer but a stem the direct kernel takes: its
// packed copy is a few KiB (at most 4 channels of 11x11 taps a filter), and
// it computes bands of rows for a fused max pooling (convolution.cc).
bool InPlacePays(const ConvGeometry& g) { return !(DirectApplies(g) && DirectPays(g)); }

bool Im2colApplies(const ConvGeometry& g) { return !g.normalises_input; }

}  // namespace conv_algorithms_cc

const std::vector<ConvAlgorithm>& ConvAlgorithmTable() {
  using namespace conv_algorithms_cc;
  static const std::vector<ConvAlgorithm> table = {
      {"depthwise 16-channel blocks", Depthwise3x3Applies, DepthwiseBlockedPays,
       PrepareDepthwiseBlockedConv, ConvAlgorithm::kAlways},
      {"depthwise 3x3", Depthwise3x3Applies, DepthwisePays, PrepareDepthwise3x3Conv,
       ConvAlgorithm::kAlways},
      {"depthwise", DepthwiseApplies, DepthwisePays, PrepareDepthwiseConv,
       ConvAlgorithm::kAlways},
      {"gemm, weights in place", Im2colApplies, InPlacePays, PrepareInPlaceConv,
       ConvAlgorithm::kCompactOnly},
      {"1x1 gemm", PointwiseApplies, Always, PreparePointwiseConv, ConvAlgorithm::kAlways},
      // The 1-D kernel's 3x3 layers (Winograd1dPays) are ones F(4x4) also
      // takes; its other kernels no 2-D Winograd entry computes.
      {"winograd 1-D", Winograd1dApplies, Winograd1dPays, PrepareWinograd1dConv,
       ConvAlgorithm::kWinogradSwitch},
      {"winograd 4x4", Winograd4x4Applies, Winograd4x4Pays, PrepareWinograd4x4Conv,
       ConvAlgorithm::kWinogradSwitch},
      {"winograd 2x2", Winograd2x2Applies, Winograd2x2Pays, PrepareWinograd2x2Conv,
       ConvAlgorithm::kWinogradSwitch},
      {"direct", DirectApplies, DirectPays, PrepareDirectConv, ConvAlgorithm::kAlways},
      {"shifted gemm", ShiftedApplies, Always, PrepareShiftedConv,
       ConvAlgorithm::kShiftedSwitch},
      {"im2col+gemm", Im2colApplies, Always, PrepareIm2colConv, ConvAlgorithm::kAlways},
  };
  return table;
}

namespace conv_algorithms_cc {

bool SwitchedOn(const ConvAlgorithm& algorithm, const ConvOptions& options) {
  switch (algorithm.switch_) {
    case ConvAlgorithm::kWinogradSwitch: return options.winograd;
    case ConvAlgorithm::kShiftedSwitch: return options.shifted_gemm;
    case ConvAlgorithm::kCompactOnly: return options.compact_weights;
    case ConvAlgorithm::kAlways: return true;
  }
  return true;
}

}  // namespace conv_algorithms_cc

const ConvAlgorithm* ChooseConvAlgorithm(const ConvGeometry& g, const ConvOptions& options) {
  for (const ConvAlgorithm& algorithm : ConvAlgorithmTable()) {
    if (!conv_algorithms_cc::SwitchedOn(algorithm, options)) continue;
    if (algorithm.applies(g) && algorithm.pays(g)) return &algorithm;
  }
  return nullptr;
}

std::vector<const ConvAlgorithm*> ApplicableConvAlgorithms(const ConvGeometry& g,
                                                          const ConvOptions& options) {
  std::vector<const ConvAlgorithm*> out;
  for (const ConvAlgorithm& algorithm : ConvAlgorithmTable()) {
    if (conv_algorithms_cc::SwitchedOn(algorithm, options) && algorithm.applies(g)) {
      out.push_back(&algorithm);
    }
  }
  return out;
}

const ConvAlgorithm* FindConvAlgorithm(const std::string& name) {
  for (const ConvAlgorithm& algorithm : ConvAlgorithmTable()) {
    if (name == algorithm.name) return &algorithm;
  }
  return nullptr;
}

}  // namespace mxlite
