/*
 * The GEMM family of convolution algorithms (see conv_algorithms.h):
 *   - pointwise (kernel all 1, stride all 1, pad all 0, any rank): the
 *     input plane of a group already is the GEMM's right-hand matrix
 *     [C/g, D*H*W], so the GEMM runs on it directly; a layer that
 *     normalises its input has the GEMM normalise each panel as it reads it;
 *   - shifted views (planar layers): one GEMM per group whose depth
 *     segments are the taps, each a view of a few stored copies of the
 *     input displaced by whole rows, so no column matrix (ShiftedGeometry);
 *   - im2col (every layer): for each image and group, the columns matrix
 *     holds one row per (input channel, kd, kh, kw) and one column per
 *     output position (zeros where a tap falls in the padding), and
 *     out_g[F/g, OD*OH*OW] = W_g[F/g, C/g*KD*KH*KW] * col. The columns are
 *     built a band of output rows at a time so the scratch stays bounded
 *     (kColumnBytes) and warm in cache while the GEMM consumes it;
 *   - weights in place (compact_weights): im2col or pointwise with the
 *     parameter array read as it is, for a predictor that keeps one copy of
 *     its weights.
 * The bias, and a fused residual and clamp, are applied as each output tile
 * is finished (the GEMM's epilogue).
 */
#include <algorithm>
#include <cstring>

#include "../kernels/gemm.h"
#include "../kernels/strided_copy.h"
#include "batch_norm_row.h"
#include "conv_kernels.h"

namespace mxlite {
namespace conv_gemm_cc {

// Upper bound of the im2col and shifted-view scratch; a band is never less
// than one output row. 2 MiB keeps a band in L2/L3 between the gather
// writing it and the GEMM packing it.
constexpr int64_t kColumnBytes = int64_t{2} << 20;

GemmEpilogue Epilogue(const ConvWeights& w, const float* bias, const float* residual,
                      int64_t stride) {
  GemmEpilogue epilogue;
  epilogue.bias = bias;
  epilogue.residual = residual;
  epilogue.residual_stride = stride;
  epilogue.lower = w.lower;
  epilogue.upper = w.upper;
  return epilogue;
}

// Packs each group's weights (group_out rows of `depth`) for the GEMM, in
// depth blocks of at most max_block_depth (0: the GEMM's default).
Status PackGroups(const ConvGeometry& g, const std::vector<float>& weights,
                  int64_t segment_depth, std::vector<PackedMatrix>* packed,
                  int64_t max_block_depth = 0) {
  const int64_t group_out = g.filters / g.groups;
  const int64_t depth = g.channels / g.groups * g.KernelSize();
  packed->resize(static_cast<size_t>(g.groups));
  for (int64_t grp = 0; grp < g.groups; ++grp) {
    MXL_RETURN_IF_ERROR((*packed)[grp].Pack(weights.data() + grp * group_out * depth, depth,
                                            group_out, depth, false, nullptr, segment_depth,
                                            max_block_depth));
  }
  return Status();
}

// ---------------------------------------------------------------------------
// Pointwise.

class PointwiseKernel : public ConvKernel {
 public:
  Status Prepare(const ConvGeometry& g, ConvWeights w) {
    g_ = g;
    w_ = std::move(w);
    // A layer that normalises its input and is deeper than one depth block
    // packs its weights in two depth halves, which two threads split on
    // small maps (see kGemmSplitDepthMaxColumns in gemm.h); so does a
    // projection (see ProjectsByDepthHalves).
    const bool halves = g.groups == 1 && g.channels % 2 == 0 &&
                        (g.normalises_input ? g.channels > 256 : ProjectsByDepthHalves(g));
    // The input read where it lies: deep depth blocks (GemmInPlaceBlockDepth).
    // A normalised input is read through a KC-deep buffer instead, or a
    // shallower one on 7x7 maps, or, in halves on small maps, one block a
    // half (up to kNormalisedHalfBlockDepth): the buffer (at most 512 KiB)
    // stays in L2, the GEMM stores and reloads C's tiles half as often, and
    // one thread runs the two halves as two blocks, with the bits of the
    // split and without its scratch (GemmPackedTransformedB).
    const int64_t in_place_depth = GemmInPlaceBlockDepth(g.InSpatial());
    int64_t block_depth = 0;
    if (!g.normalises_input && GemmReadsBInPlace(g.InSpatial())) {
      block_depth = in_place_depth;
    } else if (g.normalises_input && in_place_depth == kGemmTailTileBlockDepth) {
      block_depth = in_place_depth;
    } else if (g.normalises_input && halves && g.InSpatial() <= kGemmSplitDepthMaxColumns &&
               GemmReadsBInPlace(g.InSpatial())) {
      block_depth = std::min(g.channels / 2, kNormalisedHalfBlockDepth);
    }
    MXL_RETURN_IF_ERROR(
        PackGroups(g, w_.weights, halves ? g.channels / 2 : 0, &packed_, block_depth));
    w_.weights.clear();
    w_.weights.shrink_to_fit();
    return Status();
  }
  size_t PreparedBytes() const override { return w_.bytes() + HeldBytes(packed_); }
  size_t WorkspaceBytes() const override { return 0; }
  // One GEMM per image and group, each over its own rows of the output and
  // the residual: in place where the GEMM reads the residual first (one
  // depth block; weights packed in two halves have two at least).
  bool ResidualMayBeOutput() const override {
    for (const PackedMatrix& packed : packed_) {
      if (!GemmReadsResidualFirst(packed)) return false;
    }
    return true;
  }

