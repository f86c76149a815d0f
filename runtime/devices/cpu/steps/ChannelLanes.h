// Per-channel loops over [N, C, S] data (NCHW with S = H·W) with one channel per vector lane; the
// same lanes serve groups of contiguous rows (layer norm, softmax gradients: rowsToLanes).
//
// Batch norm sums each channel's M = N·S elements one after another (n-major, then s: the
// reference's order). Channel by channel that is one long chain of dependent adds, which bound the
// step (about 3 cycles an element). Here a block of up to kLanes channels is transposed into
// [M][kLanes] f32 scratch; a loop over the lanes then advances every channel's chain by one
// element at a time with vector operations whose lanes are independent. Each lane performs exactly
// the scalar loop's operations on its channel, so the bits are unchanged.
#ifndef AMP_RUNTIME_DEVICES_CPU_STEPS_CHANNELLANES_H
#define AMP_RUNTIME_DEVICES_CPU_STEPS_CHANNELLANES_H

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "runtime/devices/cpu/steps/CpuKernelUtil.h"
#include "runtime/devices/cpu/kernels/TransposeTile.h"
#include "runtime/kernels/math/SumOrder.h"

namespace amp::rt::cpu {

constexpr int64_t kLanes = 16;

// Four lanes as one GCC vector, the width every x86-64 CPU has (SSE2): operations are lane by
// lane, each the scalar operation (no reassociation; no contraction under -ffp-contract=off). A
// row of kLanes is kQuads of them. Moved with memcpy, so row pointers need no alignment.
typedef float Quad __attribute__((vector_size(4 * sizeof(float))));
typedef int32_t QuadInts __attribute__((vector_size(4 * sizeof(int32_t))));
constexpr int kQuads = kLanes / 4;

inline Quad loadQuad(const float* p) {
  Quad v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void storeQuad(float* p, Quad v) { std::memcpy(p, &v, sizeof v); }

// A row of kLanes per-lane values (one per channel or row of a block), as kQuads vectors.
struct Lanes {
  Quad q[kQuads];
  float operator[](int64_t l) const { return q[l / 4][l % 4]; }
};

// Lane by lane, the scalar f32 addition (the sums' `+`, SumOrder.h).
inline Lanes operator+(const Lanes& a, const Lanes& b) {
  Lanes v;
  for (int i = 0; i < kQuads; ++i) v.q[i] = a.q[i] + b.q[i];
  return v;
}

// One blocked pairwise sum (runtime/kernels/math/SumOrder.h) per lane, from +0.
struct LaneSum {
  AmpBlockedSum<Lanes> sum;
  LaneSum() { sum.reset(Lanes{}); }
  void add(const Lanes& v) { sum.add(v); }
  Lanes result() const { return sum.result(); }
};

inline Lanes laneLoad(const float* row) {
  Lanes v;
  for (int i = 0; i < kQuads; ++i) v.q[i] = loadQuad(row + 4 * i);
  return v;
}

// `width` <= kLanes rows of S f32 values (row l at rows + l·ld) as S lane rows:
// out[s·kLanes + l] = rows[l·ld + s], +0 in lanes at and past `width`. Bit moves through SSE2
// register blocks (TransposeTile.h).
inline void rowsToLanes(const float* rows, int64_t ld, int64_t S, int64_t width, float* out) {
  if (width < kLanes)
    for (int64_t s = 0; s < S; ++s) std::memset(out + s * kLanes + width, 0, sizeof(float) * (kLanes - width));
  transpose::tile(reinterpret_cast<const uint32_t*>(rows), ld, reinterpret_cast<uint32_t*>(out), kLanes, S, width);
}

// Rows kept as lanes are transposed one sum block (AMP_SUM_BLOCK columns) at a time: the lane
// scratch a row length n needs.
constexpr int64_t laneScratchFloats(int64_t n) { return kLanes * std::min<int64_t>(n, AMP_SUM_BLOCK); }

// How many rows of n floats a block of lanes takes so that each row buffer stays near 1 MiB:
// kLanes, fewer for rows of more than 2^14 floats, at least 1.
constexpr int64_t rowsPerLaneBlock(int64_t n) {
  return std::clamp<int64_t>((int64_t{1} << 18) / std::max<int64_t>(n, 1), 1, kLanes);
}

// Per lane l < width, the blocked pairwise sum (SumOrder.h) over j < n of term(lane row j), the
// lane rows being the `width` <= kLanes f32 rows of n at `rows` (row l at rows + l·n): each sum
// block is transposed into `lanes` (laneScratchFloats(n)) and summed as one chain from +0, the
// block sums go up the tree (a single block is the chain itself: no tree). With `transposed` and
// n <= AMP_SUM_BLOCK, `lanes` already holds the rows (rowsToLanes) and is read as is, so several
// sums over one block of rows transpose it once.
template <class Term>
Lanes rowLaneSum(const float* rows, int64_t width, int64_t n, float* lanes, bool transposed, Term&& term) {
  AmpSumTree<Lanes> tree;
  tree.reset();
  for (int64_t b = 0; b < n; b += AMP_SUM_BLOCK) {
    const int64_t len = std::min<int64_t>(AMP_SUM_BLOCK, n - b);
    if (!transposed || n > AMP_SUM_BLOCK) rowsToLanes(rows + b, n, len, width, lanes);
    Lanes s{};
    for (int64_t j = 0; j < len; ++j) s = s + term(laneLoad(lanes + j * kLanes));
    if (n <= AMP_SUM_BLOCK) return s;
    tree.push(s);
  }
  return tree.result(Lanes{});
}

// sums[l] = the blocked pairwise sum over j < n of rows[l·n + j] (amp_blocked_sum's bits per row).
inline void rowSumsLanes(const float* rows, int64_t width, int64_t n, float* lanes, float* sums) {
  const Lanes total = rowLaneSum(rows, width, n, lanes, false, [](const Lanes& v) { return v; });
  for (int64_t l = 0; l < width; ++l) sums[l] = total[l];
}

// Channels [c0, c0 + width) of an [N, C, S] tensor, width <= kLanes.
struct ChannelBlock {
  int64_t c0, width;
};

// At least ceil(C / kLanes) blocks, and at least one per slot (up to C) so that every thread has
// channels even when C is small.
inline int64_t channelBlockCount(int64_t C, int slots) {
  return std::max((C + kLanes - 1) / kLanes, std::min<int64_t>(C, std::max(slots, 1)));
}

// Block b of `blocks` even splits of C channels.
inline ChannelBlock channelBlock(int64_t C, int64_t blocks, int64_t b) {
  const int64_t c0 = C * b / blocks;
  return {c0, C * (b + 1) / blocks - c0};
}

// Floats each gatherLanes / scatterLanes call needs in `tile`, for S elements per channel.
constexpr int64_t laneTileFloats(int64_t S) { return 2 * kLanes * S; }

// The block's channels as f32 rows of kLanes: out[(n·S + s)·kLanes + l] = x[n, c0 + l, s]; lanes
// at and past `width` are +0. The [width][S] run of each n (widened in `tile` unless f32) is
// transposed through SSE2 register blocks (bit moves).
inline void gatherLanes(DType t, const uint8_t* x, int64_t N, int64_t C, int64_t S, ChannelBlock blk, float* tile,
                        float* out) {
  for (int64_t n = 0; n < N; ++n) {
    const float* src = widenRun(t, x, (n * C + blk.c0) * S, blk.width * S, tile);
    rowsToLanes(src, S, S, blk.width, out + n * S * kLanes);
  }
}

// The inverse for results: rowOf(n·S + s, row) fills a row of kLanes floats, whose first `width`
// lanes become y[n, c0 + l, s] (rounded RNE to t). Writes only the block's channels, so y may be
// the gathered x once the block is gathered.
template <class RowFn>
void scatterLanes(DType t, uint8_t* y, int64_t N, int64_t C, int64_t S, ChannelBlock blk, float* tile, RowFn&& rowOf) {
  float* rows = tile + kLanes * S;  // [S][kLanes]
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t s = 0; s < S; ++s) rowOf(n * S + s, rows + s * kLanes);
    const int64_t at = (n * C + blk.c0) * S;
    float* dst = t == DType::F32 ? reinterpret_cast<float*>(y) + at : tile;  // f32: in place
    transpose::tile(reinterpret_cast<const uint32_t*>(rows), kLanes, reinterpret_cast<uint32_t*>(dst), S, blk.width, S);
    if (t != DType::F32) narrowRun(tile, t, y, at, blk.width * S);
  }
}

}  // namespace amp::rt::cpu

#endif  // AMP_RUNTIME_DEVICES_CPU_STEPS_CHANNELLANES_H
