/*
 * Reductions and orderings along axes: sum (sum_axis), mean, prod, nansum,
 * nanprod, max (max_axis), min (min_axis), norm; argmax, argmin,
 * argmax_channel, pick; topk, sort, argsort.
 *
 * All of them work on "blocks": the input is viewed with the axes being
 * reduced (or sorted) moved last, so that every output element owns one
 * contiguous block of `length` values. When those axes already are the last
 * ones the input is used as it is; otherwise one strided gather
 * (tensor_util.h) rearranges it into scratch space first. Each operator then
 * runs a plain loop per block. Reductions over one run of middle axes (a
 * sum over ResNeSt's radix axis) instead fold whole slices in memory
 * order, in the same order per output element, so with the same bits.
 *
 * Shapes follow MXNet's ReduceAxesShapeImpl: axis None or () reduces
 * everything (to shape (1,), or all ones with keepdims); negative axes count
 * from the end; exclude reduces every axis except those listed; a result
 * with no dims left is (1,). Sums, means, products and norms accumulate in
 * double (MXNet's CPU reducer uses Kahan summation, which double matches to
 * float precision). argmax/argmin return the first index of the extreme
 * value, as a value of the input's type. topk, sort and argsort order each
 * block (only as far as k for topk): descending puts larger values first,
 * and ties keep their input order.
 */
#include <algorithm>
#include <cmath>
#include <numeric>
#include <type_traits>

#include "../kernels/thread_pool.h"
#include "mxnet_sort.h"
#include "operator.h"
#include "tensor_util.h"

