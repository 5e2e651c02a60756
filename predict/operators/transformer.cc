/*
 * Multi-head attention building blocks of GluonNLP's BERT and Transformer
 * (MXNet 1.9.1 src/operator/contrib/transformer.cc):
 *
 *   _contrib_div_sqrt_dim: out = data / sqrt(data.shape[-1]), the divisor
 *   computed in double and cast to the data's type first (an integer type
 *   truncates it: sqrt(5) divides int data by 2).
 *
 * The interleaved products take the projections sequence-major, (L, B, ...),
 * with the heads interleaved inside the last dim. With E = heads * D:
 *
 *   _contrib_interleaved_matmul_selfatt_qk(qkv (L, B, 3E), heads):
 *     qkv[l, b] holds, per head h, q, k and v of D values each, at
 *     h*3D, h*3D + D and h*3D + 2D. The output, (B*heads, L, L), is at
 *     [b*heads + h, i, j]: q_i . k_j / sqrt(D) of that head.
 *   _contrib_interleaved_matmul_selfatt_valatt(qkv (L, B, 3E),
 *       attention (B*heads, L, L), heads):
 *     out[i, b, h*D + r] = sum_j attention[b*heads + h, i, j] v_j[r], (L, B, E).
 *   _contrib_interleaved_matmul_encdec_qk(queries (Lq, B, E),
 *       keys_values (Lk, B, 2E), heads):
 *     queries hold head h's q at h*D; keys_values hold its k at h*2D and its
 *     v at h*2D + D. The output, (B*heads, Lq, Lk), is q_i . k_j / sqrt(D).
 *   _contrib_interleaved_matmul_encdec_valatt(keys_values (Lk, B, 2E),
 *       attention (B*heads, Lq, Lk), heads):
 *     out[i, b, h*D + r] = sum_j attention[b*heads + h, i, j] v_j[r], (Lq, B, E).
 *
 * MXNet's shape functions check less than its kernels assume (a last dim
 * that does not split into heads, an attention batch other than B*heads):
 * here those are shape errors, not wrong results or reads out of bounds.
 * MXNet's CPU kernels take float32 only; mxlite computes float16 as well.
 */
#include <algorithm>
#include <cmath>

#include "../kernels/gemm.h"
#include "../kernels/thread_pool.h"
#include "operator.h"

namespace mxlite {
namespace transformer_op {

// ---------------------------------------------------------------------------
// _contrib_div_sqrt_dim

class DivSqrtDim : public Operator {
 public:
  std::vector<InplacePair> InplaceOptions() const override { return {{0, 0, false}}; }

  void SetDTypes(const std::vector<int>& in, const std::vector<int>&) override { dtype_ = in[0]; }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    const Shape& data = (*in)[0];
    if (data.rank_known()) {
      MXL_CHECK(data.ndim() >= 1, "input 'data' has shape ", data.ToString(),
                " but _contrib_div_sqrt_dim needs at least one dim");
    }
    return SameShapeInference(*this, in, out);
  }

  Status Forward(const OpContext&, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const Shape& shape = in[0].shape();
    // DType(sqrt(double(last dim))), as MXNet's DivSqrtDimForward_.
    const float divisor = RoundToDType(
        dtype_, static_cast<float>(std::sqrt(static_cast<double>(shape[shape.ndim() - 1]))));
    const float* x = in[0].fdata();
    float* y = out[0].fdata();
    const int64_t size = in[0].Size();
    for (int64_t i = 0; i < size; ++i) y[i] = x[i] / divisor;
    return Status();
  }

 private:
  int dtype_ = kFloat32;
};

Status CreateDivSqrtDim(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new DivSqrtDim());
  return Status();
}

// ---------------------------------------------------------------------------
// The interleaved products

enum class Kind { kSelfQK, kSelfValAtt, kEncDecQK, kEncDecValAtt };

