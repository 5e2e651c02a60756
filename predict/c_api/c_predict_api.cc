/*
 * The C predict API over the core predictor.
 *
 * Each entry point runs its body inside MXL_API_BEGIN/MXL_API_END: a failed
 * Status, or any C++ exception (std::bad_alloc included), becomes return
 * value -1 and a thread-local message for MXGetLastError. Handles are plain
 * heap objects, each holding a core Predictor (executor/predictor.h) made
 * with MXNet's binding rule (BindRule::kAtOnce); the model layer
 * (executor/model.h) loads the model, selects the partial outputs and checks
 * the inputs and parameters, as it does for the Python binding. A predictor
 * shares the Model (graph and parameters) with the predictors made from it
 * by MXPredReshape and MXPredCreateMultiThread.
 *
 * A handle serves one thread at a time (c_predict_api.h says so). Calls on
 * one handle from several threads at once would race on its inputs, its
 * intermediate results and its worker threads, so each handle carries a busy
 * flag, taken with one atomic exchange by every call that uses the handle: a
 * call that finds it taken returns -1 at once instead of racing. Handles made
 * from one another by MXPredReshape share the flag, as they share the arena
 * of intermediate results and the thread pool.
 */
#include "../include/c_predict_api.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "../executor/predictor.h"
#include "../include/mxlite.h"
#include "environment.h"
#include "../ndarray/ndarray_io.h"

namespace mxlite {
namespace c_api_cc {

std::string& LastError() {
  thread_local std::string message;
  return message;
}

int Fail(const std::string& message) {
  LastError() = message;
  return -1;
}

struct Handle {
  std::unique_ptr<Predictor> predictor;  // always bound
  std::vector<mx_uint> shape_buffer;  // for MXPredGetOutputShape
  // True while a call uses this handle or one made from it (or it from) by
  // MXPredReshape: those share memory and threads. See HandleUse.
  std::shared_ptr<std::atomic<bool>> busy = std::make_shared<std::atomic<bool>>(false);
};

// Holds a predictor's busy flag for one API call, if no other call holds it.
class HandleUse {
 public:
  explicit HandleUse(Handle* handle)
      : busy_(handle->busy), held_(!busy_->exchange(true, std::memory_order_acquire)) {}
  ~HandleUse() {
    if (held_) busy_->store(false, std::memory_order_release);
  }
  HandleUse(const HandleUse&) = delete;
  HandleUse& operator=(const HandleUse&) = delete;
  bool held() const { return held_; }

