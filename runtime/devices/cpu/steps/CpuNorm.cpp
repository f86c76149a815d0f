// softmax / log_softmax (any axis), layer_norm, rms_norm and their gradients on the cpu device.
// Every slice or group runs the reference's own f32 sequence (docs/reference-executor.md,
// "Reductions and softmax", "Normalization", "Gradient ops"): softmax slices are softmaxSlice's,
// in its certified vector form (SoftmaxExact.h); norm statistics are f32 sums in the contract's
// blocked pairwise order (runtime/kernels/math/SumOrder.h) over element order, rstd is
// f32(1/sqrt(f64)) as the reference evaluates it; weight and bias gradients sum groups in that
// order, one column range per thread. Results are therefore bit for
// bit the reference's. Slices and groups are independent, so they are split across threads;
// scratch is per slot, sized at prepare.
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/devices/cpu/steps/CpuKernelUtil.h"
#include "runtime/devices/cpu/CpuStep.h"
#include "runtime/devices/cpu/kernels/SoftmaxExact.h"
#include "runtime/devices/cpu/steps/ChannelLanes.h"
#include "runtime/devices/cpu/steps/ColumnSums.h"
#include "runtime/kernels/math/SumOrder.h"

namespace amp::rt::cpu {
namespace {

constexpr int64_t kWork = 16384;  // elements of work per thread before splitting pays

// ---------------------------------------------------------------------------------------------
// softmax / log_softmax

class SoftmaxStep final : public CpuStep {
 public:
  // Every slice is softmaxSlice's, through SoftmaxExact.h's certified vector kernels (bit-exact,
  // many slices a call): rows (inner = 1) in blocks of kSoftmaxRowBlock, widened as one run;
  // slices with inner > 1 as tiles of [len, tile], widened, whose columns are the slices.
  SoftmaxStep(int32_t in, int32_t out, DType dtype, int64_t outer, int64_t len, int64_t inner, bool log)
      : in_(in), out_(out), dtype_(dtype), outer_(outer), len_(len), inner_(inner), log_(log) {
    tile_ = inner_ == 1 ? kSoftmaxRowBlock : std::min<int64_t>(inner_, 64);
    slots_ = scratchSlots();
    per_ = 2 * len_ * tile_ + softmaxScratchFloats(len_);
    scratch_ = shared_.reserve(slots_ * per_);
  }
  int64_t sharedScratchBytes() const override { return shared_.bytes(); }
  void bindSharedScratch(uint8_t* p) override { shared_.bind(p); }

  absl::Status run(BufferPtrs ptr) override {
    const uint8_t* x = ptr[in_];
    uint8_t* y = ptr[out_];
    if (len_ == 0) return absl::OkStatus();
    const VectorPath path = hostVectorPath(kSoftmaxNeeds);
    if (inner_ == 1) {
      parallelChunks(outer_, std::max<int64_t>(1, kWork / len_), slots_, [&](int slot, int64_t r0, int64_t r1) {
        float* xs = shared_.at(scratch_) + slot * per_;
        float* ys = xs + len_ * tile_;
        float* work = ys + len_ * tile_;
        for (int64_t r = r0; r < r1; r += tile_) {
          const int64_t n = std::min(tile_, r1 - r);
          const float* xr = widenRun(dtype_, x, r * len_, n * len_, xs);
          float* yr = dtype_ == DType::F32 ? reinterpret_cast<float*>(y) + r * len_ : ys;
          softmaxRows(path, xr, n, len_, log_, yr, work);
          if (dtype_ != DType::F32) narrowRun(yr, dtype_, y, r * len_, n * len_);
        }
      });
      return absl::OkStatus();
    }
    const int64_t tilesPerOuter = (inner_ + tile_ - 1) / tile_;
    parallelChunks(outer_ * tilesPerOuter, std::max<int64_t>(1, kWork / (len_ * tile_)), slots_,
                   [&](int slot, int64_t t0, int64_t t1) {
                     float* xs = shared_.at(scratch_) + slot * per_;
                     float* ys = xs + len_ * tile_;
                     float* work = ys + len_ * tile_;
                     for (int64_t t = t0; t < t1; ++t) {
                       const int64_t o = t / tilesPerOuter, i0 = (t % tilesPerOuter) * tile_;
                       const int64_t w = std::min(tile_, inner_ - i0);
                       const int64_t base = o * len_ * inner_ + i0;
                       for (int64_t j = 0; j < len_; ++j)
                         convertBuffer(dtype_, x + (base + j * inner_) * dtypeSize(dtype_), DType::F32, xs + j * w, w);
                       softmaxColumns(path, xs, len_, w, w, log_, ys, work);
                       for (int64_t j = 0; j < len_; ++j) narrowRun(ys + j * w, dtype_, y, base + j * inner_, w);
                     }
                   });
    return absl::OkStatus();
  }