namespace mxlite {
namespace reduce_op {

// The input arranged as blocks: `rows` runs of `length` values, row r being
// the values that output element r reduces.
struct Blocks {
  int64_t rows = 0, length = 0;
  bool rearrange = false;        // false: the input already is in this order
  Shape view_shape;              // kept axes, then reduced axes
  std::vector<int64_t> strides;  // input strides in that order
  // Where the reduced axes (of extent > 1) are one run with kept axes after
  // it: the input is outer x slices x inner, and output element
  // (o, j) folds x[o][0][j], x[o][1][j], ... (slices = length). Else 0.
  int64_t outer = 0, inner = 0;
};

Blocks MakeBlocks(const Shape& in, const std::vector<bool>& reduced) {
  Blocks blocks;
  const std::vector<int64_t> dense = RowMajorStrides(in);
  std::vector<int64_t> dims;
  blocks.rows = 1;
  blocks.length = 1;
  for (int pass = 0; pass < 2; ++pass) {  // kept axes first, then reduced ones
    for (int d = 0; d < in.ndim(); ++d) {
      if (reduced[d] != (pass == 1)) continue;
      dims.push_back(in[d]);
      blocks.strides.push_back(dense[d]);
      (pass == 0 ? blocks.rows : blocks.length) *= in[d];
    }
  }
  blocks.view_shape = Shape(dims);
  // Already in order when no reduced axis of extent > 1 precedes a kept one.
  bool seen_reduced = false;
  int first_reduced = -1, last_reduced = -1;
  for (int d = 0; d < in.ndim(); ++d) {
    if (in[d] == 1) continue;
    if (reduced[d]) {
      seen_reduced = true;
      if (first_reduced < 0) first_reduced = d;
      last_reduced = d;
    } else if (seen_reduced) {
      blocks.rearrange = true;
    }
  }
  // One run of reduced axes followed by kept ones: slices.
  bool one_run = blocks.rearrange;
  for (int d = first_reduced; one_run && d <= last_reduced; ++d) {
    one_run = reduced[d] || in[d] == 1;
  }
  if (one_run) {
    blocks.outer = in.ProdRange(0, first_reduced);
    blocks.inner = in.ProdRange(last_reduced + 1, in.ndim());
  }
  return blocks;
}

// The blocks' values: the input itself, or rearranged into *scratch.
const float* ArrangeBlocks(const float* in, const Blocks& blocks, std::vector<float>* scratch) {
  if (!blocks.rearrange) return in;
  scratch->resize(static_cast<size_t>(blocks.rows * blocks.length));
  GatherStrided(in, 0, blocks.strides, blocks.view_shape, scratch->data());
  return scratch->data();
}

// Which axes a reduction covers, and its output shape (MXNet's rules).
Status ReducedAxes(const Shape& in, bool has_axes, const std::vector<int64_t>& axes, bool keepdims,
                   bool exclude, std::vector<bool>* reduced, Shape* oshape) {
  const int ndim = in.ndim();
  reduced->assign(ndim, false);
  if (!has_axes || axes.empty()) {
    reduced->assign(ndim, true);
  } else {
    for (int64_t axis : axes) {
      int resolved = 0;
      MXL_RETURN_IF_ERROR(CheckAxis(axis, in, "axis", &resolved));
      MXL_CHECK(!(*reduced)[resolved], "attribute axis=", TupleText(axes), " names axis ",
                resolved, " twice");
      (*reduced)[resolved] = true;
    }
    if (exclude) {
      for (int d = 0; d < ndim; ++d) (*reduced)[d] = !(*reduced)[d];
    }
  }
  std::vector<int64_t> dims;
  for (int d = 0; d < ndim; ++d) {
    if (!(*reduced)[d]) {
      dims.push_back(in[d]);
    } else if (keepdims) {
      dims.push_back(1);
    }
  }
  if (dims.empty()) dims.push_back(1);
  *oshape = Shape(dims);
  return Status();
}

// ---------------------------------------------------------------------------
// The base of the operators that reduce blocks (Reduce, ArgExtreme, Pick):
// the axes, the output shape, and the block layout chosen in Prepare.

class BlockReduction : public Operator {
 public:
  BlockReduction(bool has_axes, std::vector<int64_t> axes, bool keepdims, bool exclude)
      : has_axes_(has_axes), axes_(std::move(axes)), keepdims_(keepdims), exclude_(exclude) {}

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    const Shape& data = (*in)[0];
    if (!data.is_complete()) return Status();
    std::vector<bool> reduced;
    Shape oshape;
    MXL_RETURN_IF_ERROR(ReducedAxes(data, has_axes_, axes_, keepdims_, exclude_, &reduced, &oshape));
    return AssignShape(out, 0, oshape, "output", OutputNames());
  }

  Status Prepare(const std::vector<NDArray>& in, const std::vector<NDArray>&,
                 size_t* workspace_bytes) override {
    *workspace_bytes = 0;
    std::vector<bool> reduced;
    Shape oshape;
    MXL_RETURN_IF_ERROR(
        ReducedAxes(in[0].shape(), has_axes_, axes_, keepdims_, exclude_, &reduced, &oshape));
    blocks_ = MakeBlocks(in[0].shape(), reduced);
    return Status();
  }

 protected:
  // The input's values block by block (rows x length).
  const float* Arrange(const NDArray& data) { return ArrangeBlocks(data.fdata(), blocks_, &scratch_); }

  bool has_axes_;
  std::vector<int64_t> axes_;
  bool keepdims_, exclude_;
  Blocks blocks_;  // set by Prepare