 private:
  std::shared_ptr<std::atomic<bool>> busy_;  // kept alive past MXPredFree
  bool held_;
};

std::string InUse(const char* function) {
  return StrCat(function, ": this predictor handle is in use by another thread (or a handle "
                "made from it by MXPredReshape, which shares its memory, is); use one handle "
                "per thread (MXPredCreateMultiThread)");
}

struct NDList {
  std::vector<std::string> keys;
  std::vector<NDArray> arrays;        // float32
  std::vector<std::vector<mx_uint>> shapes;
};

Status ReadInputShapes(mx_uint num_input_nodes, const char** input_keys,
                       const mx_uint* input_shape_indptr, const mx_uint* input_shape_data,
                       std::map<std::string, Shape>* shapes) {
  if (num_input_nodes == 0) return Status();
  MXL_CHECK(input_keys != nullptr && input_shape_indptr != nullptr,
            "input_keys and input_shape_indptr must not be NULL");
  MXL_CHECK(input_shape_indptr[num_input_nodes] == input_shape_indptr[0] ||
                input_shape_data != nullptr,
            "input_shape_data must not be NULL");
  for (mx_uint i = 0; i < num_input_nodes; ++i) {
    MXL_CHECK(input_keys[i] != nullptr, "input key ", i, " is NULL");
    mx_uint begin = input_shape_indptr[i], end = input_shape_indptr[i + 1];
    MXL_CHECK(begin <= end && end - begin <= 32, "input '", input_keys[i],
              "': invalid input_shape_indptr [", begin, ", ", end, ")");
    Shape shape(std::vector<int64_t>(input_shape_data + begin, input_shape_data + end));
    MXL_RETURN_IF_ERROR(CheckInputShape(input_keys[i], shape));
    MXL_CHECK(shapes->emplace(input_keys[i], std::move(shape)).second, "input '", input_keys[i],
              "' is given twice");
  }
  return Status();
}

// The options of a create call: the environment's (read here, at the
// boundary), then the caller's name/value pairs over them.
Status ReadOptions(mx_uint num_options, const char** names, const char** values,
                   RuntimeOptions* options) {
  MXL_RETURN_IF_ERROR(ApplyProcessEnvironment());
  MXL_RETURN_IF_ERROR(OptionsFromEnvironment(options));
  if (num_options > 0) {
    MXL_CHECK(names != nullptr && values != nullptr, "option_names and option_values must not "
              "be NULL when num_options is ", num_options);
  }
  for (mx_uint i = 0; i < num_options; ++i) {
    MXL_CHECK(names[i] != nullptr && values[i] != nullptr, "option ", i,
              ": its name or value is NULL");
    MXL_RETURN_IF_ERROR(SetRuntimeOption(options, names[i], values[i]));
  }
  return Status();
}

Status CreatePredictors(const char* symbol_json, const void* param_bytes, int param_size,
                        int dev_type, int dev_id, mx_uint num_input_nodes, const char** input_keys,
                        const mx_uint* input_shape_indptr, const mx_uint* input_shape_data,
                        mx_uint num_dtypes, const char** dtype_names, const int* dtype_flags,
                        mx_uint num_output_nodes, const char** output_keys, int count,
                        mx_uint num_options, const char** option_names,
                        const char** option_values, PredictorHandle* out) {
  RuntimeOptions options;
  MXL_RETURN_IF_ERROR(ReadOptions(num_options, option_names, option_values, &options));
  MXL_CHECK(symbol_json != nullptr, "symbol_json_str is NULL");
  MXL_CHECK(out != nullptr, "the output handle pointer is NULL");
  // dev_type 1 (and MXNet's pinned and shared CPU types) keep the device
  // the options chose (the CPU unless MXLITE_DEVICE or a device option
  // says otherwise); 2 is CUDA GPU dev_id.
  MXL_CHECK(dev_type == 1 || dev_type == 2 || dev_type == 3 || dev_type == 5, "dev_type ",
            dev_type, " is not available: mxlite runs on the CPU (dev_type 1) and, when built "
            "with CUDA, on NVIDIA GPUs (dev_type 2)");
  if (dev_type == 2) {
    MXL_CHECK(dev_id >= 0, "dev_id must not be negative (got ", dev_id, ")");
    MXL_RETURN_IF_ERROR(CheckCudaDevice(dev_id));
    options.device_id = dev_id;
  }
  MXL_CHECK(count >= 1, "num_threads must be at least 1 (got ", count, ")");

  MXL_CHECK(param_size >= 0, "param_size must not be negative (got ", param_size, ")");
  std::vector<std::string> keys;
  if (num_output_nodes > 0) {
    MXL_CHECK(output_keys != nullptr, "output_keys is NULL");
    for (mx_uint i = 0; i < num_output_nodes; ++i) {
      MXL_CHECK(output_keys[i] != nullptr, "output key ", i, " is NULL");
      keys.push_back(output_keys[i]);
    }
  }
  std::shared_ptr<Model> model;
  MXL_RETURN_IF_ERROR(LoadModel(symbol_json, std::strlen(symbol_json), param_bytes,
                                static_cast<size_t>(param_size), keys, &model));

  PredictorSpec spec;
  spec.rule = BindRule::kAtOnce;
  MXL_RETURN_IF_ERROR(ReadInputShapes(num_input_nodes, input_keys, input_shape_indptr,
                                      input_shape_data, &spec.input_shapes));
  if (num_dtypes > 0) {
    MXL_CHECK(dtype_names != nullptr && dtype_flags != nullptr,
              "provided_arg_dtype_names and provided_arg_dtypes must not be NULL");
  }
  for (mx_uint i = 0; i < num_dtypes; ++i) {
    MXL_CHECK(dtype_names[i] != nullptr, "dtype name ", i, " is NULL");
    MXL_CHECK(IsValidDType(dtype_flags[i]), "argument '", dtype_names[i],
              "': unknown dtype flag ", dtype_flags[i]);
    // A type for a parameter is ignored (the params file's wins, as in MXNet).
    spec.input_dtypes[dtype_names[i]] = dtype_flags[i];
  }

  // Handles made for one thread each run single-threaded unless the caller
  // asked for a thread count (the threads option or MXLITE_NUM_THREADS).
  if (count > 1 && options.threads == 0) options.threads = 1;
  spec.options = options;
  std::vector<std::unique_ptr<Handle>> made;
  for (int i = 0; i < count; ++i) {
    std::unique_ptr<Handle> handle(new Handle());
    MXL_RETURN_IF_ERROR(Predictor::Create(model, spec, &handle->predictor));
    made.push_back(std::move(handle));
  }
  for (int i = 0; i < count; ++i) out[i] = made[i].release();
  return Status();
}

Handle* AsHandle(PredictorHandle handle) { return static_cast<Handle*>(handle); }

// The bound executor of a handle.
Executor* ExecutorOf(PredictorHandle handle) { return AsHandle(handle)->predictor->executor(); }

}  // namespace c_api_cc
}  // namespace mxlite

