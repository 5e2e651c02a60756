#include "options.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "config.h"

#if defined(__unix__) || defined(__APPLE__)
#include <sys/resource.h>
#include <unistd.h>
#endif  // defined(__unix__) || defined(__APPLE__)

namespace mxlite {

const RuntimeOptionInfo kRuntimeOptionList[] = {
    {"threads", "MXLITE_NUM_THREADS", "integer >= 0",
     "threads a forward pass splits its work over, the caller's included; 0: one per core; "
     "more than 256 is clamped to 256"},
    {"spin_ms", "MXLITE_SPIN_MS", "integer >= 0",
     "milliseconds idle pool threads poll for the next loop before sleeping (default 100; "
     "0 where idle cores matter more than latency)"},
    {"share_threads", "MXLITE_SHARE_THREADS", "switch",
     "predictors with the same thread count share one pool of threads (default on)"},
    {"graph_optimization", "MXLITE_GRAPH_OPT", "switch",
     "fuse operators and write Concat inputs in place (default on)"},
    {"fold_constants", "MXLITE_FOLD_CONSTANTS", "switch",
     "with graph_optimization: compute the nodes that only rearrange parameters (the "
     "attention weights GluonNLP joins, Gluon's recurrent parameters) once, at load, and keep "
     "the results beside the parameters (default on; off saves that memory)"},
    {"split_batch", "MXLITE_SPLIT_BATCH", "auto, or a switch",
     "run a batch of several images one image at a time, each thread on its own images, "
     "where every operator computes images apart: auto (the default) where the model's "
     "weights are smaller than one image's intermediate results, on wherever the operators "
     "allow, off: the whole batch layer by layer, all threads on each layer"},
    {"winograd", "MXLITE_WINOGRAD", "switch",
     "Winograd convolution algorithms (default on)"},
    {"shifted_gemm", "MXLITE_SHIFTED_GEMM", "switch",
     "the shifted-view GEMM convolution (default on)"},
    {"compact_weights", "MXLITE_COMPACT_WEIGHTS", "switch",
     "keep the weights only as the params file holds them, with no packed, Winograd or "
     "BatchNorm-folded copies (but the few KiB a stem's direct kernel packs): about half the "
     "memory, slower convolutions (default off)"},
    {"conv_tuning", "MXLITE_CONV_TUNING", "switch",
     "time every convolution algorithm that applies to a layer when the predictor is created "
     "and take the fastest, instead of the built-in heuristics (default off; see "
     "docs/performance.md); on a GPU, cuDNN's three best-ranked algorithms and the cuBLAS "
     "form (docs/cuda.md)"},
    {"tuning_cache", "MXLITE_TUNING_CACHE", "a file path, or empty",
     "where conv_tuning keeps its choices, per processor model and thread count, so later "
     "predictors and processes reuse them instead of timing again (default: none, choices "
     "kept in the process only)"},
    {"profile", "MXLITE_PROFILE", "0, 1 or 2",
     "print time per operator type (1) or per node (2) to stderr when a predictor is freed: "
     "the mean of the passes after the first, the first apart"},
    {"memory_budget", "MXLITE_MEMORY_BUDGET", "bytes, with K/M/G suffix; 0: default",
     "most bytes a predictor holds besides the parameters (inputs, intermediate results, "
     "outputs, prepared weights, scratch); default: the machine's physical memory or the process's "
     "address-space limit, whichever is lower"},
    {"device", "MXLITE_DEVICE", "cpu, gpu or gpu:N",
     "where a predictor runs: the CPU, or CUDA GPU N (gpu is gpu:0); needs the library "
     "built by make cuda (docs/cuda.md). MXPredCreate's dev_type 2 sets it"},
    {"cudnn", "MXLITE_CUDNN", "auto, off, or a path",
     "GPU predictors: run convolutions through cuDNN, opened when the predictor is created: "
     "auto (the default) uses libcudnn.so.9 or .so.8 where the dynamic loader finds one and "
     "im2col with cuBLAS where not; a path names the library, which must load; off never "
     "uses cuDNN. The CPU ignores it"},
};
const int kRuntimeOptionCount =
    static_cast<int>(sizeof(kRuntimeOptionList) / sizeof(kRuntimeOptionList[0]));

bool ParseSwitch(const std::string& text, bool* value) {
  if (text == "1" || text == "true" || text == "on") {
    *value = true;
  } else if (text == "0" || text == "false" || text == "off") {
    *value = false;
  } else {
    return false;
  }
  return true;
}

namespace options_cc {

// A non-negative decimal integer with an optional K/M/G suffix (powers of
// 1024) when `scaled`; false on anything else, including overflow.
bool ParseCount(const std::string& text, bool scaled, uint64_t* value) {
  if (text.empty() || text[0] < '0' || text[0] > '9') return false;
  errno = 0;
  char* end = nullptr;
  const unsigned long long number = std::strtoull(text.c_str(), &end, 10);
  if (errno == ERANGE) return false;
  uint64_t scale = 1;
  if (scaled && *end != '\0') {
    switch (*end) {
      case 'k': case 'K': scale = uint64_t{1} << 10; break;
      case 'm': case 'M': scale = uint64_t{1} << 20; break;
      case 'g': case 'G': scale = uint64_t{1} << 30; break;
      default: return false;
    }
    ++end;
  }
  if (*end != '\0') return false;
  if (number > std::numeric_limits<uint64_t>::max() / scale) return false;
  *value = static_cast<uint64_t>(number) * scale;
  return true;
}

// A non-negative decimal integer, clamped to `limit` (however many digits).
bool ParseInt(const std::string& text, int limit, int* value) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return false;
  uint64_t number = std::numeric_limits<uint64_t>::max();
  ParseCount(text, false, &number);  // fails only on overflow: keeps the maximum
  *value = number > static_cast<uint64_t>(limit) ? limit : static_cast<int>(number);
  return true;
}

}  // namespace options_cc

