/*
 * Load-time tuning of convolution algorithms (RuntimeOptions::conv_tuning).
 *
 * The algorithm table (conv_algorithms.h) picks an algorithm per layer by
 * heuristics (each entry's `pays`), measured on the machines the project
 * was tuned on. Another processor may want other choices: one 512-bit FMA
 * unit instead of two, a 32 KiB L1 or a 1 MiB L2 move the points where
 * Winograd, the shifted-view GEMM or im2col wins. With conv_tuning on,
 * every layer that more than one entry computes times them all, once, on
 * the predictor's thread pool, and takes the fastest.
 *
 * How a layer is timed: each candidate is prepared from the layer's real
 * weights and run on deterministic pseudo-random input at the bound batch
 * size, once to warm up (page faults, caches), then up to kTimedRuns
 * times, stopping as soon as a run is twice the best time so far; its
 * shortest run counts. Another candidate replaces the heuristic's choice
 * only when it is at least kMargin faster, so noise does not flip a
 * choice that the heuristic had right. A layer whose trial buffers (input,
 * output, residual, workspace) would exceed kMaxTuningBytes or the
 * predictor's memory budget keeps the heuristic's choice.
 *
 * Choices are kept per process, keyed by the processor model
 * (CpuModelName), the kernel set in use (the GEMM micro-kernel's name,
 * which names the instruction set the kernel families chose), the thread count, the
 * layer's geometry with its batch size and its fused attributes. With
 * tuning_cache naming a file they are also read from it and written to it,
 * so later processes on the same processor model reuse them: one choice
 * per line,
 *
 *   mxlite-conv-tuning-1 <TAB> cpu <TAB> kernels <TAB> threads <TAB> layer <TAB> algorithm
 *
 * A line that does not parse, or names an algorithm the table does not
 * have or that does not apply to the layer, is ignored and the layer is
 * timed again; lines for other processors are kept. The file is rewritten
 * whole through a temporary file and a rename, so a reader never sees half
 * of one; a file over kMaxCacheFileBytes is not read. A cache that cannot
 * be written is an error naming the path.
 */
#ifndef MXLITE_OPERATORS_CONV_TUNING_H_
#define MXLITE_OPERATORS_CONV_TUNING_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "../base/status.h"
#include "conv_algorithms.h"

namespace mxlite {

// Prepares `algorithm`'s kernel for the layer being tuned, from its weights.
using PrepareConvCandidate =
    std::function<Status(const ConvAlgorithm* algorithm, std::unique_ptr<ConvKernel>* kernel)>;

struct ConvTuningRequest {
  ConvGeometry geometry;        // with the batch size the predictor runs
  std::string fusion_form;      // the fused attributes (bias, BatchNorm, clamp, residual)
  bool has_residual = false;    // the layer adds a residual input
  std::vector<const ConvAlgorithm*> candidates;  // ApplicableConvAlgorithms
  const ConvAlgorithm* heuristic = nullptr;      // ChooseConvAlgorithm's entry
  ThreadPool* pool = nullptr;   // the predictor's threads (null: this thread)
  std::string cache_path;       // RuntimeOptions::tuning_cache ("" : none)
  uint64_t max_bytes = 0;       // most bytes the trial runs may allocate (the memory budget)
};

// The tuned choice for the layer (from the process's table, the cache file,
// or by timing): one of request.candidates.
Status TuneConvAlgorithm(const ConvTuningRequest& request, const PrepareConvCandidate& prepare,
                         const ConvAlgorithm** chosen);

}  // namespace mxlite

#endif  // MXLITE_OPERATORS_CONV_TUNING_H_
