/*
 * What the x86 depthwise kernels (depthwise_avx512.cc, depthwise_avx2.cc)
 * share: how far ahead they prefetch, and the channel-blocked path's
 * scratch window. Internal to the depthwise family; see depthwise.h.
 */
#ifndef MXLITE_KERNELS_DEPTHWISE_X86_H_
#define MXLITE_KERNELS_DEPTHWISE_X86_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "depthwise.h"
#include "x86_simd.h"

#if defined(MXLITE_X86_64)

namespace mxlite {
namespace depthwise_x86 {

constexpr int kBlockLanes = static_cast<int>(kDepthwiseBlockChannels);

// The plane kernel prefetches the input rows it will read
// kPrefetchRowsAhead rows ahead, and the output rows it will write
// kPrefetchOutputRowsAhead ahead. Planes are contiguous, so near the bottom
// of one plane this runs into the next, usually the same thread's next
// task (past the last plane it prefetches nothing useful, and a prefetch
// never faults). The row groups below read six input rows and write four
// output rows side by side, more streams than the hardware prefetcher
// follows. 32 channels at 112x112, stride 1, one thread: input cold 139-140
// -> 85-90 us, output cold 126-146 -> 81-85, warm unchanged (62-75). In
// mobilenet1.0 (per node, 8 rounds alternating) that layer 154 -> 112 us.
// The input prefetch at stride 2 predates the row groups (the row walk
// before them: 96 channels at 112x112, caches flushed, 274-358 -> 179-215
// us).
constexpr int64_t kPrefetchRowsAhead = 10;
constexpr int64_t kPrefetchOutputRowsAhead = 8;

// The input rows output rows [oy, oy + rows) move past, and those output
// rows, further on (see kPrefetchRowsAhead).
template <int kStride>
MXLITE_ANY_ISA_INLINE void PrefetchRowsAhead(const DepthwisePlaneArgs& a, int64_t oy,
                                             int64_t rows) {
  const int64_t in_bytes = a.in_w * int64_t{sizeof(float)};
  const int64_t in_ahead = (oy * kStride + kPrefetchRowsAhead) * in_bytes;
  for (int64_t b = 0; b < kStride * rows * in_bytes; b += 64) {
    PrefetchAhead(a.input, in_ahead + b);
  }
  const int64_t out_bytes = a.out_w * int64_t{sizeof(float)};
  const int64_t out_ahead = (oy + kPrefetchOutputRowsAhead) * out_bytes;
  for (int64_t b = 0; b < rows * out_bytes; b += 64) {
    PrefetchAheadForWrite(a.output, out_ahead + b);
  }
}

// Channel-blocked path. The scratch holds the padded input window (rows x
// cols pixels, rows = (out_h - 1) * stride + 3, likewise cols), one 16-float
// vector of channels per pixel, zeros in the padding; input pixels the
// window never reads are left out.
struct BlockWindow {
  int64_t rows, cols;
};

// Zeroes the window's padding: kLanes floats per pixel.
template <int kLanes>
void ZeroBorder(const DepthwiseBlockArgs& a, const BlockWindow& win, float* window) {
  const int64_t top = std::min(a.pad_h, win.rows);
  const int64_t bottom = std::min(win.rows, a.pad_h + a.in_h);
  const int64_t left = std::min(a.pad_w, win.cols);
  const int64_t right = std::min(win.cols, a.pad_w + a.in_w);
  for (int64_t y = 0; y < win.rows; ++y) {
    float* row = window + y * win.cols * kLanes;
    if (y < top || y >= bottom) {
      std::fill(row, row + win.cols * kLanes, 0.f);
    } else {
      std::fill(row, row + left * kLanes, 0.f);
      std::fill(row + right * kLanes, row + win.cols * kLanes, 0.f);
    }
  }
}

// This thread's window for kLanes channels per pixel, aligned to kLanes
// floats so that no pixel's vector straddles two cache lines, its border
// zero. Only the gathers write the scratch, always inside the border, so
// the border stays zero while this thread sees layers of one geometry.
template <int kLanes>
float* BlockScratch(const DepthwiseBlockArgs& a, const BlockWindow& win) {
  thread_local std::vector<float> scratch;
  const size_t floats = static_cast<size_t>(win.rows * win.cols * kLanes);
  if (scratch.size() < floats + kLanes) scratch.resize(floats + kLanes);
  float* window = scratch.data();
  window += (kLanes - reinterpret_cast<uintptr_t>(window) / sizeof(float) % kLanes) % kLanes;
  thread_local const float* zeroed_window = nullptr;
  thread_local int64_t zeroed_geometry[6] = {};
  const int64_t geometry[6] = {win.rows, win.cols, a.pad_h, a.pad_w, a.in_h, a.in_w};
  if (zeroed_window != window || !std::equal(geometry, geometry + 6, zeroed_geometry)) {
    ZeroBorder<kLanes>(a, win, window);
    zeroed_window = window;
    std::copy(geometry, geometry + 6, zeroed_geometry);
  }
  return window;
}

// The blocked path reads sixteen input planes side by side and writes
// sixteen output planes side by side, a line of each per step: more streams
// than the hardware prefetcher follows, so with cold caches each step
// waited on sixteen misses. Each step now prefetches, in every plane, the
// line 6 lines ahead of its reads and 4 ahead of its writes. One thread,
// 128 channels at 56x56, caches flushed (warm): stride 1 343 -> 126-130 us
// (98 -> 100), stride 2 255 -> 74-82 (52 -> 51-54). Near a plane's end
// the address runs into the next plane, and past the last one it fetches
// nothing useful (see PrefetchAhead in x86_simd.h).
constexpr int64_t kStoreBytesAhead = 4 * 64;

}  // namespace depthwise_x86
}  // namespace mxlite

#endif  // MXLITE_X86_64

#endif  // MXLITE_KERNELS_DEPTHWISE_X86_H_
