// The scaler and optimizer steps of the cpu device: unscale + inf check, the gradient statistics,
// scale update, counters, LR schedule, global norm, clipping, SGD and Adam(W), the updates also
// in their fused form (amp-fuse-grad-pipeline: unscale, clip and weight copy in the update's pass). Updates of params and moments run in place
// when the executor aliased the results to the persistent buffers; a step with found_inf set
// writes nothing then (and copies its inputs through otherwise). The element formulas are the
// reference executor's, in the same order, so results match it bit for bit (-ffp-contract=off).
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "runtime/devices/cpu/CpuStep.h"
#include "runtime/kernels/math/SumOrder.h"
#include "runtime/devices/cpu/kernels/NonFiniteScan.h"
#include "runtime/devices/cpu/kernels/OptimizerKernels.h"
#include "runtime/numerics/Convert.h"
#include "runtime/devices/cpu/kernels/StochasticRounding.h"
#include "runtime/kernels/math/TrainMath.h"
#include "runtime/plan/UpdateLayout.h"

namespace amp::rt::cpu {
namespace {

constexpr int64_t kGrain = 16384;

inline float f32(double x) { return static_cast<float>(x); }
float scalarF32(BufferPtrs ptr, int32_t id) { return *reinterpret_cast<const float*>(ptr[id]); }
bool isComputeFloat(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

// Copies `bytes` from `from` to `to` unless they are the same storage (an in-place update).
void passThrough(const uint8_t* from, uint8_t* to, size_t bytes) {
  if (from != to) std::memcpy(to, from, bytes);
}

// What a fused update does to its gradient before stepping, and the weight copy it writes after:
// the unscale of amp.unscale_check and the clip of amp.clip_grads (amp-fuse-grad-pipeline), and
// the master rounded to 16 bits, block by block from the masters just updated, while in cache.
class UpdatePrologue {
 public:
  UpdatePrologue(const UpdateLayout& u, const PlanStep& step, const Plan& plan)
      : scale_(u.scale ? step.operands[*u.scale] : -1), norm_(u.norm ? step.operands[*u.norm] : -1),
        maxNorm_(u.maxNorm.value_or(0.0)), copy_(u.weightCopy ? step.results[*u.weightCopy] : -1),
        copyType_(u.weightCopy ? plan.buffers[step.results[*u.weightCopy]].dtype : DType::BF16) {}
  // Reads the call's loss scale and norm.
  void begin(BufferPtrs ptr) {
    invScale_ = scale_ >= 0 ? amp_inv_scale(scalarF32(ptr, scale_)) : 1.0f;
    coef_ = norm_ >= 0 ? amp_clip_coef(scalarF32(ptr, norm_), maxNorm_) : 1.0f;
  }
  // Whether apply() changes a gradient block (after begin()).
  bool changesGradient() const { return (scale_ >= 0 && invScale_ != 1.0f) || norm_ >= 0; }
  // The f32 gradient block `g` (already widened) as the update steps with it.
  void apply(float* g, int64_t n) const {
    if (scale_ >= 0 && invScale_ != 1.0f)
      for (int64_t j = 0; j < n; ++j) g[j] = g[j] * invScale_;
    if (norm_ >= 0)
      for (int64_t j = 0; j < n; ++j) g[j] = g[j] * coef_;
  }
  // Elements [i0, i0 + n) of the stored gradient `g` of type `t` as the update steps with them:
  // widened and apply()'d into `block` (512 floats), or g's own f32 elements when nothing changes
  // them. The update reads element k before writing its outputs, so g may be one of them.
  const float* gradientBlock(DType t, const uint8_t* g, int64_t i0, int64_t n, float* block) const {
    if (t == DType::F32 && !changesGradient()) return reinterpret_cast<const float*>(g) + i0;
    convertBuffer(t, g + i0 * dtypeSize(t), DType::F32, block, n);  // the host's vector loops
    apply(block, n);
    return block;
  }
  uint8_t* copyTarget(BufferPtrs ptr) const { return copy_ >= 0 ? ptr[copy_] : nullptr; }
  // Elements [i0, i0 + n) of the copy from the updated f32 masters `p` (no-op without a copy).
  void writeCopy(const float* p, uint8_t* copy, int64_t i0, int64_t n) const {
    if (copy) convertBuffer(DType::F32, p + i0, copyType_, copy + i0 * dtypeSize(copyType_), n);
  }

 private:
  int32_t scale_, norm_;
  double maxNorm_;
  int32_t copy_;
  DType copyType_;
  float invScale_ = 1.0f, coef_ = 1.0f;
};

class UnscaleCheckStep final : public CpuStep {
 public:
  UnscaleCheckStep(std::vector<int32_t> grads, std::vector<int32_t> outs, std::vector<DType> types,
                   std::vector<int64_t> sizes, int32_t scale, int32_t foundInf)
      : grads_(std::move(grads)), outs_(std::move(outs)), types_(std::move(types)), sizes_(std::move(sizes)),
        scale_(scale), foundInf_(foundInf) {}
  bool elementwiseInPlace() const override { return true; }
  absl::Status run(BufferPtrs ptr) override {
    const float inv = scale_ >= 0 ? amp_inv_scale(scalarF32(ptr, scale_)) : 1.0f;
    bool found = false;
    for (size_t t = 0; t < grads_.size(); ++t) {
      const size_t es = dtypeSize(types_[t]);
      const uint8_t* in = ptr[grads_[t]];
      uint8_t* out = ptr[outs_[t]];
      int nonFinite = 0;
      parallelFor(sizes_[t], kGrain, [&](int64_t begin, int64_t end) {
        alignas(64) float v[512];
        bool local = false;
        for (int64_t i0 = begin; i0 < end; i0 += 512) {
          const int64_t n = std::min<int64_t>(512, end - i0);
          convertBuffer(types_[t], in + i0 * es, DType::F32, v, n);
          // One read of each gradient: the finiteness check and the unscale share the pass.
          for (int64_t k = 0; k < n; ++k) local |= !std::isfinite(v[k]);
          if (inv != 1.0f)
            for (int64_t k = 0; k < n; ++k) v[k] = v[k] * inv;
          // Without a scale (bf16) and in place, the values are already the result: no write.
          if (inv != 1.0f || in != out) convertBuffer(DType::F32, v, types_[t], out + i0 * es, n);
        }
        if (local) {
#pragma omp atomic write
          nonFinite = 1;
        }
      });
      found |= nonFinite != 0;
    }
    *reinterpret_cast<float*>(ptr[foundInf_]) = found ? 1.0f : 0.0f;
    return absl::OkStatus();
  }

 private:
  std::vector<int32_t> grads_, outs_;
  std::vector<DType> types_;
  std::vector<int64_t> sizes_;
  int32_t scale_, foundInf_;
};

// amp.grad_stats: one read of every gradient as stored gives found_inf and, with a norm result,
// the sum of squares of each unscaled value in the contract's blocked pairwise order over element order,
// as global_norm's contract says.
// That order runs each tensor on one thread, so the threads take whole tensors. Without a norm
// the check alone has no order: it scans the stored bits in place (NonFiniteScan.h), the
// gradients cut into equal pieces that the threads share evenly.
class GradStatsStep final : public CpuStep {
 public:
  GradStatsStep(std::vector<int32_t> grads, std::vector<DType> types, std::vector<int64_t> sizes, int32_t scale,
                int32_t foundInf, int32_t norm)
      : grads_(std::move(grads)), types_(std::move(types)), sizes_(std::move(sizes)), scale_(scale),
        foundInf_(foundInf), norm_(norm), sums_(grads_.size(), 0.0f) {
    for (size_t t = 0; t < sizes_.size(); ++t) {
      for (int64_t i0 = 0; i0 < sizes_[t]; i0 += kPiece)
        pieces_.push_back({static_cast<int32_t>(t), i0, std::min(kPiece, sizes_[t] - i0)});
      elements_ += sizes_[t];
    }
  }
  absl::Status run(BufferPtrs ptr) override {
    if (norm_ < 0) return checkOnly(ptr);
    const float inv = scale_ >= 0 ? amp_inv_scale(scalarF32(ptr, scale_)) : 1.0f;
    int found = 0;
    const int64_t count = static_cast<int64_t>(grads_.size());
#pragma omp parallel for schedule(dynamic, 1) reduction(| : found)
    for (int64_t t = 0; t < count; ++t) {
      const uint8_t* in = ptr[grads_[t]];
      const size_t es = dtypeSize(types_[t]);
      alignas(64) float v[512];
      AmpBlockedSum<float> sum;
      sum.reset(0.0f);
      bool local = false;
      for (int64_t i0 = 0; i0 < sizes_[t]; i0 += 512) {
        const int64_t n = std::min<int64_t>(512, sizes_[t] - i0);
        convertBuffer(types_[t], in + i0 * es, DType::F32, v, n);
        for (int64_t k = 0; k < n; ++k) local |= !std::isfinite(v[k]);
        for (int64_t k = 0; k < n; ++k) {
          const float u = amp_unscale(v[k], inv);
          sum.add(u * u);
        }
      }
      sums_[static_cast<size_t>(t)] = sum.result();
      found |= local ? 1 : 0;
    }
    *reinterpret_cast<float*>(ptr[foundInf_]) = found ? 1.0f : 0.0f;
    float total = 0.0f;
    for (float sum : sums_) {
      const float norm = std::sqrt(sum);
      total += norm * norm;
    }
    *reinterpret_cast<float*>(ptr[norm_]) = std::sqrt(total);
    return absl::OkStatus();
  }

 private:
  static constexpr int64_t kPiece = 32768;  // elements of one piece of the order-free check

  // found_inf alone: any non-finite element in any gradient (the scale cannot make one finite).
  absl::Status checkOnly(BufferPtrs ptr) {
    std::atomic<bool> found{false};
    auto scan = [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end && !found.load(std::memory_order_relaxed); ++p) {
        const Piece& piece = pieces_[static_cast<size_t>(p)];
        const DType t = types_[static_cast<size_t>(piece.tensor)];
        const uint8_t* data = ptr[grads_[static_cast<size_t>(piece.tensor)]] + piece.begin * dtypeSize(t);
        if (anyNonFinite(t, data, piece.n)) found.store(true, std::memory_order_relaxed);
      }
    };
    const int64_t count = static_cast<int64_t>(pieces_.size());
    if (elements_ < 2 * kPiece) scan(0, count);
    else parallelFor(count, 1, scan);
    *reinterpret_cast<float*>(ptr[foundInf_]) = found.load() ? 1.0f : 0.0f;
    return absl::OkStatus();
  }

  struct Piece {
    int32_t tensor;
    int64_t begin, n;
  };
  std::vector<int32_t> grads_;
  std::vector<DType> types_;
  std::vector<int64_t> sizes_;
  int32_t scale_, foundInf_, norm_;
  std::vector<float> sums_;  // per tensor, written by the thread that owns it
  std::vector<Piece> pieces_;  // the gradients in kPiece-element pieces, tensor by tensor
  int64_t elements_ = 0;
};

class UpdateScaleStep final : public CpuStep {
 public:
  UpdateScaleStep(std::vector<int32_t> in, std::vector<int32_t> out, double growth, double backoff, int32_t interval)
      : in_(std::move(in)), out_(std::move(out)), growth_(growth), backoff_(backoff), interval_(interval) {}
  absl::Status run(BufferPtrs ptr) override {
    float scale = scalarF32(ptr, in_[0]);
    int tracker = *reinterpret_cast<const int32_t*>(ptr[in_[1]]);
    amp_update_scale(&scale, &tracker, scalarF32(ptr, in_[2]), growth_, backoff_, interval_);
    *reinterpret_cast<float*>(ptr[out_[0]]) = scale;
    *reinterpret_cast<int32_t*>(ptr[out_[1]]) = tracker;
    return absl::OkStatus();
  }

