/*
 * Concat: joins num_args inputs (named arg0, arg1, ... as in MXNet) along
 * `dim` (default 1, negative counting from the end). The shapes must agree
 * on every other dim; the output's extent along dim is the sum.
 *
 * Shape inference also runs backwards: the output and the other inputs
 * complete each input's other dims, and when exactly one input's extent
 * along dim is unknown it is the output's minus the rest.
 *
 * _rnn_param_concat, with which Gluon's recurrent layers join their weights
 * and biases into the RNN operator's parameter vector, is Concat whose
 * backward inference (MXNet's RNNParamConcatShape) also takes two unknown
 * inputs, each getting half of what the rest leaves: the two input-to-hidden
 * weights of a bidirectional first layer, whose input size only the RNN
 * knows.
 *
 * Forward views every array as (outer, extent * inner), outer being the
 * product of the dims before `dim`, and copies each input's row block into
 * its column range of the output with memcpy, the copies shared among the
 * threads. When outer is 1 (a batch of one joined along channels), the
 * output is the inputs end to end: the memory planner then usually places
 * each input inside the output (InputsLaidEndToEnd; see memory_plan.h for
 * the inputs it leaves out), and an input already in place is not copied:
 * SqueezeNet's fire modules and DenseNet's and Inception's joins copy
 * nothing.
 */
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "../kernels/thread_pool.h"
#include "operator.h"

namespace mxlite {
namespace concat_op {

class Concat : public Operator {
 public:
  // max_unknown: how many inputs of unknown extent along dim the output's
  // extent may complete, sharing it equally (1 for Concat, 2 for
  // _rnn_param_concat).
  Concat(int num_args, int64_t dim, int max_unknown)
      : num_args_(num_args), dim_(dim), max_unknown_(max_unknown) {}

  std::vector<std::string> InputNames() const override {
    std::vector<std::string> names;
    for (int i = 0; i < num_args_; ++i) names.push_back("arg" + std::to_string(i));
    return names;
  }

  bool ComputesImagesApart(const std::vector<Shape>& image_in) const override {
    return !image_in.empty() && (dim_ < 0 ? dim_ + image_in[0].ndim() : dim_) != 0;
  }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    const std::vector<std::string> names = InputNames();
    // Everything but the concatenated dim, gathered from all shapes.
    Shape common;
    std::string common_from;
    int axis = -1;
    auto gather = [&](const Shape& shape, const std::string& what) -> Status {
      if (!shape.rank_known()) return Status();
      MXL_CHECK(shape.ndim() > 0, what, " is zero-dimensional and cannot be concatenated");
      const int64_t real = dim_ < 0 ? dim_ + shape.ndim() : dim_;
      MXL_CHECK(real >= 0 && real < shape.ndim(), "attribute dim=", dim_, " is out of range for ",
                what, " of shape ", shape.ToString());
      axis = static_cast<int>(real);
      Shape rest = shape;
      rest[axis] = -1;
      Shape before = common;
      MXL_CHECK(MergeShape(&common, rest), what, " has shape ", shape.ToString(),
                " which differs from ", common_from, " (", before.ToString(),
                ") outside dim ", dim_);
      if (common_from.empty()) common_from = what;
      return Status();
    };
    for (int i = 0; i < num_args_; ++i) {
      MXL_RETURN_IF_ERROR(gather((*in)[i], "input '" + names[i] + "'"));
    }
    MXL_RETURN_IF_ERROR(gather((*out)[0], "output 'output'"));
    if (!common.rank_known()) return Status();

    for (int i = 0; i < num_args_; ++i) {
      MXL_RETURN_IF_ERROR(AssignShape(in, i, common, "input", names));
    }
    // The output's extent along the axis, and back to the unknown inputs.
    int64_t total = 0;
    std::vector<int> unknown;
    for (int i = 0; i < num_args_; ++i) {
      const int64_t extent = (*in)[i][axis];
      if (extent < 0) {
        unknown.push_back(i);
      } else {
        total += extent;
      }
    }
    Shape oshape = common;
    if (unknown.empty()) oshape[axis] = total;
    MXL_RETURN_IF_ERROR(AssignShape(out, 0, oshape, "output", OutputNames()));
    const int64_t out_extent = (*out)[0][axis];
    if (!unknown.empty() && static_cast<int>(unknown.size()) <= max_unknown_ && out_extent >= 0) {
      MXL_CHECK(out_extent >= total, "output 'output' has ", out_extent, " along dim ", dim_,
                " but the known inputs already have ", total);
      Shape want = common;
      want[axis] = (out_extent - total) / static_cast<int64_t>(unknown.size());
      for (int i : unknown) MXL_RETURN_IF_ERROR(AssignShape(in, i, want, "input", names));
    }
    return Status();
  }