 private:
  std::vector<float> scratch_;
};

// ---------------------------------------------------------------------------
// sum, mean, prod, nansum, nanprod, max, min, norm

enum ReduceKind { kSum, kMean, kProd, kNanSum, kNanProd, kMax, kMin, kNorm1, kNorm2 };

// A reduction as a fold over a block's values in order: FoldFirst for
// the first, Fold for each next, FoldFinish for the result. Sums, products
// and norms in double; max and min keep the first of equal values and
// skip NaN (held in double, exactly).
template <ReduceKind kKind>
double Fold(double acc, float x) {
  const double v = x;
  switch (kKind) {
    case kMax:
      return v > acc ? v : acc;
    case kMin:
      return v < acc ? v : acc;
    case kProd:
      return acc * v;
    case kNanProd:
      return std::isnan(v) ? acc : acc * v;
    case kNorm1:
      return acc + std::fabs(v);
    case kNorm2:
      return acc + v * v;
    case kNanSum:
      return std::isnan(v) ? acc : acc + v;
    default:
      return acc + v;
  }
}

template <ReduceKind kKind>
double FoldFirst(float x) {
  if (kKind == kMax || kKind == kMin) return x;
  return Fold<kKind>(kKind == kProd || kKind == kNanProd ? 1.0 : 0.0, x);
}

template <ReduceKind kKind>
float FoldFinish(double acc, int64_t length) {
  if (kKind == kMean) return static_cast<float>(acc / static_cast<double>(length));
  if (kKind == kNorm2) return static_cast<float>(std::sqrt(acc));
  return static_cast<float>(acc);
}

// Output rows [row_begin, row_end) of blocks of `length` values.
template <ReduceKind kKind>
void FoldBlocks(const float* x, int64_t length, int64_t row_begin, int64_t row_end, float* y) {
  for (int64_t r = row_begin; r < row_end; ++r) {
    const float* block = x + r * length;
    double acc = FoldFirst<kKind>(block[0]);
    for (int64_t i = 1; i < length; ++i) acc = Fold<kKind>(acc, block[i]);
    y[r] = FoldFinish<kKind>(acc, length);
  }
}

// Output elements (o, j), j in [j_begin, j_end), of the slices layout
// (Blocks::outer): the same folds in the same order, slice after slice, so
// that the input is read in memory order with no rearranging. `acc` holds
// j_end - j_begin doubles.
template <ReduceKind kKind>
void FoldSlices(const float* x, int64_t slices, int64_t inner, int64_t o, int64_t j_begin,
                int64_t j_end, double* acc, float* y) {
  const float* first = x + o * slices * inner;
  const int64_t width = j_end - j_begin;
  for (int64_t j = 0; j < width; ++j) acc[j] = FoldFirst<kKind>(first[j_begin + j]);
  for (int64_t s = 1; s < slices; ++s) {
    const float* slice = first + s * inner + j_begin;
    for (int64_t j = 0; j < width; ++j) acc[j] = Fold<kKind>(acc[j], slice[j]);
  }
  float* out = y + o * inner + j_begin;
  for (int64_t j = 0; j < width; ++j) out[j] = FoldFinish<kKind>(acc[j], slices);
}

// Calls visitor(std::integral_constant<ReduceKind, kind>()).
template <typename Visitor>
void DispatchKind(ReduceKind kind, Visitor&& visitor) {
  switch (kind) {
    case kSum: visitor(std::integral_constant<ReduceKind, kSum>()); break;
    case kMean: visitor(std::integral_constant<ReduceKind, kMean>()); break;
    case kProd: visitor(std::integral_constant<ReduceKind, kProd>()); break;
    case kNanSum: visitor(std::integral_constant<ReduceKind, kNanSum>()); break;
    case kNanProd: visitor(std::integral_constant<ReduceKind, kNanProd>()); break;
    case kMax: visitor(std::integral_constant<ReduceKind, kMax>()); break;
    case kMin: visitor(std::integral_constant<ReduceKind, kMin>()); break;
    case kNorm1: visitor(std::integral_constant<ReduceKind, kNorm1>()); break;
    case kNorm2: visitor(std::integral_constant<ReduceKind, kNorm2>()); break;
  }
}

// Output elements per task of the slices layout: its double accumulators
// (8 KB) stay in L1.
constexpr int64_t kFoldSliceWidth = 1024;

class Reduce : public BlockReduction {
 public:
  // out_dtype kUnknownDType: the output has the input's dtype.
  Reduce(ReduceKind kind, bool has_axes, std::vector<int64_t> axes, bool keepdims, bool exclude,
         int out_dtype = kUnknownDType)
      : BlockReduction(has_axes, std::move(axes), keepdims, exclude), kind_(kind),
        out_dtype_(out_dtype) {}