 private:
  std::vector<int32_t> in_, out_;
  double growth_, backoff_;
  int32_t interval_;
};

class StepCountersStep final : public CpuStep {
 public:
  StepCountersStep(std::vector<int32_t> in, std::vector<int32_t> out) : in_(std::move(in)), out_(std::move(out)) {}
  absl::Status run(BufferPtrs ptr) override {
    long long step = *reinterpret_cast<const int64_t*>(ptr[in_[0]]);
    long long skipped = *reinterpret_cast<const int64_t*>(ptr[in_[1]]);
    amp_step_counters(&step, &skipped, scalarF32(ptr, in_[2]));
    *reinterpret_cast<int64_t*>(ptr[out_[0]]) = step;
    *reinterpret_cast<int64_t*>(ptr[out_[1]]) = skipped;
    return absl::OkStatus();
  }

 private:
  std::vector<int32_t> in_, out_;
};

class LrScheduleStep final : public CpuStep {
 public:
  LrScheduleStep(int32_t in, int32_t out, bool cosine, double base, int64_t warmup, int64_t total, double minLr)
      : in_(in), out_(out), cosine_(cosine), base_(base), warmup_(warmup), total_(total), minLr_(minLr) {}
  absl::Status run(BufferPtrs ptr) override {
    *reinterpret_cast<float*>(ptr[out_]) =
        amp_lr_schedule(cosine_, base_, warmup_, total_, minLr_, *reinterpret_cast<const int64_t*>(ptr[in_]));
    return absl::OkStatus();
  }