 private:
  int32_t in_, out_;
  DType dtype_;
  int64_t outer_, len_, inner_;
  bool log_;
  int64_t tile_ = 1, per_ = 0;
  int slots_ = 1;
  SharedFloats shared_;
  int64_t scratch_ = 0;  // per slot: a widened tile, its result and the kernels' work tile
};

absl::StatusOr<std::unique_ptr<CpuStep>> makeSoftmax(const StepContext& c, bool log) {
  if (c.step.operands.size() != 1 || c.step.results.size() != 1) return c.error("expected 1 operand and 1 result");
  const BufferDesc &x = c.operand(0), &y = c.result(0);
  if (!isKernelFloat(x.dtype)) return c.error("operand 0 must have a float element type (f32, f16, bf16 or f8)");
  auto axis = c.step.withAttrsOf<SoftmaxAttrs, LogSoftmaxAttrs>([](const auto& a) { return a.axis; });
  if (!axis.ok()) return axis.status();
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  if (*axis < 0 || *axis >= rank) return c.error(absl::StrCat("attribute 'axis' = ", *axis, " is out of range"));
  if (y.dtype != x.dtype || y.shape != x.shape) return c.error("the result type must be the operand's");
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < *axis; ++d) outer *= x.shape[d];
  for (int64_t d = *axis + 1; d < rank; ++d) inner *= x.shape[d];
  return std::unique_ptr<CpuStep>(
      new SoftmaxStep(c.step.operands[0], c.step.results[0], x.dtype, outer, x.shape[*axis], inner, log));
}

// ---------------------------------------------------------------------------------------------
// Norm statistics, exactly as the reference computes them (ReferenceNormalization.cpp and
// ReferenceGrad.cpp): f32 sums in the contract's blocked pairwise order (SumOrder.h), n rounded to
// f32, rstd in f64 rounded once.

// Up to kLanes groups at once, one per vector lane (ChannelLanes.h): the block's rows (f32, row l
// at rows + l·n) are transposed into lane rows (`lanes`: laneScratchFloats(n), a sum block at a time), and every lane runs its group's
// blocked pairwise sums (each block one chain in element order) as the scalar code does, so the
// statistics are the reference's bits:
// mean = sum / n, var = (sum of fl(d·d), d = fl(x - mean)) / n, or for rms_norm the sum of fl(x·x)
// / n, and rstd = f32(1 / sqrt(f64(var) + eps)). The kLanes chains advance side by side instead of
// one add latency per element of one group.
void normStatsLanes(bool rms, const float* rows, int64_t width, int64_t n, float nf, double eps, float* lanes,
                    float* mean, float* rstd) {
  if (n <= AMP_SUM_BLOCK) rowsToLanes(rows, n, n, width, lanes);  // once for both passes
  Lanes sq;
  if (rms) {
    sq = rowLaneSum(rows, width, n, lanes, true, [](const Lanes& v) {
      Lanes v2;
      for (int i = 0; i < kQuads; ++i) v2.q[i] = v.q[i] * v.q[i];
      return v2;
    });
    for (int64_t l = 0; l < width; ++l) mean[l] = 0.0f;
  } else {
    const Lanes total = rowLaneSum(rows, width, n, lanes, true, [](const Lanes& v) { return v; });
    Lanes m;
    for (int i = 0; i < kQuads; ++i) m.q[i] = total.q[i] / nf;
    sq = rowLaneSum(rows, width, n, lanes, true, [&](const Lanes& v) {  // two-pass biased variance: sum of fl(d*d), d = fl(x - mean)
      Lanes d2;
      for (int i = 0; i < kQuads; ++i) {
        const Quad d = v.q[i] - m.q[i];
        d2.q[i] = d * d;
      }
      return d2;
    });
    for (int64_t l = 0; l < width; ++l) mean[l] = m[l];
  }
  for (int64_t l = 0; l < width; ++l) rstd[l] = static_cast<float>(1.0 / std::sqrt(double(sq[l] / nf) + eps));
}

// y = fl(fl(x - mean)·rstd), then ·w and +b where given: the reference's operations per element,
// in one pass over the row (rms_norm passes mean = +0: x - +0 is x, NaN and -0 included).
template <bool kWeight, bool kBias>
void normalizeRowAs(const float* x, int64_t n, float mean, float rstd, const float* w, const float* b, float* y) {
  for (int64_t j = 0; j < n; ++j) {
    float v = (x[j] - mean) * rstd;
    if constexpr (kWeight) v = v * w[j];
    if constexpr (kBias) v = v + b[j];
    y[j] = v;
  }
}

void normalizeRow(const float* x, int64_t n, float mean, float rstd, const float* w, const float* b, float* y) {
  if (w && b) normalizeRowAs<true, true>(x, n, mean, rstd, w, b, y);
  else if (w) normalizeRowAs<true, false>(x, n, mean, rstd, w, b, y);
  else if (b) normalizeRowAs<false, true>(x, n, mean, rstd, w, b, y);
  else normalizeRowAs<false, false>(x, n, mean, rstd, w, b, y);
}

// The shape of a norm step: `groups` groups of `n` trailing elements.
struct NormShape {
  DType dtype;
  int64_t groups, n;
  double eps;
  int64_t ndim;  // normalized_ndim: x's trailing dims that form a group
};

// ---------------------------------------------------------------------------------------------
// layer_norm / rms_norm forward

class NormStep final : public CpuStep {
 public:
  NormStep(bool rms, NormShape s, int32_t x, int32_t w, int32_t b, int32_t y)
      : rms_(rms), s_(s), x_(x), w_(w), b_(b), y_(y) {
    slots_ = scratchSlots();
    rowsPerBlock_ = rowsPerLaneBlock(s_.n);
    per_ = 2 * rowsPerBlock_ * s_.n + laneScratchFloats(s_.n);  // rows in and out, the lanes
    scratch_ = shared_.reserve(slots_ * per_);
    wbuf_ = shared_.reserve(w_ >= 0 ? s_.n : 0);
    bbuf_ = shared_.reserve(b_ >= 0 ? s_.n : 0);
  }
  int64_t sharedScratchBytes() const override { return shared_.bytes(); }
  void bindSharedScratch(uint8_t* p) override { shared_.bind(p); }