// Runs a body that returns a Status; exceptions become errors too. Built
// without exceptions (MXLITE_NO_EXCEPTIONS, see base/config.h) the body runs
// as it is: errors are Status values either way.
#ifdef MXLITE_NO_EXCEPTIONS
#define MXL_API_BEGIN() {
#define MXL_API_END() }
#else
#define MXL_API_BEGIN() try {
#define MXL_API_END()                                                          \
  }                                                                            \
  catch (const std::bad_alloc&) {                                              \
    return ::mxlite::c_api_cc::Fail("out of memory");                          \
  }                                                                            \
  catch (const std::exception& error) {                                        \
    return ::mxlite::c_api_cc::Fail(std::string("internal error: ") + error.what()); \
  }                                                                            \
  catch (...) {                                                                \
    return ::mxlite::c_api_cc::Fail("internal error: unknown exception");      \
  }
#endif  // MXLITE_NO_EXCEPTIONS
#define MXL_API_CALL(expr)                                            \
  do {                                                                \
    ::mxlite::Status mxl_api_status_ = (expr);                        \
    if (!mxl_api_status_.ok()) {                                      \
      return ::mxlite::c_api_cc::Fail(mxl_api_status_.message());     \
    }                                                                 \
  } while (0)
#define MXL_API_REQUIRE(cond, ...)                                              \
  do {                                                                          \
    if (!(cond)) return ::mxlite::c_api_cc::Fail(::mxlite::StrCat(__VA_ARGS__)); \
  } while (0)
// Checks `handle` is not NULL and holds its busy flag until the function
// returns: a second thread's call on it meanwhile fails (see HandleUse).
#define MXL_API_USE_HANDLE(handle, function)                                       \
  MXL_API_REQUIRE(handle != nullptr, function ": the predictor handle is NULL");   \
  ::mxlite::c_api_cc::HandleUse mxl_api_use_(AsHandle(handle));                 \
  MXL_API_REQUIRE(mxl_api_use_.held(), ::mxlite::c_api_cc::InUse(function))

using mxlite::c_api_cc::AsHandle;
using mxlite::c_api_cc::CreatePredictors;
using mxlite::c_api_cc::ExecutorOf;

const char* MXGetLastError(void) { return mxlite::c_api_cc::LastError().c_str(); }

int MXPredCreate(const char* symbol_json_str, const void* param_bytes, int param_size,
                 int dev_type, int dev_id, mx_uint num_input_nodes, const char** input_keys,
                 const mx_uint* input_shape_indptr, const mx_uint* input_shape_data,
                 PredictorHandle* out) {
  MXL_API_BEGIN();
  MXL_API_CALL(CreatePredictors(symbol_json_str, param_bytes, param_size, dev_type, dev_id,
                                num_input_nodes, input_keys, input_shape_indptr,
                                input_shape_data, 0, nullptr, nullptr, 0, nullptr, 1, 0, nullptr,
                                nullptr, out));
  MXL_API_END();
  return 0;
}