 private:
  int32_t in_, out_;
  bool cosine_;
  double base_;
  int64_t warmup_, total_;
  double minLr_;
};

class GlobalNormStep final : public CpuStep {
 public:
  GlobalNormStep(std::vector<int32_t> grads, std::vector<int64_t> sizes, int32_t out)
      : grads_(std::move(grads)), sizes_(std::move(sizes)), out_(out) {}
  absl::Status run(BufferPtrs ptr) override {
    float total = 0.0f;
    for (size_t t = 0; t < grads_.size(); ++t) {
      // the reference's order (a bound-free match): the contract's blocked pairwise sum
      const float* x = reinterpret_cast<const float*>(ptr[grads_[t]]);
      const float sum = amp_blocked_sum(sizes_[t], [&](int64_t k) { return x[k] * x[k]; });
      const float norm = std::sqrt(sum);
      total += norm * norm;
    }
    *reinterpret_cast<float*>(ptr[out_]) = std::sqrt(total);
    return absl::OkStatus();
  }

 private:
  std::vector<int32_t> grads_;
  std::vector<int64_t> sizes_;
  int32_t out_;
};

class ClipGradsStep final : public CpuStep {
 public:
  ClipGradsStep(std::vector<int32_t> grads, std::vector<int32_t> outs, std::vector<int64_t> sizes, int32_t norm,
                double maxNorm)
      : grads_(std::move(grads)), outs_(std::move(outs)), sizes_(std::move(sizes)), norm_(norm), maxNorm_(maxNorm) {}
  bool elementwiseInPlace() const override { return true; }
  absl::Status run(BufferPtrs ptr) override {
    const float coef = amp_clip_coef(scalarF32(ptr, norm_), maxNorm_);
    for (size_t t = 0; t < grads_.size(); ++t) {
      const float* x = reinterpret_cast<const float*>(ptr[grads_[t]]);
      float* y = reinterpret_cast<float*>(ptr[outs_[t]]);
      parallelFor(sizes_[t], kGrain, [&](int64_t begin, int64_t end) {
        for (int64_t k = begin; k < end; ++k) y[k] = x[k] * coef;
      });
    }
    return absl::OkStatus();
  }

