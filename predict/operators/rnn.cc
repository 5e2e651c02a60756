/*
 * RNN: MXNet's fused recurrent layers (src/operator/rnn-inl.h and the CPU
 * inference kernels of rnn_impl.h): stacked, optionally bidirectional
 * layers of one cell type, over time-major data.
 *
 * Inputs: data (T, N, C); parameters, one flat vector; state (L*D, N, R);
 * for LSTM state_cell (L*D, N, H). H is state_size, L num_layers, D 2 when
 * bidirectional, R the width of a layer's output per direction (H, or
 * projection_size P for an LSTM with projection). Outputs: output
 * (T, N, D*R), and with state_outputs the last hidden state (L*D, N, R) and,
 * for LSTM, the last cell state (L*D, N, H). Layer l direction d is state
 * index l*D + d; the backward direction reads time from T-1 down to 0 and
 * its output takes columns [R, 2R) of each step.
 *
 * The parameter vector holds, for each (layer, direction) in that order,
 * Wx (G*H, in), Wh (G*H, R) and, with projection, Wr (P, H), where `in` is
 * C for layer 0 and D*R above, and G the number of gates; then, in the same
 * order, bx (G*H) and bh (G*H). The G gates are consecutive blocks of H
 * rows of each, in MXNet's order:
 *   lstm (i, f, g, o): c' = sig(f) c + sig(i) tanh(g), h' = sig(o) tanh(c'),
 *                      and with projection the output is r' = Wr h';
 *   gru  (r, z, n):    n = tanh(Wx_n x + bx_n + sig(r) (Wh_n h + bh_n)),
 *                      h' = (1 - sig(z)) n + sig(z) h;
 *   rnn_tanh, rnn_relu: h' = act(Wx x + bx + Wh h + bh),
 * each gate's pre-activation being Wx x + bx + Wh h + bh unless said.
 *
 * Per layer and direction, the input projection of all T steps is one GEMM,
 * (T*N, in) x Wx^T; then each step multiplies the previous hidden state by
 * Wh^T (a matrix-vector product per batch row for a few rows, else a GEMM
 * against Wh packed once per run, since the parameters may be computed by
 * the graph: Gluon's layers join them with _rnn_param_concat) and finishes
 * the step in one pass over the gates.
 *
 * Dropout (p) acts in training only. Not supported, refused at load:
 * use_sequence_length (MXNet's CPU build refuses it too, at run time) and
 * lstm_state_clip_min/max (applied by cuDNN only: MXNet's CPU ignores them,
 * so its results would depend on the device).
 */
#include <algorithm>
#include <cmath>
#include <cstring>

#include "../kernels/gemm.h"
#include "fully_connected.h"
#include "math_row.h"
#include "operator.h"

namespace mxlite {
namespace rnn_op {

enum Mode { kRnnRelu, kRnnTanh, kLstm, kGru };  // MXNet's order

struct RnnConfig {
  Mode mode = kLstm;
  int64_t hidden = 0;      // H, state_size
  int64_t layers = 0;      // L, num_layers
  int64_t directions = 1;  // D
  int64_t projection = 0;  // P, 0 without projection
  bool state_outputs = false;