  Status Forward(const ConvCall& call) const override {
    const ConvGeometry& g = g_;
    const int64_t plane = g.InSpatial();
    const int64_t group_in = g.channels / g.groups, group_out = g.filters / g.groups;
    for (int64_t n = 0; n < call.batch; ++n) {
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        const float* in_g = call.data + (n * g.channels + grp * group_in) * plane;
        const int64_t out_offset = (n * g.filters + grp * group_out) * plane;
        const GemmEpilogue epilogue =
            Epilogue(w_, w_.bias.data() + grp * group_out,
                     call.residual ? call.residual + out_offset : nullptr, plane);
        if (g.normalises_input) {
          ForwardNormalised(in_g, call.output + out_offset, epilogue, call.pool);
        } else if (packed_[grp].segment_depth() > 0) {  // see ProjectsByDepthHalves
          GemmPackedDepthHalves(packed_[grp], in_g, plane, plane, call.output + out_offset, plane,
                                epilogue, call.pool);
        } else {
          GemmPacked(packed_[grp], in_g, plane, plane, call.output + out_offset, plane, epilogue,
                     call.pool);
        }
      }
    }
    return Status();
  }

 private:
  // The GEMM normalises each depth block of each column panel of the input
  // as it reads it (GemmPackedTransformedB), with BatchNormRow, the
  // BatchNorm operator's own arithmetic, so the bits are those of the
  // unfused graph, which would write the normalised tensor and read it back.
  void ForwardNormalised(const float* data, float* output, const GemmEpilogue& epilogue,
                         ThreadPool* pool) const {
    const int64_t plane = g_.InSpatial();
    GemmRowTransform transform;
    transform.context = this;
    transform.apply = [](const void* context, int64_t channel, const float* src, float* dst,
                         int64_t count) {
      const ConvWeights& w = static_cast<const PointwiseKernel*>(context)->w_;
      const float* s = w.input_scale.data() + 4 * channel;
      const bool clamps = ClampIsSet(w.input_lower, w.input_upper);
      BatchNormRow(src, dst, count, s[0], s[1], w.input_has_gamma, s[2], s[3], clamps,
                   w.input_lower, w.input_upper);
    };
    GemmPackedTransformedB(packed_[0], data, plane, plane, output, plane, epilogue, transform,
                           pool);
  }

  // A projection to at most half as many channels as it reads, from at
  // least kMinProjectionDepth, of a depthwise layer's output: MobileNetV2's
  // linear bottlenecks. The depthwise layer's threads wrote its channels in
  // contiguous parts, so with the depth split each reads the rows of B it
  // wrote, and only the partial products (filters rows, not channels)
  // cross between cores. Two threads, B written by channels, Xeon model
  // 167, per product, medians of 7 alternating runs (us), split by rows or
  // columns -> by depth: 64 x 384 x 196 56.5 -> 43.4, 96 x 576 x 196 99.2
  // -> 82.0, 32 x 192 x 784 59.3 -> 52.3, 24 x 144 x 3136 122 -> 104,
  // 160 x 960 x 49 71.0 -> 67.4. In the model (profile, two threads) the
  // 14x14 and 7x7 projections gained as much, the 56x56 one lost 124 ->
  // 183 us (its output then crosses cores on its way to the next layer,
  // split by columns), hence the GEMM's column limit. After layers split
  // by columns (SqueezeNet's squeeze layers) the depth split was slower.
  static bool ProjectsByDepthHalves(const ConvGeometry& g) {
    return g.input_from_depthwise && g.channels >= kMinProjectionDepth &&
           2 * g.filters <= g.channels && g.InSpatial() <= kGemmSplitDepthMaxColumns;
  }
  static constexpr int64_t kMinProjectionDepth = 128;
  // See Prepare: 512 x 256 floats of normalised input is 512 KiB.
  static constexpr int64_t kNormalisedHalfBlockDepth = 512;

