// Loss scaling, clipping, counters, LR schedule and optimizer updates: the reference for the fused
// scaler/optimizer kernels of every backend. Compute is f32 with one rounding per operation
// (-ffp-contract=off); scalar hyper-parameters follow PyTorch: Python floats (f64) that are
// rounded to f32 where they meet a tensor. The order of each formula is PyTorch's f32 CPU
// single-tensor code order (torch/optim/sgd.py, adam.py, nn/utils/clip_grad.py, ATen's scalar
// lambdas for add/lerp/addcmul/addcdiv); PyTorch's vectorised CPU paths fuse some of these into
// FMAs, which we do not (docs/reference-executor.md, "Training ops").
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "runtime/reference/ReferenceTrain.h"
#include "runtime/numerics/Convert.h"
#include "runtime/numerics/Philox.h"
#include "runtime/kernels/math/SumOrder.h"
#include "runtime/kernels/math/TrainMath.h"
#include "runtime/plan/UpdateLayout.h"

namespace amp::rt::ref {
namespace {

Tensor scalarF32(float v) {
  Tensor t(DType::F32, {});
  t.as<float>()[0] = v;
  return t;
}
Tensor scalarI32(int32_t v) {
  Tensor t(DType::I32, {});
  t.as<int32_t>()[0] = v;
  return t;
}
Tensor scalarI64(int64_t v) {
  Tensor t(DType::I64, {});
  t.as<int64_t>()[0] = v;
  return t;
}

absl::Status expectScalar(const OpCall& c, size_t i, DType dtype, std::string_view what) {
  const Tensor& t = c.in(i);
  if (t.dtype() == dtype && t.rank() == 0) return absl::OkStatus();
  return c.error(what, " (operand ", i, ") must be a scalar ", typeString(dtype, {}), ", got ",
                 typeString(t));
}

absl::Status expectResults(const OpCall& c, size_t n) {
  if (c.results.size() == n) return absl::OkStatus();
  return c.error("expected ", n, " result type(s), got ", c.results.size());
}

absl::Status expectF32LikeParam(const OpCall& c, size_t i, size_t param, std::string_view what) {
  const Tensor& t = c.in(i);
  if (t.dtype() != DType::F32 || t.shape() != c.in(param).shape())
    return c.error(what, " (operand ", i, ") must be f32 with the param's shape ",
                   typeString(DType::F32, c.in(param).shape()), ", got ", typeString(t));
  return absl::OkStatus();
}

absl::Status expectGradLikeParam(const OpCall& c, size_t i, size_t param) {
  const Tensor& t = c.in(i);
  if (!isComputeFloat(t.dtype()) || t.shape() != c.in(param).shape())
    return c.error("grad (operand ", i, ") must be a float tensor with the param's shape ",
                   shapeToString(c.in(param).shape()), ", got ", typeString(t));
  return absl::OkStatus();
}

// found_inf as GradScaler and the fused optimizers read it: any non-zero value (NaN included).
bool foundInf(const Tensor& t) { return t.as<float>()[0] != 0.0f; }

// The gradient an update steps with, in f32: as stored, or for a fused update (amp-fuse-grad-
// pipeline) unscaled and clipped as amp.unscale_check and amp.clip_grads would have done.
absl::StatusOr<std::vector<float>> updateGradient(const OpCall& c, const UpdateLayout& u) {
  const Tensor& g = c.in(UpdateLayout::kGrad);
  float invScale = 1.0f, coef = 1.0f;
  if (u.scale) {
    REF_RETURN_IF_ERROR(expectScalar(c, *u.scale, DType::F32, "scale"));
    invScale = amp_inv_scale(c.in(*u.scale).as<float>()[0]);
  }
  if (u.norm) {
    REF_RETURN_IF_ERROR(expectScalar(c, *u.norm, DType::F32, "norm"));
    if (!(*u.maxNorm > 0.0) || !std::isfinite(*u.maxNorm))
      return c.error("attribute 'max_norm' must be finite and > 0, got ", *u.maxNorm);
    coef = amp_clip_coef(c.in(*u.norm).as<float>()[0], *u.maxNorm);
  }
  std::vector<float> out(static_cast<size_t>(g.numel()));
  for (int64_t k = 0; k < g.numel(); ++k) {
    float v = loadAsF32(g.dtype(), g.data(), k);
    if (u.scale) v = amp_unscale(v, invScale);
    if (u.norm) v = v * coef;
    out[static_cast<size_t>(k)] = v;
  }
  return out;
}

// A fused update's last result: amp.cast of the new master to its 16-bit copy.
absl::Status appendWeightCopy(const OpCall& c, const UpdateLayout& u, std::vector<Tensor>& out) {
  if (!u.weightCopy) return absl::OkStatus();
  const TensorType& type = c.results[*u.weightCopy];
  if ((type.dtype != DType::BF16 && type.dtype != DType::F16) || type.shape != out[0].shape())
    return c.error("the weight copy (result ", *u.weightCopy, ") must be bf16 or f16 with the param's shape, got ",
                   typeString(type.dtype, type.shape));
  Tensor copy(type.dtype, type.shape);
  convertBuffer(DType::F32, out[0].data(), type.dtype, copy.data(), copy.numel());
  out.push_back(std::move(copy));
  return absl::OkStatus();
}

}  // namespace

//===----------------------------------------------------------------------===//
// unscale_check: _amp_foreach_non_finite_check_and_unscale_
//===----------------------------------------------------------------------===//

absl::StatusOr<std::vector<Tensor>> evalUnscaleCheck(const OpCall& c) {
  // Operands: grads... [scale]. Results: grads'... found_inf, so the scale is present exactly
  // when there are as many operands as results.
  const size_t nres = c.results.size();
  if (nres < 2) return c.error("expected at least 2 results (one gradient and found_inf), got ", nres);
  const size_t n = nres - 1;
  if (c.numOperands() != n && c.numOperands() != n + 1)
    return c.error("expected ", n, " gradient(s) and an optional scale for ", nres,
                   " results, got ", c.numOperands(), " operand(s)");
  const bool hasScale = c.numOperands() == n + 1;
  for (size_t i = 0; i < n; ++i) REF_RETURN_IF_ERROR(expectFloatOperand(c, i));
  float invScale = 1.0f;
  if (hasScale) {
    REF_RETURN_IF_ERROR(expectScalar(c, n, DType::F32, "scale"));
    invScale = amp_inv_scale(c.in(n).as<float>()[0]);
  }
  bool found = false;
  std::vector<Tensor> out;
  out.reserve(nres);
  for (size_t i = 0; i < n; ++i) {
    const Tensor& g = c.in(i);
    Tensor r(g.dtype(), g.shape());
    for (int64_t k = 0; k < g.numel(); ++k) {
      const float v = loadAsF32(g.dtype(), g.data(), k);
      if (!std::isfinite(v)) found = true;
      storeFromF32(g.dtype(), r.data(), k, amp_unscale(v, invScale));
    }
    out.push_back(std::move(r));
  }
  out.push_back(scalarF32(found ? 1.0f : 0.0f));
  return out;
}

//===----------------------------------------------------------------------===//
// update_scale: _amp_update_scale_
//===----------------------------------------------------------------------===//

absl::StatusOr<std::vector<Tensor>> evalUpdateScale(const OpCall& c) {
  REF_RETURN_IF_ERROR(expectOperands(c, 3, 3));
  REF_RETURN_IF_ERROR(expectResults(c, 2));
  REF_RETURN_IF_ERROR(expectScalar(c, 0, DType::F32, "scale"));
  REF_RETURN_IF_ERROR(expectScalar(c, 1, DType::I32, "growth_tracker"));
  REF_RETURN_IF_ERROR(expectScalar(c, 2, DType::F32, "found_inf"));
  const UpdateScaleAttrs& a = c.attrsOf<UpdateScaleAttrs>();
  const double growth = a.growthFactor, backoff = a.backoffFactor;
  const int64_t interval = a.growthInterval;

  float scale = c.in(0).as<float>()[0];
  int tracker = c.in(1).as<int32_t>()[0];
  amp_update_scale(&scale, &tracker, c.in(2).as<float>()[0], growth, backoff, interval);
  std::vector<Tensor> out;
  out.push_back(scalarF32(scale));
  out.push_back(scalarI32(tracker));
  return out;
}

//===----------------------------------------------------------------------===//
// global_norm, clip_grads: torch.nn.utils.clip_grad_norm_ (norm_type 2)
//===----------------------------------------------------------------------===//

absl::StatusOr<Tensor> evalGlobalNorm(const OpCall& c) {
  if (c.numOperands() < 1) return c.error("expected at least one gradient");
  float total = 0.0f;
  for (size_t i = 0; i < c.numOperands(); ++i) {
    const Tensor& g = c.in(i);
    if (g.dtype() != DType::F32)
      return c.error("gradient (operand ", i, ") must be f32, got ", typeString(g));
    const float* x = g.as<float>();
    const float sum = amp_blocked_sum(g.numel(), [&](int64_t k) { return x[k] * x[k]; });
    const float norm = std::sqrt(sum);  // vector_norm(g, 2)
    total += norm * norm;               // vector_norm(stack(norms), 2)
  }
  return scalarF32(std::sqrt(total));
}

absl::StatusOr<std::vector<Tensor>> evalClipGrads(const OpCall& c) {
  if (c.numOperands() < 2) return c.error("expected at least one gradient and the norm");
  const size_t n = c.numOperands() - 1;
  REF_RETURN_IF_ERROR(expectResults(c, n));
  REF_RETURN_IF_ERROR(expectScalar(c, n, DType::F32, "norm"));
  const double maxNorm = c.attrsOf<ClipGradsAttrs>().maxNorm;
  const float coef = amp_clip_coef(c.in(n).as<float>()[0], maxNorm);
  std::vector<Tensor> out;
  for (size_t i = 0; i < n; ++i) {
    const Tensor& g = c.in(i);
    if (g.dtype() != DType::F32)
      return c.error("gradient (operand ", i, ") must be f32, got ", typeString(g));
    Tensor r(DType::F32, g.shape());
    const float* x = g.as<float>();
    float* y = r.as<float>();
    for (int64_t k = 0; k < g.numel(); ++k) y[k] = x[k] * coef;
    out.push_back(std::move(r));
  }
  return out;
}

//===----------------------------------------------------------------------===//
// grad_stats: unscale_check's found_inf and global_norm's norm, without the unscaled gradients
//===----------------------------------------------------------------------===//

absl::StatusOr<std::vector<Tensor>> evalGradStats(const OpCall& c) {
  REF_ASSIGN_OR_RETURN(bool hasScale, c.attrs.getBool(c.name, "unscales", false));
  const size_t n = c.numOperands() - (hasScale ? 1 : 0);
  if (c.numOperands() < (hasScale ? 2u : 1u)) return c.error("expected at least one gradient");
  if (c.results.empty() || c.results.size() > 2) return c.error("expected found_inf and an optional norm, got ", c.results.size(), " results");
  float invScale = 1.0f;
  if (hasScale) {
    REF_RETURN_IF_ERROR(expectScalar(c, n, DType::F32, "scale"));
    invScale = amp_inv_scale(c.in(n).as<float>()[0]);
  }
  bool found = false;
  float total = 0.0f;
  for (size_t i = 0; i < n; ++i) {
    REF_RETURN_IF_ERROR(expectFloatOperand(c, i));
    const Tensor& g = c.in(i);
    // global_norm's order over the f32 unscaled values
    const float sum = amp_blocked_sum(g.numel(), [&](int64_t k) {
      const float v = loadAsF32(g.dtype(), g.data(), k);
      if (!std::isfinite(v)) found = true;
      const float u = amp_unscale(v, invScale);
      return u * u;
    });
    const float norm = std::sqrt(sum);
    total += norm * norm;
  }
  std::vector<Tensor> out;
  out.push_back(scalarF32(found ? 1.0f : 0.0f));
  if (c.results.size() == 2) out.push_back(scalarF32(std::sqrt(total)));
  return out;
}

//===----------------------------------------------------------------------===//
// step_counters, lr_schedule
//===----------------------------------------------------------------------===//

absl::StatusOr<std::vector<Tensor>> evalStepCounters(const OpCall& c) {
  REF_RETURN_IF_ERROR(expectOperands(c, 3, 3));
  REF_RETURN_IF_ERROR(expectResults(c, 2));
  REF_RETURN_IF_ERROR(expectScalar(c, 0, DType::I64, "step"));
  REF_RETURN_IF_ERROR(expectScalar(c, 1, DType::I64, "skipped"));
  REF_RETURN_IF_ERROR(expectScalar(c, 2, DType::F32, "found_inf"));
  long long step = c.in(0).as<int64_t>()[0], skipped = c.in(1).as<int64_t>()[0];
  amp_step_counters(&step, &skipped, c.in(2).as<float>()[0]);
  std::vector<Tensor> out;
  out.push_back(scalarI64(step));
  out.push_back(scalarI64(skipped));
  return out;
}

absl::StatusOr<Tensor> evalLrSchedule(const OpCall& c) {
  REF_RETURN_IF_ERROR(expectOperands(c, 1, 1));
  REF_RETURN_IF_ERROR(expectScalar(c, 0, DType::I64, "step"));
  const LrScheduleAttrs& a = c.attrsOf<LrScheduleAttrs>();
  const float lr = amp_lr_schedule(a.kind == LrScheduleKind::Cosine, a.baseLr, a.warmupSteps, a.totalSteps, a.minLr,
                                   c.in(0).as<int64_t>()[0]);
  return scalarF32(lr);
}

//===----------------------------------------------------------------------===//
// sgd_update, adam_update
//===----------------------------------------------------------------------===//

absl::StatusOr<std::vector<Tensor>> evalSgdUpdate(const OpCall& c) {
  // Operands: param, grad, lr, found_inf [, momentum_buffer] [, scale] [, norm].
  auto layout = decodeUpdate(c.name, c.attrs, c.numOperands(), c.results.size());
  if (!layout.ok()) return layout.status();
  const UpdateLayout& u = *layout;
  const bool hasBuffer = u.states() == 2;
  if (c.in(0).dtype() != DType::F32)
    return c.error("param (operand 0) must be an f32 master weight, got ", typeString(c.in(0)));
  REF_RETURN_IF_ERROR(expectGradLikeParam(c, 1, 0));
  REF_RETURN_IF_ERROR(expectScalar(c, 2, DType::F32, "lr"));
  REF_RETURN_IF_ERROR(expectScalar(c, 3, DType::F32, "found_inf"));
  if (hasBuffer) REF_RETURN_IF_ERROR(expectF32LikeParam(c, 4, 0, "momentum_buffer"));
  const SgdUpdateAttrs& a = c.attrsOf<SgdUpdateAttrs>();
  const double momentum = a.momentum, wd = a.weightDecay;
  const bool nesterov = a.nesterov;
  if (hasBuffer != (momentum != 0.0))
    return c.error(hasBuffer ? "has a momentum_buffer but momentum = 0"
                             : "needs a momentum_buffer operand when momentum != 0");

  std::vector<Tensor> out;
  out.push_back(c.in(0));
  if (hasBuffer) out.push_back(c.in(4));
  if (foundInf(c.in(3))) {  // skipped step: every state bit for bit
    REF_RETURN_IF_ERROR(appendWeightCopy(c, u, out));
    return out;
  }
  REF_ASSIGN_OR_RETURN(std::vector<float> g, updateGradient(c, u));
  const float lr = c.in(2).as<float>()[0];
  const float m = f32(momentum), wdf = f32(wd);
  float* p = out[0].as<float>();
  float* buf = hasBuffer ? out[1].as<float>() : nullptr;
  for (size_t k = 0; k < g.size(); ++k) {
    float d = g[k];
    if (wd != 0.0) d = d + wdf * p[k];          // grad.add(param, alpha=wd)
    if (buf) {
      buf[k] = buf[k] * m + d;                  // buf.mul_(m).add_(d)  (dampening 0)
      d = nesterov ? d + m * buf[k] : buf[k];   // grad.add(buf, alpha=m) | buf
    }
    p[k] = p[k] - lr * d;                       // param.add_(d, alpha=-lr)
  }
  REF_RETURN_IF_ERROR(appendWeightCopy(c, u, out));
  return out;
}

absl::StatusOr<std::vector<Tensor>> evalAdamUpdate(const OpCall& c) {
  // Operands: param, grad, exp_avg, exp_avg_sq, step, lr, found_inf [, scale] [, norm].
  auto layout = decodeUpdate(c.name, c.attrs, c.numOperands(), c.results.size());
  if (!layout.ok()) return layout.status();
  const UpdateLayout& u = *layout;
  if (c.in(0).dtype() != DType::F32)
    return c.error("param (operand 0) must be an f32 master weight, got ", typeString(c.in(0)));
  REF_RETURN_IF_ERROR(expectGradLikeParam(c, 1, 0));
  // The moments: both f32, or both bf16 (compact state, stochastically rounded).
  const DType momentType = c.in(2).dtype();
  for (size_t i : {2, 3})
    if ((momentType != DType::F32 && momentType != DType::BF16) || c.in(i).dtype() != momentType ||
        c.in(i).shape() != c.in(0).shape())
      return c.error(i == 2 ? "exp_avg" : "exp_avg_sq", " (operand ", i,
                     ") must be f32 or bf16 like the other moment, with the param's shape ",
                     shapeToString(c.in(0).shape()), ", got ", typeString(c.in(i)));
  REF_RETURN_IF_ERROR(expectScalar(c, 4, DType::I64, "step"));
  REF_RETURN_IF_ERROR(expectScalar(c, 5, DType::F32, "lr"));
  REF_RETURN_IF_ERROR(expectScalar(c, 6, DType::F32, "found_inf"));
  const AdamUpdateAttrs& a = c.attrsOf<AdamUpdateAttrs>();
  const double beta1 = a.beta1, beta2 = a.beta2, eps = a.eps, wd = a.weightDecay;
  const bool decoupled = a.decoupled;

  std::vector<Tensor> out;
  out.push_back(c.in(0));
  out.push_back(c.in(2));
  out.push_back(c.in(3));
  if (foundInf(c.in(6))) {  // skipped step: every state bit for bit
    REF_RETURN_IF_ERROR(appendWeightCopy(c, u, out));
    return out;
  }

  const int64_t step = c.in(4).as<int64_t>()[0];
  if (step < 1) return c.error("step (operand 4) must be >= 1 on an applied step, got ", step);
  REF_ASSIGN_OR_RETURN(std::vector<float> g, updateGradient(c, u));
  const double lr = c.in(5).as<float>()[0];
  // Python-float scalars, as torch.optim.adam._single_tensor_adam computes them.
  const double stepD = static_cast<double>(step);
  const double bc1 = 1.0 - std::pow(beta1, stepD);
  const double bc2 = 1.0 - std::pow(beta2, stepD);
  const double stepSize = lr / bc1;
  const double bc2Sqrt = std::pow(bc2, 0.5);
  const float decay = f32(1.0 - lr * wd);         // param.mul_(1 - lr * wd)
  const float wdf = f32(wd);
  const float w = f32(1.0 - beta1);               // exp_avg.lerp_(grad, 1 - beta1)
  const bool smallWeight = std::fabs(w) < 0.5f;
  const float oneMinusW = 1.0f - w;
  const float b2 = f32(beta2), c2 = f32(1.0 - beta2);
  const float bc2SqrtF = f32(bc2Sqrt), epsF = f32(eps), negStepSize = f32(-stepSize);

  float* p = out[0].as<float>();
  // bf16 moments are widened exactly, updated in f32 and stored rounded stochastically below.
  std::vector<float> wideM, wideV;
  const bool compact = momentType == DType::BF16;
  if (compact) {
    wideM.resize(g.size());
    wideV.resize(g.size());
    convertBuffer(DType::BF16, c.in(2).data(), DType::F32, wideM.data(), static_cast<int64_t>(g.size()));
    convertBuffer(DType::BF16, c.in(3).data(), DType::F32, wideV.data(), static_cast<int64_t>(g.size()));
  }
  float* m = compact ? wideM.data() : out[1].as<float>();
  float* v = compact ? wideV.data() : out[2].as<float>();
  for (size_t k = 0; k < g.size(); ++k) {
    float gk = g[k];
    if (wd != 0.0) {
      if (decoupled)
        p[k] = p[k] * decay;
      else
        gk = gk + wdf * p[k];                    // grad.add(param, alpha=wd)
    }
    const float diff = gk - m[k];
    m[k] = smallWeight ? m[k] + w * diff : gk - diff * oneMinusW;  // ATen lerp
    v[k] = v[k] * b2 + c2 * gk * gk;             // mul_(b2).addcmul_(g, g, value=1-b2)
    const float denom = std::sqrt(v[k]) / bc2SqrtF + epsF;
    p[k] = p[k] + negStepSize * m[k] / denom;    // addcdiv_(m, denom, value=-step_size)
  }
  if (compact) {
    uint16_t* mb = out[1].as<uint16_t>();
    uint16_t* vb = out[2].as<uint16_t>();
    for (size_t k = 0; k < g.size(); ++k) {
      const uint32_t word = dropoutBits(static_cast<uint64_t>(a.roundingSeed.value_or(0)),
                                         static_cast<uint64_t>(step), k);
      uint32_t mf, vf;
      std::memcpy(&mf, &m[k], 4);
      std::memcpy(&vf, &v[k], 4);
      mb[k] = amp_sr_bf16(mf, amp_sr_m_bits(word));
      vb[k] = amp_sr_bf16(vf, amp_sr_v_bits(word));
    }
  }
  REF_RETURN_IF_ERROR(appendWeightCopy(c, u, out));
  return out;
}

}  // namespace amp::rt::ref