  int64_t gates() const { return mode == kLstm ? 4 : mode == kGru ? 3 : 1; }
  int64_t out_width() const { return projection > 0 ? projection : hidden; }  // R
  int64_t layer_input(int64_t layer, int64_t data_width) const {
    return layer == 0 ? data_width : directions * out_width();
  }
  // Floats of one (layer, direction)'s weights: Wx, Wh and Wr.
  int64_t weight_size(int64_t layer, int64_t data_width) const {
    return gates() * hidden * (layer_input(layer, data_width) + out_width()) +
           projection * hidden;
  }
  int64_t param_size(int64_t data_width) const {
    int64_t size = layers * directions * 2 * gates() * hidden;  // the biases
    for (int64_t l = 0; l < layers; ++l) size += directions * weight_size(l, data_width);
    return size;
  }
};

// y (rows x n, row stride ldy) = x (rows x k, row stride ldx) * W^T, W being
// n x k, by FullyConnected's rule (fully_connected.h): a matrix-vector
// product per row for up to kFcGemvRows rows, else a GEMM.
void MultiplyOnce(const float* x, int64_t ldx, int64_t rows, const float* w, int64_t n,
                  int64_t k, float* y, int64_t ldy, ThreadPool* pool) {
  if (rows <= kFcGemvRows) {
    for (int64_t row = 0; row < rows; ++row) SgemvRows(n, k, w, x + row * ldx, y + row * ldy, pool);
  } else {
    Sgemm(false, true, rows, n, k, x, ldx, w, k, 0.f, y, ldy, pool);
  }
}

// The same product repeated with one W (a state product, once a step): the
// GEMM's W^T is packed once by Pack (per run, since the parameters may be
// computed by the graph), into a buffer that later runs reuse, while it
// fits FullyConnected's bound on packed weights.
class RepeatedProduct {
 public:
  void Pack(const float* w, int64_t rows, int64_t n, int64_t k) {
    w_ = w;
    rows_ = rows;
    n_ = n;
    k_ = k;
    packed_ = rows > kFcGemvRows && n * k <= kFcMaxPackedWeights;
    if (packed_) PackBMatrix(w, k, /*transposed=*/true, k, n, &packed_w_);
  }
  Status Run(const float* x, int64_t ldx, float* y, int64_t ldy, ThreadPool* pool) {
    if (!packed_) {
      MultiplyOnce(x, ldx, rows_, w_, n_, k_, y, ldy, pool);
      return Status();
    }
    MXL_RETURN_IF_ERROR(packed_x_.Pack(x, ldx, rows_, k_, /*transposed=*/false, pool));
    GemmPrepackedB(packed_x_, packed_w_.data(), n_, y, ldy, GemmEpilogue(), pool);
    return Status();
  }

 private:
  const float* w_ = nullptr;
  int64_t rows_ = 0, n_ = 0, k_ = 0;
  bool packed_ = false;
  std::vector<float> packed_w_;  // W^T in GemmPrepackedB's layout
  PackedMatrix packed_x_;
};

// Where one (layer, direction) reads and writes in a run.
struct LayerPass {
  const float* x;         // (T*N, in)
  int64_t in;
  const float* wx;        // (G*H, in)
  const float* wh;        // (G*H, R)
  const float* wr;        // (P, H) or null
  const float* bx;        // (G*H)
  const float* bh;        // (G*H)
  const float* h0;        // (N, R)
  const float* c0;        // (N, H), LSTM only
  float* y;               // (T, N, D*R), this direction's columns at y + column
  int64_t column;
  bool backward;
  float* hy;              // (N, R) or null
  float* cy;              // (N, H) or null
};

// The run's scratch space, carved from the workspace (see Carve).
struct Scratch {
  float* from_x;      // (T*N, G*H): the input projections of one direction
  float* from_h;      // (N, G*H): one step's state products
  float* bias;        // (G*H): the biases added before any product with the state
  float* cell;        // (N, H): LSTM's cell state
  float* h;           // (N, H): LSTM's h before projection
  float* between[2];  // (T, N, D*R): layer outputs that feed the next layer
};

class RNN : public Operator {
 public:
  explicit RNN(const RnnConfig& config) : c_(config) {}

  std::vector<std::string> InputNames() const override {
    if (c_.mode == kLstm) return {"data", "parameters", "state", "state_cell"};
    return {"data", "parameters", "state"};
  }
  std::vector<std::string> OutputNames() const override {
    if (!c_.state_outputs) return {"output"};
    if (c_.mode == kLstm) return {"output", "state_output", "statecell_output"};
    return {"output", "state_output"};
  }
  int NumVisibleOutputs() const override { return static_cast<int>(OutputNames().size()); }

  Status InferShape(std::vector<Shape>* in, std::vector<Shape>* out) const override {
    const std::vector<std::string> names = InputNames(), outputs = OutputNames();
    const Shape& data = (*in)[0];
    if (!data.rank_known()) return Status();
    MXL_CHECK(data.ndim() == 3, "input 'data' has shape ", data.ToString(),
              " but RNN needs (sequence length, batch, input size)");
    const int64_t steps = data[0], batch = data[1], width = data[2];
    const int64_t states = c_.layers * c_.directions;
    MXL_RETURN_IF_ERROR(AssignShape(in, 1, Shape({width < 0 ? -1 : c_.param_size(width)}),
                                    "input", names));
    MXL_RETURN_IF_ERROR(AssignShape(in, 2, Shape({states, batch, c_.out_width()}), "input", names));
    if (c_.mode == kLstm) {
      MXL_RETURN_IF_ERROR(AssignShape(in, 3, Shape({states, batch, c_.hidden}), "input", names));
    }
    MXL_RETURN_IF_ERROR(AssignShape(out, 0, Shape({steps, batch, c_.directions * c_.out_width()}),
                                    "output", outputs));
    if (c_.state_outputs) {
      MXL_RETURN_IF_ERROR(AssignShape(out, 1, (*in)[2], "output", outputs));
      if (c_.mode == kLstm) MXL_RETURN_IF_ERROR(AssignShape(out, 2, (*in)[3], "output", outputs));
    }
    return Status();
  }

