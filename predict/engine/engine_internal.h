/*
 * What the two engines share: the operation record, the failure rules of
 * engine.h (skip on a failed input, record on the outputs, report once per
 * variable and once overall) and the guard against waiting from inside an
 * operation. Not part of the engine's interface.
 */
#ifndef MXLITE_ENGINE_ENGINE_INTERNAL_H_
#define MXLITE_ENGINE_ENGINE_INTERNAL_H_

#include <atomic>
#include <functional>
#include <memory>
#include <vector>

#include "engine.h"

namespace mxlite {
namespace engine_detail {

struct VarAccess {
  static VarState& Of(const VarHandle& var) { return var->state_; }
};

enum class OperationKind {
  kCompute,      // runs fn
  kReadMarker,   // WaitForVar: reads its variable, runs nothing
  kWriteMarker,  // WaitToWrite: writes its variable, changes nothing
};

struct Operation {
  EngineFn fn;
  std::vector<VarHandle> reads;   // no duplicates, none also written
  std::vector<VarHandle> writes;  // no duplicates
  OperationKind kind = OperationKind::kCompute;
  // Markers: called once the marker has released its variable, to wake the
  // thread that waits.
  std::function<void()> notify;
  // Threaded engine: variables whose turn has not come yet, plus one while
  // Push is still appending.
  std::atomic<int> unmet{0};
};

// An operation over the variables, duplicates removed and a variable both
// read and written kept as written only.
std::unique_ptr<Operation> MakeOperation(EngineFn fn, const std::vector<VarHandle>& const_vars,
                                         const std::vector<VarHandle>& mutable_vars,
                                         OperationKind kind);

// Runs a compute operation's fn unless a variable it touches carries a
// failure, and records the resulting failure, if any, on every variable it
// writes. Returns a failure that fn itself produced (for the engine's log),
// else null. Counts the writes in the variables' versions.
std::shared_ptr<Failure> RunOperation(Operation* operation);

// Returns var's failure and clears it (ok when it has none).
Status TakeFailure(const VarHandle& var);

// The failures fn calls produced since the last WaitForAll.
class FailureLog {
 public:
  void Add(std::shared_ptr<Failure> failure);
  // The first not yet reported by a wait (ok if none); empties the log.
  Status TakeFirstUnreported();

 private:
  Mutex mutex_;
  std::vector<std::shared_ptr<Failure>> failures_;
};

// Whether the calling thread is running an engine operation right now.
bool InsideOperation();
// Marks the calling thread as running an operation for its lifetime.
class OperationScope {
 public:
  OperationScope();
  ~OperationScope();
  OperationScope(const OperationScope&) = delete;
  OperationScope& operator=(const OperationScope&) = delete;
};

// The error a wait from inside an operation gets.
Status WaitInsideOperationError(const char* what);

}  // namespace engine_detail
}  // namespace mxlite

#endif  // MXLITE_ENGINE_ENGINE_INTERNAL_H_
