/*
 * ThreadPool: a persistent set of worker threads that split one loop.
 *
 * ParallelFor(count, fn) runs fn(0) ... fn(count - 1), each index exactly
 * once, on the workers and on the calling thread, and returns when all are
 * done. Thread t of T (the caller is thread 0) owns the contiguous range
 * [t * count / T, (t + 1) * count / T) and runs it first, so that
 * consecutive layers split the same way give each thread the same part of
 * every tensor: the data a task reads was written by its own core and is in
 * its own L2, not the other core's (thread-local data flow). A thread done
 * with its range then takes what is left of the others' ranges, a chunk of
 * consecutive indices at a time (about eight chunks per thread), so uneven
 * tasks and a late or preempted thread still balance. Workers spin
 * (yielding) after a loop before sleeping, because operators come in quick
 * succession and waking a sleeping thread costs more than a small
 * operator; for the same reason the caller spins while the last tasks
 * finish on the workers before it sleeps. The spin lasts the pool's spin
 * time (RuntimeOptions::spin_ms; 0: sleep at once).
 *
 * A pool has at most kMaxThreads threads (larger requests are clamped),
 * and fewer when the system refuses to create more (an address-space or
 * process limit): it then runs with the workers it could make.
 *
 * One loop runs at a time per pool. A pool may serve several predictors
 * (SharedThreadPool): a caller that finds it busy with another thread's
 * loop runs its own loop on its own thread instead of waiting, and so does
 * a loop started from inside a task.
 * An exception thrown by a task is rethrown by ParallelFor on the calling
 * thread once every task has finished.
 * Without thread support (MXLITE_NO_THREADS, on by default for WebAssembly
 * without atomics; see base/config.h) the pool has no workers and runs every loop on the calling thread.
 */
#ifndef MXLITE_KERNELS_THREAD_POOL_H_
#define MXLITE_KERNELS_THREAD_POOL_H_

#include <cstdint>
#include <functional>
#include <memory>

#include "../base/config.h"

// config.h decides (MXLITE_NO_THREADS, defaulted from the target).
#ifdef MXLITE_NO_THREADS
#define MXLITE_THREADS 0
#else
#define MXLITE_THREADS 1
#endif  // MXLITE_NO_THREADS

#if MXLITE_THREADS
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>
#endif  // MXLITE_THREADS

namespace mxlite {

class ThreadPool {
 public:
  // The most threads a pool runs (the caller included). Far more than any
  // operator can use, and few enough that a mistyped count (10^9) does not
  // try to reserve an address space the size of the machine's for stacks.
  static constexpr int kMaxThreads = 256;

  // `threads` counts the caller: 1 means no workers. Clamped to
  // [1, kMaxThreads]; size() is lower when thread creation failed.
  // `spin_ms`: how long idle threads poll before sleeping.
  explicit ThreadPool(int threads, int spin_ms = 100);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return threads_; }
  void ParallelFor(int64_t count, const std::function<void(int64_t)>& fn);

  // Threads to use by default: the number of hardware threads (1 where
  // threads are unavailable), at most kMaxThreads.
  static int DefaultThreads();

 private:
  int threads_ = 1;
#if MXLITE_THREADS
  void WorkerLoop(int thread);
  void RunTasks(const std::function<void(int64_t)>& fn, int thread, int64_t chunk);

  // The indices thread t owns in the current loop: next (taken a chunk at
  // a time, by t and then by threads that finished their own) up to end.
  // One cache line each, so that taking one's own indices passes no line
  // between the cores.
  struct alignas(64) OwnedRange {
    std::atomic<int64_t> next{0};
    int64_t end = 0;
  };
  std::unique_ptr<OwnedRange[]> ranges_;

  std::vector<std::thread> workers_;
  std::chrono::steady_clock::duration spin_;
  std::mutex call_mutex_;          // held by the thread whose loop runs
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  const std::function<void(int64_t)>* job_ = nullptr;
  int64_t job_chunk_ = 1;  // indices taken per atomic increment
  std::atomic<int64_t> finished_{0};
  std::atomic<uint64_t> generation_{0};
  // Workers inside the current job (changed under mutex_, read without it
  // by the caller's spin while it waits for the job to finish).
  std::atomic<int> active_{0};
#ifndef MXLITE_NO_EXCEPTIONS
  std::exception_ptr error_;  // first exception of the current job (mutex_)
#endif  // !MXLITE_NO_EXCEPTIONS
  bool stopping_ = false;
#endif  // MXLITE_THREADS
};

// The process's pool of `threads` threads (0: DefaultThreads()) spinning
// `spin_ms`, made on first request and kept while some predictor holds it:
// predictors asking for the same pool share its threads instead of each
// starting its own.
std::shared_ptr<ThreadPool> SharedThreadPool(int threads, int spin_ms);

// Runs fn over [0, count) on `pool`, or inline when pool is null or the
// loop is too small to share.
inline void ParallelFor(ThreadPool* pool, int64_t count, const std::function<void(int64_t)>& fn) {
  if (pool == nullptr || pool->size() <= 1 || count <= 1) {
    for (int64_t i = 0; i < count; ++i) fn(i);
    return;
  }
  pool->ParallelFor(count, fn);
}

// Runs fn(begin, end) over [0, count) in consecutive ranges of `chunk`
// elements (the last one shorter), on `pool` as ParallelFor does: thread t
// of T takes about the t-th T-th of the elements first. Without a pool to
// share, one call over everything (a loop cut into ranges ran slower).
inline void ParallelRanges(ThreadPool* pool, int64_t count, int64_t chunk,
                           const std::function<void(int64_t, int64_t)>& fn) {
  if (pool == nullptr || pool->size() <= 1 || count <= chunk) {
    if (count > 0) fn(0, count);
    return;
  }
  const int64_t pieces = (count + chunk - 1) / chunk;
  ParallelFor(pool, pieces, [&](int64_t piece) {
    const int64_t begin = piece * chunk;
    fn(begin, count - begin < chunk ? count : begin + chunk);
  });
}

}  // namespace mxlite

#endif  // MXLITE_KERNELS_THREAD_POOL_H_