  Status Prepare(const std::vector<NDArray>& in, const std::vector<NDArray>& out,
                 size_t* workspace_bytes) override {
    (void)out;
    const Shape& data = in[0].shape();
    steps_ = data[0];
    batch_ = data[1];
    width_ = data[2];
    Scratch unused;
    *workspace_bytes = Carve(nullptr, &unused) * sizeof(float);
    return Status();
  }

  Status Forward(const OpContext& ctx, const std::vector<NDArray>& in,
                 const std::vector<NDArray>& out) override {
    const int64_t D = c_.directions, R = c_.out_width(), N = batch_;
    const int64_t gh = c_.gates() * c_.hidden;
    Scratch scratch;
    Carve(static_cast<float*>(ctx.workspace), &scratch);
    const float* weights = in[1].fdata();
    const float* biases = weights + in[1].Size() - c_.layers * D * 2 * gh;
    const float* state = in[2].fdata();
    const float* state_cell = c_.mode == kLstm ? in[3].fdata() : nullptr;
    float* hy = c_.state_outputs ? out[1].fdata() : nullptr;
    float* cy = c_.state_outputs && c_.mode == kLstm ? out[2].fdata() : nullptr;
    const float* x = in[0].fdata();
    for (int64_t l = 0; l < c_.layers; ++l) {
      float* y = l + 1 == c_.layers ? out[0].fdata() : scratch.between[l % 2];
      for (int64_t d = 0; d < D; ++d) {
        const int64_t s = l * D + d;  // state index
        LayerPass pass;
        pass.x = x;
        pass.in = c_.layer_input(l, width_);
        pass.wx = weights;
        pass.wh = pass.wx + gh * pass.in;
        pass.wr = c_.projection > 0 ? pass.wh + gh * R : nullptr;
        weights += c_.weight_size(l, width_);
        pass.bx = biases + s * 2 * gh;
        pass.bh = pass.bx + gh;
        pass.h0 = state + s * N * R;
        pass.c0 = state_cell ? state_cell + s * N * c_.hidden : nullptr;
        pass.y = y;
        pass.column = d * R;
        pass.backward = d == 1;
        pass.hy = hy ? hy + s * N * R : nullptr;
        pass.cy = cy ? cy + s * N * c_.hidden : nullptr;
        MXL_RETURN_IF_ERROR(RunLayer(pass, scratch, ctx.pool));
      }
      x = y;
    }
    return Status();
  }

 private:
  // Lays the scratch space out from `base` (null: only counts); returns
  // its size in floats.
  size_t Carve(float* base, Scratch* s) const {
    const int64_t T = steps_, N = batch_, H = c_.hidden, gh = c_.gates() * H;
    const bool lstm = c_.mode == kLstm, projected = c_.projection > 0;
    const int64_t layer_out = T * N * c_.directions * c_.out_width();
    int64_t offset = 0;
    auto take = [&](int64_t floats) {
      float* at = base ? base + offset : nullptr;
      offset += floats;
      return at;
    };
    s->from_x = take(T * N * gh);
    s->from_h = take(N * gh);
    s->bias = take(gh);
    s->cell = take(lstm ? N * H : 0);
    s->h = take(projected ? N * H : 0);
    s->between[0] = take(c_.layers > 1 ? layer_out : 0);
    s->between[1] = take(c_.layers > 2 ? layer_out : 0);
    return static_cast<size_t>(offset);
  }