int MXPredCreateEx(const char* symbol_json_str, const void* param_bytes, int param_size,
                   int dev_type, int dev_id, const mx_uint num_input_nodes,
                   const char** input_keys, const mx_uint* input_shape_indptr,
                   const mx_uint* input_shape_data, const mx_uint num_provided_arg_dtypes,
                   const char** provided_arg_dtype_names, const int* provided_arg_dtypes,
                   PredictorHandle* out) {
  MXL_API_BEGIN();
  MXL_API_CALL(CreatePredictors(symbol_json_str, param_bytes, param_size, dev_type, dev_id,
                                num_input_nodes, input_keys, input_shape_indptr,
                                input_shape_data, num_provided_arg_dtypes,
                                provided_arg_dtype_names, provided_arg_dtypes, 0, nullptr, 1,
                                0, nullptr, nullptr, out));
  MXL_API_END();
  return 0;
}

int MXPredCreatePartialOut(const char* symbol_json_str, const void* param_bytes, int param_size,
                           int dev_type, int dev_id, mx_uint num_input_nodes,
                           const char** input_keys, const mx_uint* input_shape_indptr,
                           const mx_uint* input_shape_data, mx_uint num_output_nodes,
                           const char** output_keys, PredictorHandle* out) {
  MXL_API_BEGIN();
  MXL_API_CALL(CreatePredictors(symbol_json_str, param_bytes, param_size, dev_type, dev_id,
                                num_input_nodes, input_keys, input_shape_indptr,
                                input_shape_data, 0, nullptr, nullptr, num_output_nodes,
                                output_keys, 1, 0, nullptr, nullptr, out));
  MXL_API_END();
  return 0;
}

int MXPredCreateMultiThread(const char* symbol_json_str, const void* param_bytes, int param_size,
                            int dev_type, int dev_id, mx_uint num_input_nodes,
                            const char** input_keys, const mx_uint* input_shape_indptr,
                            const mx_uint* input_shape_data, int num_threads,
                            PredictorHandle* out) {
  MXL_API_BEGIN();
  MXL_API_CALL(CreatePredictors(symbol_json_str, param_bytes, param_size, dev_type, dev_id,
                                num_input_nodes, input_keys, input_shape_indptr,
                                input_shape_data, 0, nullptr, nullptr, 0, nullptr, num_threads,
                                0, nullptr, nullptr, out));
  MXL_API_END();
  return 0;
}

int MXPredReshape(mx_uint num_input_nodes, const char** input_keys,
                  const mx_uint* input_shape_indptr, const mx_uint* input_shape_data,
                  PredictorHandle handle, PredictorHandle* out) {
  MXL_API_BEGIN();
  MXL_API_USE_HANDLE(handle, "MXPredReshape");
  MXL_API_REQUIRE(out != nullptr, "MXPredReshape: the output handle pointer is NULL");
  std::map<std::string, mxlite::Shape> shapes;
  MXL_API_CALL(mxlite::c_api_cc::ReadInputShapes(num_input_nodes, input_keys,
                                                 input_shape_indptr, input_shape_data, &shapes));
  mxlite::c_api_cc::Handle* old = AsHandle(handle);
  std::unique_ptr<mxlite::c_api_cc::Handle> fresh(new mxlite::c_api_cc::Handle());
  fresh->busy = old->busy;  // the two share an arena and threads
  MXL_API_CALL(old->predictor->Reshaped(shapes, &fresh->predictor));
  *out = fresh.release();
  MXL_API_END();
  return 0;
}

