/*
 * Engine: runs operations in the order the data they touch requires.
 *
 * Every piece of mutable data -- an NDArray's storage, an executor's arena
 * entry, a random generator's state -- is represented by a variable
 * (EngineVar, made by NewVariable). An operation is pushed with the
 * variables it reads (const_vars) and those it writes (mutable_vars), and
 * Push returns at once. For each variable v the engine guarantees, among
 * the operations pushed so far, in push order:
 *   - read after write: an operation reading v starts after every earlier
 *     operation writing v has finished;
 *   - write after read: an operation writing v starts after every earlier
 *     operation reading v has finished;
 *   - write after write: operations writing v run one at a time, in push
 *     order.
 * Reads of v pushed between the same two writes may run at the same time,
 * and operations that share no variable are not ordered at all: on the
 * threaded engine they run in parallel on its worker threads. A variable's
 * version counts the writes of it that have finished, so an operation that
 * reads v sees exactly the version made by the writes pushed before it.
 * A variable listed as both read and written counts as written, and a
 * variable listed twice counts once. Push itself is thread-safe; the push
 * order of two concurrent Push calls is whichever takes the engine's push
 * lock first.
 *
 * Waiting. WaitForVar(v) returns once every write of v pushed before the
 * call has finished (what reading v's data needs); WaitToWrite(v) also
 * waits for earlier reads (what overwriting v's data from outside the
 * engine needs); WaitForAll() returns once every operation pushed before
 * the call has finished. Waiting from inside an operation would wait for
 * that operation itself, so it is refused with an error instead of hanging.
 *
 * Failure. An operation fails by returning a failed Status; an exception
 * escaping it is caught and becomes one (never a crash). A failure is
 * recorded on every variable the operation writes. An operation that
 * reads or writes a variable carrying a failure does not run; it fails in
 * turn with the same failure, which so reaches everything computed from
 * the bad data. Failures surface at the next wait:
 *   - WaitForVar(v) / WaitToWrite(v) return v's failure and clear it from v
 *     (v is usable again; its data is whatever the failing operation left);
 *   - WaitForAll() returns the first failure since the previous
 *     WaitForAll that no wait has returned yet, so none is ever lost.
 * Each variable keeps its failure until a wait on it returns it.
 *
 * Lifetime. Variables are reference counted: an operation keeps the ones it
 * names alive until it finishes, so a caller may drop its handle right
 * after pushing. Destroying an engine waits for all its operations.
 *
 * Two implementations: the naive engine runs each operation inside Push,
 * on the calling thread, Push calls from several threads taking turns (for
 * debugging, constrained builds, and as the reference the threaded engine
 * is tested against); the threaded engine
 * keeps per-variable queues and runs ready operations on a pool of worker
 * threads. GetEngine() returns the process-wide engine chosen by
 * ProcessOptions (base/options.h; MXLITE_ENGINE=naive|threaded, default
 * threaded, with MXLITE_ENGINE_THREADS workers, default one per hardware
 * thread, as the front ends read them).
 * Built with MXLITE_NO_THREADS (base/config.h), every engine is naive.
 *
 * How a lazily evaluated NDArray sits on this: it holds its storage and one
 * variable. An operation on arrays is pushed with the inputs' variables as
 * const_vars and the outputs' as mutable_vars, capturing the arrays (so the
 * storage outlives the operation) and returns the outputs at once; reading
 * an array's values calls WaitForVar on its variable first and reports the
 * failure if there is one.
 */
#ifndef MXLITE_ENGINE_ENGINE_H_
#define MXLITE_ENGINE_ENGINE_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "../base/config.h"
#include "../base/status.h"

#ifndef MXLITE_NO_THREADS
#include <mutex>
#endif  // !MXLITE_NO_THREADS

namespace mxlite {

namespace engine_detail {
#ifndef MXLITE_NO_THREADS
using Mutex = std::mutex;
#else
// Without threads (and, on some targets, without <mutex>) nothing can race.
struct Mutex {
  void lock() {}
  void unlock() {}
};
#endif  // !MXLITE_NO_THREADS
// Holds a Mutex for a scope.
class ScopedLock {
 public:
  explicit ScopedLock(Mutex& mutex) : mutex_(mutex) { mutex_.lock(); }
  ~ScopedLock() { mutex_.unlock(); }
  ScopedLock(const ScopedLock&) = delete;
  ScopedLock& operator=(const ScopedLock&) = delete;

 private:
  Mutex& mutex_;
};

struct Operation;
// One failure, shared by every variable it reached.
struct Failure {
  Status status;
  std::atomic<bool> reported{false};
};
// A variable's bookkeeping; only the engines touch it (engine_internal.h).
struct VarState {
  Mutex mutex;
  std::atomic<uint64_t> version{0};          // finished writes
  std::shared_ptr<Failure> failure;          // null while healthy
  // Threaded engine (guarded by mutex): reads running or ready to run, a
  // write running or ready, and the operations waiting their turn, in push
  // order, each with whether it writes.
  int active_reads = 0;
  bool active_write = false;
  std::deque<std::pair<Operation*, bool>> waiting;
};
struct VarAccess;
}  // namespace engine_detail

// A variable: the unit of dependency. Made by Engine::NewVariable.
class EngineVar {
 public:
  // Writes of this variable that have finished.
  uint64_t version() const { return state_.version.load(std::memory_order_acquire); }

 private:
  friend struct engine_detail::VarAccess;
  engine_detail::VarState state_;
};

using VarHandle = std::shared_ptr<EngineVar>;
using EngineFn = std::function<Status()>;

class Engine {
 public:
  virtual ~Engine() = default;
  virtual const char* name() const = 0;  // "naive" or "threaded"

  VarHandle NewVariable() const { return std::make_shared<EngineVar>(); }

  // Schedules fn after the operations it depends on (see above).
  virtual void Push(EngineFn fn, const std::vector<VarHandle>& const_vars,
                    const std::vector<VarHandle>& mutable_vars) = 0;
  // Waits for earlier writes of var; returns and clears var's failure.
  virtual Status WaitForVar(const VarHandle& var) = 0;
  // Waits for earlier reads and writes of var; returns and clears its failure.
  virtual Status WaitToWrite(const VarHandle& var) = 0;
  // Waits for every earlier operation; returns the first unreported failure.
  virtual Status WaitForAll() = 0;
};

// The synchronous engine.
std::unique_ptr<Engine> NewNaiveEngine();
// The threaded engine with `threads` workers (0: one per hardware thread), or as many as the system lets it create. Naive
// under MXLITE_NO_THREADS and when no worker thread could be created.
std::unique_ptr<Engine> NewThreadedEngine(int threads = 0);
// "naive" or "threaded" (what MXLITE_ENGINE accepts).
Status NewEngine(const char* kind, int threads, std::unique_ptr<Engine>* out);

// The process-wide engine, made on first use as ProcessOptions say.
Status GetEngine(Engine** out);

}  // namespace mxlite

#endif  // MXLITE_ENGINE_ENGINE_H_