  ConvGeometry g_;
  ConvWeights w_;
  std::vector<PackedMatrix> packed_;  // per group
};

// ---------------------------------------------------------------------------
// im2col.

// Writes the column-matrix rows of input channel plane `plane` and kernel
// offsets (kd, kh), one row per kw, for output rows [row_begin, row_end)
// (a row is one (od, oh) pair); `col` is the first of those kernel[2] rows,
// each (row_end - row_begin) * OW long.
void Im2ColTapRows(const ConvGeometry& g, const float* plane, int64_t kd, int64_t kh,
                   int64_t row_begin, int64_t row_end, float* col) {
  const int64_t ow_count = g.out[2];
  const int64_t columns = (row_end - row_begin) * ow_count;
  for (int64_t kw = 0; kw < g.kernel[2]; ++kw, col += columns) {
    const int64_t offset_w = kw * g.dilate[2] - g.pad[2];
    if (g.out[0] == 1) {
      // One output plane: the band's rows are consecutive output rows, one call.
      const int64_t id = -g.pad[0] + kd * g.dilate[0];
      if (id < 0 || id >= g.in[0]) {
        std::fill(col, col + columns, 0.f);
        continue;
      }
      GatherRowsZeroPadded(plane + id * g.in[1] * g.in[2], g.in[1], g.in[2],
                           row_begin * g.stride[1] - g.pad[1] + kh * g.dilate[1], g.stride[1],
                           row_end - row_begin, offset_w, g.stride[2], ow_count, col);
      continue;
    }
    float* dst = col;
    for (int64_t row = row_begin; row < row_end; ++row, dst += ow_count) {
      const int64_t od = row / g.out[1], oh = row % g.out[1];
      const int64_t id = od * g.stride[0] - g.pad[0] + kd * g.dilate[0];
      const int64_t ih = oh * g.stride[1] - g.pad[1] + kh * g.dilate[1];
      if (id < 0 || id >= g.in[0]) {
        std::fill(dst, dst + ow_count, 0.f);
        continue;
      }
      GatherRowsZeroPadded(plane + id * g.in[1] * g.in[2], g.in[1], g.in[2], ih, 1, 1, offset_w,
                           g.stride[2], ow_count, dst);
    }
  }
}

// Output rows (an (od, oh) pair each) per band of the column matrix: as
// many as fit in kColumnBytes, at least one.
int64_t RowsPerBand(const ConvGeometry& g) {
  const int64_t depth = g.channels / g.groups * g.KernelSize();
  const int64_t rows = g.out[0] * g.out[1];
  const int64_t row_bytes = std::max<int64_t>(1, depth * g.out[2] * int64_t{sizeof(float)});
  return std::max<int64_t>(1, std::min<int64_t>(rows, kColumnBytes / row_bytes));
}

// Bytes of a band's column matrix.
size_t BandBytes(const ConvGeometry& g, int64_t rows_per_band) {
  const int64_t depth = g.channels / g.groups * g.KernelSize();
  return static_cast<size_t>(rows_per_band * g.out[2] * depth) * sizeof(float);
}

// Writes the column matrix of output rows [row, row_end) of one group,
// whose input planes start at in_g. The rows for each (channel, kd, kh)
// are independent tasks (not one per channel: a stem has only three).
void GatherBand(const ConvGeometry& g, const float* in_g, int64_t row, int64_t row_end,
                float* col, ThreadPool* pool) {
  const int64_t in_plane = g.InSpatial();
  const int64_t group_in = g.channels / g.groups;
  const int64_t columns = (row_end - row) * g.out[2];
  const int64_t kernel_rows = g.kernel[0] * g.kernel[1];
  ParallelFor(pool, group_in * kernel_rows, [&](int64_t task) {
    const int64_t c = task / kernel_rows, kd = task % kernel_rows / g.kernel[1],
                  kh = task % g.kernel[1];
    Im2ColTapRows(g, in_g + c * in_plane, kd, kh, row, row_end,
                  col + (task * g.kernel[2]) * columns);
  });
}

class Im2colKernel : public ConvKernel {
 public:
  Status Prepare(const ConvGeometry& g, ConvWeights w) {
    g_ = g;
    w_ = std::move(w);
    rows_per_band_ = RowsPerBand(g);
    MXL_RETURN_IF_ERROR(PackGroups(g, w_.weights, 0, &packed_));
    w_.weights.clear();
    w_.weights.shrink_to_fit();
    return Status();
  }
  size_t PreparedBytes() const override { return w_.bytes() + HeldBytes(packed_); }
  size_t WorkspaceBytes() const override { return BandBytes(g_, rows_per_band_); }