  bool InputsLaidEndToEnd(const std::vector<Shape>& in, const Shape& out, size_t element_bytes,
                          std::vector<size_t>* offsets) const override {
    if (!out.is_complete() || out.ndim() == 0) return false;
    const int64_t axis = dim_ < 0 ? dim_ + out.ndim() : dim_;
    if (axis < 0 || axis >= out.ndim() || out.ProdRange(0, static_cast<int>(axis)) != 1) {
      return false;
    }
    offsets->clear();
    size_t offset = 0;
    for (const Shape& shape : in) {
      if (!shape.is_complete()) return false;
      offsets->push_back(offset);
      offset += static_cast<size_t>(shape.Size()) * element_bytes;
    }
    return true;
  }

  Status Forward(const OpContext& ctx, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const Shape& oshape = out[0].shape();
    const int axis = static_cast<int>(dim_ < 0 ? dim_ + oshape.ndim() : dim_);
    const int64_t outer = oshape.ProdRange(0, axis);
    const int64_t out_row = oshape.ProdRange(axis, oshape.ndim());
    char* y = static_cast<char*>(out[0].data());
    // The copies, in pieces of about kPieceBytes so that the threads share a
    // few large inputs evenly (DenseNet concatenates a 1 MB block with a
    // small new one): a long input row is cut into several pieces, short
    // rows are grouped many to a piece (YOLOv3 joins 15360 rows of 2, 1
    // and 3 floats: one piece, and one memcpy call, per row took 0.6 ms).
    constexpr size_t kPieceBytes = size_t{64} << 10;
    struct Piece {
      size_t input;
      int64_t outer_begin, outer_end;  // the outer indices it copies
      size_t byte_begin, byte_end;     // the part of each row
    };
    std::vector<Piece> pieces;
    std::vector<int64_t> columns(in.size());  // where each input starts in an output row
    int64_t column = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      columns[i] = column;
      const int64_t row = in[i].Size() / (outer > 0 ? outer : 1);
      column += row;
      const size_t row_bytes = static_cast<size_t>(row) * sizeof(float);
      if (row_bytes == 0) continue;
      if (row_bytes >= kPieceBytes) {
        for (int64_t o = 0; o < outer; ++o) {
          for (size_t done = 0; done < row_bytes; done += kPieceBytes) {
            pieces.push_back({i, o, o + 1, done, std::min(row_bytes, done + kPieceBytes)});
          }
        }
        continue;
      }
      const int64_t rows_per_piece = static_cast<int64_t>(kPieceBytes / row_bytes);
      for (int64_t o = 0; o < outer; o += rows_per_piece) {
        pieces.push_back({i, o, std::min(outer, o + rows_per_piece), 0, row_bytes});
      }
    }
    ParallelFor(ctx.pool, static_cast<int64_t>(pieces.size()), [&](int64_t k) {
      const Piece& piece = pieces[k];
      const NDArray& input = in[piece.input];
      const size_t row_bytes = static_cast<size_t>(input.Size() / outer) * sizeof(float);
      const size_t bytes = piece.byte_end - piece.byte_begin;
      for (int64_t o = piece.outer_begin; o < piece.outer_end; ++o) {
        char* dst = y + (o * out_row + columns[piece.input]) * sizeof(float) + piece.byte_begin;
        const char* src =
            static_cast<const char*>(input.data()) + o * row_bytes + piece.byte_begin;
        if (src == dst) continue;  // placed there by the memory planner
        if (bytes <= 64) {
          // A few elements: word copies the compiler inlines.
          for (size_t j = 0; j < bytes; j += sizeof(float)) {
            std::memcpy(dst + j, src + j, sizeof(float));
          }
        } else {
          std::memcpy(dst, src, bytes);
        }
      }
    });
    return Status();
  }

 private:
  int num_args_;
  int64_t dim_;
  int max_unknown_;
};

Status CreateConcat(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  int64_t num_args = attrs->Int("num_args");
  int64_t dim = attrs->Int("dim", 1);
  MXL_RETURN_IF_ERROR(attrs->Finish());
  if (num_args < 1 || num_args > INT32_MAX) {
    attrs->Fail("num_args", StrCat(num_args, " is not a valid number of inputs"));
    return attrs->Finish();
  }
  const int max_unknown = attrs->op_name() == "_rnn_param_concat" ? 2 : 1;
  out->reset(new Concat(static_cast<int>(num_args), dim, max_unknown));
  return Status();
}

}  // namespace concat_op
}  // namespace mxlite
