/*
 * What some targets' runtimes lack, supplied only on those targets.
 *
 * wasm32-wasi without threads: a thread_local object with a destructor
 * (the per-thread error message of the C API, the GEMM packing buffers)
 * registers that destructor through __cxa_thread_atexit. wasi-libc and the
 * single-threaded libc++abi that Debian and wasi-sdk ship do not define it,
 * so the link fails. With one thread, "when this thread exits" is "when the
 * program exits", which __cxa_atexit (in wasi-libc) handles. The definition
 * is weak so that a runtime which does provide the function wins.
 */
#include "config.h"

#if defined(__wasi__) && defined(MXLITE_NO_THREADS)

extern "C" int __cxa_atexit(void (*destructor)(void*), void* object, void* dso_handle);

extern "C" __attribute__((weak)) int __cxa_thread_atexit(void (*destructor)(void*), void* object,
                                                         void* dso_handle) {
  return __cxa_atexit(destructor, object, dso_handle);
}

#endif  // __wasi__ && MXLITE_NO_THREADS
