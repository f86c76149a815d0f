// amp.batch_norm and amp.batch_norm_grad on the cpu device. Every sum of a channel runs the
// reference's own f32 sequence (ReferenceBatchNorm.cpp, docs/reference-executor.md "batch_norm":
// its M elements n-major, then h, then w, summed in the contract's blocked pairwise order of
// runtime/kernels/math/SumOrder.h; invstd = f32(1/sqrt(f64)); the same expressions in the same
// order), so the results are the reference's bits. Channels are independent: blocks of up to
// kLanes channels are split across threads, and within a block each channel is one vector lane
// (ChannelLanes.h). A block's operands are gathered as f32 lane rows into per-slot scratch sized
// at prepare: all M rows once when they fit kStoredFloats, else one n at a time by every pass
// (large images), so the scratch stays small.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "runtime/devices/cpu/steps/ChannelLanes.h"
#include "runtime/devices/cpu/steps/CpuKernelUtil.h"
#include "runtime/devices/cpu/CpuStep.h"
#include "runtime/kernels/math/SumOrder.h"

namespace amp::rt::cpu {
namespace {

// Lane rows of one operand kept whole up to this many floats (4 MiB), per slot.
constexpr int64_t kStoredFloats = int64_t{1} << 20;

struct BnShape {
  DType dtype;
  int64_t N, C, S;  // batch, channels, spatial elements per (n, c)
  double eps;
  bool training;
  int64_t M() const { return N * S; }
  bool stored() const { return kLanes * M() <= kStoredFloats; }
  int64_t rowFloats() const { return kLanes * (stored() ? M() : S); }  // one operand's lane rows
};

// One [N, C, S] operand of a channel block as lane rows: rows(n) gives the S rows of image n.
class LaneOperand {
 public:
  LaneOperand(const BnShape& s, const uint8_t* base, ChannelBlock blk, float* rows, float* tile)
      : s_(s), base_(base), blk_(blk), rows_(rows), tile_(tile) {
    if (s_.stored()) gatherLanes(s_.dtype, base_, s_.N, s_.C, s_.S, blk_, tile_, rows_);
  }
  const float* rows(int64_t n) const {
    if (s_.stored()) return rows_ + n * s_.S * kLanes;
    gatherLanes(s_.dtype, base_ + n * s_.C * s_.S * static_cast<int64_t>(dtypeSize(s_.dtype)), 1, s_.C, s_.S, blk_,
                tile_, rows_);
    return rows_;
  }