 private:
  std::vector<int32_t> grads_, outs_;
  std::vector<int64_t> sizes_;
  int32_t norm_;
  double maxNorm_;
};

struct AdamConfig {
  double beta1, beta2, eps, wd;
  bool decoupled;
  DType moments;         // f32, or bf16 (stochastically rounded, amp.adam_update)
  uint64_t roundingSeed;
};

// The bf16 moments of elements [i0, i0 + n) (n <= 512) rounded stochastically from their f32
// values m, v (m[0] is element i0): element i takes word i % 4 of the dropout stream's Philox
// group i / 4 under the update's seed (TrainMath.h), the block's groups computed together.
void roundMomentsToBf16(const float* m, const float* v, uint64_t seed, uint64_t step, int64_t i0, int64_t n,
                        uint16_t* mOut, uint16_t* vOut) {
  alignas(64) uint32_t words[4 * (512 / 4 + 1)];
  const uint64_t first = static_cast<uint64_t>(i0) / 4, last = static_cast<uint64_t>(i0 + n - 1) / 4;
  philoxGroups(seed, step, first, static_cast<int64_t>(last - first + 1), words);
  const uint32_t* blockWords = words + (static_cast<uint64_t>(i0) - 4 * first);  // element i0's word
  roundToBf16Stochastic(m, blockWords, 0, n, mOut);   // low 16 bits: exp_avg
  roundToBf16Stochastic(v, blockWords, 16, n, vOut);  // high 16 bits: exp_avg_sq
}

class AdamStep final : public CpuStep {
 public:
  AdamStep(std::vector<int32_t> in, std::vector<int32_t> out, DType gradType, int64_t n, AdamConfig cfg, std::string op,
           UpdatePrologue prologue)
      : in_(std::move(in)), out_(std::move(out)), gradType_(gradType), n_(n), cfg_(cfg), op_(std::move(op)),
        prologue_(prologue) {}
  bool elementwiseInPlace() const override { return true; }
  absl::Status run(BufferPtrs ptr) override {
    const size_t bytes = static_cast<size_t>(n_) * 4, momentBytes = static_cast<size_t>(n_) * dtypeSize(cfg_.moments);
    if (scalarF32(ptr, in_[6]) != 0.0f) {  // skipped step: every state bit for bit
      passThrough(ptr[in_[0]], ptr[out_[0]], bytes);
      passThrough(ptr[in_[2]], ptr[out_[1]], momentBytes);
      passThrough(ptr[in_[3]], ptr[out_[2]], momentBytes);
      prologue_.writeCopy(reinterpret_cast<const float*>(ptr[out_[0]]), prologue_.copyTarget(ptr), 0, n_);
      return absl::OkStatus();
    }
    prologue_.begin(ptr);
    const int64_t step = *reinterpret_cast<const int64_t*>(ptr[in_[4]]);
    if (step < 1) return absl::InvalidArgumentError(absl::StrCat(op_, ": step (operand 4) must be >= 1 on an applied step, got ", step));
    const double lr = scalarF32(ptr, in_[5]);
    const double stepD = static_cast<double>(step);
    const double bc1 = 1.0 - std::pow(cfg_.beta1, stepD), bc2 = 1.0 - std::pow(cfg_.beta2, stepD);
    const double stepSize = lr / bc1, bc2Sqrt = std::pow(bc2, 0.5);
    AdamCoefficients k;
    k.decay = f32(1.0 - lr * cfg_.wd);
    k.wd = f32(cfg_.wd);
    k.w = f32(1.0 - cfg_.beta1);
    k.smallWeight = std::fabs(k.w) < 0.5f;
    k.oneMinusW = 1.0f - k.w;
    k.b2 = f32(cfg_.beta2);
    k.c2 = f32(1.0 - cfg_.beta2);
    k.bc2Sqrt = f32(bc2Sqrt);
    k.eps = f32(cfg_.eps);
    k.negStepSize = f32(-stepSize);
    k.weightDecay = cfg_.wd != 0.0;
    k.decoupled = cfg_.decoupled;
    const VectorPath path = hostVectorPath(kOptimizerNeeds);
    const float* pin = reinterpret_cast<const float*>(ptr[in_[0]]);
    float* p = reinterpret_cast<float*>(ptr[out_[0]]);
    const uint8_t* g = ptr[in_[1]];
    uint8_t* copy = prologue_.copyTarget(ptr);
    const DType gt = gradType_;
    const bool compact = cfg_.moments == DType::BF16;
    parallelFor(n_, kGrain, [&](int64_t begin, int64_t end) {
      alignas(64) float gb[512], mb[512], vb[512];
      for (int64_t i0 = begin; i0 < end; i0 += 512) {
        const int64_t n = std::min<int64_t>(512, end - i0);
        const float* gk = prologue_.gradientBlock(gt, g, i0, n, gb);
        if (!compact) {
          const float* min = reinterpret_cast<const float*>(ptr[in_[2]]) + i0;
          const float* vin = reinterpret_cast<const float*>(ptr[in_[3]]) + i0;
          float* m = reinterpret_cast<float*>(ptr[out_[1]]) + i0;
          float* v = reinterpret_cast<float*>(ptr[out_[2]]) + i0;
          adamUpdateBlock(path, k, {gk, pin + i0, min, vin, p + i0, m, v}, n);
        } else {  // widen the block's bf16 moments, update in f32, round them back stochastically
          convertBuffer(DType::BF16, ptr[in_[2]] + i0 * 2, DType::F32, mb, n);
          convertBuffer(DType::BF16, ptr[in_[3]] + i0 * 2, DType::F32, vb, n);
          adamUpdateBlock(path, k, {gk, pin + i0, mb, vb, p + i0, mb, vb}, n);
          roundMomentsToBf16(mb, vb, cfg_.roundingSeed, static_cast<uint64_t>(step), i0, n,
                             reinterpret_cast<uint16_t*>(ptr[out_[1]]) + i0, reinterpret_cast<uint16_t*>(ptr[out_[2]]) + i0);
        }
        // The low-precision weight copy, from the block just updated while it is in cache.
        prologue_.writeCopy(p, copy, i0, n);
      }
    });
    return absl::OkStatus();
  }