  Status InferType(std::vector<int>* in, std::vector<int>* out) const override {
    if (kind_ == kNorm1 || kind_ == kNorm2) {
      // norm: float data; the output has out_dtype, or the data's type.
      if (out_dtype_ == kUnknownDType) return UnifyDTypes(*this, {0}, true, in, out);
    } else {
      return Operator::InferType(in, out);
    }
    (*out)[0] = out_dtype_;
    std::vector<int> no_outputs;
    return UnifyDTypes(*this, {0}, true, in, &no_outputs);
  }

  Status Forward(const OpContext& ctx, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    float* y = out[0].fdata();
    const int64_t length = blocks_.length;
    if (length == 0) {
      // An empty reduction: the identity of the operation (max/min have
      // none; MXNet leaves them at their initial values, which are these).
      const float identity = kind_ == kProd || kind_ == kNanProd ? 1.f
                             : kind_ == kMax                     ? -INFINITY
                             : kind_ == kMin                     ? INFINITY
                             : kind_ == kMean                    ? NAN
                                                                 : 0.f;
      std::fill(y, y + blocks_.rows, identity);
      return Status();
    }
    if (blocks_.inner > 0) {
      // Slices (a middle run of axes): folded in place, no rearranging.
      const float* x = in[0].fdata();
      const int64_t outer = blocks_.outer, inner = blocks_.inner;
      const int64_t parts = (inner + kFoldSliceWidth - 1) / kFoldSliceWidth;
      DispatchKind(kind_, [&](auto kind) {
        ParallelFor(ctx.pool, outer * parts, [&](int64_t task) {
          const int64_t j_begin = task % parts * kFoldSliceWidth;
          double acc[kFoldSliceWidth];
          FoldSlices<decltype(kind)::value>(x, length, inner, task / parts, j_begin,
                                           std::min(inner, j_begin + kFoldSliceWidth), acc, y);
        });
      });
      return Status();
    }
    const float* x = Arrange(in[0]);
    DispatchKind(kind_, [&](auto kind) {
      ParallelRanges(ctx.pool, blocks_.rows, RowsPerElementwiseTask(length),
                     [&](int64_t begin, int64_t end) {
                       FoldBlocks<decltype(kind)::value>(x, length, begin, end, y);
                     });
    });
    return Status();
  }

 private:
  ReduceKind kind_;
  int out_dtype_;
};

Status CreateReduce(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  static const struct {
    const char* name;
    ReduceKind kind;
  } kKinds[] = {{"sum", kSum},         {"mean", kMean}, {"prod", kProd}, {"nansum", kNanSum},
                {"nanprod", kNanProd}, {"max", kMax},   {"min", kMin}};
  std::vector<int64_t> axes;
  const bool has_axes = attrs->OptionalTuple("axis", &axes);
  const bool keepdims = attrs->Bool("keepdims", false);
  const bool exclude = attrs->Bool("exclude", false);
  MXL_RETURN_IF_ERROR(attrs->Finish());
  for (const auto& entry : kKinds) {
    if (attrs->op_name() == entry.name) {
      out->reset(new Reduce(entry.kind, has_axes, axes, keepdims, exclude));
      return Status();
    }
  }
  return Status::Error(StrCat("internal error: no reduction for '", attrs->op_name(), "'"));
}

Status CreateNorm(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  const int64_t ord = attrs->Int("ord", 2);
  std::vector<int64_t> axes;
  const bool has_axes = attrs->OptionalTuple("axis", &axes);
  const int out_dtype = attrs->DType(
      "out_dtype", {"None", "float16", "float32", "float64", "int32", "int64", "int8"}, 0);
  const bool keepdims = attrs->Bool("keepdims", false);
  MXL_RETURN_IF_ERROR(attrs->Finish());
  if (ord != 1 && ord != 2) {
    attrs->Fail("ord", StrCat(ord, " is not supported (MXNet's norm takes 1 or 2)"));
  } else if (axes.size() > 2) {
    attrs->Fail("axis", StrCat(TupleText(axes), ": norm reduces at most 2 axes"));
  }
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new Reduce(ord == 1 ? kNorm1 : kNorm2, has_axes, axes, keepdims, false, out_dtype));
  return Status();
}

