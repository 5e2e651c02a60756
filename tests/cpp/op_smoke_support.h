/*
 * What op_smoke_test's checks share: the failure counters, a seeded
 * random source, running one operator through create, inference, Prepare
 * and Forward (Execute), and comparisons that report a failure by name.
 * Included once, by op_smoke_test.cc.
 */
#ifndef MXLITE_TESTS_CPP_OP_SMOKE_SUPPORT_H_
#define MXLITE_TESTS_CPP_OP_SMOKE_SUPPORT_H_

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "../../predict/c_api/environment.h"
#include "../../predict/kernels/thread_pool.h"
#include "../../predict/operators/operator.h"

namespace op_smoke_test {

using namespace mxlite;

int g_checks = 0;
int g_failures = 0;

void Expect(bool ok, const std::string& what) {
  ++g_checks;
  if (!ok) {
    ++g_failures;
    std::printf("FAIL: %s\n", what.c_str());
  }
}

// Deterministic uniform numbers (xorshift64*).
struct Rng {
  uint64_t state = 0x9e3779b97f4a7c15ull;
  float Uniform(float lo, float hi) {
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    uint64_t bits = (state * 0x2545f4914f6cdd1dull) >> 40;  // 24 bits
    return lo + (hi - lo) * static_cast<float>(bits) / 16777216.f;
  }
};
Rng g_rng;

std::vector<float> Random(int64_t count, float lo = -1.f, float hi = 1.f) {
  std::vector<float> values(static_cast<size_t>(count));
  for (float& v : values) v = g_rng.Uniform(lo, hi);
  return values;
}

// One operator run: inputs as flat vectors with their shapes.
struct Run {
  std::unique_ptr<Operator> op;
  std::vector<Shape> in_shapes, out_shapes;
  std::vector<std::vector<float>> outputs;
};

// Internal operators too: the fused ones are tested here as the optimiser makes them.
Status Create(const std::string& op_name, const AttrMap& attrs, std::unique_ptr<Operator>* op) {
  return CreateOperator(op_name, "node", attrs, op, OpSource::kInternal);
}

// Infers shapes from the given input shapes (missing ones unknown).
Status Infer(Operator* op, std::vector<Shape> given, std::vector<Shape>* in,
             std::vector<Shape>* out) {
  given.resize(op->InputNames().size());
  *in = given;
  out->assign(op->OutputNames().size(), Shape());
  return op->InferShape(in, out);
}

// Creates, infers, prepares and runs; `inputs[i]` empty means random data.
// With `inplace`, output 0 shares input 0's buffer.
Status Execute(const std::string& op_name, const AttrMap& attrs, const std::vector<Shape>& shapes,
               std::vector<std::vector<float>>* inputs, Run* run, bool inplace = false,
               ThreadPool* pool = nullptr) {
  MXL_RETURN_IF_ERROR(Create(op_name, attrs, &run->op));
  // The options as the environment sets them (MXLITE_SHIFTED_GEMM=0).
  static RuntimeOptions options;
  MXL_RETURN_IF_ERROR(OptionsFromEnvironment(&options));
  run->op->set_runtime_options(&options);
  MXL_RETURN_IF_ERROR(Infer(run->op.get(), shapes, &run->in_shapes, &run->out_shapes));
  for (const Shape& s : run->in_shapes) {
    MXL_CHECK(s.is_complete(), "input shape not inferred: ", s.ToString());
  }
  for (const Shape& s : run->out_shapes) {
    MXL_CHECK(s.is_complete(), "output shape not inferred: ", s.ToString());
  }
  inputs->resize(run->in_shapes.size());
  std::vector<NDArray> in(run->in_shapes.size()), out(run->out_shapes.size());
  for (size_t i = 0; i < in.size(); ++i) {
    std::vector<float>& values = (*inputs)[i];
    if (values.empty()) values = Random(run->in_shapes[i].Size());
    MXL_CHECK(static_cast<int64_t>(values.size()) == run->in_shapes[i].Size(), "input ", i,
              " has ", values.size(), " values for shape ", run->in_shapes[i].ToString());
    MXL_RETURN_IF_ERROR(NDArray::Create(run->in_shapes[i], kFloat32, &in[i]));
    if (!values.empty()) std::memcpy(in[i].data(), values.data(), values.size() * sizeof(float));
  }
  for (size_t j = 0; j < out.size(); ++j) {
    if (j == 0 && inplace) {
      out[0] = in[0].Reshaped(run->out_shapes[0]);
    } else {
      MXL_RETURN_IF_ERROR(NDArray::Create(run->out_shapes[j], kFloat32, &out[j]));
      // Poison so that an unwritten element shows.
      for (int64_t k = 0; k < out[j].Size(); ++k) out[j].fdata()[k] = NAN;
    }
  }
  size_t workspace_bytes = 0;
  MXL_RETURN_IF_ERROR(run->op->Prepare(in, out, &workspace_bytes));
  std::vector<float> workspace(workspace_bytes / sizeof(float) + 1);
  OpContext ctx;
  ctx.workspace = workspace_bytes ? workspace.data() : nullptr;
  ctx.workspace_bytes = workspace_bytes;
  ctx.pool = pool;
  MXL_RETURN_IF_ERROR(run->op->Forward(ctx, in, out));
  run->outputs.clear();
  for (const NDArray& array : out) {
    run->outputs.emplace_back(array.fdata(), array.fdata() + array.Size());
  }
  return Status();
}

// |got - want| <= atol + rtol * |want|, NaN equal to NaN.
bool Close(const std::vector<float>& got, const std::vector<float>& want, double rtol,
           double atol, std::string* detail) {
  if (got.size() != want.size()) {
    *detail = StrCat("size ", got.size(), " vs ", want.size());
    return false;
  }
  double worst = 0;
  size_t worst_index = 0;
  bool ok = true;
  for (size_t i = 0; i < got.size(); ++i) {
    const double a = got[i], b = want[i];
    if (std::isnan(a) || std::isnan(b)) {
      if (std::isnan(a) != std::isnan(b)) {
        *detail = StrCat("index ", i, ": got ", a, " want ", b);
        return false;
      }
      continue;
    }
    const double excess = std::fabs(a - b) - (atol + rtol * std::fabs(b));
    if (excess > 0 && (ok || excess > worst)) {
      ok = false;
      worst = excess;
      worst_index = i;
    }
  }
  if (!ok) {
    *detail = StrCat("index ", worst_index, ": got ", got[worst_index], " want ",
                     want[worst_index]);
  }
  return ok;
}

void ExpectClose(const std::string& name, const std::vector<float>& got,
                 const std::vector<float>& want, double rtol, double atol) {
  std::string detail;
  bool ok = Close(got, want, rtol, atol, &detail);
  Expect(ok, name + ": " + detail);
}

void ExpectOk(const std::string& name, const Status& status) {
  Expect(status.ok(), name + ": " + status.message());
}

void ExpectError(const std::string& name, const Status& status, const std::string& fragment) {
  Expect(!status.ok() && status.message().find(fragment) != std::string::npos,
         name + ": expected an error containing '" + fragment + "', got '" +
             (status.ok() ? std::string("success") : status.message()) + "'");
}

std::string Dims(const std::vector<int64_t>& dims) {
  std::string text = "(";
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? "," : "") + std::to_string(dims[i]);
  return text + (dims.size() == 1 ? ",)" : ")");
}

}  // namespace op_smoke_test

#endif  // MXLITE_TESTS_CPP_OP_SMOKE_SUPPORT_H_