  absl::Status run(BufferPtrs ptr) override {
    const int64_t n = s_.n;
    const float nf = static_cast<float>(n);
    const float* w = w_ >= 0 ? widenRun(s_.dtype, ptr[w_], 0, n, shared_.at(wbuf_)) : nullptr;
    const float* b = b_ >= 0 ? widenRun(s_.dtype, ptr[b_], 0, n, shared_.at(bbuf_)) : nullptr;
    const uint8_t* x = ptr[x_];
    uint8_t* y = ptr[y_];
    const bool f32 = s_.dtype == DType::F32;
    parallelChunks(s_.groups, std::max<int64_t>(rowsPerBlock_, kWork / std::max<int64_t>(n, 1)), slots_,
                   [&](int slot, int64_t g0, int64_t g1) {
                     float* xs = shared_.at(scratch_) + slot * per_;
                     float* ys = xs + rowsPerBlock_ * n;
                     float* lanes = ys + rowsPerBlock_ * n;
                     for (int64_t g = g0; g < g1;) {
                       const int64_t rows = std::min<int64_t>(rowsPerBlock_, g1 - g);
                       const float* xg = widenRun(s_.dtype, x, g * n, rows * n, xs);
                       float* yg = f32 ? reinterpret_cast<float*>(y) + g * n : ys;
                       float mean[kLanes], rstd[kLanes];
                       normStatsLanes(rms_, xg, rows, n, nf, s_.eps, lanes, mean, rstd);
                       for (int64_t r = 0; r < rows; ++r)
                         normalizeRow(xg + r * n, n, rms_ ? 0.0f : mean[r], rstd[r], w, b, yg + r * n);
                       if (!f32) narrowRun(yg, s_.dtype, y, g * n, rows * n);
                       g += rows;
                     }
                   });
    return absl::OkStatus();
  }