Status SetRuntimeOption(RuntimeOptions* options, const std::string& name,
                        const std::string& value) {
  using options_cc::ParseInt;
  bool ok = false;
  const char* expected = "";
  for (int i = 0; i < kRuntimeOptionCount; ++i) {
    if (name == kRuntimeOptionList[i].name) expected = kRuntimeOptionList[i].values;
  }
  if (name == "threads") {
    // Clamped to the pool's limit: a mistyped 10^9 runs, with 256 threads.
    ok = ParseInt(value, std::numeric_limits<int>::max(), &options->threads);
  } else if (name == "spin_ms") {
    ok = ParseInt(value, 24 * 3600 * 1000, &options->spin_ms);
  } else if (name == "share_threads") {
    ok = ParseSwitch(value, &options->share_threads);
  } else if (name == "graph_optimization") {
    ok = ParseSwitch(value, &options->graph_optimization);
  } else if (name == "fold_constants") {
    ok = ParseSwitch(value, &options->fold_constants);
  } else if (name == "split_batch") {
    bool on = false;
    ok = value == "auto" || ParseSwitch(value, &on);
    options->split_batch = value == "auto" ? RuntimeOptions::SplitBatch::kAuto
                           : on            ? RuntimeOptions::SplitBatch::kOn
                                           : RuntimeOptions::SplitBatch::kOff;
  } else if (name == "winograd") {
    ok = ParseSwitch(value, &options->winograd);
  } else if (name == "shifted_gemm") {
    ok = ParseSwitch(value, &options->shifted_gemm);
  } else if (name == "compact_weights") {
    ok = ParseSwitch(value, &options->compact_weights);
  } else if (name == "conv_tuning") {
    ok = ParseSwitch(value, &options->conv_tuning);
  } else if (name == "tuning_cache") {
    // Any path; a NUL or newline cannot be part of one we write or read.
    ok = value.size() <= 4096 && value.find('\0') == std::string::npos &&
         value.find('\n') == std::string::npos;
    if (ok) options->tuning_cache = value;
  } else if (name == "profile") {
    ok = ParseInt(value, 3, &options->profile) && options->profile <= 2;
  } else if (name == "memory_budget") {
    ok = options_cc::ParseCount(value, true, &options->memory_budget);
  } else if (name == "cudnn") {
    // Any path, as for tuning_cache.
    ok = !value.empty() && value.size() <= 4096 && value.find('\0') == std::string::npos &&
         value.find('\n') == std::string::npos;
    if (ok) options->cudnn = value;
  } else if (name == "device") {
    if (value == "cpu") {
      options->device_id = -1;
      ok = true;
    } else if (value == "gpu") {
      options->device_id = 0;
      ok = true;
    } else if (value.compare(0, 4, "gpu:") == 0) {
      ok = ParseInt(value.substr(4), 1 << 16, &options->device_id) && options->device_id < (1 << 16);
    }
  } else {
    std::string names;
    for (int i = 0; i < kRuntimeOptionCount; ++i) {
      names += (i ? ", " : "") + std::string(kRuntimeOptionList[i].name);
    }
    return Status::Error(StrCat("unknown option '", name, "' (options: ", names, ")"));
  }
  MXL_CHECK(ok, "option ", name, ": invalid value '", value, "' (expected ", expected, ")");
  return Status();
}