  Status Forward(const ConvCall& call) const override {
    MXL_RETURN_IF_ERROR(CheckConvWorkspace(call, WorkspaceBytes()));
    const ConvGeometry& g = g_;
    const int64_t in_plane = g.InSpatial(), out_plane = g.OutSpatial();
    const int64_t group_in = g.channels / g.groups, group_out = g.filters / g.groups;
    float* col = static_cast<float*>(call.workspace);
    const int64_t rows = g.out[0] * g.out[1];
    for (int64_t n = 0; n < call.batch; ++n) {
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        const float* in_g = call.data + (n * g.channels + grp * group_in) * in_plane;
        const int64_t out_offset = (n * g.filters + grp * group_out) * out_plane;
        float* out_g = call.output + out_offset;
        const float* res_g = call.residual ? call.residual + out_offset : nullptr;
        const float* bias_g = w_.bias.data() + grp * group_out;
        for (int64_t row = 0; row < rows; row += rows_per_band_) {
          const int64_t row_end = std::min(rows, row + rows_per_band_);
          const int64_t columns = (row_end - row) * g.out[2];
          GatherBand(g, in_g, row, row_end, col, call.pool);
          GemmPacked(packed_[grp], col, columns, columns, out_g + row * g.out[2], out_plane,
                     Epilogue(w_, bias_g, res_g ? res_g + row * g.out[2] : nullptr, out_plane),
                     call.pool);
        }
      }
    }
    return Status();
  }

 private:
  ConvGeometry g_;
  ConvWeights w_;
  int64_t rows_per_band_ = 0;
  std::vector<PackedMatrix> packed_;  // per group
};

// ---------------------------------------------------------------------------
// Shifted views: a planar convolution as one GEMM whose depth segments are
// the taps, each a displaced view of copies of the input, in place of
// im2col's column matrix. Along an axis, output o and tap k read input
// s*o + a, with a = k*d - p. Rows first: write a = s*dy + py (0 <= py < s);
// the input row is s*(o + dy) + py, so all taps with the same py read the
// same rows (every s-th, from py) shifted by dy rows. Columns likewise give
// px and dx, but a shift along a row cannot be a flat offset when the plane
// is as wide as the output, so each distinct (py, px, dx) is one stored
// view: the input's rows py, py+s, ... and columns s*(ow + dx) + px for
// ow in [0, OW), zero outside the input, with span_h extra rows so that
// every tap's dy is a whole-row offset. Output position j = oh*OW + ow of
// tap (dy, view) is then element j + (dy - min dy)*OW of that view: each tap
// is a flat run, read in place by the GEMM (GemmSegmentedB), and the GEMM
// writes the output directly with its epilogue. A 3x3 layer stores 3 views
// per channel at stride 1 and 6 at stride 2, where im2col writes 9; a 7x1
// layer stores 1 against 7. The views are built a band of output rows at a
// time (kColumnBytes, in near-equal bands) so they stay in cache while the
// GEMM reads them.
//
// Consecutive taps whose views follow each other in the workspace at the
// same row offset (a 3x3 layer's kx taps: views v, v+1, v+2 of one ky)
// read one run of channel rows at one stride, so they are one depth
// segment: a 3x3 layer has 3 segments of 3 x C, not 9 of C, and where the
// GEMM reads B in place its blocks go as deep as the segments
// (GemmInPlaceBlockDepth), storing and reloading C's tiles fewer times.
//
// The input is usually cold (made two or more layers back, or too large
// for L2), and a gather reads each plane in short strided runs the
// hardware prefetcher does not follow (at stride 2, every other row). So
// the first view to read a set of rows prefetches the same rows
// `prefetch_planes` planes further on, at least kPrefetchBytes ahead.
struct ShiftedGeometry {
  int64_t views = 0;          // stored views per channel
  int64_t span_h = 0;         // extra rows per view: max dy - min dy
  int64_t rows_per_band = 0;  // output rows per band
  int64_t plane = 0;          // floats from one stored view to the next
  // Every tap has a view of its own, in tap order, at row offset 0 (a
  // kernel one row tall, such as 1x7): the views are then one plain
  // matrix, im2col's in (tap, channel) order, and the GEMM reads its depth
  // as one segment, in blocks of the full depth-block size.
  bool plain = false;
  // Per view: its first input row (for output row 0) and first column;
  // per tap (kh-major): its view and its row offset in the view (dy - min dy).
  std::vector<int64_t> first_row, first_col, tap_view, tap_row;
  // Per view: whether it is the first with its first_row (views with the
  // same first row read the same input rows); those prefetch.
  std::vector<bool> first_with_rows;
  int64_t prefetch_planes = 1;
  // Taps per depth segment of the GEMM (see above): 1, or more for a
  // single-group layer whose consecutive taps read consecutive views.
  int64_t taps_per_segment = 1;