 private:
  const BnShape& s_;
  const uint8_t* base_;
  ChannelBlock blk_;
  float* rows_;
  float* tile_;
};

// Per-channel f32 operands [C] as lanes (+0 past the block).
Lanes laneValues(const float* v, ChannelBlock blk, float pad = 0.0f) {
  alignas(16) float row[kLanes];
  for (int64_t l = 0; l < kLanes; ++l) row[l] = l < blk.width ? v[blk.c0 + l] : pad;
  return laneLoad(row);
}

// Calls f(row) for the block's M lane rows of x in the reference's order (n-major, then s).
template <class F>
void forEachRow(const BnShape& s, const LaneOperand& x, F&& f) {
  for (int64_t n = 0; n < s.N; ++n) {
    const float* r = x.rows(n);
    for (int64_t k = 0; k < s.S; ++k) f(r + k * kLanes);
  }
}

// Per lane: the statistics amp.batch_norm normalises channel c0 + l with, and `sq` the centred
// sum of squares in training mode (else +0). The reference's sequence exactly, one lane per
// channel of the block.
struct LaneStats {
  Lanes mean, invstd, sq;
};

LaneStats laneStats(const BnShape& s, const LaneOperand& x, const float* runningMean, const float* runningVar,
                    ChannelBlock blk) {
  LaneStats st{};
  Lanes var;
  if (s.training) {
    const float mf = static_cast<float>(s.M());
    LaneSum sum, sq;
    forEachRow(s, x, [&](const float* r) { sum.add(laneLoad(r)); });
    const Lanes total = sum.result();
    for (int i = 0; i < kQuads; ++i) st.mean.q[i] = total.q[i] / mf;
    forEachRow(s, x, [&](const float* r) {
      Lanes d2;
      for (int i = 0; i < kQuads; ++i) {
        const Quad d = loadQuad(r + 4 * i) - st.mean.q[i];
        d2.q[i] = d * d;
      }
      sq.add(d2);
    });
    st.sq = sq.result();
    for (int i = 0; i < kQuads; ++i) var.q[i] = st.sq.q[i] / mf;
  } else {
    st.mean = laneValues(runningMean, blk);
    var = laneValues(runningVar, blk, 1.0f);
  }
  alignas(16) float invstd[kLanes];
  for (int64_t l = 0; l < kLanes; ++l) invstd[l] = static_cast<float>(1.0 / std::sqrt(double(var[l]) + s.eps));
  st.invstd = laneLoad(invstd);
  return st;
}

// Writes the block of y (an [N, C, S] buffer of the shape's type) image by image: rowOf(n, k, out)
// fills the lane row of element s = k of image n.
template <class RowFn>
void scatterBlock(const BnShape& s, uint8_t* y, ChannelBlock blk, float* tile, RowFn&& rowOf) {
  const int64_t image = s.C * s.S * static_cast<int64_t>(dtypeSize(s.dtype));
  for (int64_t n = 0; n < s.N; ++n)
    scatterLanes(s.dtype, y + n * image, 1, s.C, s.S, blk, tile, [&](int64_t k, float* out) { rowOf(n, k, out); });
}

class BatchNormStep final : public CpuStep {
 public:
  BatchNormStep(BnShape s, double momentum, const std::vector<int32_t>& in, const std::vector<int32_t>& out)
      : s_(s), in_(in), out_(out), m_(static_cast<float>(momentum)), keep_(static_cast<float>(1.0 - momentum)) {
    slots_ = scratchSlots();
    per_ = s_.rowFloats() + laneTileFloats(s_.S);  // x's lane rows, a transpose tile
    scratch_ = shared_.reserve(slots_ * per_);
  }
  int64_t sharedScratchBytes() const override { return shared_.bytes(); }
  void bindSharedScratch(uint8_t* p) override { shared_.bind(p); }

  absl::Status run(BufferPtrs ptr) override {
    const float* scale = reinterpret_cast<const float*>(ptr[in_[1]]);
    const float* bias = reinterpret_cast<const float*>(ptr[in_[2]]);
    const float* rm = reinterpret_cast<const float*>(ptr[in_[3]]);
    const float* rv = reinterpret_cast<const float*>(ptr[in_[4]]);
    float* newMean = reinterpret_cast<float*>(ptr[out_[1]]);
    float* newVar = reinterpret_cast<float*>(ptr[out_[2]]);
    const int64_t M = s_.M(), blocks = channelBlockCount(s_.C, slots_);
    parallelChunks(blocks, 1, slots_, [&](int slot, int64_t b0, int64_t b1) {
      float* rows = shared_.at(scratch_) + slot * per_;
      float* tile = rows + s_.rowFloats();
      for (int64_t b = b0; b < b1; ++b) {
        const ChannelBlock blk = channelBlock(s_.C, blocks, b);
        const LaneOperand x(s_, ptr[in_[0]], blk, rows, tile);
        const LaneStats st = laneStats(s_, x, rm, rv, blk);
        const Lanes sc = laneValues(scale, blk), bi = laneValues(bias, blk);
        // Streaming, rows(n) re-gathers before the scatter of image n uses the tile.
        const float* xn = nullptr;
        scatterBlock(s_, ptr[out_[0]], blk, tile, [&](int64_t n, int64_t k, float* y) {
          if (k == 0) xn = x.rows(n);
          for (int i = 0; i < kQuads; ++i) {
            const Quad v = loadQuad(xn + k * kLanes + 4 * i);
            storeQuad(y + 4 * i, (v - st.mean.q[i]) * st.invstd.q[i] * sc.q[i] + bi.q[i]);
          }
        });
        for (int64_t l = 0; l < blk.width; ++l) {
          const int64_t c = blk.c0 + l;
          if (s_.training) {
            const float unbiased = st.sq[l] / static_cast<float>(M - 1);
            newMean[c] = keep_ * rm[c] + m_ * st.mean[l];
            newVar[c] = keep_ * rv[c] + m_ * unbiased;
          } else {
            newMean[c] = rm[c];
            newVar[c] = rv[c];
          }
        }
      }
    });
    return absl::OkStatus();
  }

