#include "conv_tuning.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>

#include "../base/mutex.h"
#include "../kernels/cpu_features.h"
#include "../kernels/gemm.h"
#include "../kernels/thread_pool.h"

namespace mxlite {

namespace conv_tuning_cc {

constexpr int kTimedRuns = 5;
// Another algorithm must beat the heuristic's choice by this fraction.
constexpr double kMargin = 0.03;
// Input, output, residual and workspace of one layer's trial runs.
constexpr uint64_t kMaxTuningBytes = uint64_t{512} << 20;

// The kernels in use, as the GEMM family names its micro-kernel
// ("avx512-12x32"): the families choose their instruction set together, so
// this names the set the timings were made with (MXLITE_ISA changes it).
std::string KernelSetName() { return GemmKernels().kernel->name; }

// What a choice is filed under, besides the processor and kernel set.
struct LayerKey {
  int threads;
  std::string layer;  // geometry with batch; fused attributes
  bool operator<(const LayerKey& other) const {
    return threads != other.threads ? threads < other.threads : layer < other.layer;
  }
};

struct Table {
  Mutex mutex;
  std::map<LayerKey, std::string> choices;  // this processor and ISA
  // Cache files read so far: their lines for other processors, kept when
  // the file is written again.
  std::map<std::string, std::vector<std::string>> foreign_lines;
  std::map<std::string, bool> files_read;
  // The choices each cache file holds (read from it, or written to it).
  std::map<std::string, std::set<LayerKey>> in_file;
};

Table& ProcessTable() {
  static Table* table = new Table();  // never destroyed: used until exit
  return *table;
}

std::vector<std::string> SplitTabs(const std::string& line) {
  std::vector<std::string> fields;
  size_t start = 0;
  while (true) {
    const size_t tab = line.find('\t', start);
    fields.push_back(line.substr(start, tab == std::string::npos ? std::string::npos
                                                                 : tab - start));
    if (tab == std::string::npos) return fields;
    start = tab + 1;
  }
}

bool ParseThreads(const std::string& text, int* threads) {
  if (text.empty() || text.size() > 4 || text.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  *threads = std::atoi(text.c_str());
  return *threads > 0;
}

#ifndef MXLITE_NO_FILES
constexpr const char* kCacheTag = "mxlite-conv-tuning-1";
constexpr long kMaxCacheFileBytes = 4L << 20;

// Reads `path` into the table once per process (a missing file is empty).
void ReadCacheFile(Table& table, const std::string& path) {
  if (table.files_read[path]) return;
  table.files_read[path] = true;
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) return;
  std::string text;
  if (std::fseek(file, 0, SEEK_END) == 0) {
    const long size = std::ftell(file);
    if (size > 0 && size <= kMaxCacheFileBytes && std::fseek(file, 0, SEEK_SET) == 0) {
      text.resize(static_cast<size_t>(size));
      if (std::fread(&text[0], 1, text.size(), file) != text.size()) text.clear();
    }
  }
  std::fclose(file);
  const std::string kernels = KernelSetName();
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    const std::vector<std::string> fields = SplitTabs(line);
    int threads = 0;
    if (fields.size() != 6 || fields[0] != kCacheTag || !ParseThreads(fields[3], &threads) ||
        fields[4].empty() || FindConvAlgorithm(fields[5]) == nullptr) {
      continue;  // not a line of ours: dropped when the file is written again
    }
    if (fields[1] == CpuModelName() && fields[2] == kernels) {
      table.choices[LayerKey{threads, fields[4]}] = fields[5];
      table.in_file[path].insert(LayerKey{threads, fields[4]});
    } else {
      table.foreign_lines[path].push_back(line);
    }
  }
}

// Writes every choice of this processor and the foreign lines to `path`.
Status WriteCacheFile(Table& table, const std::string& path) {
  std::string text;
  for (const std::string& line : table.foreign_lines[path]) text += line + "\n";
  const std::string prefix =
      StrCat(kCacheTag, "\t", CpuModelName(), "\t", KernelSetName(), "\t");
  for (const auto& choice : table.choices) {
    text += StrCat(prefix, choice.first.threads, "\t", choice.first.layer, "\t", choice.second,
                   "\n");
  }
  const std::string temporary = path + ".tmp";
  std::FILE* file = std::fopen(temporary.c_str(), "wb");
  MXL_CHECK(file != nullptr, "tuning_cache: cannot write '", path, "' (through '", temporary,
            "'): ", std::strerror(errno));
  const bool written = std::fwrite(text.data(), 1, text.size(), file) == text.size();
  const bool closed = std::fclose(file) == 0;
  if (!written || !closed || std::rename(temporary.c_str(), path.c_str()) != 0) {
    const int error = errno;
    std::remove(temporary.c_str());
    return Status::Error(StrCat("tuning_cache: cannot write '", path, "': ",
                                std::strerror(error)));
  }
  std::set<LayerKey>& written_keys = table.in_file[path];
  for (const auto& choice : table.choices) written_keys.insert(choice.first);
  return Status();
}
#else
void ReadCacheFile(Table&, const std::string&) {}
Status WriteCacheFile(Table&, const std::string& path) {
  return Status::Error(StrCat("tuning_cache: this build opens no files (MXLITE_NO_FILES), so "
                              "conv_tuning cannot keep its choices in '", path, "'"));
}
#endif  // !MXLITE_NO_FILES

// Floats in [-1, 1) from a fixed linear congruential sequence.
void FillPseudoRandom(float* values, int64_t count) {
  uint32_t state = 12345u;
  for (int64_t i = 0; i < count; ++i) {
    state = state * 1664525u + 1013904223u;
    values[i] = static_cast<float>(state >> 8) / 8388608.0f - 1.0f;
  }
}

double Seconds(std::chrono::steady_clock::duration duration) {
  return std::chrono::duration<double>(duration).count();
}

// The shortest of a few runs of `kernel` (seconds), or an error.
Status TimeKernel(const ConvKernel& kernel, ConvCall call, double best_so_far, double* seconds) {
  MXL_RETURN_IF_ERROR(kernel.Forward(call));  // warm-up
  double shortest = -1.0;
  for (int run = 0; run < kTimedRuns; ++run) {
    const auto start = std::chrono::steady_clock::now();
    MXL_RETURN_IF_ERROR(kernel.Forward(call));
    const double elapsed = Seconds(std::chrono::steady_clock::now() - start);
    if (shortest < 0 || elapsed < shortest) shortest = elapsed;
    if (best_so_far > 0 && elapsed > 2.0 * best_so_far) break;
  }
  *seconds = shortest;
  return Status();
}

Status TimeCandidates(const ConvTuningRequest& request, const PrepareConvCandidate& prepare,
                      const ConvAlgorithm** chosen) {
  const ConvGeometry& g = request.geometry;
  // Prepare every kernel first: the workspace is the largest of theirs.
  std::vector<std::unique_ptr<ConvKernel>> kernels(request.candidates.size());
  size_t workspace_bytes = 0;
  for (size_t i = 0; i < request.candidates.size(); ++i) {
    MXL_RETURN_IF_ERROR(prepare(request.candidates[i], &kernels[i]));
    workspace_bytes = std::max(workspace_bytes, kernels[i]->WorkspaceBytes());
  }
  const int64_t in_count = g.batch * g.channels * g.InSpatial();
  const int64_t out_count = g.batch * g.filters * g.OutSpatial();
  const int64_t workspace_count = static_cast<int64_t>(workspace_bytes / sizeof(float)) + 1;
  const uint64_t bytes = sizeof(float) * static_cast<uint64_t>(
      in_count + out_count * (request.has_residual ? 2 : 1) + workspace_count);
  if (bytes > kMaxTuningBytes || (request.max_bytes != 0 && bytes > request.max_bytes)) {
    *chosen = request.heuristic;
    return Status();
  }
  // Aligned like every buffer the executor gives a kernel; out of memory is
  // an error, not an abort.
  std::shared_ptr<Storage> input, output, residual, workspace;
  MXL_RETURN_IF_ERROR(Storage::Allocate(sizeof(float) * in_count, &input));
  MXL_RETURN_IF_ERROR(Storage::Allocate(sizeof(float) * out_count, &output));
  MXL_RETURN_IF_ERROR(Storage::Allocate(sizeof(float) * workspace_count, &workspace));
  float* data = static_cast<float*>(input->data());
  FillPseudoRandom(data, in_count);
  ConvCall call;
  if (request.has_residual) {
    MXL_RETURN_IF_ERROR(Storage::Allocate(sizeof(float) * out_count, &residual));
    FillPseudoRandom(static_cast<float*>(residual->data()), out_count);
    call.residual = static_cast<const float*>(residual->data());
  }
  call.batch = g.batch;
  call.data = data;
  call.output = static_cast<float*>(output->data());
  call.workspace = workspace->data();
  call.workspace_bytes = workspace_bytes;
  call.pool = request.pool;

  std::vector<double> seconds(request.candidates.size(), -1.0);
  double best = -1.0;
  for (size_t i = 0; i < request.candidates.size(); ++i) {
    MXL_RETURN_IF_ERROR(TimeKernel(*kernels[i], call, best, &seconds[i]));
    if (best < 0 || seconds[i] < best) best = seconds[i];
  }
  size_t fastest = 0;
  for (size_t i = 1; i < seconds.size(); ++i) {
    if (seconds[i] < seconds[fastest]) fastest = i;
  }
  *chosen = request.candidates[fastest];
  for (size_t i = 0; i < request.candidates.size(); ++i) {
    if (request.candidates[i] == request.heuristic &&
        seconds[fastest] > (1.0 - kMargin) * seconds[i]) {
      *chosen = request.heuristic;
    }
  }
  return Status();
}

}  // namespace conv_tuning_cc

