#include "imperative.h"

#include "../base/config.h"
#include "../base/options.h"

// The minimal device build (MXLITE_PREDICT_ONLY) is the C predict API alone.
#ifndef MXLITE_PREDICT_ONLY

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#ifndef MXLITE_NO_THREADS
#include <thread>
#endif  // !MXLITE_NO_THREADS
#include <type_traits>
#include <utility>

#include "../kernels/gemm.h"
#include "../kernels/thread_pool.h"
#include "../operators/operator.h"

namespace mxlite {
namespace imperative_detail {

// The threads every imperative operation splits its work over. ThreadPool
// runs one ParallelFor at a time, so operations the engine runs in parallel
// take turns on it rather than oversubscribing the cores.
ThreadPool* SharedPool() {
  static ThreadPool* pool =
      new ThreadPool(GetProcessOptions().nd_threads > 0 ? GetProcessOptions().nd_threads
                                                        : ThreadPool::DefaultThreads());
  return pool;  // lives to exit
}

Status TheEngine(Engine** engine) { return GetEngine(engine); }

std::vector<VarHandle> VarsOf(const std::vector<ArrayRef>& arrays) {
  std::vector<VarHandle> vars;
  for (const ArrayRef& array : arrays) vars.push_back(array->var);
  return vars;
}

// `array` as float32: itself, or a converted copy.
Status AsFloat32(const NDArray& array, NDArray* out) {
  if (array.dtype() == kFloat32) {
    *out = array;
    return Status();
  }
  return array.ToFloat32(out);
}

// Copies float32 values into `to`, converting to its element type.
Status StoreFloat32(const NDArray& values, const NDArray& to) {
  if (to.dtype() == kFloat32) {
    if (values.data() != to.data()) std::memcpy(to.data(), values.data(), to.bytes());
    return Status();
  }
  MXL_CHECK(ConvertFromFloat32(to.dtype(), values.fdata(), static_cast<size_t>(to.Size()),
                               to.data()),
            "cannot store values as dtype flag ", to.dtype());
  return Status();
}

// Prepares and runs `op` in float32 on the arrays' current contents.
Status RunOperator(Operator* op, const std::vector<NDArray>& inputs,
                   const std::vector<NDArray>& outputs) {
  if (op->MovesBytesOnly()) {  // views copy bytes in any dtype
    size_t unused = 0;
    MXL_RETURN_IF_ERROR(op->Prepare(inputs, outputs, &unused));
    return op->Forward(OpContext(), inputs, outputs);
  }
  std::vector<NDArray> in(inputs.size()), out(outputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) MXL_RETURN_IF_ERROR(AsFloat32(inputs[i], &in[i]));
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].dtype() == kFloat32) {
      out[i] = outputs[i];
    } else {
      MXL_RETURN_IF_ERROR(NDArray::Create(outputs[i].shape(), kFloat32, &out[i]));
    }
  }
  size_t workspace_bytes = 0;
  MXL_RETURN_IF_ERROR(op->Prepare(in, out, &workspace_bytes));
  std::shared_ptr<Storage> workspace;
  OpContext context;
  if (workspace_bytes > 0) {
    MXL_RETURN_IF_ERROR(Storage::Allocate(workspace_bytes, &workspace));
    context.workspace = workspace->data();
    context.workspace_bytes = workspace_bytes;
  }
  context.pool = SharedPool();
  MXL_RETURN_IF_ERROR(op->Forward(context, in, out));
  for (size_t i = 0; i < outputs.size(); ++i) {
    MXL_RETURN_IF_ERROR(StoreFloat32(out[i], outputs[i]));
  }
  return Status();
}

// Sets every element of `target` (of C type T) to `value`. Integers take it
// truncated towards zero and wrapped to their width (via int64, so that no
// out-of-range conversion is undefined); NaN becomes 0.
template <typename T>
Status FillAs(const NDArray& target, double value) {
  T* out = static_cast<T*>(target.data());
  T converted;
  if (std::is_floating_point<T>::value) {
    converted = static_cast<T>(value);
  } else {
    const double limit = 9223372036854775807.0;  // rounds to 2^63
    const double clamped = std::isnan(value) ? 0.0 : std::max(-limit, std::min(value, limit));
    const int64_t whole = clamped >= limit ? INT64_MAX : static_cast<int64_t>(clamped);
    converted = static_cast<T>(whole);
  }
  for (int64_t i = 0; i < target.Size(); ++i) out[i] = converted;
  return Status();
}