// ---------------------------------------------------------------------------
// argmax, argmin, argmax_channel

class ArgExtreme : public BlockReduction {
 public:
  // axis kNoneInt: the flattened input.
  ArgExtreme(bool is_max, int64_t axis, bool keepdims)
      : BlockReduction(axis != kNoneInt, {axis}, keepdims, false), is_max_(is_max) {}

  Status Forward(const OpContext&, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    MXL_CHECK(blocks_.length > 0, "cannot take the arg", is_max_ ? "max" : "min",
              " of an empty axis");
    const float* x = Arrange(in[0]);
    float* y = out[0].fdata();
    for (int64_t r = 0; r < blocks_.rows; ++r) {
      const float* row = x + r * blocks_.length;
      int64_t best = 0;
      for (int64_t i = 1; i < blocks_.length; ++i) {
        if (is_max_ ? row[i] > row[best] : row[i] < row[best]) best = i;
      }
      y[r] = static_cast<float>(best);
    }
    return Status();
  }

 private:
  bool is_max_;
};

Status CreateArgExtreme(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  const bool channel = attrs->op_name() == "argmax_channel";
  int64_t axis = -1;
  bool keepdims = false;
  if (!channel) {  // argmax_channel has no attributes: the last axis
    axis = attrs->OptionalInt("axis");
    keepdims = attrs->Bool("keepdims", false);
  }
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new ArgExtreme(attrs->op_name() != "argmin", axis, keepdims));
  return Status();
}

// ---------------------------------------------------------------------------
// pick: data[..., index[...], ...] along one axis.

class Pick : public BlockReduction {
 public:
  Pick(int64_t axis, bool keepdims, bool wrap)
      : BlockReduction(axis != kNoneInt, {axis}, keepdims, false), wrap_(wrap) {}

  std::vector<std::string> InputNames() const override { return {"data", "index"}; }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    MXL_RETURN_IF_ERROR(BlockReduction::InferShape(in, out));
    return AssignShape(in, 1, (*out)[0], "input", InputNames());  // one index per output
  }

  Status InferType(std::vector<int>* in, std::vector<int>* out) const override {
    return UnifyDTypes(*this, {0}, false, in, out);  // the index may have any type
  }

  Status Forward(const OpContext&, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const float* x = Arrange(in[0]);
    const float* index = in[1].fdata();
    float* y = out[0].fdata();
    const int64_t length = blocks_.length;
    for (int64_t r = 0; r < blocks_.rows; ++r) {
      int64_t i = static_cast<int64_t>(index[r]);
      if (wrap_) {
        i %= length;
        if (i < 0) i += length;
      } else {
        i = std::min(std::max<int64_t>(i, 0), length - 1);
      }
      y[r] = x[r * length + i];
    }
    return Status();
  }

 private:
  bool wrap_;
};

Status CreatePick(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  const int64_t axis = attrs->OptionalInt("axis", -1);
  const bool keepdims = attrs->Bool("keepdims", false);
  const int mode = attrs->Enum("mode", {"clip", "wrap"}, 0);
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new Pick(axis, keepdims, mode == 1));
  return Status();
}

// ---------------------------------------------------------------------------
// topk, sort, argsort

enum SortOutput { kValues, kIndices, kMask, kBoth };