// One strided matrix product per (batch, head), C = scale * op(A) op(B):
// A is m x k (row stride lda), B is k x n (row stride ldb) or, with
// trans_b, n x k; C is m x n (row stride ldc). Batch b*heads + h starts at
// a + b*a_batch + h*a_head, and likewise for B and C.
struct Product {
  int64_t batch = 0, head_dim = 0;
  int64_t m = 0, n = 0, k = 0;
  bool trans_b = false;
  float scale = 1.f;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t a_batch = 0, a_head = 0, b_batch = 0, b_head = 0, c_batch = 0, c_head = 0;
};

class InterleavedMatMul : public Operator {
 public:
  InterleavedMatMul(Kind kind, int64_t heads) : kind_(kind), heads_(heads) {}

  std::vector<std::string> InputNames() const override {
    switch (kind_) {
      case Kind::kSelfQK: return {"queries_keys_values"};
      case Kind::kSelfValAtt: return {"queries_keys_values", "attention"};
      case Kind::kEncDecQK: return {"queries", "keys_values"};
      case Kind::kEncDecValAtt: return {"keys_values", "attention"};
    }
    return {};
  }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    for (const Shape& s : *in) {
      if (!s.is_complete()) return Status();
    }
    Shape oshape;
    Product p;
    MXL_RETURN_IF_ERROR(Geometry(*in, &oshape, &p));
    return AssignShape(out, 0, oshape, "output", OutputNames());
  }

  Status Prepare(const std::vector<NDArray>& in, const std::vector<NDArray>&,
                 size_t* workspace_bytes) override {
    *workspace_bytes = 0;
    std::vector<Shape> shapes;
    for (const NDArray& a : in) shapes.push_back(a.shape());
    Shape oshape;
    return Geometry(shapes, &oshape, &product_);
  }

  Status Forward(const OpContext& ctx, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const Product& p = product_;
    const int64_t head_dim = p.head_dim;
    const float* a = nullptr;
    const float* b = nullptr;
    // QK: A = queries, B = keys (transposed); ValAtt: A = attention, B = values.
    switch (kind_) {
      case Kind::kSelfQK:
        a = in[0].fdata();
        b = in[0].fdata() + head_dim;
        break;
      case Kind::kSelfValAtt:
        a = in[1].fdata();
        b = in[0].fdata() + 2 * head_dim;
        break;
      case Kind::kEncDecQK:
        a = in[0].fdata();
        b = in[1].fdata();
        break;
      case Kind::kEncDecValAtt:
        a = in[1].fdata();
        b = in[0].fdata() + head_dim;
        break;
    }
    float* c = out[0].fdata();
    const int64_t tasks = p.batch * heads_;
    ParallelFor(tasks > 1 ? ctx.pool : nullptr, tasks, [&](int64_t task) {
      const int64_t bi = task / heads_, h = task % heads_;
      const float* at = a + bi * p.a_batch + h * p.a_head;
      const float* bt = b + bi * p.b_batch + h * p.b_head;
      float* ct = c + bi * p.c_batch + h * p.c_head;
      if (p.k == 0) {
        for (int64_t i = 0; i < p.m; ++i) std::fill(ct + i * p.ldc, ct + i * p.ldc + p.n, 0.f);
        return;
      }
      Sgemm(false, p.trans_b, p.m, p.n, p.k, at, p.lda, bt, p.ldb, 0.f, ct, p.ldc,
            tasks > 1 ? nullptr : ctx.pool);
      if (p.scale != 1.f) {
        for (int64_t i = 0; i < p.m; ++i) {
          float* row = ct + i * p.ldc;
          for (int64_t j = 0; j < p.n; ++j) row[j] *= p.scale;
        }
      }
    });
    return Status();
  }

 private:
  // The output shape and the strided products, from the input shapes.
  Status Geometry(const std::vector<Shape>& in, Shape* oshape, Product* p) const {
    const std::vector<std::string> names = InputNames();
    for (size_t i = 0; i < in.size(); ++i) {
      MXL_CHECK(in[i].ndim() == 3, "input '", names[i], "' has shape ", in[i].ToString(),
                " but needs 3 dims");
    }
    const int64_t heads = heads_;
    // The input whose last dim holds the heads interleaved, and how many
    // projections (q, k, v) each head has there.
    const bool self = kind_ == Kind::kSelfQK || kind_ == Kind::kSelfValAtt;
    const int parts = self ? 3 : 2;
    const int proj = kind_ == Kind::kEncDecQK ? 1 : 0;
    const Shape& packed = in[proj];
    MXL_CHECK(packed[2] % (parts * heads) == 0, "input '", names[proj], "' has shape ",
              packed.ToString(), ": its last dim must split into ", heads, " heads of ", parts,
              " projections (a multiple of ", parts * heads, ")");
    const int64_t d = packed[2] / (parts * heads);  // head dim
    const int64_t embed = d * heads;
    const int64_t seq = packed[0], batch = packed[1];
    const int64_t row = batch * parts * embed;  // packed's stride per sequence step
    p->k = d;
    switch (kind_) {
      case Kind::kSelfQK:
      case Kind::kEncDecQK: {
        int64_t q_seq = seq, q_row = row, q_head = parts * d;
        if (kind_ == Kind::kEncDecQK) {
          const Shape& q = in[0];
          MXL_CHECK(q[1] == batch && q[2] * 2 == packed[2], "inputs 'queries' ", q.ToString(),
                    " and 'keys_values' ", packed.ToString(),
                    " do not fit: keys_values needs the same batch and twice the last dim");
          q_seq = q[0];
          q_row = batch * embed;
          q_head = d;
        }
        *oshape = Shape({batch * heads, q_seq, seq});
        p->m = q_seq;
        p->n = seq;
        p->trans_b = true;
        p->scale = static_cast<float>(1.0 / std::sqrt(static_cast<float>(d)));
        p->lda = q_row;
        p->a_batch = q_head * heads;
        p->a_head = q_head;
        p->ldb = row;
        p->b_batch = parts * embed;
        p->b_head = parts * d;
        p->ldc = seq;
        p->c_head = q_seq * seq;
        p->c_batch = heads * p->c_head;
        break;
      }
      case Kind::kSelfValAtt:
      case Kind::kEncDecValAtt: {
        const Shape& att = in[1];
        const int64_t q_seq = self ? seq : att[1];
        MXL_CHECK(att[0] == batch * heads && att[1] == q_seq && att[2] == seq,
                  "input 'attention' has shape ", att.ToString(), " but with '", names[0], "' ",
                  packed.ToString(), " and ", heads, " heads it needs (", batch * heads, ", ",
                  self ? StrCat(seq) : std::string("queries"), ", ", seq, ")");
        *oshape = Shape({q_seq, batch, embed});
        p->m = q_seq;
        p->n = d;
        p->k = seq;
        p->trans_b = false;
        p->scale = 1.f;
        p->lda = seq;
        p->a_head = q_seq * seq;
        p->a_batch = heads * p->a_head;
        p->ldb = row;
        p->b_batch = parts * embed;
        p->b_head = parts * d;
        p->ldc = batch * embed;
        p->c_batch = embed;
        p->c_head = d;
        break;
      }
    }
    p->batch = batch;
    p->head_dim = d;
    return Status();
  }

  Kind kind_;
  int64_t heads_;
  Product product_;  // for the final shapes (Prepare)
};

Status CreateInterleavedMatMul(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  const int64_t heads = attrs->Int("heads");
  MXL_RETURN_IF_ERROR(attrs->Finish());
  if (heads < 1) attrs->Fail("heads", StrCat(heads, " must be at least 1"));
  MXL_RETURN_IF_ERROR(attrs->Finish());
  const std::string& op = attrs->op_name();
  Kind kind;
  if (op == "_contrib_interleaved_matmul_selfatt_qk") {
    kind = Kind::kSelfQK;
  } else if (op == "_contrib_interleaved_matmul_selfatt_valatt") {
    kind = Kind::kSelfValAtt;
  } else if (op == "_contrib_interleaved_matmul_encdec_qk") {
    kind = Kind::kEncDecQK;
  } else if (op == "_contrib_interleaved_matmul_encdec_valatt") {
    kind = Kind::kEncDecValAtt;
  } else {
    return Status::Error(StrCat("internal error: no interleaved product for '", op, "'"));
  }
  out->reset(new InterleavedMatMul(kind, heads));
  return Status();
}

}  // namespace transformer_op
}  // namespace mxlite