// SplitMix64's finaliser: a bijective 64-bit mix with good avalanche.
uint64_t Mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// A uniform double in [0, 1) from counter `index` of (seed, stream).
double UniformAt(uint64_t seed, uint64_t stream, uint64_t index) {
  const uint64_t bits = Mix(Mix(Mix(seed) ^ stream) ^ index);
  return static_cast<double>(bits >> 11) * (1.0 / 9007199254740992.0);
}

}  // namespace imperative_detail

Status NewEngineArray(const Shape& shape, int dtype, ArrayRef* out) {
  MXL_CHECK(IsValidDType(dtype), "unknown dtype flag ", dtype);
  MXL_CHECK(shape.is_complete(), "cannot create an array of incomplete shape ",
            shape.ToString());
  Engine* engine = nullptr;
  MXL_RETURN_IF_ERROR(imperative_detail::TheEngine(&engine));
  auto array = std::make_shared<EngineArray>();
  MXL_RETURN_IF_ERROR(NDArray::Create(shape, dtype, &array->data));
  array->var = engine->NewVariable();
  *out = std::move(array);
  return Status();
}

Status ViewOf(const ArrayRef& base, int64_t offset, const Shape& shape, ArrayRef* out) {
  MXL_CHECK(shape.is_complete() && offset >= 0 && offset + shape.Size() <= base->data.Size(),
            "a view of shape ", shape.ToString(), " at element ", offset,
            " does not fit in an array of shape ", base->data.shape().ToString());
  const NDArray& data = base->data;
  const size_t base_offset = static_cast<size_t>(static_cast<char*>(data.data()) -
                                                 static_cast<char*>(data.storage()->data()));
  auto view = std::make_shared<EngineArray>();
  view->data = NDArray(shape, data.dtype(), data.storage(),
                       base_offset + static_cast<size_t>(offset) * DTypeSize(data.dtype()));
  view->var = base->var;
  *out = std::move(view);
  return Status();
}

Status Invoke(const std::string& op_name, const AttrMap& attrs,
              const std::vector<ArrayRef>& inputs, std::vector<ArrayRef>* outputs) {
  std::unique_ptr<Operator> made;
  MXL_RETURN_IF_ERROR(CreateOperator(op_name, op_name, attrs, &made));
  std::shared_ptr<Operator> op(std::move(made));
  const std::vector<std::string> input_names = op->InputNames();
  MXL_CHECK(input_names.size() == inputs.size(), "operator ", op_name, " takes ",
            input_names.size(), " input(s) but was given ", inputs.size());
  const size_t num_outputs = op->OutputNames().size();
  std::vector<Shape> in_shapes, out_shapes(num_outputs);
  std::vector<int> in_types, out_types(num_outputs, kUnknownDType);
  for (const ArrayRef& input : inputs) {
    in_shapes.push_back(input->data.shape());
    in_types.push_back(input->data.dtype());
  }
  MXL_RETURN_IF_ERROR(op->InferShape(&in_shapes, &out_shapes));
  MXL_RETURN_IF_ERROR(op->InferType(&in_types, &out_types));
  for (size_t i = 0; i < inputs.size(); ++i) {
    MXL_CHECK(in_shapes[i] == inputs[i]->data.shape(), "operator ", op_name, ": input '",
              input_names[i], "' has shape ", inputs[i]->data.shape().ToString(),
              " but the operator needs ", in_shapes[i].ToString());
  }
  op->SetDTypes(in_types, out_types);
  std::vector<ArrayRef> results(num_outputs);
  for (size_t i = 0; i < num_outputs; ++i) {
    MXL_CHECK(out_shapes[i].is_complete(), "operator ", op_name,
              ": cannot infer the shape of output ", i);
    const int dtype = out_types[i] == kUnknownDType ? static_cast<int>(kFloat32) : out_types[i];
    MXL_RETURN_IF_ERROR(NewEngineArray(out_shapes[i], dtype, &results[i]));
  }
  Engine* engine = nullptr;
  MXL_RETURN_IF_ERROR(imperative_detail::TheEngine(&engine));
  std::vector<NDArray> in_data, out_data;
  for (const ArrayRef& input : inputs) in_data.push_back(input->data);
  for (const ArrayRef& output : results) out_data.push_back(output->data);
  // Inputs the operator updates (auxiliary states) are written, not only read.
  std::vector<VarHandle> reads, writes = imperative_detail::VarsOf(results);
  const std::vector<int> mutated = op->MutatedInputs();
  for (size_t i = 0; i < inputs.size(); ++i) {
    bool written = false;
    for (int slot : mutated) written |= slot == static_cast<int>(i);
    (written ? writes : reads).push_back(inputs[i]->var);
  }
  engine->Push(
      [op, in_data, out_data]() {
        return imperative_detail::RunOperator(op.get(), in_data, out_data);
      },
      reads, writes);
  results.resize(static_cast<size_t>(op->NumVisibleOutputs()));
  *outputs = std::move(results);
  return Status();
}