class SortOp : public Operator {
 public:
  // k < 1 means the whole axis; axis kNoneInt the flattened input.
  SortOp(int64_t axis, int64_t k, SortOutput output, bool ascending, int num_outputs,
         int visible_outputs, int index_dtype)
      : axis_(axis), k_(k), output_(output), ascending_(ascending), num_outputs_(num_outputs),
        visible_outputs_(visible_outputs), index_dtype_(index_dtype) {}

  // Values and the mask have the data's dtype; indices the dtype attribute.
  Status InferType(std::vector<int>* in, std::vector<int>* out) const override {
    std::vector<int> values;
    if (output_ != kIndices) values.push_back((*out)[0]);
    MXL_RETURN_IF_ERROR(UnifyDTypes(*this, {0}, false, in, &values));
    if (output_ == kIndices) {
      (*out)[0] = index_dtype_;
    } else {
      (*out)[0] = values[0];
    }
    if (num_outputs_ == 2) (*out)[1] = index_dtype_;
    return Status();
  }

  std::vector<std::string> OutputNames() const override {
    if (num_outputs_ == 1) return {"output"};
    return {"output0", "output1"};
  }
  int NumVisibleOutputs() const override { return visible_outputs_; }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    const Shape& data = (*in)[0];
    if (!data.is_complete()) return Status();
    int axis = 0;
    int64_t k = 0;
    Shape flat;
    MXL_RETURN_IF_ERROR(Geometry(data, &flat, &axis, &k));
    Shape oshape = flat;
    if (output_ != kMask) oshape[axis] = k;
    for (int i = 0; i < num_outputs_; ++i) {
      MXL_RETURN_IF_ERROR(AssignShape(out, i, oshape, "output", OutputNames()));
    }
    return Status();
  }

  Status Prepare(const std::vector<NDArray>& in, const std::vector<NDArray>&,
                 size_t* workspace_bytes) override {
    *workspace_bytes = 0;
    Shape flat;
    int axis = 0;
    MXL_RETURN_IF_ERROR(Geometry(in[0].shape(), &flat, &axis, &k_used_));
    std::vector<bool> sorted(flat.ndim(), false);
    sorted[axis] = true;
    blocks_ = MakeBlocks(flat, sorted);
    // Results are produced block by block, (rows, k), then moved to the
    // output layout: the axis back in its place.
    Shape result_dims = flat;
    result_dims[axis] = output_ == kMask ? flat[axis] : k_used_;
    // Strides into the (rows, k) buffer for each output dim.
    std::vector<int64_t> strides(flat.ndim());
    int64_t stride = result_dims[axis];
    for (int d = flat.ndim() - 1; d >= 0; --d) {
      if (d == axis) continue;
      strides[d] = stride;
      stride *= result_dims[d];
    }
    strides[axis] = 1;
    scatter_strides_ = strides;
    result_shape_ = result_dims;
    order_.resize(static_cast<size_t>(blocks_.length));
    return Status();
  }

  Status Forward(const OpContext&, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const float* x = ArrangeBlocks(in[0].fdata(), blocks_, &scratch_);
    const int64_t length = blocks_.length;
    const int64_t width = output_ == kMask ? length : k_used_;
    values_.resize(static_cast<size_t>(blocks_.rows * width));
    indices_.resize(values_.size());
    for (int64_t r = 0; r < blocks_.rows; ++r) {
      const float* row = x + r * length;
      std::iota(order_.begin(), order_.end(), 0);
      // MXNet's comparisons and algorithms, so that ties (and NaN) come out
      // in MXNet's order, which is not the input order (mxnet_sort.h).
      if (ascending_) {
        mxnet_sort::TopKOrder(order_.data(), length, k_used_,
                              [row](int64_t a, int64_t b) { return row[a] < row[b]; });
      } else {
        mxnet_sort::TopKOrder(order_.data(), length, k_used_,
                              [row](int64_t a, int64_t b) { return row[a] > row[b]; });
      }
      float* value_row = values_.data() + r * width;
      float* index_row = indices_.data() + r * width;
      if (output_ == kMask) {
        std::fill(value_row, value_row + length, 0.f);
        for (int64_t i = 0; i < k_used_; ++i) value_row[order_[i]] = 1.f;
      } else {
        for (int64_t i = 0; i < width; ++i) {
          value_row[i] = row[order_[i]];
          index_row[i] = static_cast<float>(order_[i]);
        }
      }
    }
    // Output 0 holds values (or the mask, or indices for ret_typ indices and
    // argsort); output 1, when present, the indices.
    const bool first_is_indices = output_ == kIndices;
    GatherStrided(first_is_indices ? indices_.data() : values_.data(), 0, scatter_strides_,
                  result_shape_, out[0].fdata());
    if (num_outputs_ == 2) {
      GatherStrided(indices_.data(), 0, scatter_strides_, result_shape_, out[1].fdata());
    }
    return Status();
  }

 private:
  // The input as the operator sees it (flattened when axis is None), the
  // resolved axis and k.
  Status Geometry(const Shape& data, Shape* flat, int* axis, int64_t* k) const {
    *flat = axis_ == kNoneInt ? Shape({data.Size()}) : data;
    MXL_RETURN_IF_ERROR(CheckAxis(axis_ == kNoneInt ? 0 : axis_, *flat, "axis", axis));
    const int64_t extent = (*flat)[*axis];
    *k = k_ < 1 ? extent : k_;
    MXL_CHECK(*k <= extent, "attribute k=", k_, " exceeds the ", extent,
              " elements along the axis of input shape ", data.ToString());
    return Status();
  }

  int64_t axis_, k_;
  SortOutput output_;
  bool ascending_;
  int num_outputs_, visible_outputs_;
  int index_dtype_;
  // Set by Prepare.
  int64_t k_used_ = 0;
  Blocks blocks_;
  std::vector<int64_t> scatter_strides_;
  Shape result_shape_;
  std::vector<int64_t> order_;
  std::vector<float> scratch_, values_, indices_;
};