 private:
  bool rms_;
  NormShape s_;
  int32_t x_, w_, b_, y_;
  int slots_ = 1;
  SharedFloats shared_;
  int64_t rowsPerBlock_ = 1, per_ = 0;
  int64_t scratch_ = 0, wbuf_ = 0, bbuf_ = 0;  // per slot: rows in, out and as lanes; the widened weight and bias
};

// ---------------------------------------------------------------------------------------------
// layer_norm_grad / rms_norm_grad

class NormGradStep final : public CpuStep {
 public:
  // Per slot, rowsPerBlock_ rows each of: x, dy, xhat, g = dy·w, dx, g·xhat; then the lanes.
  static constexpr int64_t kGradRowBuffers = 6;

  // db_ < 0 for rms_norm_grad (no bias gradient).
  NormGradStep(bool rms, NormShape s, int32_t x, int32_t w, int32_t dy, int32_t dx, int32_t dw, int32_t db)
      : rms_(rms), s_(s), x_(x), w_(w), dy_(dy), dx_(dx), dw_(dw), db_(db) {
    slots_ = scratchSlots();
    rowsPerBlock_ = rowsPerLaneBlock(s_.n);
    per_ = kGradRowBuffers * rowsPerBlock_ * s_.n + laneScratchFloats(s_.n);
    scratch_ = shared_.reserve(slots_ * per_);
    wbuf_ = shared_.reserve(w_ >= 0 ? s_.n : 0);
    mean_ = shared_.reserve(s_.groups);
    rstd_ = shared_.reserve(s_.groups);
    dwAcc_ = shared_.reserve(s_.n);
    dbAcc_ = shared_.reserve(s_.n);
    const int64_t levels = ColumnSums::levelsFor(s_.groups);  // the column sums run over the groups
    dwLevels_ = shared_.reserve(levels * s_.n);
    dbLevels_ = shared_.reserve(levels * s_.n);
    // Fused when every thread gets at least one block of groups and the block sums stay small.
    fusedColumnSums_ = blockCount() >= slots_ && blockCount() * s_.n <= kFusedBlockFloats;
    blockDw_ = shared_.reserve(fusedColumnSums_ ? blockCount() * s_.n : 0);
    blockDb_ = shared_.reserve(fusedColumnSums_ && !rms_ ? blockCount() * s_.n : 0);
  }
  int64_t sharedScratchBytes() const override { return shared_.bytes(); }
  void bindSharedScratch(uint8_t* p) override { shared_.bind(p); }