 private:
  BnShape s_;
  std::vector<int32_t> in_, out_;
  float m_, keep_;
  int slots_ = 1;
  int64_t per_ = 0;
  SharedFloats shared_;
  int64_t scratch_ = 0;
};

class BatchNormGradStep final : public CpuStep {
 public:
  BatchNormGradStep(BnShape s, const std::vector<int32_t>& in, const std::vector<int32_t>& out)
      : s_(s), in_(in), out_(out) {
    slots_ = scratchSlots();
    per_ = 2 * s_.rowFloats() + laneTileFloats(s_.S);  // x's and dy's lane rows, a tile
    scratch_ = shared_.reserve(slots_ * per_);
  }
  int64_t sharedScratchBytes() const override { return shared_.bytes(); }
  void bindSharedScratch(uint8_t* p) override { shared_.bind(p); }

  absl::Status run(BufferPtrs ptr) override {
    const float* scale = reinterpret_cast<const float*>(ptr[in_[2]]);
    const float* rm = reinterpret_cast<const float*>(ptr[in_[3]]);
    const float* rv = reinterpret_cast<const float*>(ptr[in_[4]]);
    float* dscale = reinterpret_cast<float*>(ptr[out_[1]]);
    float* dbias = reinterpret_cast<float*>(ptr[out_[2]]);
    const int64_t blocks = channelBlockCount(s_.C, slots_);
    const float mf = static_cast<float>(s_.M());
    parallelChunks(blocks, 1, slots_, [&](int slot, int64_t b0, int64_t b1) {
      float* xRows = shared_.at(scratch_) + slot * per_;
      float* dyRows = xRows + s_.rowFloats();
      float* tile = dyRows + s_.rowFloats();
      for (int64_t b = b0; b < b1; ++b) {
        const ChannelBlock blk = channelBlock(s_.C, blocks, b);
        const LaneOperand x(s_, ptr[in_[0]], blk, xRows, tile), dy(s_, ptr[in_[1]], blk, dyRows, tile);
        const LaneStats st = laneStats(s_, x, rm, rv, blk);
        LaneSum sgSum, sgxSum;
        for (int64_t n = 0; n < s_.N; ++n) {
          const float *xn = x.rows(n), *dyn = dy.rows(n);
          for (int64_t k = 0; k < s_.S; ++k) {
            Lanes g, gx;
            for (int i = 0; i < kQuads; ++i) {
              const Quad v = loadQuad(xn + k * kLanes + 4 * i);
              g.q[i] = loadQuad(dyn + k * kLanes + 4 * i);
              gx.q[i] = g.q[i] * ((v - st.mean.q[i]) * st.invstd.q[i]);
            }
            sgSum.add(g);
            sgxSum.add(gx);
          }
        }
        const Lanes sg = sgSum.result(), sgx = sgxSum.result();
        const Lanes sc = laneValues(scale, blk);
        Lanes a, mg, mgx;
        for (int i = 0; i < kQuads; ++i) {
          a.q[i] = sc.q[i] * st.invstd.q[i];
          mg.q[i] = sg.q[i] / mf;
          mgx.q[i] = sgx.q[i] / mf;
        }
        for (int64_t l = 0; l < blk.width; ++l) {
          dbias[blk.c0 + l] = sg[l];
          dscale[blk.c0 + l] = sgx[l];
        }
        const float *xn = nullptr, *dyn = nullptr;
        scatterBlock(s_, ptr[out_[0]], blk, tile, [&](int64_t n, int64_t k, float* dx) {
          if (k == 0) xn = x.rows(n), dyn = dy.rows(n);
          for (int i = 0; i < kQuads; ++i) {
            const Quad v = loadQuad(xn + k * kLanes + 4 * i), g = loadQuad(dyn + k * kLanes + 4 * i);
            storeQuad(dx + 4 * i, s_.training ? a.q[i] * ((g - mg.q[i]) - ((v - st.mean.q[i]) * st.invstd.q[i]) * mgx.q[i])
                                              : a.q[i] * g);
          }
        });
      }
    });
    return absl::OkStatus();
  }