  Status RunLayer(const LayerPass& p, const Scratch& s, ThreadPool* pool) {
    const int64_t T = steps_, N = batch_, H = c_.hidden, R = c_.out_width();
    const int64_t G = c_.gates(), gh = G * H, ldy = c_.directions * R;
    // All steps' input projections at once.
    MultiplyOnce(p.x, p.in, T * N, p.wx, gh, p.in, s.from_x, gh, pool);
    // The biases that are added before any product with the state.
    for (int64_t j = 0; j < gh; ++j) {
      s.bias[j] = p.bx[j] + (c_.mode == kGru && j >= 2 * H ? 0.f : p.bh[j]);
    }
    hidden_.Pack(p.wh, N, gh, R);
    if (p.wr) projection_.Pack(p.wr, N, c_.projection, H);
    if (p.c0) std::memcpy(s.cell, p.c0, sizeof(float) * N * H);

    const float* h_prev = p.h0;
    int64_t ld_prev = R;
    for (int64_t i = 0; i < T; ++i) {
      const int64_t t = p.backward ? T - 1 - i : i;
      float* y = p.y + t * N * ldy + p.column;
      MXL_RETURN_IF_ERROR(hidden_.Run(h_prev, ld_prev, s.from_h, gh, pool));
      const float* gx = s.from_x + t * N * gh;
      // With projection the cell's output h goes to s.h, then Wr maps it
      // into y; otherwise h is the output.
      float* h = p.wr ? s.h : y;
      const int64_t ldh = p.wr ? H : ldy;
      // The gates of a row, in blocks of kGateBlock units, split over the
      // threads when there is enough of them.
      const int64_t blocks = (H + kGateBlock - 1) / kGateBlock;
      ParallelFor(N * H * G >= kParallelGateWork ? pool : nullptr, N * blocks, [&](int64_t task) {
        const int64_t n = task / blocks, k0 = task % blocks * kGateBlock;
        Cell(gx + n * gh, s.from_h + n * gh, s.bias, p.bh, h_prev + n * ld_prev, s.cell + n * H,
             h + n * ldh, k0, std::min(H, k0 + kGateBlock));
      });
      if (p.wr) MXL_RETURN_IF_ERROR(projection_.Run(s.h, H, y, ldy, pool));
      h_prev = y;
      ld_prev = ldy;
    }
    for (int64_t n = 0; n < N; ++n) {
      if (p.hy) std::memcpy(p.hy + n * R, h_prev + n * ld_prev, sizeof(float) * R);
      if (p.cy) std::memcpy(p.cy + n * H, s.cell + n * H, sizeof(float) * H);
    }
    return Status();
  }

  // Units [k0, k1) of one batch row of one step: gate pre-activations
  // gx + gh + b (GRU's n gate: gx_n + b_n + sig(r) (gh_n + bh_n), b_n being
  // bx_n alone); h_prev is the previous output, c the cell state (LSTM,
  // updated in place), h where the new hidden state goes. The sums are
  // gathered per gate into `pre`, whose runs the vector math kernels
  // (MathRow) turn into gate values.
  void Cell(const float* gx, const float* gh, const float* b, const float* bh,
            const float* h_prev, float* c, float* h, int64_t k0, int64_t k1) const {
    const int64_t H = c_.hidden, n = k1 - k0;
    // (Zeroed, 4 KB, only because GCC cannot see that each run is written
    // before MathRow reads it, and warns.)
    float pre[4 * kGateBlock] = {};
    switch (c_.mode) {
      case kLstm: {
        // pre: input, forget and output gates (sigmoid), then the candidate (tanh).
        float* in = pre;
        float* forget = pre + n;
        float* out = pre + 2 * n;
        float* cand = pre + 3 * n;
        for (int64_t j = 0, k = k0; k < k1; ++j, ++k) {
          in[j] = gx[k] + gh[k] + b[k];
          forget[j] = gx[H + k] + gh[H + k] + b[H + k];
          cand[j] = gx[2 * H + k] + gh[2 * H + k] + b[2 * H + k];
          out[j] = gx[3 * H + k] + gh[3 * H + k] + b[3 * H + k];
        }
        MathRow(RowMath::kSigmoid, pre, pre, 3 * n, 0.f);
        MathRow(RowMath::kTanh, cand, cand, n, 0.f);
        for (int64_t j = 0, k = k0; k < k1; ++j, ++k) c[k] = forget[j] * c[k] + in[j] * cand[j];
        float* cell_tanh = pre;  // the input gate is spent
        MathRow(RowMath::kTanh, c + k0, cell_tanh, n, 0.f);
        for (int64_t j = 0, k = k0; k < k1; ++j, ++k) h[k] = out[j] * cell_tanh[j];
        break;
      }
      case kGru: {
        float* reset = pre;
        float* update = pre + n;
        float* cand = pre + 2 * n;
        for (int64_t j = 0, k = k0; k < k1; ++j, ++k) {
          reset[j] = gx[k] + gh[k] + b[k];
          update[j] = gx[H + k] + gh[H + k] + b[H + k];
        }
        MathRow(RowMath::kSigmoid, pre, pre, 2 * n, 0.f);
        for (int64_t j = 0, k = k0; k < k1; ++j, ++k) {
          cand[j] = gx[2 * H + k] + b[2 * H + k] + reset[j] * (gh[2 * H + k] + bh[2 * H + k]);
        }
        MathRow(RowMath::kTanh, cand, cand, n, 0.f);
        for (int64_t j = 0, k = k0; k < k1; ++j, ++k) {
          h[k] = (1.f - update[j]) * cand[j] + update[j] * h_prev[k];
        }
        break;
      }
      case kRnnTanh:
        for (int64_t k = k0; k < k1; ++k) h[k] = gx[k] + gh[k] + b[k];
        MathRow(RowMath::kTanh, h + k0, h + k0, n, 0.f);
        break;
      case kRnnRelu:
        for (int64_t k = k0; k < k1; ++k) h[k] = std::max(gx[k] + gh[k] + b[k], 0.f);
        break;
    }
  }

