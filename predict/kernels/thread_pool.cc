#include "thread_pool.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <system_error>

namespace mxlite {

int ThreadPool::DefaultThreads() {
#if MXLITE_THREADS
  if (const char* env = std::getenv("MXLITE_NUM_THREADS")) {
    char* end = nullptr;
    const long value = std::strtol(env, &end, 10);
    if (end != env && value >= 1) return static_cast<int>(std::min<long>(value, kMaxThreads));
  }
  const unsigned hardware = std::thread::hardware_concurrency();
  return hardware == 0 ? 1 : static_cast<int>(std::min<unsigned>(hardware, kMaxThreads));
#else
  return 1;
#endif
}

#if MXLITE_THREADS

namespace thread_pool_cc {

// How long a worker keeps polling for the next loop (and the caller for the
// end of the current one) before it sleeps on a condition variable:
// MXLITE_SPIN_MS, default 100 ms, like the block time of the OpenMP runtimes.
// Measured on a 2-core virtual machine: a core left idle for a few
// milliseconds takes long to come back, and resnet18_v1 at 2 threads went
// from 12.5 to 15-22 ms (median) when inferences came 10-60 ms apart with a
// spin of ~9 ms; with a spin of ~170 ms it stayed at 12.5. Set it to 0
// where idle cores matter more than latency (battery-powered devices).
std::chrono::steady_clock::duration SpinDuration() {
  static const std::chrono::steady_clock::duration duration = [] {
    long milliseconds = 100;
    if (const char* env = std::getenv("MXLITE_SPIN_MS")) {
      char* end = nullptr;
      const long value = std::strtol(env, &end, 10);
      if (end != env && value >= 0) milliseconds = value;
    }
    return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::milliseconds(milliseconds));
  }();
  return duration;
}

// Polls `done` (yielding between polls) until it returns true or the spin
// time is over; returns its last answer.
template <typename Done>
bool SpinUntil(const Done& done) {
  const auto deadline = std::chrono::steady_clock::now() + SpinDuration();
  for (unsigned poll = 0;; ++poll) {
    if (done()) return true;
    // Reading the clock costs more than a poll: every 64th.
    if ((poll & 63) == 0 && std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::yield();
  }
}

}  // namespace thread_pool_cc

ThreadPool::ThreadPool(int threads) : threads_(std::max(1, std::min(threads, kMaxThreads))) {
  workers_.reserve(static_cast<size_t>(threads_ - 1));
  for (int i = 1; i < threads_; ++i) {
#ifndef MXLITE_NO_EXCEPTIONS
    // The system may refuse a thread (address space, a process limit):
    // keep the workers made so far instead of letting the exception leave
    // the constructor, whose vector of still joinable threads would then
    // terminate the process.
    try {
      workers_.emplace_back([this] { WorkerLoop(); });
    } catch (const std::system_error&) {
      break;
    }
#else
    workers_.emplace_back([this] { WorkerLoop(); });
#endif
  }
  threads_ = 1 + static_cast<int>(workers_.size());
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void ThreadPool::RunTasks(const std::function<void(int64_t)>& fn, int64_t count, int64_t chunk) {
  int64_t done = 0;
  for (int64_t first = next_index_.fetch_add(chunk); first < count;
       first = next_index_.fetch_add(chunk)) {
    const int64_t last = std::min(count, first + chunk);
    for (int64_t i = first; i < last; ++i) {
#ifndef MXLITE_NO_EXCEPTIONS
      // An exception (std::bad_alloc from a scratch buffer) must not escape
      // a worker thread, where it would terminate the process: keep the
      // first one for ParallelFor to rethrow on the calling thread.
      try {
        fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!error_) error_ = std::current_exception();
      }
#else
      fn(i);
#endif
      ++done;
    }
  }
  finished_.fetch_add(done);
}

void ThreadPool::WorkerLoop() {
  uint64_t seen = 0;
  while (true) {
    // Spin a while for the next loop, then sleep.
    thread_pool_cc::SpinUntil([&] { return generation_.load() != seen; });
    const std::function<void(int64_t)>* job = nullptr;
    int64_t count = 0, chunk = 1;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return generation_.load() != seen; });
      seen = generation_.load();
      if (stopping_) return;
      if (job_ == nullptr) continue;
      // Joining under the lock, counted in active_, guarantees the caller
      // does not retire the job (and its fn) while this thread holds it.
      job = job_;
      count = job_count_;
      chunk = job_chunk_;
      ++active_;
    }
    RunTasks(*job, count, chunk);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --active_;
    }
    done_.notify_all();
  }
}

void ThreadPool::ParallelFor(int64_t count, const std::function<void(int64_t)>& fn) {
  std::lock_guard<std::mutex> call_lock(call_mutex_);
  // Indices are taken a chunk at a time: with one atomic increment per
  // index, small tasks (a depthwise 7x7 plane, well under a microsecond)
  // spent more time passing the counter's cache line between the cores
  // than computing (MobileNet's 7x7 depthwise layers ran slower on two
  // threads than on one). Eight chunks per thread still balance uneven
  // tasks; a loop of up to 8 * threads tasks keeps one index per chunk.
  const int64_t chunk = std::max<int64_t>(1, count / (int64_t{threads_} * 8));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &fn;
    job_count_ = count;
    job_chunk_ = chunk;
    next_index_.store(0);
    finished_.store(0);
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  RunTasks(fn, count, chunk);
  // The workers usually finish within microseconds of the caller; sleeping
  // on done_ instead would add a futex wake-up (tens of microseconds) to
  // every loop, which is most of a small operator's time.
  const auto all_done = [&] { return finished_.load() == count && active_.load() == 0; };
  thread_pool_cc::SpinUntil(all_done);
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, all_done);
  job_ = nullptr;
#ifndef MXLITE_NO_EXCEPTIONS
  if (error_) {
    std::exception_ptr error = error_;
    error_ = nullptr;
    lock.unlock();
    std::rethrow_exception(error);
  }
#endif
}

#else  // no threads

ThreadPool::ThreadPool(int) : threads_(1) {}
ThreadPool::~ThreadPool() = default;
void ThreadPool::ParallelFor(int64_t count, const std::function<void(int64_t)>& fn) {
  for (int64_t i = 0; i < count; ++i) fn(i);
}

#endif  // MXLITE_THREADS

}  // namespace mxlite
