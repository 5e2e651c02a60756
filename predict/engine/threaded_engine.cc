/*
 * The threaded engine: per-variable queues and a pool of worker threads.
 *
 * Each variable tracks the reads running (or ready), whether a write is
 * running (or ready), and a FIFO of operations waiting their turn. Push
 * appends the operation to each of its variables under one push lock, so
 * every variable sees operations in the same global push order. A read's
 * turn comes at once when no write is active or waiting ahead of it; a
 * write's turn when nothing at all is active or waiting. When a write
 * finishes, the reads queued right behind it all get their turn (they run
 * together), or else the next write; when the last active read finishes,
 * the write queued behind it gets its turn. An operation counts the
 * variables whose turn has not come (plus one while Push is appending); the
 * one that brings the count to zero hands it to the workers. Those orders
 * are exactly read-after-write, write-after-read and write-after-write per
 * variable, and nothing more.
 *
 * Waits are marker operations on the variable -- a read for WaitForVar, a
 * write for WaitToWrite -- that run inline when their turn comes: they take
 * the variable's failure at exactly that point in its order, release the
 * variable, and wake the waiting thread.
 */
#include "engine.h"

#include "engine_internal.h"

#ifndef MXLITE_NO_THREADS

#include <condition_variable>
#include <system_error>
#include <thread>

namespace mxlite {

class ThreadedEngine : public Engine {
 public:
  explicit ThreadedEngine(int threads) {
    for (int i = 0; i < threads; ++i) {
#ifndef MXLITE_NO_EXCEPTIONS
      // A thread the system refuses (address space, a process limit) ends
      // the list: the engine runs with the workers made so far, and
      // NewThreadedEngine falls back to the naive engine when there are none.
      try {
        workers_.emplace_back([this] { WorkerLoop(); });
      } catch (const std::system_error&) {
        break;
      }
#else
      workers_.emplace_back([this] { WorkerLoop(); });
#endif  // !MXLITE_NO_EXCEPTIONS
    }
  }

  size_t workers() const { return workers_.size(); }

  ~ThreadedEngine() override {
    WaitUntilIdle();
    {
      std::lock_guard<std::mutex> lock(ready_mutex_);
      stopping_ = true;
    }
    ready_cv_.notify_all();
    for (std::thread& worker : workers_) worker.join();
  }

  const char* name() const override { return "threaded"; }

  void Push(EngineFn fn, const std::vector<VarHandle>& const_vars,
            const std::vector<VarHandle>& mutable_vars) override {
    using engine_detail::OperationKind;
    std::unique_ptr<engine_detail::Operation> operation = engine_detail::MakeOperation(
        std::move(fn), const_vars, mutable_vars, OperationKind::kCompute);
    {
      std::lock_guard<std::mutex> lock(idle_mutex_);
      ++outstanding_;
    }
    Append(operation.release());
  }

  Status WaitForVar(const VarHandle& var) override {
    return WaitMarker(var, engine_detail::OperationKind::kReadMarker, "WaitForVar");
  }
  Status WaitToWrite(const VarHandle& var) override {
    return WaitMarker(var, engine_detail::OperationKind::kWriteMarker, "WaitToWrite");
  }

  Status WaitForAll() override {
    if (engine_detail::InsideOperation()) {
      return engine_detail::WaitInsideOperationError("WaitForAll");
    }
    WaitUntilIdle();
    return failures_.TakeFirstUnreported();
  }

 private:
  // Where a waiting thread sleeps until its marker has run.
  struct WaitSignal {
    std::mutex mutex;
    std::condition_variable cv;
    bool done = false;
    Status result;
  };

  // Enters the operation into each of its variables' order.
  void Append(engine_detail::Operation* operation) {
    using engine_detail::VarAccess;
    using engine_detail::VarState;
    const int vars = static_cast<int>(operation->reads.size() + operation->writes.size());
    operation->unmet.store(vars + 1);
    int granted = 0;
    {
      std::lock_guard<std::mutex> push_lock(push_mutex_);
      for (const VarHandle& var : operation->reads) {
        VarState& state = VarAccess::Of(var);
        engine_detail::ScopedLock lock(state.mutex);
        if (!state.active_write && state.waiting.empty()) {
          ++state.active_reads;
          ++granted;
        } else {
          state.waiting.emplace_back(operation, false);
        }
      }
      for (const VarHandle& var : operation->writes) {
        VarState& state = VarAccess::Of(var);
        engine_detail::ScopedLock lock(state.mutex);
        if (!state.active_write && state.active_reads == 0 && state.waiting.empty()) {
          state.active_write = true;
          ++granted;
        } else {
          state.waiting.emplace_back(operation, true);
        }
      }
    }
    if (operation->unmet.fetch_sub(granted + 1) == granted + 1) Dispatch(operation);
  }

  // The operation's turn has come on every variable.
  void Dispatch(engine_detail::Operation* operation) {
    if (operation->kind != engine_detail::OperationKind::kCompute) {
      operation->fn();  // takes the variable's failure for the waiter
      std::function<void()> notify = std::move(operation->notify);
      Finish(operation);
      notify();
      return;
    }
    {
      std::lock_guard<std::mutex> lock(ready_mutex_);
      ready_.push_back(operation);
    }
    ready_cv_.notify_one();
  }