 private:
  BnShape s_;
  std::vector<int32_t> in_, out_;
  int slots_ = 1;
  int64_t per_ = 0;
  SharedFloats shared_;
  int64_t scratch_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<CpuStep>> makeBatchNormStep(const StepContext& c) {
  const bool grad = c.code == OpCode::BatchNormGrad;
  if (c.step.operands.size() != 5 || c.step.results.size() != 3)
    return c.error("expected 5 operands and 3 results");
  const BufferDesc& x = c.operand(0);
  auto eps = c.step.withAttrsOf<BatchNormAttrs, BatchNormGradAttrs>([](const auto& a) { return a.epsilon; });
  if (!eps.ok()) return eps.status();
  auto training = c.step.withAttrsOf<BatchNormAttrs, BatchNormGradAttrs>([](const auto& a) { return a.training; });
  if (!training.ok()) return training.status();
  if (!isKernelFloat(x.dtype) || x.shape.size() < 2) return c.error("input must be a float [N, C, ...] (rank >= 2)");
  if (!(*eps > 0)) return c.error(absl::StrCat("attribute 'epsilon' must be > 0, got ", *eps));
  BnShape s{x.dtype, x.shape[0], x.shape[1], 1, *eps, *training};
  for (size_t d = 2; d < x.shape.size(); ++d) s.S *= x.shape[d];
  if (s.training && s.M() < 2) return c.error("training needs more than one value per channel");
  const Shape channels{s.C};
  for (size_t i = grad ? 2 : 1; i < 5; ++i)
    if (c.operand(i).dtype != DType::F32 || c.operand(i).shape != channels)
      return c.error(absl::StrCat("operand ", i, " must be f32", shapeToString(channels)));
  if (grad && (c.operand(1).dtype != x.dtype || c.operand(1).shape != x.shape)) return c.error("grad must have x's type");
  if (c.result(0).dtype != x.dtype || c.result(0).shape != x.shape) return c.error("result 0 must have x's type");
  for (size_t r = 1; r < 3; ++r)
    if (c.result(r).dtype != DType::F32 || c.result(r).shape != channels)
      return c.error(absl::StrCat("result ", r, " must be f32", shapeToString(channels)));
  if (grad) return std::unique_ptr<CpuStep>(new BatchNormGradStep(s, c.step.operands, c.step.results));
  auto momentum = c.step.withAttrsOf<BatchNormAttrs>([](const auto& a) { return a.momentum; });
  if (!momentum.ok()) return momentum.status();
  if (!(*momentum >= 0 && *momentum <= 1)) return c.error(absl::StrCat("attribute 'momentum' must be in [0, 1]"));
  return std::unique_ptr<CpuStep>(new BatchNormStep(s, *momentum, c.step.operands, c.step.results));
}

}  // namespace amp::rt::cpu