int MXPredGetOutputShape(PredictorHandle handle, mx_uint index, mx_uint** shape_data,
                         mx_uint* shape_ndim) {
  MXL_API_BEGIN();
  MXL_API_USE_HANDLE(handle, "MXPredGetOutputShape");
  MXL_API_REQUIRE(shape_data != nullptr && shape_ndim != nullptr,
                  "MXPredGetOutputShape: output pointers must not be NULL");
  mxlite::c_api_cc::Handle* held = AsHandle(handle);
  const mxlite::Executor* executor = held->predictor->executor();
  const int count = executor->num_outputs();
  MXL_API_REQUIRE(index < static_cast<mx_uint>(count), "output index ", index,
                  " is out of range: the predictor has ", count, " output(s)");
  const mxlite::Shape& shape = executor->output(index).shape();
  held->shape_buffer.assign(shape.dims().begin(), shape.dims().end());
  *shape_data = held->shape_buffer.data();
  *shape_ndim = static_cast<mx_uint>(shape.ndim());
  MXL_API_END();
  return 0;
}

int MXPredGetOutputType(PredictorHandle handle, mx_uint out_index, int* out_dtype) {
  MXL_API_BEGIN();
  MXL_API_USE_HANDLE(handle, "MXPredGetOutputType");
  MXL_API_REQUIRE(out_dtype != nullptr, "MXPredGetOutputType: out_dtype is NULL");
  const mxlite::Executor* executor = ExecutorOf(handle);
  const int count = executor->num_outputs();
  MXL_API_REQUIRE(out_index < static_cast<mx_uint>(count), "output index ", out_index,
                  " is out of range: the predictor has ", count, " output(s)");
  *out_dtype = executor->output(out_index).dtype();
  MXL_API_END();
  return 0;
}

int MXPredSetInput(PredictorHandle handle, const char* key, const mx_float* data, mx_uint size) {
  MXL_API_BEGIN();
  MXL_API_USE_HANDLE(handle, "MXPredSetInput");
  MXL_API_REQUIRE(key != nullptr, "MXPredSetInput: key is NULL");
  MXL_API_REQUIRE(data != nullptr || size == 0, "MXPredSetInput: data is NULL");
  MXL_API_CALL(ExecutorOf(handle)->SetInput(key, data, size));
  MXL_API_END();
  return 0;
}

int MXPredForward(PredictorHandle handle) {
  MXL_API_BEGIN();
  MXL_API_USE_HANDLE(handle, "MXPredForward");
  MXL_API_CALL(ExecutorOf(handle)->Forward());
  MXL_API_END();
  return 0;
}

int MXPredPartialForward(PredictorHandle handle, int step, int* step_left) {
  MXL_API_BEGIN();
  MXL_API_USE_HANDLE(handle, "MXPredPartialForward");
  MXL_API_REQUIRE(step_left != nullptr, "MXPredPartialForward: step_left is NULL");
  MXL_API_CALL(AsHandle(handle)->predictor->UseUnoptimized());
  MXL_API_CALL(ExecutorOf(handle)->PartialForward(step, step_left));
  MXL_API_END();
  return 0;
}

int MXPredGetOutput(PredictorHandle handle, mx_uint index, mx_float* data, mx_uint size) {
  MXL_API_BEGIN();
  MXL_API_USE_HANDLE(handle, "MXPredGetOutput");
  const mxlite::Executor* executor = ExecutorOf(handle);
  const int count = executor->num_outputs();
  MXL_API_REQUIRE(index < static_cast<mx_uint>(count), "output index ", index,
                  " is out of range: the predictor has ", count, " output(s)");
  const mxlite::NDArray& output = executor->output(index);
  MXL_API_REQUIRE(static_cast<int64_t>(size) == output.Size(), "output ", index, " ('",
                  executor->output_name(index), "') has shape ",
                  output.shape().ToString(), " (", output.Size(), " elements) but size is ",
                  size);
  MXL_API_REQUIRE(data != nullptr || size == 0, "MXPredGetOutput: data is NULL");
  if (size != 0) std::memcpy(data, output.data(), output.bytes());
  MXL_API_END();
  return 0;
}

int MXPredFree(PredictorHandle handle) {
  MXL_API_BEGIN();
  if (handle == nullptr) return 0;
  // Freeing a handle another thread is using would pull its memory from
  // under it: refused, like any other call on a busy handle.
  MXL_API_USE_HANDLE(handle, "MXPredFree");
  delete AsHandle(handle);
  MXL_API_END();
  return 0;
}