  size_t WorkspaceBytes(int64_t channels) const {
    return static_cast<size_t>(views * channels * plane) * sizeof(float);
  }
};

// How far ahead (at least) the views' gather prefetches its input: 1 plane at
// 56x56, 2 at 28x28, 6 at 14x14.
constexpr int64_t kPrefetchBytes = 4096;

// Splits a = k*dilate - pad into stride * shift + phase, 0 <= phase < stride.
inline void SplitTap(int64_t k, int64_t dilate, int64_t pad, int64_t stride, int64_t* shift,
                     int64_t* phase) {
  const int64_t a = k * dilate - pad;
  *shift = a >= 0 ? a / stride : -((stride - 1 - a) / stride);
  *phase = a - *shift * stride;
}

// Floats from one stored view to the next for bands of `rows` output rows
// `width` wide, with the span's extra rows. Rows a multiple of 8 KiB apart
// would fall into few cache sets (and the GEMM would then pack B instead
// of reading it in place), so such a plane is one line longer.
int64_t ViewPlane(int64_t rows, int64_t span_h, int64_t width) {
  const int64_t plane = (rows + span_h) * width;
  return plane % 2048 == 0 ? plane + 16 : plane;
}

// Plans shifted views for a planar geometry.
void PlanShifted(const ConvGeometry& g, int64_t column_bytes, ShiftedGeometry* plan) {
  ShiftedGeometry& p = *plan;
  p = ShiftedGeometry();
  std::vector<int64_t> dy(static_cast<size_t>(g.kernel[1])), py(dy.size());
  for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
    SplitTap(kh, g.dilate[1], g.pad[1], g.stride[1], &dy[kh], &py[kh]);
  }
  const int64_t min_dy = *std::min_element(dy.begin(), dy.end());
  p.span_h = *std::max_element(dy.begin(), dy.end()) - min_dy;
  for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
    for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
      int64_t dx = 0, px = 0;
      SplitTap(kw, g.dilate[2], g.pad[2], g.stride[2], &dx, &px);
      // A view is known by its first input row and column.
      const int64_t row = g.stride[1] * min_dy + py[kh], col = g.stride[2] * dx + px;
      int64_t view = 0;
      while (view < p.views && !(p.first_row[view] == row && p.first_col[view] == col)) ++view;
      if (view == p.views) {
        p.first_row.push_back(row);
        p.first_col.push_back(col);
        ++p.views;
      }
      p.tap_view.push_back(view);
      p.tap_row.push_back(dy[kh] - min_dy);
    }
  }
  for (int64_t view = 0; view < p.views; ++view) {
    const auto first = p.first_row.begin();
    p.first_with_rows.push_back(std::find(first, first + view, p.first_row[view]) == first + view);
  }
  const int64_t plane_bytes = std::max<int64_t>(1, g.InSpatial() * int64_t{sizeof(float)});
  p.prefetch_planes = (kPrefetchBytes + plane_bytes - 1) / plane_bytes;
  p.plain = g.groups == 1 && p.views == static_cast<int64_t>(p.tap_view.size());
  for (size_t t = 0; t < p.tap_view.size(); ++t) {
    p.plain = p.plain && p.tap_view[t] == static_cast<int64_t>(t) && p.tap_row[t] == 0;
  }
  // The largest divisor of the tap count whose runs of taps all read
  // consecutive views at one row offset.
  const int64_t taps = static_cast<int64_t>(p.tap_view.size());
  for (int64_t run = taps; run > 1 && g.groups == 1 && !p.plain; --run) {
    bool joins = taps % run == 0;
    for (int64_t t = 0; joins && t < taps; ++t) {
      joins = t % run == 0 ||
              (p.tap_view[t] == p.tap_view[t - 1] + 1 && p.tap_row[t] == p.tap_row[t - 1]);
    }
    if (joins) {
      p.taps_per_segment = run;
      break;
    }
  }
  // As few bands as fit, of the height from near-equal (28 rows that fit
  // 24 to a band as 14 + 14, not 24 + 4) up to the most that fit whose
  // bands' GEMMs run the fewest column tiles: a band's last tile is
  // partial where its columns are not a multiple of the tile's width, and
  // costs about as much as a full one. 28 rows of 28 columns go as 16 + 12
  // rows (448 + 336 columns, 14 + 11 tiles of 32), not 14 + 14 (13 + 13).
  const int64_t band_row_bytes =
      std::max<int64_t>(1, p.views * g.channels * g.out[2] * int64_t{sizeof(float)});
  const int64_t max_rows = std::max<int64_t>(1, std::min(g.out[1], column_bytes / band_row_bytes));
  const int64_t bands = (g.out[1] + max_rows - 1) / max_rows;
  const int64_t tile_cols = GemmKernels().kernel->nr;
  const auto column_tiles = [&](int64_t rows_per_band) {
    int64_t tiles = 0;
    for (int64_t row = 0; row < g.out[1]; row += rows_per_band) {
      const int64_t cols = std::min(rows_per_band, g.out[1] - row) * g.out[2];
      tiles += (cols + tile_cols - 1) / tile_cols;
    }
    return tiles;
  };
  p.rows_per_band = std::max<int64_t>(1, (g.out[1] + bands - 1) / bands);
  int64_t fewest_tiles = column_tiles(p.rows_per_band);
  for (int64_t rows = p.rows_per_band + 1; rows <= max_rows; ++rows) {
    const int64_t tiles = column_tiles(rows);
    if (tiles < fewest_tiles) {
      p.rows_per_band = rows;
      fewest_tiles = tiles;
    }
  }
  p.plane = ViewPlane(p.rows_per_band, p.span_h, g.out[2]);
}