  absl::Status run(BufferPtrs ptr) override {
    const int64_t n = s_.n;
    const float nf = static_cast<float>(n);
    const DType t = s_.dtype;
    const bool f32 = t == DType::F32;
    const float* w = w_ >= 0 ? widenRun(t, ptr[w_], 0, n, shared_.at(wbuf_)) : nullptr;
    const uint8_t* x = ptr[x_];
    const uint8_t* dy = ptr[dy_];
    uint8_t* dx = ptr[dx_];
    float* meanBuf = shared_.at(mean_);
    float* rstdBuf = shared_.at(rstd_);
    // With column sums fused: each block of AMP_SUM_BLOCK groups' dweight / dbias sums, by block.
    float* blockDw = shared_.at(blockDw_);
    float* blockDb = shared_.at(blockDb_);
    // Pass 1, groups in parallel: statistics and dx (the per-group part of the reference's loop);
    // with fusedColumnSums_, also each block's column sums (the chunks are then whole blocks).
    auto pass1 = [&](int slot, int64_t g0, int64_t g1) {
      const int64_t block = rowsPerBlock_ * n;
      float* xs = shared_.at(scratch_) + slot * per_;
      float* dys = xs + block;
      float* xhat = dys + block;
      float* gs = xhat + block;
      float* dxs = gs + block;
      float* gx = dxs + block;
      float* lanes = gx + block;
      for (int64_t grp = g0; grp < g1;) {
        const int64_t rows = std::min<int64_t>(rowsPerBlock_, g1 - grp);
        const float* xg = widenRun(t, x, grp * n, rows * n, xs);
        const float* dyg = widenRun(t, dy, grp * n, rows * n, dys);
        float* dxg = f32 ? reinterpret_cast<float*>(dx) + grp * n : dxs;
        float* mean = meanBuf + grp;
        float* rstd = rstdBuf + grp;
        normStatsLanes(rms_, xg, rows, n, nf, s_.eps, lanes, mean, rstd);
        for (int64_t r = 0; r < rows; ++r) {
          const float* xr = xg + r * n;
          const float* dyr = dyg + r * n;
          float* xh = xhat + r * n;
          float* gr = gs + r * n;
          if (rms_) {
            for (int64_t j = 0; j < n; ++j) xh[j] = xr[j] * rstd[r];
          } else {
            for (int64_t j = 0; j < n; ++j) xh[j] = (xr[j] - mean[r]) * rstd[r];
          }
          if (w) {
            for (int64_t j = 0; j < n; ++j) gr[j] = dyr[j] * w[j];
          } else {
            for (int64_t j = 0; j < n; ++j) gr[j] = dyr[j];
          }
          if (fusedColumnSums_) {  // this group's terms, in group order within its block
            const int64_t block = (grp + r) / AMP_SUM_BLOCK;
            float* dwb = blockDw + block * n;
            for (int64_t j = 0; j < n; ++j) dwb[j] += dyr[j] * xh[j];
            if (!rms_) {
              float* dbb = blockDb + block * n;
              for (int64_t j = 0; j < n; ++j) dbb[j] += dyr[j];
            }
          }
        }
        for (int64_t k = 0; k < rows * n; ++k) gx[k] = gs[k] * xhat[k];
        float sg[kLanes], sgx[kLanes];
        rowSumsLanes(gs, rows, n, lanes, sg);
        rowSumsLanes(gx, rows, n, lanes, sgx);
        for (int64_t r = 0; r < rows; ++r) {
          const float* gr = gs + r * n;
          const float* xh = xhat + r * n;
          float* dxr = dxg + r * n;
          const float mgx = sgx[r] / nf;
          if (rms_) {
            for (int64_t j = 0; j < n; ++j) dxr[j] = rstd[r] * (gr[j] - xh[j] * mgx);
          } else {
            const float mg = sg[r] / nf;
            for (int64_t j = 0; j < n; ++j) dxr[j] = rstd[r] * ((gr[j] - mg) - xh[j] * mgx);
          }
        }
        if (!f32) narrowRun(dxg, t, dx, grp * n, rows * n);
        grp += rows;
      }
    };
    if (fusedColumnSums_) {
      const int64_t blocks = blockCount();
      parallelChunks(blocks, 1, slots_, [&](int slot, int64_t b0, int64_t b1) {
        std::fill(blockDw + b0 * n, blockDw + b1 * n, 0.0f);
        if (!rms_) std::fill(blockDb + b0 * n, blockDb + b1 * n, 0.0f);
        pass1(slot, b0 * AMP_SUM_BLOCK, std::min(s_.groups, b1 * AMP_SUM_BLOCK));
      });
      // The block sums up the pairwise tree, block by block in order (SumOrder.h), every column at once.
      float* dwa = shared_.at(dwAcc_);
      float* dba = shared_.at(dbAcc_);
      ColumnSums dwSums(shared_.at(dwLevels_), n), dbSums(shared_.at(dbLevels_), n);
      for (int64_t b = 0; b < blocks; ++b) {
        dwSums.closeBlock(blockDw + b * n, n);
        if (!rms_) dbSums.closeBlock(blockDb + b * n, n);
      }
      dwSums.result(dwa, n);
      narrowRun(dwa, t, ptr[dw_], 0, n);
      if (!rms_) {
        dbSums.result(dba, n);
        narrowRun(dba, t, ptr[db_], 0, n);
      }
      return absl::OkStatus();
    }
    parallelChunks(s_.groups, std::max<int64_t>(rowsPerBlock_, kWork / std::max<int64_t>(n, 1)), slots_, pass1);
    // Pass 2, columns in parallel: dweight_j = sum over groups (in the blocked pairwise order) of
    // fl(dy_j * xhat_j), dbias_j = sum over groups of dy_j. xhat is recomputed from the stored mean/rstd with the
    // same operations, so it is the same value pass 1 used.
    const int64_t colGrain = std::max<int64_t>(16, kWork / std::max<int64_t>(s_.groups, 1));
    parallelChunks(n, colGrain, slots_, [&](int slot, int64_t j0, int64_t j1) {
      const int64_t m = j1 - j0;
      float* xs = shared_.at(scratch_) + slot * per_;
      float* dys = xs + m;
      float* dwa = shared_.at(dwAcc_) + j0;
      float* dba = shared_.at(dbAcc_) + j0;
      for (int64_t j = 0; j < m; ++j) dwa[j] = dba[j] = 0.0f;
      // Each column's finished blocks of groups, in rows of n columns (this range at j0).
      ColumnSums dwSums(shared_.at(dwLevels_) + j0, n), dbSums(shared_.at(dbLevels_) + j0, n);
      for (int64_t grp = 0; grp < s_.groups; ++grp) {
        const float* xg = widenRun(t, x, grp * n + j0, m, xs);
        const float* dyg = widenRun(t, dy, grp * n + j0, m, dys);
        const float mean = meanBuf[grp], rstd = rstdBuf[grp];
        if (rms_) {
          for (int64_t j = 0; j < m; ++j) dwa[j] += dyg[j] * (xg[j] * rstd);
        } else {
          for (int64_t j = 0; j < m; ++j) {
            dwa[j] += dyg[j] * ((xg[j] - mean) * rstd);
            dba[j] += dyg[j];
          }
        }
        if ((grp + 1) % AMP_SUM_BLOCK == 0 || grp + 1 == s_.groups) {  // a block of groups is done
          dwSums.closeBlock(dwa, m);
          if (!rms_) dbSums.closeBlock(dba, m);
        }
      }
      dwSums.result(dwa, m);
      if (!rms_) dbSums.result(dba, m);
      narrowRun(dwa, t, ptr[dw_], j0, m);
      if (db_ >= 0) narrowRun(dba, t, ptr[db_], j0, m);
    });
    return absl::OkStatus();
  }

