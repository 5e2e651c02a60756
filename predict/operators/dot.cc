/*
 * dot and batch_dot: matrix products through the shared GEMM.
 *
 * dot views each operand as a matrix, as MXNet's DotShape does: lhs as
 * (product of all dims but the last, last dim), or with transpose_a as
 * (first dim, product of the rest) transposed; rhs as (first dim, product
 * of the rest), or with transpose_b as (product of all but the last, last)
 * transposed. The output shape is lhs's remaining dims followed by rhs's
 * (a 1-D operand contributes none; 1-D . 1-D gives shape (1,)).
 *
 * batch_dot multiplies matching matrices of two stacks: lhs (..., M, K) or
 * (..., K, M) with transpose_a, rhs (..., K, N) or (..., N, K) with
 * transpose_b, the leading (batch) dims equal; the output is (..., M, N).
 */
#include <algorithm>

#include "../kernels/gemm.h"
#include "operator.h"
#include "tensor_util.h"

namespace mxlite {
namespace dot_op {

// C[m, n] = op(A) op(B), or zeros when the inner dim is empty.
void MatMul(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
            const float* b, float* c) {
  if (k == 0) {
    std::fill(c, c + m * n, 0.f);
    return;
  }
  Sgemm(trans_a, trans_b, m, n, k, a, trans_a ? m : k, b, trans_b ? k : n, 0.f, c, n);
}

struct DotGeometry {
  int64_t m = 0, n = 0, k = 0;
  Shape oshape;
};

class Dot : public Operator {
 public:
  Dot(bool transpose_a, bool transpose_b) : transpose_a_(transpose_a), transpose_b_(transpose_b) {}

  std::vector<std::string> InputNames() const override { return {"lhs", "rhs"}; }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    if (!(*in)[0].is_complete() || !(*in)[1].is_complete()) return Status();
    DotGeometry g;
    MXL_RETURN_IF_ERROR(Geometry((*in)[0], (*in)[1], &g));
    return AssignShape(out, 0, g.oshape, "output", OutputNames());
  }

  Status Prepare(const std::vector<NDArray>& in, const std::vector<NDArray>&,
                 size_t* workspace_bytes) override {
    *workspace_bytes = 0;
    return Geometry(in[0].shape(), in[1].shape(), &geometry_);
  }

  Status Forward(const OpContext&, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    MatMul(transpose_a_, transpose_b_, geometry_.m, geometry_.n, geometry_.k, in[0].fdata(),
           in[1].fdata(), out[0].fdata());
    return Status();
  }

 private:
  Status Geometry(const Shape& lhs, const Shape& rhs, DotGeometry* g) const {
    MXL_CHECK(lhs.ndim() >= 1 && rhs.ndim() >= 1, "dot needs inputs with at least one dim, got ",
              lhs.ToString(), " and ", rhs.ToString());
    std::vector<int64_t> dims;
    if (lhs.ndim() == 1 && rhs.ndim() == 1) {
      MXL_CHECK(lhs[0] == rhs[0], "dot of vectors of different lengths ", lhs.ToString(), " and ",
                rhs.ToString());
      g->m = 1;
      g->n = 1;
      g->k = lhs[0];
      g->oshape = Shape({1});
      return Status();
    }
    // lhs as (rows, cols): op(lhs) is (m, k).
    const int ln = lhs.ndim(), rn = rhs.ndim();
    if (transpose_a_) {
      g->k = lhs[0];
      g->m = lhs.ProdRange(1, ln);
      if (ln > 1) dims.insert(dims.end(), lhs.dims().begin() + 1, lhs.dims().end());
    } else {
      g->k = lhs[ln - 1];
      g->m = lhs.ProdRange(0, ln - 1);
      if (ln > 1) dims.insert(dims.end(), lhs.dims().begin(), lhs.dims().end() - 1);
    }
    int64_t rhs_k = 0;
    if (transpose_b_) {
      rhs_k = rhs[rn - 1];
      g->n = rhs.ProdRange(0, rn - 1);
      if (rn > 1) dims.insert(dims.end(), rhs.dims().begin(), rhs.dims().end() - 1);
    } else {
      rhs_k = rhs[0];
      g->n = rhs.ProdRange(1, rn);
      if (rn > 1) dims.insert(dims.end(), rhs.dims().begin() + 1, rhs.dims().end());
    }
    MXL_CHECK(g->k == rhs_k, "inputs ", lhs.ToString(), " and ", rhs.ToString(),
              " do not fit a matrix product (transpose_a=", transpose_a_ ? "True" : "False",
              ", transpose_b=", transpose_b_ ? "True" : "False", "): ", g->k, " versus ", rhs_k);
    g->oshape = Shape(dims);
    return Status();
  }

