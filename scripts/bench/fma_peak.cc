// fma_peak: the single-precision FMA rate one core (or N threads) reaches,
// in GFLOP/s (an FMA counts as 2 FLOPs), for scripts/arith_bound.py.
//
//   fma_peak [threads] [avx512|avx2]   prints {"isa": ..., "threads": N, "gflops": X}
//
// Twelve independent accumulators per thread (more than latency x pipes on
// any current x86-64 core), the widest vector the CPU reports through CPUID:
// AVX-512, else AVX2+FMA, or the one named. The best of five runs of ~0.2 s
// each. AVX-512 at twice AVX2's rate means two 512-bit FMA units per core
// (Zen 5, Ice Lake/Sapphire Rapids Xeon Gold); the same rate means one, or
// 512-bit operations split in two halves (Zen 4).
#include <immintrin.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

constexpr int kChains = 12;

__attribute__((target("avx512f"))) float RunAvx512(long iterations) {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (long n = 0; n < iterations; ++n) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  }
  alignas(64) float lanes[16];
  __m512 sum = acc[0];
  for (int i = 1; i < kChains; ++i) sum = _mm512_add_ps(sum, acc[i]);
  _mm512_store_ps(lanes, sum);
  return lanes[0];
}

__attribute__((target("avx2,fma"))) float RunAvx2(long iterations) {
  __m256 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i));
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (long n = 0; n < iterations; ++n) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  }
  alignas(32) float lanes[8];
  __m256 sum = acc[0];
  for (int i = 1; i < kChains; ++i) sum = _mm256_add_ps(sum, acc[i]);
  _mm256_store_ps(lanes, sum);
  return lanes[0];
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  const char* wanted = argc > 2 ? argv[2] : "";
  __builtin_cpu_init();
  const bool has_avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  bool avx512 = __builtin_cpu_supports("avx512f");
  if (std::strcmp(wanted, "avx2") == 0) avx512 = false;
  if ((!avx512 && !has_avx2) || (std::strcmp(wanted, "avx512") == 0 && !avx512)) {
    std::printf("{\"isa\": null}\n");
    return 0;
  }
  const int lanes = avx512 ? 16 : 8;
  const long iterations = avx512 ? 4000000 : 8000000;
  double best = 0;
  for (int run = 0; run < 5; ++run) {
    std::vector<std::thread> pool;
    volatile float sink = 0;
    const auto start = std::chrono::steady_clock::now();
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&] { sink = avx512 ? RunAvx512(iterations) : RunAvx2(iterations); });
    }
    for (auto& thread : pool) thread.join();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double gflops = 2.0 * kChains * lanes * iterations * threads / seconds / 1e9;
    if (gflops > best) best = gflops;
  }
  std::printf("{\"isa\": \"%s\", \"threads\": %d, \"gflops\": %.1f}\n",
              avx512 ? "avx512" : "avx2", threads, best);
  return 0;
}
