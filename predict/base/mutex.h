/*
 * A mutex and its scoped lock for code that may be built without threads:
 * with MXLITE_NO_THREADS (wasm32-wasi without atomics, see config.h) there
 * is no usable <mutex>, and nothing can race, so both do nothing.
 */
#ifndef MXLITE_BASE_MUTEX_H_
#define MXLITE_BASE_MUTEX_H_

#include "config.h"

#ifndef MXLITE_NO_THREADS
#include <mutex>
#endif  // !MXLITE_NO_THREADS

namespace mxlite {

#ifndef MXLITE_NO_THREADS
using Mutex = std::mutex;
using MutexLock = std::lock_guard<std::mutex>;
#else
struct Mutex {};
struct MutexLock {
  explicit MutexLock(Mutex&) {}
};
#endif  // !MXLITE_NO_THREADS

}  // namespace mxlite

#endif  // MXLITE_BASE_MUTEX_H_