Status TuneConvAlgorithm(const ConvTuningRequest& request, const PrepareConvCandidate& prepare,
                         const ConvAlgorithm** chosen) {
  using namespace conv_tuning_cc;
  MXL_CHECK(!request.candidates.empty(), "conv_tuning: no algorithm computes ",
            request.geometry.ToString());
  *chosen = request.heuristic ? request.heuristic : request.candidates.front();
  if (request.candidates.size() == 1) {
    *chosen = request.candidates.front();
    return Status();
  }
  const LayerKey key{request.pool ? request.pool->size() : 1,
                     StrCat(request.geometry.ToString(), "; ", request.fusion_form)};
  Table& table = ProcessTable();
  // One layer at a time: trial runs of two predictors would time each other.
  MutexLock lock(table.mutex);
  if (!request.cache_path.empty()) ReadCacheFile(table, request.cache_path);
  const auto known = table.choices.find(key);
  bool found = false;
  if (known != table.choices.end()) {
    for (const ConvAlgorithm* candidate : request.candidates) {
      if (known->second == candidate->name) {
        *chosen = candidate;
        found = true;
      }
    }
  }
  if (!found) {
    MXL_RETURN_IF_ERROR(TimeCandidates(request, prepare, chosen));
    table.choices[key] = (*chosen)->name;
  }
  // A new choice, or one this process made earlier, goes into a cache file
  // that lacks it (or held a line for the layer that could not be used).
  if (!request.cache_path.empty() &&
      (!found || table.in_file[request.cache_path].count(key) == 0)) {
    MXL_RETURN_IF_ERROR(WriteCacheFile(table, request.cache_path));
  }
  return Status();
}

}  // namespace mxlite
