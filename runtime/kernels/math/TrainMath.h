// The per-element and per-step arithmetic of loss scaling, clipping, the schedule and the
// optimizers, written once for every device: the reference executor and the cpu device call the
// scalar formulas (inverse scale, unscale, clip coefficient, scale update, step counters, learning
// rate) directly, and ampc compiles the file into every CUDA bundle's kernels (TrainKernels.cu) with
// NVRTC. The f32 operation order is PyTorch's single-tensor code; the host tests compile the
// per-element optimizer steps as C++ and require bit-identical results against the reference
// executor (runtime/reference/ReferenceTrain.cpp). Hyper-parameters are Python
// floats: f64, rounded to f32 where they meet a tensor. Compile with no multiply-add contraction
// (nvrtc --fmad=false, g++ -ffp-contract=off).
#ifndef AMP_RUNTIME_KERNELS_MATH_TRAINMATH_H
#define AMP_RUNTIME_KERNELS_MATH_TRAINMATH_H

#if !defined(__CUDACC_RTC__)  // NVRTC sees HostDevice.h first in the same translation unit
#include "runtime/kernels/math/HostDevice.h"
#endif

// found_inf as GradScaler and the fused optimizers read it: any non-zero value (NaN included).
AMP_TM bool amp_found(float foundInf) { return foundInf != 0.0f; }

// GradScaler: inv_scale = scale.double().reciprocal().float().
AMP_TM float amp_inv_scale(float scale) { return (float)(1.0 / (double)scale); }

// _amp_foreach_non_finite_check_and_unscale_ on one element (before rounding to the grad's type):
// an inverse scale of exactly 1 returns the value untouched.
AMP_TM float amp_unscale(float v, float invScale) { return invScale == 1.0f ? v : v * invScale; }

// clip_grad_norm_: clip_coef = (total_norm + 1e-6).reciprocal() * max_norm, clamp(max=1)
// propagating NaN.
AMP_TM float amp_clip_coef(float norm, double maxNorm) {
  const float denom = norm + (float)1e-6;
  float coef = (1.0f / denom) * (float)maxNorm;
  if (!isnan(coef) && coef > 1.0f) coef = 1.0f;
  return coef;
}

// _amp_update_scale_: backoff on an overflow, growth after `interval` clean steps (never past the
// f32 range); the tracker wraps like an int instead of overflowing.
AMP_TM void amp_update_scale(float* scale, int* tracker, float foundInf, double growth, double backoff,
                             long long interval) {
  if (amp_found(foundInf)) {
    *scale = (float)((double)*scale * backoff);
    *tracker = 0;
    return;
  }
  const int successful = (int)((unsigned)*tracker + 1u);
  if ((long long)successful == interval) {
    const float candidate = (float)((double)*scale * growth);
    if (isfinite(candidate)) *scale = candidate;
    *tracker = 0;
  } else {
    *tracker = successful;
  }
}

// amp.step_counters: an applied step advances `step`, a skipped one `skipped`.
AMP_TM void amp_step_counters(long long* step, long long* skipped, float foundInf) {
  if (amp_found(foundInf))
    ++*skipped;
  else
    ++*step;
}

// amp.lr_schedule: linear warmup, then constant (cosine = false) or cosine decay to minLr.
AMP_TM float amp_lr_schedule(bool cosine, double base, long long warmup, long long total, double minLr,
                             long long step) {
  const long long t = step < 1 ? 1 : step;
  double lr;
  if (t <= warmup) {
    lr = base * (double)t / (double)warmup;
  } else if (!cosine) {
    lr = base;
  } else {
    double p = (double)(t - warmup) / (double)(total - warmup);
    if (p > 1.0) p = 1.0;
    lr = minLr + 0.5 * (base - minLr) * (1.0 + cos(3.14159265358979323846 * p));
  }
  return (float)lr;
}

// The f32 constants of one Adam/AdamW step, computed once per step from the Python-float
// scalars of torch.optim.adam._single_tensor_adam.
struct AmpAdamStep {
  float decay;        // 1 - lr * wd               (AdamW: param.mul_)
  float wd;           // weight_decay              (Adam: grad.add(param, alpha=wd))
  float w;            // 1 - beta1                 (exp_avg.lerp_(grad, w))
  float oneMinusW;    // 1 - w, ATen's lerp for weights >= 0.5
  float b2, c2;       // beta2, 1 - beta2
  float bc2Sqrt;      // sqrt(1 - beta2^step)
  float eps;
  float negStepSize;  // -lr / (1 - beta1^step)
  int smallWeight;    // |w| < 0.5
  int applyDecay;     // weight_decay != 0
  int decoupled;      // AdamW
};

