// core_latency: the round trip of a cache line between two CPUs, in ns.
//
//   core_latency [seconds] [cpu_a] [cpu_b]    (defaults: 0.5, 0, 1)
//
// Two threads, pinned to cpu_a and cpu_b, pass a counter back and forth
// through one atomic; the median over blocks of 1000 round trips is printed
// as {"cpus": [a, b], "round_trip_ns": X}. On a virtual machine it tells
// where the host put the two virtual CPUs: about 50 ns when they share a
// core complex (and its L3), about 300 ns when they do not (seen on one
// Zen 4 host, switching every few seconds to minutes). mxlite's two-thread
// latency follows it (BENCHMARKS.md, "CPU performance on Zen 4";
// scripts/bench/placement_check.py measures both side by side).
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

std::atomic<long> ball{0};

bool PinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

// The partner returns every odd value as the next even one, until it sees -1.
void Partner(int cpu) {
  PinTo(cpu);
  for (long expected = 1;; expected += 2) {
    long seen;
    while ((seen = ball.load(std::memory_order_acquire)) != expected) {
      if (seen < 0) return;
    }
    ball.store(expected + 1, std::memory_order_release);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 0.5;
  const int cpu_a = argc > 2 ? std::atoi(argv[2]) : 0;
  const int cpu_b = argc > 3 ? std::atoi(argv[3]) : 1;
  std::thread partner(Partner, cpu_b);
  if (!PinTo(cpu_a)) {
    std::fprintf(stderr, "core_latency: cannot run on CPU %d\n", cpu_a);
    ball.store(-1);
    partner.join();
    return 1;
  }
  using Clock = std::chrono::steady_clock;
  constexpr int kTripsPerBlock = 1000;
  std::vector<double> block_ns;
  long value = 0;
  const auto start = Clock::now();
  while (std::chrono::duration<double>(Clock::now() - start).count() < seconds) {
    const auto begin = Clock::now();
    for (int trip = 0; trip < kTripsPerBlock; ++trip) {
      ball.store(value + 1, std::memory_order_release);
      while (ball.load(std::memory_order_acquire) != value + 2) {
      }
      value += 2;
    }
    block_ns.push_back(std::chrono::duration<double, std::nano>(Clock::now() - begin).count() /
                       kTripsPerBlock);
  }
  ball.store(-1, std::memory_order_release);
  partner.join();
  std::sort(block_ns.begin(), block_ns.end());
  std::printf("{\"cpus\": [%d, %d], \"round_trip_ns\": %.0f}\n", cpu_a, cpu_b,
              block_ns.empty() ? 0.0 : block_ns[block_ns.size() / 2]);
  return 0;
}