int MXPredSetMonitorCallback(PredictorHandle handle, PredMonitorCallback callback,
                             void* callback_handle, bool monitor_all) {
  MXL_API_BEGIN();
  MXL_API_USE_HANDLE(handle, "MXPredSetMonitorCallback");
  MXL_API_CALL(AsHandle(handle)->predictor->UseUnoptimized());
  ExecutorOf(handle)->SetMonitor(callback, callback_handle, monitor_all);
  MXL_API_END();
  return 0;
}

int MXNDListCreate(const char* nd_file_bytes, int nd_file_size, NDListHandle* out,
                   mx_uint* out_length) {
  MXL_API_BEGIN();
  MXL_API_REQUIRE(out != nullptr && out_length != nullptr,
                  "MXNDListCreate: output pointers must not be NULL");
  MXL_API_REQUIRE(nd_file_size >= 0, "MXNDListCreate: negative size ", nd_file_size);
  MXL_API_REQUIRE(nd_file_bytes != nullptr || nd_file_size == 0, "MXNDListCreate: bytes are NULL");
  std::vector<mxlite::NDArray> arrays;
  std::vector<std::string> names;
  MXL_API_CALL(mxlite::LoadNDArrayList(nd_file_bytes, static_cast<size_t>(nd_file_size),
                                       "NDArray file", &arrays, &names));
  std::unique_ptr<mxlite::c_api_cc::NDList> list(new mxlite::c_api_cc::NDList());
  for (size_t i = 0; i < arrays.size(); ++i) {
    mxlite::NDArray converted;
    if (!arrays[i].is_none()) MXL_API_CALL(arrays[i].ToFloat32(&converted));
    list->arrays.push_back(converted);
    list->keys.push_back(names.empty() ? std::string() : names[i]);
    const std::vector<int64_t>& dims = arrays[i].shape().dims();
    list->shapes.emplace_back(dims.begin(), dims.end());
  }
  *out_length = static_cast<mx_uint>(list->arrays.size());
  *out = list.release();
  MXL_API_END();
  return 0;
}

int MXNDListGet(NDListHandle handle, mx_uint index, const char** out_key,
                const mx_float** out_data, const mx_uint** out_shape, mx_uint* out_ndim) {
  MXL_API_BEGIN();
  MXL_API_REQUIRE(handle != nullptr, "MXNDListGet: the list handle is NULL");
  MXL_API_REQUIRE(out_key && out_data && out_shape && out_ndim,
                  "MXNDListGet: output pointers must not be NULL");
  mxlite::c_api_cc::NDList* list = static_cast<mxlite::c_api_cc::NDList*>(handle);
  MXL_API_REQUIRE(index < list->arrays.size(), "MXNDListGet: index ", index,
                  " is out of range: the list has ", list->arrays.size(), " arrays");
  *out_key = list->keys[index].c_str();
  *out_data = list->arrays[index].fdata();
  *out_shape = list->shapes[index].data();
  *out_ndim = static_cast<mx_uint>(list->shapes[index].size());
  MXL_API_END();
  return 0;
}

int MXNDListFree(NDListHandle handle) {
  MXL_API_BEGIN();
  delete static_cast<mxlite::c_api_cc::NDList*>(handle);
  MXL_API_END();
  return 0;
}

int MXLitePredCreateWithOptions(const char* symbol_json_str, const void* param_bytes,
                                int param_size, int dev_type, int dev_id,
                                mx_uint num_input_nodes, const char** input_keys,
                                const mx_uint* input_shape_indptr,
                                const mx_uint* input_shape_data, mx_uint num_output_nodes,
                                const char** output_keys, mx_uint num_options,
                                const char** option_names, const char** option_values,
                                int num_handles, PredictorHandle* out) {
  MXL_API_BEGIN();
  MXL_API_CALL(CreatePredictors(symbol_json_str, param_bytes, param_size, dev_type, dev_id,
                                num_input_nodes, input_keys, input_shape_indptr,
                                input_shape_data, 0, nullptr, nullptr, num_output_nodes,
                                output_keys, num_handles, num_options, option_names,
                                option_values, out));
  MXL_API_END();
  return 0;
}