AMP_TM AmpAdamStep amp_adam_step(float lrF32, long long step, double beta1, double beta2, double eps, double wd,
                                 bool decoupled) {
  const double lr = lrF32;
  const double stepD = (double)step;
  const double bc1 = 1.0 - pow(beta1, stepD);
  const double bc2 = 1.0 - pow(beta2, stepD);
  AmpAdamStep s;
  s.decay = (float)(1.0 - lr * wd);
  s.wd = (float)wd;
  s.w = (float)(1.0 - beta1);
  s.smallWeight = fabsf(s.w) < 0.5f;
  s.oneMinusW = 1.0f - s.w;
  s.b2 = (float)beta2;
  s.c2 = (float)(1.0 - beta2);
  s.bc2Sqrt = (float)pow(bc2, 0.5);
  s.eps = (float)eps;
  s.negStepSize = (float)(-(lr / bc1));
  s.applyDecay = wd != 0.0;
  s.decoupled = decoupled;
  return s;
}

// One element of adam_update on an applied step.
AMP_TM void amp_adam_element(float* p, float* m, float* v, float g, const AmpAdamStep& s) {
  if (s.applyDecay) {
    if (s.decoupled)
      *p = *p * s.decay;
    else
      g = g + s.wd * *p;
  }
  const float diff = g - *m;
  *m = s.smallWeight ? *m + s.w * diff : g - diff * s.oneMinusW;
  *v = *v * s.b2 + s.c2 * g * g;
  const float denom = sqrtf(*v) / s.bc2Sqrt + s.eps;
  *p = *p + s.negStepSize * *m / denom;
}

// bf16 moments (amp.adam_update with --optimizer-state=bf16): the bf16 bits of the f32 with bits
// `f` rounded stochastically with the 16 random bits `r16`: r16 is added below bf16's mantissa
// and the rest truncated, so |x| rounds up with probability (its bits below bf16) / 2^16 and the
// expected result is x. A bf16-representable x is returned exactly; NaN as a quiet NaN of its sign;
// past bf16's largest finite value x may round to inf, as it does in round-to-nearest.
AMP_TM unsigned short amp_sr_bf16(unsigned f, unsigned r16) {
  if ((f & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((f >> 16) | 0x0040u);
  return (unsigned short)((f + (r16 & 0xffffu)) >> 16);
}

// The random bits of element i's two moments at one step: word i % 4 of the Philox group i / 4 of
// the dropout stream under the update's rounding_seed (ShapeMath.h's amp_drop_group_bits); the low
// half rounds exp_avg, the high half exp_avg_sq.
AMP_TM unsigned amp_sr_m_bits(unsigned word) { return word & 0xffffu; }
AMP_TM unsigned amp_sr_v_bits(unsigned word) { return word >> 16; }

// The f32 constants of sgd_update (dampening 0).
struct AmpSgdStep {
  float lr, momentum, wd;
  int applyDecay, hasMomentum, nesterov;
};

AMP_TM AmpSgdStep amp_sgd_step(float lr, double momentum, double wd, bool nesterov) {
  AmpSgdStep s;
  s.lr = lr;
  s.momentum = (float)momentum;
  s.wd = (float)wd;
  s.applyDecay = wd != 0.0;
  s.hasMomentum = momentum != 0.0;
  s.nesterov = nesterov;
  return s;
}

// One element of sgd_update on an applied step; `buf` is null without momentum.
AMP_TM void amp_sgd_element(float* p, float* buf, float g, const AmpSgdStep& s) {
  float d = g;
  if (s.applyDecay) d = d + s.wd * *p;
  if (buf) {
    *buf = *buf * s.momentum + d;
    d = s.nesterov ? d + s.momentum * *buf : *buf;
  }
  *p = *p - s.lr * d;
}

#endif  // AMP_RUNTIME_KERNELS_MATH_TRAINMATH_H