 private:
  std::vector<int32_t> in_, out_;
  DType gradType_;
  int64_t n_;
  AdamConfig cfg_;
  std::string op_;
  UpdatePrologue prologue_;
};

class SgdStep final : public CpuStep {
 public:
  SgdStep(std::vector<int32_t> in, std::vector<int32_t> out, bool hasBuffer, DType gradType, int64_t n, double momentum,
          bool nesterov, double wd, UpdatePrologue prologue)
      : in_(std::move(in)), out_(std::move(out)), hasBuffer_(hasBuffer), gradType_(gradType), n_(n), momentum_(momentum),
        nesterov_(nesterov), wd_(wd), prologue_(prologue) {}
  bool elementwiseInPlace() const override { return true; }
  absl::Status run(BufferPtrs ptr) override {
    const bool hasBuffer = hasBuffer_;
    const size_t bytes = static_cast<size_t>(n_) * 4;
    if (scalarF32(ptr, in_[3]) != 0.0f) {
      passThrough(ptr[in_[0]], ptr[out_[0]], bytes);
      if (hasBuffer) passThrough(ptr[in_[4]], ptr[out_[1]], bytes);
      prologue_.writeCopy(reinterpret_cast<const float*>(ptr[out_[0]]), prologue_.copyTarget(ptr), 0, n_);
      return absl::OkStatus();
    }
    prologue_.begin(ptr);
    SgdCoefficients k;
    k.lr = scalarF32(ptr, in_[2]);
    k.momentum = f32(momentum_);
    k.wd = f32(wd_);
    k.weightDecay = wd_ != 0.0;
    k.nesterov = nesterov_;
    const VectorPath path = hostVectorPath(kOptimizerNeeds);
    const float* pin = reinterpret_cast<const float*>(ptr[in_[0]]);
    const float* bin = hasBuffer ? reinterpret_cast<const float*>(ptr[in_[4]]) : nullptr;
    float* p = reinterpret_cast<float*>(ptr[out_[0]]);
    float* buf = hasBuffer ? reinterpret_cast<float*>(ptr[out_[1]]) : nullptr;
    const uint8_t* g = ptr[in_[1]];
    uint8_t* copy = prologue_.copyTarget(ptr);
    const DType gt = gradType_;
    parallelFor(n_, kGrain, [&](int64_t begin, int64_t end) {
      alignas(64) float gb[512];
      for (int64_t i0 = begin; i0 < end; i0 += 512) {
        const int64_t n = std::min<int64_t>(512, end - i0);
        const float* gk = prologue_.gradientBlock(gt, g, i0, n, gb);
        sgdUpdateBlock(path, k, {gk, pin + i0, bin ? bin + i0 : nullptr, p + i0, buf ? buf + i0 : nullptr}, n);
        // The low-precision weight copy, from the block just updated while it is in cache.
        prologue_.writeCopy(p, copy, i0, n);
      }
    });
    return absl::OkStatus();
  }