Status CreateTopK(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  const int64_t axis = attrs->OptionalInt("axis", -1);
  const int64_t k = attrs->Int("k", 1);
  const int ret_typ = attrs->Enum("ret_typ", {"value", "indices", "mask", "both"}, 1);
  const bool is_ascend = attrs->Bool("is_ascend", false);
  const int dtype = attrs->DType("dtype", {"float32", "float16", "float64", "int32", "int64",
                                           "uint8"}, 0);
  MXL_RETURN_IF_ERROR(attrs->Finish());
  const SortOutput output = static_cast<SortOutput>(ret_typ);
  // MXNet: indices and mask have one output; value has a hidden second (the
  // indices); both shows two.
  const int num_outputs = output == kIndices || output == kMask ? 1 : 2;
  out->reset(new SortOp(axis, k, output, is_ascend, num_outputs, output == kBoth ? 2 : 1, dtype));
  return Status();
}

Status CreateSort(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  const bool argsort = attrs->op_name() == "argsort";
  const int64_t axis = attrs->OptionalInt("axis", -1);
  const bool is_ascend = attrs->Bool("is_ascend", true);
  int dtype = kFloat32;
  if (argsort) {
    dtype = attrs->DType("dtype", {"float32", "float16", "float64", "int32", "int64", "uint8"}, 0);
  }
  MXL_RETURN_IF_ERROR(attrs->Finish());
  // sort: sorted values plus hidden indices; argsort: the indices alone.
  out->reset(argsort ? new SortOp(axis, 0, kIndices, is_ascend, 1, 1, dtype)
                     : new SortOp(axis, 0, kValues, is_ascend, 2, 1, dtype));
  return Status();
}

}  // namespace reduce_op
}  // namespace mxlite
