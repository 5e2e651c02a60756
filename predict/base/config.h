/*
 * Build configuration: every compile-time switch of mxlite, in one place.
 *
 * Nothing here has to be defined by hand. Each switch has a default worked
 * out from the compiler and the target, so `c++ -c mxlite-all.cc` is a
 * complete build on every platform (x86-64, aarch64, armv7, Android, iOS,
 * wasm32-wasi). Define a switch (-DMXLITE_NO_THREADS) to drop a part that a
 * device does not need. A switch is on when it is defined, whatever its
 * value, and code tests it with #ifdef / #if defined(...), as SQLite's
 * SQLITE_OMIT_* switches work.
 *
 *   MXLITE_NO_THREADS       No thread is ever started and nothing needs
 *                           pthreads: the threaded engine gives way to the
 *                           naive (synchronous) one and kernels run on the
 *                           calling thread. On by default on targets
 *                           without threads (wasm32-wasi without the atomics
 *                           feature, emscripten without pthreads).
 *   MXLITE_NO_EXCEPTIONS    The C API boundary has no try/catch. Errors are
 *                           Status values either way; what changes is that
 *                           a failing allocation inside the C++ standard
 *                           library ends the process instead of becoming
 *                           "out of memory" from MXGetLastError(). On by
 *                           default when the compiler has exceptions off
 *                           (-fno-exceptions; wasm32-wasi needs that flag).
 *   MXLITE_NO_LEGACY_JSON   Drop the upgrade of symbol files written before
 *                           MXNet 0.9 (adding the auxiliary-state variables
 *                           they lack); such a file (attrs.mxnet_version
 *                           missing or below 0.9.0) is then an error that
 *                           says so.
 *   MXLITE_NO_NDARRAY_SAVE  Drop writing MXNet's NDArray list format;
 *                           SaveNDArrayList then returns an error. Reading
 *                           params files is never dropped.
 *   MXLITE_NO_FILES         The library opens no files: the tuning_cache
 *                           option (conv_tuning's cache) is then an error
 *                           that says so. On by default for WebAssembly,
 *                           whose hosts (a browser, the JavaScript wrapper)
 *                           have no file system.
 *   MXLITE_NO_CUDA          Leave out any CUDA code. On by default unless the
 *                           file is compiled by a CUDA compiler (__CUDACC__).
 *   MXLITE_PREDICT_ONLY     The minimal build for a device: the C predict API
 *                           and nothing else. Turns on the four switches
 *                           above (threads, legacy JSON, NDArray save, CUDA).
 */
#ifndef MXLITE_BASE_CONFIG_H_
#define MXLITE_BASE_CONFIG_H_

#ifdef MXLITE_PREDICT_ONLY
#ifndef MXLITE_NO_THREADS
#define MXLITE_NO_THREADS 1
#endif  // !MXLITE_NO_THREADS
#ifndef MXLITE_NO_LEGACY_JSON
#define MXLITE_NO_LEGACY_JSON 1
#endif  // !MXLITE_NO_LEGACY_JSON
#ifndef MXLITE_NO_NDARRAY_SAVE
#define MXLITE_NO_NDARRAY_SAVE 1
#endif  // !MXLITE_NO_NDARRAY_SAVE
#ifndef MXLITE_NO_CUDA
#define MXLITE_NO_CUDA 1
#endif  // !MXLITE_NO_CUDA
#endif  // MXLITE_PREDICT_ONLY

#if !defined(MXLITE_NO_THREADS) && defined(__wasi__) && !defined(__wasm_atomics__)
#define MXLITE_NO_THREADS 1
#endif  // !defined(MXLITE_NO_THREADS) && defined(__wasi__) && !defined(__wasm_atomics__)
#if !defined(MXLITE_NO_FILES) && (defined(__wasi__) || defined(__EMSCRIPTEN__))
#define MXLITE_NO_FILES 1
#endif  // !defined(MXLITE_NO_FILES) && (defined(__wasi__) || defined(__EMSCRIPTEN__))
#if !defined(MXLITE_NO_THREADS) && defined(__EMSCRIPTEN__) && !defined(__EMSCRIPTEN_PTHREADS__)
#define MXLITE_NO_THREADS 1
#endif  // !defined(MXLITE_NO_THREADS) && defined(__EMSCRIPTEN__) ...

#if !defined(MXLITE_NO_EXCEPTIONS) && !defined(__cpp_exceptions) && !defined(__EXCEPTIONS) && \
    !defined(_CPPUNWIND)
#define MXLITE_NO_EXCEPTIONS 1
#endif  // !defined(MXLITE_NO_EXCEPTIONS) && !defined(__cpp_exceptions) ...

#if !defined(MXLITE_NO_CUDA) && !defined(__CUDACC__)
#define MXLITE_NO_CUDA 1
#endif  // !defined(MXLITE_NO_CUDA) && !defined(__CUDACC__)

// wasm32-wasi has no C++ exception runtime in wasi-libc/libc++abi: a build
// with exceptions on fails at link time on __cxa_throw. Say how to fix it
// here instead. (-fwasm-exceptions with a runtime that supports it is fine.)
#if defined(__wasi__) && !defined(MXLITE_NO_EXCEPTIONS) && !defined(__wasm_exception_handling__)
#error "mxlite: wasm32-wasi has no C++ exception runtime; compile with -fno-exceptions"
#endif  // defined(__wasi__) && !defined(MXLITE_NO_EXCEPTIONS) ...

// Small functions shared by host code and CUDA kernels (window spans):
// compiled for both when a CUDA compiler reads the file.
#ifdef __CUDACC__
#define MXL_HOST_DEVICE __host__ __device__
#else
#define MXL_HOST_DEVICE
#endif  // __CUDACC__

#endif  // MXLITE_BASE_CONFIG_H_