class ShiftedKernel : public ConvKernel {
 public:
  Status Prepare(const ConvGeometry& g, ConvWeights w) {
    g_ = g;
    w_ = std::move(w);
    PlanShifted(g, kColumnBytes, &plan_);
    // Each group's depth in tap-major order (tap, channel): segment t is
    // tap t's view.
    const int64_t taps = g.KernelSize(), group_in = g.channels / g.groups;
    std::vector<float> reordered(w_.weights.size());
    for (int64_t f = 0; f < g.filters; ++f) {
      for (int64_t c = 0; c < group_in; ++c) {
        for (int64_t t = 0; t < taps; ++t) {
          reordered[(f * taps + t) * group_in + c] = w_.weights[(f * group_in + c) * taps + t];
        }
      }
    }
    const int64_t segment_depth = plan_.plain ? 0 : plan_.taps_per_segment * group_in;
    MXL_RETURN_IF_ERROR(PackGroups(g, reordered, segment_depth, &packed_,
                                   GemmReadsBInPlace(plan_.plane)
                                       ? GemmInPlaceBlockDepth(plan_.rows_per_band * g.out[2])
                                       : 0));
    w_.weights.clear();
    w_.weights.shrink_to_fit();
    PlanThreadBands(g);
    return Status();
  }
  size_t PreparedBytes() const override { return w_.bytes() + HeldBytes(packed_); }
  // A slot of views per thread band, or the plan's views where the kernel
  // runs on a pool of one thread (it is shared by the model's handles,
  // prepared for the first one's threads).
  size_t WorkspaceBytes() const override {
    return std::max(static_cast<size_t>(thread_bands_) * BandSlotFloats() * sizeof(float),
                    plan_.WorkspaceBytes(g_.channels));
  }

  Status Forward(const ConvCall& call) const override {
    MXL_RETURN_IF_ERROR(CheckConvWorkspace(call, WorkspaceBytes()));
    const ConvGeometry& g = g_;
    for (int64_t n = 0; n < call.batch; ++n) {
      const int64_t out_offset = n * g.filters * g.OutSpatial();
      ForwardImage(call.data + n * g.channels * g.InSpatial(),
                   call.residual ? call.residual + out_offset : nullptr,
                   call.output + out_offset, static_cast<float*>(call.workspace), call.pool);
    }
    return Status();
  }

 private:
  // Bands per thread (see ForwardImage): where the layer runs on T >= 2
  // threads, its output rows split into T near-equal parts (the largest at
  // most 1/8 above the mean: 28 or 14 rows at two threads, not 7), and its
  // weights are no larger than its views of one image (each thread then
  // reads all the weights, where a GEMM shared by rows reads half of them
  // and all the views), each thread takes one part, in bands of at most
  // the plan's rows, each with views of its own; else every band is shared
  // by all threads.
  void PlanThreadBands(const ConvGeometry& g) {
    const int64_t threads = g.threads, rows = g.out[1];
    const int64_t part = threads > 0 ? (rows + threads - 1) / threads : rows;
    const int64_t weights = g.filters * (g.channels / g.groups) * g.KernelSize();
    const int64_t view_floats = plan_.views * g.channels * g.OutSpatial();
    thread_bands_ =
        threads >= 2 && part * threads * 8 <= rows * 9 && weights <= view_floats ? threads : 1;
    band_rows_ = thread_bands_ > 1 ? std::min(plan_.rows_per_band, part) : plan_.rows_per_band;
    band_plane_ = thread_bands_ > 1 ? ViewPlane(band_rows_, plan_.span_h, g.out[2]) : plan_.plane;
  }