 private:
  std::vector<int32_t> in_, out_;
  bool hasBuffer_;
  DType gradType_;
  int64_t n_;
  double momentum_;
  bool nesterov_;
  double wd_;
  UpdatePrologue prologue_;
};

bool isScalar(const BufferDesc& b, DType t) { return b.dtype == t && b.shape.empty(); }

}  // namespace

absl::StatusOr<std::unique_ptr<CpuStep>> makeTrainStep(const StepContext& c) {
  const std::string& op = c.step.op;
  const std::vector<int32_t>& in = c.step.operands;
  const std::vector<int32_t>& out = c.step.results;
  const AttrMap& attrs = c.step.attrs;
  auto sameAs = [&](size_t operand, const BufferDesc& like, DType dtype) {
    return c.operand(operand).dtype == dtype && c.operand(operand).shape == like.shape;
  };
  if (c.code == OpCode::UnscaleCheck) {
    if (out.size() < 2) return c.error("expected at least 2 results");
    const size_t n = out.size() - 1;
    if (in.size() != n && in.size() != n + 1) return c.error("expected one operand per gradient and an optional scale");
    const bool hasScale = in.size() == n + 1;
    if (hasScale && !isScalar(c.operand(n), DType::F32)) return c.error("scale must be a scalar f32");
    if (!isScalar(c.result(n), DType::F32)) return c.error("found_inf must be a scalar f32");
    std::vector<DType> types;
    std::vector<int64_t> sizes;
    for (size_t i = 0; i < n; ++i) {
      if (!isComputeFloat(c.operand(i).dtype) || c.result(i).dtype != c.operand(i).dtype ||
          c.result(i).shape != c.operand(i).shape)
        return c.error(absl::StrCat("gradient ", i, " and its result must be float tensors of one type"));
      types.push_back(c.operand(i).dtype);
      sizes.push_back(c.operand(i).numel());
    }
    return std::unique_ptr<CpuStep>(new UnscaleCheckStep(std::vector<int32_t>(in.begin(), in.begin() + n),
                                                         std::vector<int32_t>(out.begin(), out.begin() + n), types,
                                                         sizes, hasScale ? in[n] : -1, out[n]));
  }
  if (c.code == OpCode::GradStats) {
    auto unscales = attrs.getBool(op, "unscales", false);
    if (!unscales.ok()) return unscales.status();
    const size_t n = in.size() - (*unscales ? 1 : 0);
    if (in.size() < (*unscales ? 2u : 1u) || out.empty() || out.size() > 2)
      return c.error("expected gradients, an optional scale, found_inf and an optional norm");
    if (*unscales && !isScalar(c.operand(n), DType::F32)) return c.error("scale must be a scalar f32");
    for (size_t r = 0; r < out.size(); ++r)
      if (!isScalar(c.result(r), DType::F32)) return c.error("found_inf and the norm must be scalar f32");
    std::vector<DType> types;
    std::vector<int64_t> sizes;
    for (size_t i = 0; i < n; ++i) {
      if (!isComputeFloat(c.operand(i).dtype)) return c.error(absl::StrCat("gradient ", i, " must be a float tensor"));
      types.push_back(c.operand(i).dtype);
      sizes.push_back(c.operand(i).numel());
    }
    return std::unique_ptr<CpuStep>(new GradStatsStep(std::vector<int32_t>(in.begin(), in.begin() + n), types, sizes,
                                                      *unscales ? in[n] : -1, out[0], out.size() == 2 ? out[1] : -1));
  }
  if (c.code == OpCode::UpdateScale) {
    if (in.size() != 3 || out.size() != 2 || !isScalar(c.operand(0), DType::F32) ||
        !isScalar(c.operand(1), DType::I32) || !isScalar(c.operand(2), DType::F32) ||
        !isScalar(c.result(0), DType::F32) || !isScalar(c.result(1), DType::I32))
      return c.error("expected scale f32, growth_tracker i32, found_inf f32 scalars");
    auto a = c.step.typedAttrs<UpdateScaleAttrs>();
    if (!a.ok()) return a.status();
    return std::unique_ptr<CpuStep>(
        new UpdateScaleStep(in, out, a->growthFactor, a->backoffFactor, static_cast<int32_t>(a->growthInterval)));
  }
  if (c.code == OpCode::StepCounters) {
    if (in.size() != 3 || out.size() != 2 || !isScalar(c.operand(0), DType::I64) ||
        !isScalar(c.operand(1), DType::I64) || !isScalar(c.operand(2), DType::F32) ||
        !isScalar(c.result(0), DType::I64) || !isScalar(c.result(1), DType::I64))
      return c.error("expected step i64, skipped i64, found_inf f32 scalars");
    return std::unique_ptr<CpuStep>(new StepCountersStep(in, out));
  }
  if (c.code == OpCode::LrSchedule) {
    if (in.size() != 1 || out.size() != 1 || !isScalar(c.operand(0), DType::I64) || !isScalar(c.result(0), DType::F32))
      return c.error("expected a scalar i64 step and a scalar f32 result");
    auto a = c.step.typedAttrs<LrScheduleAttrs>();
    if (!a.ok()) return a.status();
    return std::unique_ptr<CpuStep>(new LrScheduleStep(in[0], out[0], a->kind == LrScheduleKind::Cosine, a->baseLr,
                                                       a->warmupSteps, a->totalSteps, a->minLr));
  }
  if (c.code == OpCode::GlobalNorm) {
    if (in.empty() || out.size() != 1 || !isScalar(c.result(0), DType::F32)) return c.error("expected gradients and a scalar f32 result");
    std::vector<int64_t> sizes;
    for (size_t i = 0; i < in.size(); ++i) {
      if (c.operand(i).dtype != DType::F32) return c.error(absl::StrCat("gradient (operand ", i, ") must be f32"));
      sizes.push_back(c.operand(i).numel());
    }
    return std::unique_ptr<CpuStep>(new GlobalNormStep(in, sizes, out[0]));
  }
  if (c.code == OpCode::ClipGrads) {
    if (in.size() < 2 || out.size() != in.size() - 1 || !isScalar(c.operand(in.size() - 1), DType::F32))
      return c.error("expected gradients, the norm, and one result per gradient");
    auto a = c.step.typedAttrs<ClipGradsAttrs>();
    if (!a.ok()) return a.status();
    std::vector<int64_t> sizes;
    for (size_t i = 0; i + 1 < in.size(); ++i) {
      if (c.operand(i).dtype != DType::F32 || c.result(i).dtype != DType::F32 || c.result(i).shape != c.operand(i).shape)
        return c.error(absl::StrCat("gradient (operand ", i, ") and its result must be f32 of one shape"));
      sizes.push_back(c.operand(i).numel());
    }
    return std::unique_ptr<CpuStep>(new ClipGradsStep(std::vector<int32_t>(in.begin(), in.end() - 1), out, sizes,
                                                      in.back(), a->maxNorm));
  }
  // The fused update's extra operands and its weight copy (checked once for both optimizers).
  auto fusedParts = [&](const UpdateLayout& u) -> absl::Status {
    for (std::optional<size_t> scalar : {u.scale, u.norm})
      if (scalar && !isScalar(c.operand(*scalar), DType::F32)) return c.error("the loss scale and the norm must be scalar f32");
    if (u.weightCopy) {
      const BufferDesc& copy = c.result(*u.weightCopy);
      if ((copy.dtype != DType::BF16 && copy.dtype != DType::F16) || copy.shape != c.operand(0).shape)
        return c.error("the weight copy must be bf16 or f16 with the param's shape");
    }
    return absl::OkStatus();
  };
  if (c.code == OpCode::AdamUpdate) {
    auto layout = decodeUpdate(c.step);
    if (!layout.ok()) return layout.status();
    if (auto st = fusedParts(*layout); !st.ok()) return st;
    const BufferDesc& p = c.operand(0);
    if (p.dtype != DType::F32) return c.error("param (operand 0) must be an f32 master weight");
    if (!isComputeFloat(c.operand(1).dtype) || c.operand(1).shape != p.shape)
      return c.error("grad (operand 1) must be a float tensor with the param's shape");
    const DType moments = c.operand(2).dtype;
    if ((moments != DType::F32 && moments != DType::BF16) || !sameAs(2, p, moments) || !sameAs(3, p, moments))
      return c.error("exp_avg and exp_avg_sq must both be f32 or both bf16, with the param's shape");
    if (!isScalar(c.operand(4), DType::I64) || !isScalar(c.operand(5), DType::F32) || !isScalar(c.operand(6), DType::F32))
      return c.error("expected scalar step i64, lr f32 and found_inf f32");
    for (size_t r = 0; r < 3; ++r)
      if (c.result(r).dtype != (r == 0 ? DType::F32 : moments) || c.result(r).shape != p.shape)
        return c.error("results must be typed like the param and its moments");
    auto a = c.step.typedAttrs<AdamUpdateAttrs>();
    if (!a.ok()) return a.status();
    const AdamConfig cfg{a->beta1,     a->beta2, a->eps, a->weightDecay, a->decoupled, moments,
                         static_cast<uint64_t>(a->roundingSeed.value_or(0))};
    return std::unique_ptr<CpuStep>(
        new AdamStep(in, out, c.operand(1).dtype, p.numel(), cfg, op, UpdatePrologue(*layout, c.step, c.plan)));
  }
  if (c.code == OpCode::SgdUpdate) {
    auto layout = decodeUpdate(c.step);
    if (!layout.ok()) return layout.status();
    if (auto st = fusedParts(*layout); !st.ok()) return st;
    const bool hasBuffer = layout->states() == 2;
    const BufferDesc& p = c.operand(0);
    if (p.dtype != DType::F32) return c.error("param (operand 0) must be an f32 master weight");
    if (!isComputeFloat(c.operand(1).dtype) || c.operand(1).shape != p.shape)
      return c.error("grad (operand 1) must be a float tensor with the param's shape");
    if (!isScalar(c.operand(2), DType::F32) || !isScalar(c.operand(3), DType::F32))
      return c.error("expected scalar lr f32 and found_inf f32");
    if (hasBuffer && !sameAs(4, p, DType::F32)) return c.error("momentum_buffer must be f32 like the param");
    for (size_t r = 0; r < layout->states(); ++r)
      if (c.result(r).dtype != DType::F32 || c.result(r).shape != p.shape) return c.error("results must be f32 like the param");
    auto a = c.step.typedAttrs<SgdUpdateAttrs>();
    if (!a.ok()) return a.status();
    if (hasBuffer != (a->momentum != 0.0)) return c.error("a momentum_buffer operand goes with momentum != 0");
    return std::unique_ptr<CpuStep>(new SgdStep(in, out, hasBuffer, c.operand(1).dtype, p.numel(), a->momentum,
                                                a->nesterov, a->weightDecay, UpdatePrologue(*layout, c.step, c.plan)));
  }
  return nullptr;
}

}  // namespace amp::rt::cpu