 private:
  bool rms_;
  NormShape s_;
  int32_t x_, w_, dy_, dx_, dw_, db_;
  int slots_ = 1;
  SharedFloats shared_;
  // Per-slot rows, the widened weight, each group's mean and rstd, the dweight/dbias accumulators.
  int64_t rowsPerBlock_ = 1, per_ = 0;
  int64_t scratch_ = 0, wbuf_ = 0, mean_ = 0, rstd_ = 0, dwAcc_ = 0, dbAcc_ = 0;
  int64_t dwLevels_ = 0, dbLevels_ = 0;  // the column sums' pairwise levels (ColumnSums.h)
  // The weight and bias gradients' sums: in pass 1, by blocks of groups (one read of x and dy),
  // or in a pass 2 over columns when there are too few blocks to share among the threads.
  bool fusedColumnSums_ = false;
  int64_t blockDw_ = 0, blockDb_ = 0;  // [blocks][n] block sums when fused
  static constexpr int64_t kFusedBlockFloats = int64_t{1} << 20;
  int64_t blockCount() const { return (s_.groups + AMP_SUM_BLOCK - 1) / AMP_SUM_BLOCK; }
};

// Shared validation: normalized_ndim in [1, rank], eps >= 0, affine operands typed like x with
// its trailing shape.
absl::StatusOr<NormShape> normShape(const StepContext& c, const BufferDesc& x) {
  auto attrs = c.step.withAttrsOf<LayerNormAttrs, RmsNormAttrs, LayerNormGradAttrs, RmsNormGradAttrs>(
      [](const auto& a) { return std::pair<int64_t, double>(a.normalizedNdim, a.eps); });
  if (!attrs.ok()) return attrs.status();
  const auto [ndim, eps] = *attrs;
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  if (!isKernelFloat(x.dtype)) return c.error("operand 0 must have a float element type (f32, f16, bf16 or f8)");
  if (ndim < 1 || ndim > rank)
    return c.error(absl::StrCat("attribute 'normalized_ndim' = ", ndim, " must be in [1, ", rank, "]"));
  if (!(eps >= 0)) return c.error(absl::StrCat("attribute 'eps' must be >= 0, got ", eps));
  NormShape s{x.dtype, 0, 1, eps, ndim};
  for (int64_t d = rank - ndim; d < rank; ++d) s.n *= x.shape[d];
  s.groups = s.n ? x.numel() / s.n : 0;
  return s;
}

absl::StatusOr<std::unique_ptr<CpuStep>> makeNorm(const StepContext& c, bool rms) {
  const std::string& op = c.step.op;
  auto hasWeight = c.step.attrs.getBool(op, "has_weight", false);
  if (!hasWeight.ok()) return hasWeight.status();
  bool hasBias = false;
  if (!rms) {
    auto b = c.step.attrs.getBool(op, "has_bias", false);
    if (!b.ok()) return b.status();
    hasBias = *b;
  }
  const size_t want = 1 + *hasWeight + hasBias;
  if (c.step.operands.size() != want || c.step.results.size() != 1)
    return c.error(absl::StrCat("expected ", want, " operand(s) and 1 result"));
  const BufferDesc& x = c.operand(0);
  auto s = normShape(c, x);
  if (!s.ok()) return s.status();
  const int64_t ndim = s->ndim;
  const Shape trailing(x.shape.end() - ndim, x.shape.end());
  for (size_t i = 1; i < want; ++i)
    if (c.operand(i).dtype != x.dtype || c.operand(i).shape != trailing)
      return c.error(absl::StrCat(i == 1 && *hasWeight ? "weight" : "bias", " must be ", std::string(dtypeName(x.dtype)),
                                  shapeToString(trailing)));
  if (c.result(0).dtype != x.dtype || c.result(0).shape != x.shape) return c.error("the result type must be x's");
  const int32_t w = *hasWeight ? c.step.operands[1] : -1;
  const int32_t b = hasBias ? c.step.operands[*hasWeight ? 2 : 1] : -1;
  return std::unique_ptr<CpuStep>(new NormStep(rms, *s, c.step.operands[0], w, b, c.step.results[0]));
}

absl::StatusOr<std::unique_ptr<CpuStep>> makeNormGrad(const StepContext& c, bool rms) {
  const size_t nOps = c.step.operands.size();
  const size_t nRes = rms ? 2 : 3;
  if (nOps < 2 || nOps > 3 || c.step.results.size() != nRes)
    return c.error(absl::StrCat("expected 2 or 3 operands and ", nRes, " results"));
  const BufferDesc& x = c.operand(0);
  auto s = normShape(c, x);
  if (!s.ok()) return s.status();
  const int64_t ndim = s->ndim;
  const Shape trailing(x.shape.end() - ndim, x.shape.end());
  const bool hasWeight = nOps == 3;
  for (size_t i = 1; i < nOps; ++i)
    if (c.operand(i).dtype != x.dtype) return c.error("operands must have the same element type");
  if (c.operand(nOps - 1).shape != x.shape) return c.error("grad must have x's shape");
  if (hasWeight && c.operand(1).shape != trailing) return c.error(absl::StrCat("weight must have shape ", shapeToString(trailing)));
  if (c.result(0).dtype != x.dtype || c.result(0).shape != x.shape) return c.error("result 0 must have x's type");
  for (size_t r = 1; r < nRes; ++r)
    if (c.result(r).dtype != x.dtype || c.result(r).shape != trailing)
      return c.error(absl::StrCat("result ", r, " must be ", std::string(dtypeName(x.dtype)), shapeToString(trailing)));
  return std::unique_ptr<CpuStep>(new NormGradStep(rms, *s, c.step.operands[0], hasWeight ? c.step.operands[1] : -1,
                                                   c.step.operands[nOps - 1], c.step.results[0], c.step.results[1],
                                                   rms ? -1 : c.step.results[2]));
}

}  // namespace

absl::StatusOr<std::unique_ptr<CpuStep>> makeNormStep(const StepContext& c) {
  if (c.code == OpCode::Softmax) return makeSoftmax(c, false);
  if (c.code == OpCode::LogSoftmax) return makeSoftmax(c, true);
  if (c.code == OpCode::LayerNorm) return makeNorm(c, false);
  if (c.code == OpCode::RmsNorm) return makeNorm(c, true);
  if (c.code == OpCode::LayerNormGrad) return makeNormGrad(c, false);
  if (c.code == OpCode::RmsNormGrad) return makeNormGrad(c, true);
  return nullptr;
}

}  // namespace amp::rt::cpu
