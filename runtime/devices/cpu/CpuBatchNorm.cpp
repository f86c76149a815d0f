// amp.batch_norm and amp.batch_norm_grad on the cpu device. Channels are independent, so they are
// split across threads; within a channel every sum runs the reference's own f32 sequence
// (ReferenceBatchNorm.cpp, docs/reference-executor.md "batch_norm": its M elements n-major, then
// h, then w; invstd = f32(1/sqrt(f64)); the same expressions in the same order), so the results
// are the reference's bits. A channel is gathered into per-slot f32 scratch (M floats for x, M
// for dy or y), sized at prepare.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "runtime/devices/cpu/CpuKernelUtil.h"
#include "runtime/devices/cpu/CpuStep.h"

namespace amp::rt::cpu {
namespace {

struct BnShape {
  DType dtype;
  int64_t N, C, S;  // batch, channels, spatial elements per (n, c)
  double eps;
  bool training;
  int64_t M() const { return N * S; }
};

// Channel c of x (or dy) as M contiguous f32 values, n-major.
void gatherChannel(const BnShape& s, const uint8_t* base, int64_t c, float* out) {
  for (int64_t n = 0; n < s.N; ++n)
    convertBuffer(s.dtype, base + (n * s.C + c) * s.S * static_cast<int64_t>(dtypeSize(s.dtype)), DType::F32,
                  out + n * s.S, s.S);
}

void scatterChannel(const BnShape& s, const float* in, int64_t c, uint8_t* base) {
  for (int64_t n = 0; n < s.N; ++n) narrowRun(in + n * s.S, s.dtype, base, (n * s.C + c) * s.S, s.S);
}

// mean and invstd of channel c as amp.batch_norm normalises with them; `sq` the centred sum of
// squares in training mode. The reference's sequence exactly.
void channelStats(const BnShape& s, const float* xc, const float* runningMean, const float* runningVar, int64_t c,
                  float& mean, float& invstd, float& sq) {
  const int64_t M = s.M();
  float var;
  sq = 0.0f;
  if (s.training) {
    const float mf = static_cast<float>(M);
    float sum = 0.0f;
    for (int64_t k = 0; k < M; ++k) sum += xc[k];
    mean = sum / mf;
    for (int64_t k = 0; k < M; ++k) {
      const float d = xc[k] - mean;
      sq += d * d;
    }
    var = sq / mf;
  } else {
    mean = runningMean[c];
    var = runningVar[c];
  }
  invstd = static_cast<float>(1.0 / std::sqrt(double(var) + s.eps));
}

class BatchNormStep final : public CpuStep {
 public:
  BatchNormStep(BnShape s, double momentum, const std::vector<int32_t>& in, const std::vector<int32_t>& out)
      : s_(s), in_(in), out_(out), m_(static_cast<float>(momentum)), keep_(static_cast<float>(1.0 - momentum)) {
    slots_ = scratchSlots();
    scratch_ = shared_.reserve(slots_ * 2 * s_.M());
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
    const int64_t M = s_.M();
    parallelChunks(s_.C, 1, slots_, [&](int slot, int64_t c0, int64_t c1) {
      float* xc = shared_.at(scratch_) + slot * 2 * M;
      float* yc = xc + M;
      for (int64_t c = c0; c < c1; ++c) {
        gatherChannel(s_, ptr[in_[0]], c, xc);
        float mean, invstd, sq;
        channelStats(s_, xc, rm, rv, c, mean, invstd, sq);
        for (int64_t k = 0; k < M; ++k) yc[k] = (xc[k] - mean) * invstd * scale[c] + bias[c];
        scatterChannel(s_, yc, c, ptr[out_[0]]);
        if (s_.training) {
          const float unbiased = sq / static_cast<float>(M - 1);
          newMean[c] = keep_ * rm[c] + m_ * mean;
          newVar[c] = keep_ * rv[c] + m_ * unbiased;
        } else {
          newMean[c] = rm[c];
          newVar[c] = rv[c];
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
  SharedFloats shared_;
  int64_t scratch_ = 0;
};

class BatchNormGradStep final : public CpuStep {
 public:
  BatchNormGradStep(BnShape s, const std::vector<int32_t>& in, const std::vector<int32_t>& out)
      : s_(s), in_(in), out_(out) {
    slots_ = scratchSlots();
    scratch_ = shared_.reserve(slots_ * 3 * s_.M());
  }
  int64_t sharedScratchBytes() const override { return shared_.bytes(); }
  void bindSharedScratch(uint8_t* p) override { shared_.bind(p); }

  absl::Status run(BufferPtrs ptr) override {
    const float* scale = reinterpret_cast<const float*>(ptr[in_[2]]);
    const float* rm = reinterpret_cast<const float*>(ptr[in_[3]]);
    const float* rv = reinterpret_cast<const float*>(ptr[in_[4]]);
    float* dscale = reinterpret_cast<float*>(ptr[out_[1]]);
    float* dbias = reinterpret_cast<float*>(ptr[out_[2]]);
    const int64_t M = s_.M();
    const float mf = static_cast<float>(M);
    parallelChunks(s_.C, 1, slots_, [&](int slot, int64_t c0, int64_t c1) {
      float* xc = shared_.at(scratch_) + slot * 3 * M;
      float* dyc = xc + M;
      float* dxc = dyc + M;
      for (int64_t c = c0; c < c1; ++c) {
        gatherChannel(s_, ptr[in_[0]], c, xc);
        gatherChannel(s_, ptr[in_[1]], c, dyc);
        float mean, invstd, sq;
        channelStats(s_, xc, rm, rv, c, mean, invstd, sq);
        float sg = 0.0f, sgx = 0.0f;
        for (int64_t k = 0; k < M; ++k) {
          sg += dyc[k];
          sgx += dyc[k] * ((xc[k] - mean) * invstd);
        }
        dbias[c] = sg;
        dscale[c] = sgx;
        const float a = scale[c] * invstd;
        const float mg = sg / mf, mgx = sgx / mf;
        if (s_.training) {
          for (int64_t k = 0; k < M; ++k) dxc[k] = a * ((dyc[k] - mg) - ((xc[k] - mean) * invstd) * mgx);
        } else {
          for (int64_t k = 0; k < M; ++k) dxc[k] = a * dyc[k];
        }
        scatterChannel(s_, dxc, c, ptr[out_[0]]);
      }
    });
    return absl::OkStatus();
  }

 private:
  BnShape s_;
  std::vector<int32_t> in_, out_;
  int slots_ = 1;
  SharedFloats shared_;
  int64_t scratch_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<CpuStep>> makeBatchNormStep(const StepContext& c) {
  const bool grad = c.code == OpCode::BatchNormGrad;
  if (c.step.operands.size() != 5 || c.step.results.size() != 3)
    return c.error("expected 5 operands and 3 results");
  const BufferDesc& x = c.operand(0);
  const std::string& op = c.step.op;
  auto eps = c.step.attrs.getDouble(op, "epsilon");
  if (!eps.ok()) return eps.status();
  auto training = c.step.attrs.getBool(op, "training", false);
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
  auto momentum = c.step.attrs.getDouble(op, "momentum");
  if (!momentum.ok()) return momentum.status();
  if (!(*momentum >= 0 && *momentum <= 1)) return c.error(absl::StrCat("attribute 'momentum' must be in [0, 1]"));
  return std::unique_ptr<CpuStep>(new BatchNormStep(s, *momentum, c.step.operands, c.step.results));
}

}  // namespace amp::rt::cpu