Status Dot(const ArrayRef& a, const ArrayRef& b, bool trans_a, bool trans_b, ArrayRef* out) {
  const Shape& sa = a->data.shape();
  const Shape& sb = b->data.shape();
  MXL_CHECK(sa.ndim() == 2 && sb.ndim() == 2, "dot: needs 2-d arrays, got ", sa.ToString(),
            " and ", sb.ToString());
  MXL_CHECK(a->data.dtype() == kFloat32 && b->data.dtype() == kFloat32,
            "dot: only float32 arrays are supported, got ", DTypeName(a->data.dtype()), " and ",
            DTypeName(b->data.dtype()));
  const int64_t m = trans_a ? sa[1] : sa[0];
  const int64_t k = trans_a ? sa[0] : sa[1];
  const int64_t kb = trans_b ? sb[1] : sb[0];
  const int64_t n = trans_b ? sb[0] : sb[1];
  MXL_CHECK(k == kb, "dot: shapes ", sa.ToString(), " and ", sb.ToString(),
            " do not match (inner dimensions ", k, " and ", kb, ")");
  ArrayRef result;
  MXL_RETURN_IF_ERROR(NewEngineArray(Shape({m, n}), kFloat32, &result));
  Engine* engine = nullptr;
  MXL_RETURN_IF_ERROR(imperative_detail::TheEngine(&engine));
  const NDArray x = a->data, y = b->data, z = result->data;
  engine->Push(
      [=]() {
        if (m > 0 && n > 0) {
          if (k == 0) {
            std::memset(z.data(), 0, z.bytes());
          } else {
            Sgemm(trans_a, trans_b, m, n, k, x.fdata(), sa[1], y.fdata(), sb[1], 0.0f, z.fdata(),
                  n, imperative_detail::SharedPool());
          }
        }
        return Status();
      },
      {a->var, b->var}, {result->var});
  *out = std::move(result);
  return Status();
}

Status CopyFromTo(const ArrayRef& from, const ArrayRef& to) {
  MXL_CHECK(from->data.Size() == to->data.Size(), "copyto: cannot copy an array of shape ",
            from->data.shape().ToString(), " into one of shape ", to->data.shape().ToString());
  if (from->data.data() == to->data.data() && from->data.dtype() == to->data.dtype()) {
    return Status();
  }
  Engine* engine = nullptr;
  MXL_RETURN_IF_ERROR(imperative_detail::TheEngine(&engine));
  const NDArray source = from->data, target = to->data;
  std::vector<VarHandle> reads;
  if (from->var != to->var) reads.push_back(from->var);
  engine->Push(
      [source, target]() {
        if (source.dtype() == target.dtype()) {
          std::memmove(target.data(), source.data(), target.bytes());
          return Status();
        }
        NDArray values;
        MXL_RETURN_IF_ERROR(source.ToFloat32(&values));
        return imperative_detail::StoreFloat32(values, target);
      },
      reads, {to->var});
  return Status();
}

Status Fill(const ArrayRef& to, double value) {
  Engine* engine = nullptr;
  MXL_RETURN_IF_ERROR(imperative_detail::TheEngine(&engine));
  const NDArray target = to->data;
  engine->Push(
      [target, value]() {
        const size_t count = static_cast<size_t>(target.Size());
        // Wide types are filled from the double itself: a float32 detour
        // would round integers above 2^24.
        switch (target.dtype()) {
          case kFloat64: return imperative_detail::FillAs<double>(target, value);
          case kInt32: return imperative_detail::FillAs<int32_t>(target, value);
          case kInt64: return imperative_detail::FillAs<int64_t>(target, value);
          case kUint32: return imperative_detail::FillAs<uint32_t>(target, value);
          case kUint64: return imperative_detail::FillAs<uint64_t>(target, value);
          default: break;
        }
        std::vector<float> values(count, static_cast<float>(value));
        MXL_CHECK(ConvertFromFloat32(target.dtype(), values.data(), count, target.data()),
                  "fill: unknown dtype flag ", target.dtype());
        return Status();
      },
      {}, {to->var});
  return Status();
}

