/*
 * The engine's shared rules, the naive (synchronous) engine, and the
 * choice of engine from ProcessOptions.
 *
 * The naive engine runs each operation inside Push, so every ordering of
 * engine.h holds trivially: an operation starts after all earlier ones have
 * finished. Failures follow the same rules as on the threaded engine, which
 * makes it the reference for that engine's tests.
 */
#include "engine.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <utility>

#include "engine_internal.h"
#include "../base/options.h"

#ifndef MXLITE_NO_THREADS
#include <mutex>
#endif  // !MXLITE_NO_THREADS

namespace mxlite {
namespace engine_detail {

std::unique_ptr<Operation> MakeOperation(EngineFn fn, const std::vector<VarHandle>& const_vars,
                                         const std::vector<VarHandle>& mutable_vars,
                                         OperationKind kind) {
  std::unique_ptr<Operation> operation(new Operation());
  operation->fn = std::move(fn);
  operation->kind = kind;
  auto contains = [](const std::vector<VarHandle>& vars, const VarHandle& var) {
    return std::find(vars.begin(), vars.end(), var) != vars.end();
  };
  for (const VarHandle& var : mutable_vars) {
    if (var && !contains(operation->writes, var)) operation->writes.push_back(var);
  }
  for (const VarHandle& var : const_vars) {
    if (var && !contains(operation->writes, var) && !contains(operation->reads, var)) {
      operation->reads.push_back(var);
    }
  }
  return operation;
}

// Calls fn, turning an escaping exception into a failed Status.
Status CallOperation(const EngineFn& fn) {
  if (!fn) return Status();  // a pure ordering point
#ifndef MXLITE_NO_EXCEPTIONS
  try {
    return fn();
  } catch (const std::exception& error) {
    return Status::Error(StrCat("engine operation threw an exception: ", error.what()));
  } catch (...) {
    return Status::Error("engine operation threw an exception of unknown type");
  }
#else
  return fn();
#endif  // !MXLITE_NO_EXCEPTIONS
}

std::shared_ptr<Failure> RunOperation(Operation* operation) {
  std::shared_ptr<Failure> inherited;
  for (const std::vector<VarHandle>* vars : {&operation->reads, &operation->writes}) {
    for (const VarHandle& var : *vars) {
      VarState& state = VarAccess::Of(var);
      ScopedLock lock(state.mutex);
      if (state.failure && !inherited) inherited = state.failure;
    }
  }
  std::shared_ptr<Failure> produced;
  if (!inherited) {
    Status status = CallOperation(operation->fn);
    if (!status.ok()) {
      produced = std::make_shared<Failure>();
      produced->status = std::move(status);
    }
  }
  const std::shared_ptr<Failure>& failure = inherited ? inherited : produced;
  for (const VarHandle& var : operation->writes) {
    VarState& state = VarAccess::Of(var);
    ScopedLock lock(state.mutex);
    if (failure) state.failure = failure;
    state.version.fetch_add(1, std::memory_order_release);
  }
  return produced;
}

Status TakeFailure(const VarHandle& var) {
  std::shared_ptr<Failure> failure;
  {
    VarState& state = VarAccess::Of(var);
    ScopedLock lock(state.mutex);
    failure.swap(state.failure);
  }
  if (!failure) return Status();
  failure->reported.store(true);
  return failure->status;
}

void FailureLog::Add(std::shared_ptr<Failure> failure) {
  ScopedLock lock(mutex_);
  failures_.push_back(std::move(failure));
}

Status FailureLog::TakeFirstUnreported() {
  std::vector<std::shared_ptr<Failure>> failures;
  {
    ScopedLock lock(mutex_);
    failures.swap(failures_);
  }
  Status first;
  for (const auto& failure : failures) {
    if (!failure->reported.exchange(true) && first.ok()) first = failure->status;
  }
  return first;
}

#ifndef MXLITE_NO_THREADS
thread_local int operation_depth = 0;
#else
int operation_depth = 0;
#endif  // !MXLITE_NO_THREADS

bool InsideOperation() { return operation_depth > 0; }
OperationScope::OperationScope() { ++operation_depth; }
OperationScope::~OperationScope() { --operation_depth; }

Status WaitInsideOperationError(const char* what) {
  return Status::Error(StrCat("engine: ", what,
                              " called from inside an engine operation; an operation must not "
                              "wait (it would wait for itself)"));
}

}  // namespace engine_detail

class NaiveEngine : public Engine {
 public:
  const char* name() const override { return "naive"; }

  void Push(EngineFn fn, const std::vector<VarHandle>& const_vars,
            const std::vector<VarHandle>& mutable_vars) override {
    using namespace engine_detail;
    std::unique_ptr<Operation> operation =
        MakeOperation(std::move(fn), const_vars, mutable_vars, OperationKind::kCompute);
    std::shared_ptr<Failure> produced;
    {
#ifndef MXLITE_NO_THREADS
      // Threads pushing at once take turns, so the push order is the run
      // order; recursive because an operation may push.
      std::lock_guard<std::recursive_mutex> lock(run_mutex_);
#endif  // !MXLITE_NO_THREADS
      OperationScope scope;
      produced = RunOperation(operation.get());
    }
    if (produced) failures_.Add(std::move(produced));
  }

  Status WaitForVar(const VarHandle& var) override { return Take(var, "WaitForVar"); }
  Status WaitToWrite(const VarHandle& var) override { return Take(var, "WaitToWrite"); }

  Status WaitForAll() override {
    if (engine_detail::InsideOperation()) {
      return engine_detail::WaitInsideOperationError("WaitForAll");
    }
    return failures_.TakeFirstUnreported();
  }

 private:
  Status Take(const VarHandle& var, const char* what) {
    if (engine_detail::InsideOperation()) return engine_detail::WaitInsideOperationError(what);
    MXL_CHECK(var != nullptr, "engine: ", what, " called with a null variable");
    return engine_detail::TakeFailure(var);
  }

  engine_detail::FailureLog failures_;
#ifndef MXLITE_NO_THREADS
  std::recursive_mutex run_mutex_;
#endif  // !MXLITE_NO_THREADS
};

std::unique_ptr<Engine> NewNaiveEngine() { return std::unique_ptr<Engine>(new NaiveEngine()); }

Status NewEngine(const char* kind, int threads, std::unique_ptr<Engine>* out) {
  const std::string name = kind == nullptr ? "" : kind;
  if (name == "naive") {
    *out = NewNaiveEngine();
    return Status();
  }
  MXL_CHECK(name.empty() || name == "threaded", "engine type must be 'naive' or 'threaded', not '",
            name, "'");
  *out = NewThreadedEngine(threads);
  return Status();
}

namespace engine_cc {

// The process-wide engine. Destroyed at exit, which waits for its work.
struct GlobalEngine {
  std::unique_ptr<Engine> engine;
  Status status;
  GlobalEngine() {
    const ProcessOptions& options = GetProcessOptions();
    status = NewEngine(options.engine.c_str(), options.engine_threads, &engine);
  }
};

}  // namespace engine_cc

Status GetEngine(Engine** out) {
  static engine_cc::GlobalEngine global;
  MXL_RETURN_IF_ERROR(global.status);
  *out = global.engine.get();
  return Status();
}

}  // namespace mxlite
