#include "thread_pool.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <system_error>
#include <utility>

namespace mxlite {

int ThreadPool::DefaultThreads() {
#if MXLITE_THREADS
  const unsigned hardware = std::thread::hardware_concurrency();
  return hardware == 0 ? 1 : static_cast<int>(std::min<unsigned>(hardware, kMaxThreads));
#else
  return 1;
#endif  // MXLITE_THREADS
}

std::shared_ptr<ThreadPool> SharedThreadPool(int threads, int spin_ms) {
  if (threads <= 0) threads = ThreadPool::DefaultThreads();
  threads = std::min(threads, ThreadPool::kMaxThreads);
#if MXLITE_THREADS
  static std::mutex mutex;
  static std::map<std::pair<int, int>, std::weak_ptr<ThreadPool>>* pools =
      new std::map<std::pair<int, int>, std::weak_ptr<ThreadPool>>();  // lives to exit
  std::lock_guard<std::mutex> lock(mutex);
  std::weak_ptr<ThreadPool>& slot = (*pools)[{threads, spin_ms}];
  std::shared_ptr<ThreadPool> pool = slot.lock();
  if (!pool) {
    pool = std::make_shared<ThreadPool>(threads, spin_ms);
    slot = pool;
  }
  return pool;
#else
  return std::make_shared<ThreadPool>(threads, spin_ms);
#endif  // MXLITE_THREADS
}

#if MXLITE_THREADS

namespace thread_pool_cc {

// Polls `done` (yielding between polls) until it returns true or the spin
// time is over; returns its last answer.
template <typename Done>
bool SpinUntil(std::chrono::steady_clock::duration spin, const Done& done) {
  const auto deadline = std::chrono::steady_clock::now() + spin;
  for (unsigned poll = 0;; ++poll) {
    if (done()) return true;
    // Reading the clock costs more than a poll: every 64th.
    if ((poll & 63) == 0 && std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::yield();
  }
}

}  // namespace thread_pool_cc

// Measured on a 2-core virtual machine (see BENCHMARKS.md, "Thread pool
// spin"): a core left idle for a few milliseconds takes long to come back,
// so idle threads poll for the next loop a while (100 ms by default, like
// the block time of the OpenMP runtimes) before they sleep.
ThreadPool::ThreadPool(int threads, int spin_ms)
    : threads_(std::max(1, std::min(threads, kMaxThreads))),
      spin_(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::milliseconds(std::max(0, spin_ms)))) {
  workers_.reserve(static_cast<size_t>(threads_ - 1));
  ranges_.reset(new OwnedRange[static_cast<size_t>(threads_)]);
  for (int i = 1; i < threads_; ++i) {
#ifndef MXLITE_NO_EXCEPTIONS
    // The system may refuse a thread (address space, a process limit):
    // keep the workers made so far instead of letting the exception leave
    // the constructor, whose vector of still joinable threads would then
    // terminate the process.
    try {
      workers_.emplace_back([this, i] { WorkerLoop(i); });
    } catch (const std::system_error&) {
      break;
    }
#else
    workers_.emplace_back([this, i] { WorkerLoop(i); });
#endif  // !MXLITE_NO_EXCEPTIONS
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

void ThreadPool::RunTasks(const std::function<void(int64_t)>& fn, int thread, int64_t chunk) {
  int64_t done = 0;
  // Its own range first, then the others' in turn.
  for (int k = 0; k < threads_; ++k) {
    OwnedRange& range = ranges_[static_cast<size_t>((thread + k) % threads_)];
    const int64_t end = range.end;
    for (int64_t first = range.next.fetch_add(chunk); first < end;
         first = range.next.fetch_add(chunk)) {
      const int64_t last = std::min(end, first + chunk);
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
#endif  // !MXLITE_NO_EXCEPTIONS
        ++done;
      }
    }
  }
  finished_.fetch_add(done);
}

void ThreadPool::WorkerLoop(int thread) {
  uint64_t seen = 0;
  while (true) {
    // Spin a while for the next loop, then sleep.
    thread_pool_cc::SpinUntil(spin_, [&] { return generation_.load() != seen; });
    const std::function<void(int64_t)>* job = nullptr;
    int64_t chunk = 1;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return generation_.load() != seen; });
      seen = generation_.load();
      if (stopping_) return;
      if (job_ == nullptr) continue;
      // Joining under the lock, counted in active_, guarantees the caller
      // does not retire the job (and its fn) while this thread holds it.
      job = job_;
      chunk = job_chunk_;
      ++active_;
    }
    RunTasks(*job, thread, chunk);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --active_;
    }
    done_.notify_all();
  }
}

void ThreadPool::ParallelFor(int64_t count, const std::function<void(int64_t)>& fn) {
  // Busy with another thread's loop (a predictor sharing the pool) or with
  // this thread's own (a loop inside a task): run this loop here.
  std::unique_lock<std::mutex> call_lock(call_mutex_, std::try_to_lock);
  if (!call_lock.owns_lock()) {
    for (int64_t i = 0; i < count; ++i) fn(i);
    return;
  }
  // Indices are taken a chunk at a time: with one atomic increment per
  // index, small tasks (a depthwise 7x7 plane, well under a microsecond)
  // spent more time on the counter than computing once another thread
  // took from the same range. Eight chunks per thread still balance uneven
  // tasks; a loop of up to 8 * threads tasks keeps one index per chunk.
  const int64_t chunk = std::max<int64_t>(1, count / (int64_t{threads_} * 8));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &fn;
    job_chunk_ = chunk;
    for (int t = 0; t < threads_; ++t) {
      OwnedRange& range = ranges_[static_cast<size_t>(t)];
      range.next.store(count * t / threads_);
      range.end = count * (t + 1) / threads_;
    }
    finished_.store(0);
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  RunTasks(fn, 0, chunk);
  // The workers usually finish within microseconds of the caller; sleeping
  // on done_ instead would add a futex wake-up (tens of microseconds) to
  // every loop, which is most of a small operator's time.
  const auto all_done = [&] { return finished_.load() == count && active_.load() == 0; };
  thread_pool_cc::SpinUntil(spin_, all_done);
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
#endif  // !MXLITE_NO_EXCEPTIONS
}

#else  // no threads

ThreadPool::ThreadPool(int, int) : threads_(1) {}
ThreadPool::~ThreadPool() = default;
void ThreadPool::ParallelFor(int64_t count, const std::function<void(int64_t)>& fn) {
  for (int64_t i = 0; i < count; ++i) fn(i);
}

#endif  // MXLITE_THREADS

}  // namespace mxlite