  // Floats of one thread band's views.
  size_t BandSlotFloats() const {
    return static_cast<size_t>(plan_.views * g_.channels * band_plane_);
  }

  // Output rows [row, row + rows) of one image: the band's views into
  // `views` (rows `plane` floats apart), then per group one segmented GEMM
  // writing the band's output rows. The views and the GEMM share `pool`.
  void ForwardBand(const float* data, const float* residual, float* output, float* views,
                   int64_t plane, int64_t row, int64_t rows, ThreadPool* pool) const {
    const ConvGeometry& g = g_;
    const ShiftedGeometry& p = plan_;
    const int64_t in_plane = g.InSpatial(), out_plane = g.OutSpatial();
    const int64_t ow_count = g.out[2];
    const int64_t group_in = g.channels / g.groups, group_out = g.filters / g.groups;
    const int64_t taps = static_cast<int64_t>(p.tap_view.size());
    // A channel's views one after another, while its input rows are in L1
    // (view-major tasks read each plane `views` times from L2).
    ParallelFor(pool, p.views * g.channels, [&](int64_t task) {
      const int64_t c = task / p.views, view = task % p.views;
      const bool prefetch = p.first_with_rows[view] && c + p.prefetch_planes < g.channels;
      GatherRowsZeroPadded(data + c * in_plane, g.in[1], g.in[2],
                           p.first_row[view] + row * g.stride[1], g.stride[1], rows + p.span_h,
                           p.first_col[view], g.stride[2], ow_count,
                           views + (view * g.channels + c) * plane,
                           prefetch ? p.prefetch_planes * in_plane * int64_t{sizeof(float)} : 0);
    });
    std::vector<const float*> segments(static_cast<size_t>(taps));
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      for (int64_t t = 0; t < taps; t += p.taps_per_segment) {
        segments[t / p.taps_per_segment] =
            views + (p.tap_view[t] * g.channels + grp * group_in) * plane +
            p.tap_row[t] * ow_count;
      }
      const int64_t at = grp * group_out * out_plane + row * ow_count;
      GemmSegmentedB(packed_[grp], segments.data(), plane, rows * ow_count, output + at,
                     out_plane,
                     Epilogue(w_, w_.bias.data() + grp * group_out,
                              residual ? residual + at : nullptr, out_plane),
                     pool);
    }
  }

  // One image, in bands of output rows. With bands per thread, thread t
  // of T takes the t-th part of the rows with its own views: it gathers
  // the input rows its part reads, which the layer before (split by
  // columns: the same rows) mostly wrote on the same core, and its GEMM
  // reads only views its own core wrote, where shared bands had each
  // thread read the views of all channels, half of them gathered on the
  // other core. The GEMM's sums are the same at any split (the packing,
  // hence the depth blocks, does not depend on the threads).
  void ForwardImage(const float* data, const float* residual, float* output, float* views,
                    ThreadPool* pool) const {
    const ConvGeometry& g = g_;
    const int64_t threads = pool ? std::min<int64_t>(pool->size(), thread_bands_) : 1;
    if (threads >= 2) {
      const size_t slot = BandSlotFloats();
      ParallelFor(pool, threads, [&](int64_t t) {
        const int64_t end = (t + 1) * g.out[1] / threads;
        for (int64_t row = t * g.out[1] / threads; row < end; row += band_rows_) {
          ForwardBand(data, residual, output, views + static_cast<size_t>(t) * slot,
                      band_plane_, row, std::min(band_rows_, end - row), nullptr);
        }
      });
      return;
    }
    for (int64_t row = 0; row < g.out[1]; row += plan_.rows_per_band) {
      ForwardBand(data, residual, output, views, plan_.plane, row,
                  std::min(plan_.rows_per_band, g.out[1] - row), pool);
    }
  }

  ConvGeometry g_;
  ConvWeights w_;
  ShiftedGeometry plan_;
  // Bands per thread (PlanThreadBands): how many threads take a part of
  // each image (1: bands shared by all), their bands' rows and view plane.
  int64_t thread_bands_ = 1;
  int64_t band_rows_ = 0;
  int64_t band_plane_ = 0;
  std::vector<PackedMatrix> packed_;  // per group
};