  // Gives each variable's next operations their turn, then frees the operation.
  void Finish(engine_detail::Operation* operation) {
    using engine_detail::VarAccess;
    using engine_detail::VarState;
    std::vector<engine_detail::Operation*> granted;
    for (const VarHandle& var : operation->reads) {
      VarState& state = VarAccess::Of(var);
      engine_detail::ScopedLock lock(state.mutex);
      --state.active_reads;
      if (state.active_reads == 0 && !state.active_write) GrantNext(&state, &granted);
    }
    for (const VarHandle& var : operation->writes) {
      VarState& state = VarAccess::Of(var);
      engine_detail::ScopedLock lock(state.mutex);
      state.active_write = false;
      GrantNext(&state, &granted);
    }
    delete operation;
    for (engine_detail::Operation* next : granted) {
      if (next->unmet.fetch_sub(1) == 1) Dispatch(next);
    }
  }

  // With no write active: the reads at the head of the queue, or else the
  // write there once no read is active. Called with the variable locked.
  static void GrantNext(engine_detail::VarState* state,
                        std::vector<engine_detail::Operation*>* granted) {
    while (!state->waiting.empty() && !state->waiting.front().second) {
      granted->push_back(state->waiting.front().first);
      state->waiting.pop_front();
      ++state->active_reads;
    }
    if (state->active_reads == 0 && !state->waiting.empty()) {
      granted->push_back(state->waiting.front().first);
      state->waiting.pop_front();
      state->active_write = true;
    }
  }

  void WorkerLoop() {
    for (;;) {
      engine_detail::Operation* operation = nullptr;
      {
        std::unique_lock<std::mutex> lock(ready_mutex_);
        ready_cv_.wait(lock, [this] { return stopping_ || !ready_.empty(); });
        if (ready_.empty()) return;
        operation = ready_.front();
        ready_.pop_front();
      }
      std::shared_ptr<engine_detail::Failure> produced;
      {
        engine_detail::OperationScope scope;
        produced = engine_detail::RunOperation(operation);
      }
      if (produced) failures_.Add(std::move(produced));
      Finish(operation);
      std::lock_guard<std::mutex> lock(idle_mutex_);
      if (--outstanding_ == 0) idle_cv_.notify_all();
    }
  }

  Status WaitMarker(const VarHandle& var, engine_detail::OperationKind kind, const char* what) {
    if (engine_detail::InsideOperation()) return engine_detail::WaitInsideOperationError(what);
    MXL_CHECK(var != nullptr, "engine: ", what, " called with a null variable");
    const bool write = kind == engine_detail::OperationKind::kWriteMarker;
    {
      // Fast path: nothing pending that the wait would have to wait for.
      // Holding the push lock keeps a concurrent Push from slipping in.
      std::lock_guard<std::mutex> push_lock(push_mutex_);
      engine_detail::VarState& state = engine_detail::VarAccess::Of(var);
      bool idle;
      {
        engine_detail::ScopedLock lock(state.mutex);
        idle = !state.active_write && state.waiting.empty() &&
               (!write || state.active_reads == 0);
      }
      if (idle) return engine_detail::TakeFailure(var);
    }
    WaitSignal signal;
    std::unique_ptr<engine_detail::Operation> marker = engine_detail::MakeOperation(
        [&signal, var] {
          signal.result = engine_detail::TakeFailure(var);
          return Status();
        },
        write ? std::vector<VarHandle>() : std::vector<VarHandle>{var},
        write ? std::vector<VarHandle>{var} : std::vector<VarHandle>(), kind);
    marker->notify = [&signal] {
      // Notify under the lock: once it is released the waiter may return
      // and destroy the signal.
      std::lock_guard<std::mutex> lock(signal.mutex);
      signal.done = true;
      signal.cv.notify_one();
    };
    Append(marker.release());
    std::unique_lock<std::mutex> lock(signal.mutex);
    signal.cv.wait(lock, [&signal] { return signal.done; });
    return signal.result;
  }

  void WaitUntilIdle() {
    std::unique_lock<std::mutex> lock(idle_mutex_);
    idle_cv_.wait(lock, [this] { return outstanding_ == 0; });
  }

  std::mutex push_mutex_;  // one Append at a time: a single global push order
  std::mutex ready_mutex_;
  std::condition_variable ready_cv_;
  std::deque<engine_detail::Operation*> ready_;  // operations whose turn has come
  bool stopping_ = false;
  std::mutex idle_mutex_;
  std::condition_variable idle_cv_;
  int64_t outstanding_ = 0;  // compute operations pushed and not finished
  engine_detail::FailureLog failures_;
  std::vector<std::thread> workers_;  // last: started after everything else exists
};

std::unique_ptr<Engine> NewThreadedEngine(int threads) {
  if (threads <= 0) threads = static_cast<int>(std::thread::hardware_concurrency());
  if (threads <= 0) threads = 1;
  std::unique_ptr<ThreadedEngine> engine(new ThreadedEngine(threads));
  if (engine->workers() == 0) return NewNaiveEngine();
  return std::unique_ptr<Engine>(std::move(engine));
}

}  // namespace mxlite

#else  // MXLITE_NO_THREADS

namespace mxlite {

std::unique_ptr<Engine> NewThreadedEngine(int threads) {
  (void)threads;
  return NewNaiveEngine();
}

}  // namespace mxlite

#endif  // MXLITE_NO_THREADS