Status WriteFromHost(const ArrayRef& to, const void* data, int dtype) {
  MXL_CHECK(IsValidDType(dtype), "unknown dtype flag ", dtype);
  auto source = std::make_shared<NDArray>();
  MXL_RETURN_IF_ERROR(NDArray::Create(to->data.shape(), dtype, source.get()));
  std::memcpy(source->data(), data, source->bytes());
  auto from = std::make_shared<EngineArray>();
  from->data = *source;
  Engine* engine = nullptr;
  MXL_RETURN_IF_ERROR(imperative_detail::TheEngine(&engine));
  from->var = engine->NewVariable();
  return CopyFromTo(from, to);
}

Status RandomFill(const ArrayRef& to, const std::string& kind, double low, double high,
                  uint64_t seed, uint64_t stream) {
  const bool normal = kind == "normal";
  MXL_CHECK(normal || kind == "uniform", "random: unknown distribution '", kind,
            "' (uniform or normal)");
  MXL_CHECK(!normal || high >= 0, "random.normal: scale must be non-negative, got ", high);
  Engine* engine = nullptr;
  MXL_RETURN_IF_ERROR(imperative_detail::TheEngine(&engine));
  const NDArray target = to->data;
  engine->Push(
      [=]() {
        const int64_t count = target.Size();
        std::vector<float> values(static_cast<size_t>(count));
        for (int64_t i = 0; i < count; ++i) {
          double u = imperative_detail::UniformAt(seed, stream, static_cast<uint64_t>(i));
          if (normal) {
            // Box-Muller on two independent uniforms of this element.
            const double v = imperative_detail::UniformAt(seed, stream ^ 0x5DEECE66Dull,
                                                          static_cast<uint64_t>(i));
            const double radius = std::sqrt(-2.0 * std::log(1.0 - u));
            values[static_cast<size_t>(i)] =
                static_cast<float>(low + high * radius * std::cos(6.283185307179586 * v));
          } else {
            values[static_cast<size_t>(i)] = static_cast<float>(low + (high - low) * u);
          }
        }
        std::shared_ptr<Storage> storage;
        MXL_RETURN_IF_ERROR(Storage::Allocate(0, &storage));
        storage->ExchangeData(values.data());
        const NDArray staged(target.shape(), kFloat32, storage);
        Status status = imperative_detail::StoreFloat32(staged, target);
        storage->ExchangeData(nullptr);
        return status;
      },
      {}, {to->var});
  return Status();
}

Status WaitToRead(const ArrayRef& array) {
  Engine* engine = nullptr;
  MXL_RETURN_IF_ERROR(imperative_detail::TheEngine(&engine));
  return engine->WaitForVar(array->var);
}

Status WaitAll() {
  Engine* engine = nullptr;
  MXL_RETURN_IF_ERROR(imperative_detail::TheEngine(&engine));
  return engine->WaitForAll();
}

Status ReadToHost(const ArrayRef& array, NDArray* out) {
  MXL_RETURN_IF_ERROR(WaitToRead(array));
  return array->data.Clone(out);
}

Status PushSleep(const std::vector<ArrayRef>& arrays, int millis, const std::string& failure) {
  Engine* engine = nullptr;
  MXL_RETURN_IF_ERROR(imperative_detail::TheEngine(&engine));
  engine->Push(
      [millis, failure]() {
#ifndef MXLITE_NO_THREADS
        std::this_thread::sleep_for(std::chrono::milliseconds(millis));
#else
        const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(millis);
        while (std::chrono::steady_clock::now() < until) {
        }
#endif  // !MXLITE_NO_THREADS
        MXL_CHECK(failure.empty(), failure);
        return Status();
      },
      {}, imperative_detail::VarsOf(arrays));
  return Status();
}

}  // namespace mxlite

#endif  // MXLITE_PREDICT_ONLY