// ---------------------------------------------------------------------------
// Weights in place (the compact_weights option): the im2col bands of the
// im2col kernel, or the input plane itself for a pointwise layer, times
// the parameter array as the params file holds it. Each call packs the
// weights a block of kInPlaceFilters filters at a time into a per-thread
// scratch matrix, multiplying in a folded BatchNorm's scale as it goes (the
// packed kernels' bits: they fold the scale into the weights the same way
// before packing), so the predictor keeps no copy of the weights.

// 64 filters x a depth of 4608 (512 channels, 3x3) is 1.2 MB of scratch.
constexpr int64_t kInPlaceFilters = 64;

class InPlaceKernel : public ConvKernel {
 public:
  Status Prepare(const ConvGeometry& g, ConvWeights w) {
    g_ = g;
    w_ = std::move(w);
    // Weights of its own when called without the parameter array (the
    // differential sweep).
    weights_ =
        w_.weights_in_place.data() == nullptr ? w_.weights.data() : w_.weights_in_place.fdata();
    // A pointwise layer reads its input plane as it is, in one band.
    rows_per_band_ = g.Pointwise() ? g.out[0] * g.out[1] : RowsPerBand(g);
    return Status();
  }
  // The weights stay in the parameter array (or in w_.weights when the
  // graph computes them).
  size_t PreparedBytes() const override { return w_.bytes(); }
  size_t WorkspaceBytes() const override {
    return g_.Pointwise() ? 0 : BandBytes(g_, rows_per_band_);
  }

  Status Forward(const ConvCall& call) const override {
    MXL_RETURN_IF_ERROR(CheckConvWorkspace(call, WorkspaceBytes()));
    // Reused by every call on this thread: no allocation per call.
    static thread_local PackedMatrix block;
    const ConvGeometry& g = g_;
    const int64_t in_plane = g.InSpatial(), out_plane = g.OutSpatial();
    const int64_t group_in = g.channels / g.groups, group_out = g.filters / g.groups;
    const int64_t depth = group_in * g.KernelSize();
    float* col = static_cast<float*>(call.workspace);
    const int64_t rows = g.out[0] * g.out[1];
    for (int64_t n = 0; n < call.batch; ++n) {
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        const float* in_g = call.data + (n * g.channels + grp * group_in) * in_plane;
        const int64_t out_offset = (n * g.filters + grp * group_out) * out_plane;
        for (int64_t row = 0; row < rows; row += rows_per_band_) {
          const int64_t row_end = std::min(rows, row + rows_per_band_);
          const int64_t columns = (row_end - row) * g.out[2];
          const float* b = in_g;
          if (!g.Pointwise()) {
            GatherBand(g, in_g, row, row_end, col, call.pool);
            b = col;
          }
          const int64_t band = out_offset + row * g.out[2];
          for (int64_t f0 = 0; f0 < group_out; f0 += kInPlaceFilters) {
            const int64_t filter = grp * group_out + f0;
            const int64_t filters = std::min(kInPlaceFilters, group_out - f0);
            MXL_RETURN_IF_ERROR(
                block.Pack(weights_ + filter * depth, depth, filters, depth, false, call.pool));
            if (!w_.filter_scale.empty()) block.ScaleRows(w_.filter_scale.data() + filter);
            const int64_t at = band + f0 * out_plane;
            GemmPacked(block, b, columns, columns, call.output + at, out_plane,
                       Epilogue(w_, w_.bias.data() + filter,
                                call.residual ? call.residual + at : nullptr, out_plane),
                       call.pool);
          }
        }
      }
    }
    return Status();
  }

 private:
  ConvGeometry g_;
  ConvWeights w_;
  const float* weights_ = nullptr;  // w_'s weights, wherever they are
  int64_t rows_per_band_ = 0;
};

}  // namespace conv_gemm_cc

Status PreparePointwiseConv(const ConvGeometry& g, ConvWeights w,
                            std::unique_ptr<ConvKernel>* kernel) {
  return MakeConvKernel<conv_gemm_cc::PointwiseKernel>(g, std::move(w), kernel);
}

Status PrepareIm2colConv(const ConvGeometry& g, ConvWeights w,
                         std::unique_ptr<ConvKernel>* kernel) {
  return MakeConvKernel<conv_gemm_cc::Im2colKernel>(g, std::move(w), kernel);
}

Status PrepareShiftedConv(const ConvGeometry& g, ConvWeights w,
                          std::unique_ptr<ConvKernel>* kernel) {
  return MakeConvKernel<conv_gemm_cc::ShiftedKernel>(g, std::move(w), kernel);
}

Status PrepareInPlaceConv(const ConvGeometry& g, ConvWeights w,
                          std::unique_ptr<ConvKernel>* kernel) {
  return MakeConvKernel<conv_gemm_cc::InPlaceKernel>(g, std::move(w), kernel);
}

}  // namespace mxlite