  bool transpose_a_, transpose_b_;
  DotGeometry geometry_;
};

class BatchDot : public Operator {
 public:
  BatchDot(bool transpose_a, bool transpose_b)
      : transpose_a_(transpose_a), transpose_b_(transpose_b) {}

  std::vector<std::string> InputNames() const override { return {"lhs", "rhs"}; }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    if (!(*in)[0].is_complete() || !(*in)[1].is_complete()) return Status();
    DotGeometry g;
    int64_t batch = 0;
    MXL_RETURN_IF_ERROR(Geometry((*in)[0], (*in)[1], &g, &batch));
    return AssignShape(out, 0, g.oshape, "output", OutputNames());
  }

  Status Prepare(const std::vector<NDArray>& in, const std::vector<NDArray>&,
                 size_t* workspace_bytes) override {
    *workspace_bytes = 0;
    return Geometry(in[0].shape(), in[1].shape(), &geometry_, &batch_);
  }

  Status Forward(const OpContext&, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const DotGeometry& g = geometry_;
    for (int64_t b = 0; b < batch_; ++b) {
      MatMul(transpose_a_, transpose_b_, g.m, g.n, g.k, in[0].fdata() + b * g.m * g.k,
             in[1].fdata() + b * g.k * g.n, out[0].fdata() + b * g.m * g.n);
    }
    return Status();
  }

 private:
  Status Geometry(const Shape& lhs, const Shape& rhs, DotGeometry* g, int64_t* batch) const {
    const int nd = lhs.ndim();
    MXL_CHECK(nd >= 3 && rhs.ndim() == nd, "batch_dot needs two inputs of equal rank >= 3, got ",
              lhs.ToString(), " and ", rhs.ToString());
    for (int d = 0; d < nd - 2; ++d) {
      MXL_CHECK(lhs[d] == rhs[d], "batch_dot inputs ", lhs.ToString(), " and ", rhs.ToString(),
                " differ in batch dim ", d);
    }
    g->m = transpose_a_ ? lhs[nd - 1] : lhs[nd - 2];
    g->k = transpose_a_ ? lhs[nd - 2] : lhs[nd - 1];
    const int64_t rhs_k = transpose_b_ ? rhs[nd - 1] : rhs[nd - 2];
    g->n = transpose_b_ ? rhs[nd - 2] : rhs[nd - 1];
    MXL_CHECK(g->k == rhs_k, "batch_dot inputs ", lhs.ToString(), " and ", rhs.ToString(),
              " do not fit a matrix product: ", g->k, " versus ", rhs_k);
    std::vector<int64_t> dims(lhs.dims().begin(), lhs.dims().end() - 2);
    *batch = lhs.ProdRange(0, nd - 2);
    dims.push_back(g->m);
    dims.push_back(g->n);
    g->oshape = Shape(dims);
    return Status();
  }

  bool transpose_a_, transpose_b_;
  DotGeometry geometry_;
  int64_t batch_ = 0;
};

Status CreateDot(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  const bool transpose_a = attrs->Bool("transpose_a", false);
  const bool transpose_b = attrs->Bool("transpose_b", false);
  const int stype = attrs->Enum("forward_stype", {"None", "default", "csr", "row_sparse"}, 0);
  MXL_RETURN_IF_ERROR(attrs->Finish());
  if (stype >= 2) {
    attrs->Fail("forward_stype", "sparse storage is not supported (dense arrays only)");
    return attrs->Finish();
  }
  if (attrs->op_name() == "batch_dot") {
    out->reset(new BatchDot(transpose_a, transpose_b));
  } else {
    out->reset(new Dot(transpose_a, transpose_b));
  }
  return Status();
}

}  // namespace dot_op
}  // namespace mxlite
