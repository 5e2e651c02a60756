/*
 * RuntimeOptions: everything a predictor's behaviour depends on besides its
 * model and inputs: threads, how long idle threads spin, the graph
 * optimiser, algorithm switches, profiling and the memory budget.
 *
 * Front ends build one at their boundary: OptionsFromEnvironment
 * (c_api/environment.h, the only code that reads MXLITE_* variables) gives
 * the defaults, then the caller's own settings are applied by name with
 * SetRuntimeOption, the one form every front end can pass (C key/value
 * arrays, a Python dict, Java and Objective-C strings). The options are then
 * passed down: Executor::Create takes them, operators read theirs in Prepare
 * (PrepareContext), thread pools get their size and spin time.
 *
 * kRuntimeOptionList below is the one list of names: parsing, the
 * environment, the documentation (docs/options.md) and the tests all read it.
 */
#ifndef MXLITE_BASE_OPTIONS_H_
#define MXLITE_BASE_OPTIONS_H_

#include <cstdint>
#include <string>

#include "status.h"

namespace mxlite {

struct RuntimeOptions {
  // Threads a forward pass may split its work over, the caller's included;
  // 0: one per core. At most ThreadPool::kMaxThreads (larger is clamped).
  int threads = 0;
  // How long a pool's idle threads poll for the next loop before sleeping.
  int spin_ms = 100;
  // Predictors with equal thread counts and spin times share one pool of
  // threads (a pool busy with another predictor's loop runs the loop on
  // the caller's thread instead); false gives each predictor its own.
  bool share_threads = true;
  // Fuse operators (graph/fuse.h) and write Concat inputs in place.
  bool graph_optimization = true;
  // With graph_optimization, compute once the nodes that only rearrange
  // parameters (executor.cc, FoldConstants).
  bool fold_constants = true;
  // Run a batch one image at a time, each thread on images of its own, when
  // every operator computes the images of a batch apart (executor.h,
  // "Splitting a batch"): kAuto where that also saves memory traffic, kOn
  // wherever the operators allow; kOff: the whole batch layer by layer.
  enum class SplitBatch { kOff, kOn, kAuto };
  SplitBatch split_batch = SplitBatch::kAuto;
  // Convolution algorithm switches, for comparing and debugging.
  bool winograd = true;
  bool shifted_gemm = true;
  // Keep the weights only as the params file holds them: no packed,
  // Winograd-transformed or BatchNorm-folded copies (convolutions read the
  // parameters in place, more slowly). About one copy of the params file
  // per model instead of two to four.
  bool compact_weights = false;
  // 0: off; 1: time per operator type; 2: per node; printed to stderr when
  // the predictor is freed.
  int profile = 0;
  // Time the convolution algorithms that apply to each layer when it is
  // prepared and take the fastest (operators/conv_tuning.h), instead of the
  // table's heuristics; choices are kept per processor model and thread
  // count, in tuning_cache when that names a file.
  bool conv_tuning = false;
  std::string tuning_cache;
  // Bytes a predictor may allocate for its activations (inputs, planned
  // intermediate results, outputs, scratch), checked before allocating.
  // 0: DefaultMemoryBudget().
  uint64_t memory_budget = 0;
  // Where the predictor runs: -1 the CPU, N >= 0 CUDA device N (a build
  // with the CUDA backend; see executor/device.h).
  int device_id = -1;
  // GPU predictors: which cuDNN runs their convolutions (cuda/cudnn_library.h):
  // "auto" (libcudnn.so.9 or .so.8 where the loader finds one), "off", or
  // the path of the library.
  std::string cudnn = "auto";
};

// Settings of the whole process, not of one predictor: kernels choose their
// instruction set once, and mx.nd has one engine. Front ends apply them
// (SetProcessOptions) before the first predictor or array exists; later
// calls change nothing already made.
struct ProcessOptions {
  // Caps the instruction set kernels use: "" (the processor's best),
  // "scalar", "avx2" or "avx512" (MXLITE_ISA).
  std::string isa;
  // mx.nd's engine: "" or "threaded", or "naive" (MXLITE_ENGINE), and the
  // threaded engine's worker count, 0 for its default (MXLITE_ENGINE_THREADS).
  std::string engine;
  int engine_threads = 0;
  // Threads mx.nd's operators split their work over, 0: one per core
  // (MXLITE_NUM_THREADS, as for predictors).
  int nd_threads = 0;
  // Prepared weights in transparent huge pages where the system has them
  // (base/large_pages.h; MXLITE_HUGE_PAGES=0 turns it off).
  bool huge_pages = true;
  // The AVX-512 GEMM's wide tiles (a row's last 41-52 columns as one tile,
  // kernels/gemm_x86.cc): -1 by the processor's vendor (on for AMD, off
  // elsewhere), 0 off, 1 on (MXLITE_GEMM_WIDE_TILES=auto|0|1). The results
  // are the same bits either way; only the speed differs.
  int gemm_wide_tiles = -1;
};

// Records `options` for the process; an invalid value is an error naming it.
Status SetProcessOptions(const ProcessOptions& options);
const ProcessOptions& GetProcessOptions();

// One option: its name (for SetRuntimeOption), its environment variable and
// what its values mean.
struct RuntimeOptionInfo {
  const char* name;
  const char* environment;
  const char* values;
  const char* meaning;
};

extern const RuntimeOptionInfo kRuntimeOptionList[];
extern const int kRuntimeOptionCount;

// Sets option `name` from its text form; an unknown name or a value out of
// range is an error naming both. Sizes take a K, M or G suffix (powers of
// 1024); switches take 1/0, true/false, on/off.
Status SetRuntimeOption(RuntimeOptions* options, const std::string& name,
                        const std::string& value);

// A switch's text form: 1/true/on or 0/false/off into *value; false for
// anything else. Every on/off setting, predictor or process, parses with it.
bool ParseSwitch(const std::string& text, bool* value);

// The budget used when memory_budget is 0: the physical memory of the
// machine, or the address-space limit of the process when that is lower;
// unlimited where neither is known.
uint64_t DefaultMemoryBudget();

// The effective budget of `options`.
inline uint64_t MemoryBudget(const RuntimeOptions& options) {
  return options.memory_budget != 0 ? options.memory_budget : DefaultMemoryBudget();
}

// "12.3 MiB": a byte count for messages.
std::string FormatBytes(uint64_t bytes);

}  // namespace mxlite

#endif  // MXLITE_BASE_OPTIONS_H_