namespace options_cc {
ProcessOptions& Process() {
  static ProcessOptions options;
  return options;
}
}  // namespace options_cc

Status SetProcessOptions(const ProcessOptions& options) {
  MXL_CHECK(options.isa.empty() || options.isa == "scalar" || options.isa == "generic" ||
                options.isa == "avx2" || options.isa == "avx512",
            "MXLITE_ISA must be scalar, avx2 or avx512, not '", options.isa, "'");
  MXL_CHECK(options.engine.empty() || options.engine == "naive" || options.engine == "threaded",
            "MXLITE_ENGINE must be 'naive' or 'threaded', not '", options.engine, "'");
  MXL_CHECK(options.engine_threads >= 0 && options.engine_threads <= 4096,
            "MXLITE_ENGINE_THREADS must be a whole number from 1 to 4096, not ",
            options.engine_threads);
  MXL_CHECK(options.gemm_wide_tiles >= -1 && options.gemm_wide_tiles <= 1,
            "gemm_wide_tiles must be -1 (auto), 0 or 1, not ", options.gemm_wide_tiles);
  options_cc::Process() = options;
  return Status();
}

const ProcessOptions& GetProcessOptions() { return options_cc::Process(); }

uint64_t DefaultMemoryBudget() {
  uint64_t budget = std::numeric_limits<uint64_t>::max();
#if defined(__unix__) || defined(__APPLE__)
#if defined(_SC_PHYS_PAGES) && defined(_SC_PAGESIZE)
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page_size > 0) {
    budget = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
  }
#endif  // _SC_PHYS_PAGES && _SC_PAGESIZE
  struct rlimit limit;
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
      static_cast<uint64_t>(limit.rlim_cur) < budget) {
    budget = static_cast<uint64_t>(limit.rlim_cur);
  }
#endif  // __unix__ || __APPLE__
  return budget;
}

std::string FormatBytes(uint64_t bytes) {
  char text[32];
  if (bytes < (uint64_t{1} << 20)) {
    std::snprintf(text, sizeof(text), "%.1f KiB", static_cast<double>(bytes) / 1024.0);
  } else if (bytes < (uint64_t{1} << 30)) {
    std::snprintf(text, sizeof(text), "%.1f MiB", static_cast<double>(bytes) / 1048576.0);
  } else {
    std::snprintf(text, sizeof(text), "%.2f GiB", static_cast<double>(bytes) / 1073741824.0);
  }
  return text;
}

}  // namespace mxlite