  // Gate values per step below which the step runs on one thread, and the
  // units a thread takes at a time.
  static constexpr int64_t kParallelGateWork = 1 << 14;
  static constexpr int64_t kGateBlock = 256;

  RnnConfig c_;
  int64_t steps_ = 0, batch_ = 0, width_ = 0;  // from Prepare
  RepeatedProduct hidden_, projection_;
};

Status CreateRNN(AttrParser* attrs, std::unique_ptr<Operator>* out) {
  RnnConfig c;
  c.hidden = attrs->Int("state_size");
  c.layers = attrs->Int("num_layers");
  c.directions = attrs->Bool("bidirectional", false) ? 2 : 1;
  c.mode = static_cast<Mode>(attrs->Enum("mode", {"rnn_relu", "rnn_tanh", "lstm", "gru"}, -1));
  const double p = attrs->Float("p", 0.0);
  c.state_outputs = attrs->Bool("state_outputs", false);
  const int64_t projection = attrs->OptionalInt("projection_size");
  double clip_min = 0, clip_max = 0;
  const bool has_clip_min = attrs->OptionalFloat("lstm_state_clip_min", &clip_min);
  const bool has_clip_max = attrs->OptionalFloat("lstm_state_clip_max", &clip_max);
  attrs->Ignore("lstm_state_clip_nan");  // without a clipping range it does nothing
  const bool use_length = attrs->Bool("use_sequence_length", false);
  MXL_RETURN_IF_ERROR(attrs->Finish());
  if (c.hidden < 1) attrs->Fail("state_size", StrCat(c.hidden, " must be at least 1"));
  if (c.layers < 1) attrs->Fail("num_layers", StrCat(c.layers, " must be at least 1"));
  if (!(p >= 0 && p < 1)) attrs->Fail("p", StrCat(p, " is outside [0, 1)"));
  if (projection != kNoneInt) {
    if (c.mode != kLstm) {
      attrs->Fail("projection_size", "projection is only supported for LSTM");
    } else if (projection < 1 || projection > c.hidden) {
      attrs->Fail("projection_size",
                  StrCat(projection, " must be between 1 and state_size (", c.hidden, ")"));
    }
    c.projection = projection;
  }
  if (has_clip_min || has_clip_max) {
    attrs->Fail(has_clip_min ? "lstm_state_clip_min" : "lstm_state_clip_max",
                "LSTM state clipping is not supported by mxlite (MXNet applies it with cuDNN "
                "only; its CPU build ignores it)");
  }
  if (use_length) {
    attrs->Fail("use_sequence_length",
                "a sequence_length input is not supported by mxlite (nor by MXNet's CPU build)");
  }
  MXL_RETURN_IF_ERROR(attrs->Finish());
  out->reset(new RNN(c));
  return Status();
}

}  // namespace rnn_op
}  // namespace mxlite
