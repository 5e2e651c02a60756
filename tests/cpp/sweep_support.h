/*
 * What the differential sweep drivers (conv_sweep_test.cc,
 * pool_sweep_test.cc) share: a generator with the same sequence on every
 * platform, the command line, the run counts and the last line tests parse
 * ("N cases, M algorithm runs, F failures"), and the raw float32 arrays of
 * MXNet's cases.
 */
#ifndef MXLITE_TESTS_CPP_SWEEP_SUPPORT_H_
#define MXLITE_TESTS_CPP_SWEEP_SUPPORT_H_

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

namespace sweep_support {

// Equal sequences on every platform (std:: distributions are not).
struct Rng {
  uint64_t state;
  explicit Rng(uint64_t seed) : state(seed * 0x9e3779b97f4a7c15ull + 1) {}
  uint64_t Next() {
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 0x2545f4914f6cdd1dull;
  }
  int64_t Int(int64_t lo, int64_t hi) {  // [lo, hi]
    return lo + static_cast<int64_t>(Next() % static_cast<uint64_t>(hi - lo + 1));
  }
  bool Chance(int percent) { return Int(0, 99) < percent; }
  float Uniform() { return static_cast<float>((Next() >> 40) & 0xffffff) / 8388608.f - 1.f; }
  template <class T>
  T Pick(std::initializer_list<T> values) {
    return *(values.begin() + Int(0, static_cast<int64_t>(values.size()) - 1));
  }
};

struct Stats {
  int cases = 0, runs = 0, failures = 0;
  std::map<std::string, int> runs_by_algorithm;
  bool quiet = false;
};

// Counts a failure; prints the first 40.
inline void Fail(Stats* stats, const std::string& what) {
  ++stats->failures;
  if (stats->failures <= 40) std::printf("FAIL: %s\n", what.c_str());
}

struct SweepOptions {
  int64_t count = 300;
  uint64_t seed = 1;
  std::string mxnet_dir;
};

// [--cases N] [--seed S] [--mxnet DIR] [--quiet]; false (after the usage
// line) on anything else.
inline bool ParseSweepOptions(int argc, char** argv, const char* program, SweepOptions* options,
                              Stats* stats) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--cases" && i + 1 < argc) {
      options->count = std::atoll(argv[++i]);
    } else if (arg == "--seed" && i + 1 < argc) {
      options->seed = std::strtoull(argv[++i], nullptr, 10);
    } else if (arg == "--mxnet" && i + 1 < argc) {
      options->mxnet_dir = argv[++i];
    } else if (arg == "--quiet") {
      stats->quiet = true;
    } else {
      std::printf("usage: %s [--cases N] [--seed S] [--mxnet DIR] [--quiet]\n", program);
      return false;
    }
  }
  return true;
}

// The runs per algorithm (unless quiet) and the summary line; the exit code.
inline int FinishSweep(const Stats& stats) {
  if (!stats.quiet) {
    for (const auto& entry : stats.runs_by_algorithm) {
      std::printf("  %-28s %d runs\n", entry.first.c_str(), entry.second);
    }
  }
  std::printf("%d cases, %d algorithm runs, %d failures\n", stats.cases, stats.runs,
              stats.failures);
  return stats.failures == 0 ? 0 : 1;
}

// Exactly `count` little-endian float32 values, the whole file.
inline bool ReadFloats(const std::string& path, size_t count, std::vector<float>* out) {
  std::ifstream file(path, std::ios::binary);
  out->resize(count);
  file.read(reinterpret_cast<char*>(out->data()), static_cast<std::streamsize>(count * 4));
  return file.gcount() == static_cast<std::streamsize>(count * 4) && file.peek() == EOF;
}

}  // namespace sweep_support

#endif  // MXLITE_TESTS_CPP_SWEEP_SUPPORT_H_
