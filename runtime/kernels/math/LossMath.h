// The per-row and per-element arithmetic of the CUDA device's cross-entropy kernels (LossKernels.cu),
// written once for the GPU and the host. ampc compiles it into every CUDA bundle's kernels with
// NVRTC; the host tests compile the same text as C++ and require bit-identical results against the
// reference executor (amp.cross_entropy in runtime/reference/ReferenceLoss.cpp, amp.cross_entropy_grad in
// ReferenceGrad.cpp, the log-softmax of softmaxSlice in ReferenceReduction.cpp), whose f32 operation
// order every line below follows: values are f32, exp and log are evaluated in f64 and rounded once,
// sums run in f32 in class order and in row order. label_smoothing is a Python float: f64, rounded
// to f32 where it meets a tensor. Compile with no multiply-add contraction (nvrtc --fmad=false,
// g++ -ffp-contract=off).
#ifndef AMP_RUNTIME_KERNELS_MATH_LOSSMATH_H
#define AMP_RUNTIME_KERNELS_MATH_LOSSMATH_H

#if !defined(__CUDACC_RTC__)  // NVRTC sees RowMath.h earlier in the same translation unit
#include "runtime/kernels/math/RowMath.h"
#endif

#if !defined(__CUDACC_RTC__)  // NVRTC sees HostDevice.h first in the same translation unit
#include "runtime/kernels/math/HostDevice.h"
#endif

// What a row's label makes of it. ignore_index is checked first, so it may lie inside [0, C).
enum AmpCeLabel { AMP_CE_IGNORED = 0, AMP_CE_COUNTED = 1, AMP_CE_INVALID = 2 };

AMP_TM AmpCeLabel amp_ce_label_state(long long label, long long classes, long long ignoreIndex) {
  if (label == ignoreIndex) return AMP_CE_IGNORED;
  return label < 0 || label >= classes ? AMP_CE_INVALID : AMP_CE_COUNTED;
}

// e_j = f32(exp(fl(x_j - m))); the row's sum s adds them in class order from +0.
AMP_TM float amp_ce_exp(float x, float max) { return (float)exp((double)(x - max)); }

// lse = f32(log(s)).
AMP_TM float amp_ce_lse(float sumExp) { return (float)log((double)sumExp); }

// -logp_j = -fl(fl(x_j - m) - lse); the smoothing term adds these in class order from +0.
AMP_TM float amp_ce_neg_logp(float x, float max, float lse) { return -((x - max) - lse); }

// The weights of the two parts of a smoothed loss: (1 - eps) on the label, eps on the mean over
// classes (forward), eps / C on every class (gradient).
AMP_TM float amp_ce_keep_weight(double smoothing) { return (float)(1.0 - smoothing); }
AMP_TM float amp_ce_smooth_weight(double smoothing) { return (float)smoothing; }
AMP_TM float amp_ce_grad_smooth_weight(double smoothing, long long classes) {
  return (float)(smoothing / (double)classes);
}

// A counted row's loss from -logp[label] and the class-order sum of -logp_j:
// (1 - eps) * nll + eps * (sum / C), the smoothing skipped entirely at eps = 0 (PyTorch too).
AMP_TM float amp_ce_row_loss(float nll, float negLogpSum, long long classes, double smoothing) {
  if (smoothing > 0.0) {
    const float smooth = negLogpSum / (float)classes;
    return amp_ce_keep_weight(smoothing) * nll + amp_ce_smooth_weight(smoothing) * smooth;
  }
  return nll;
}

// The mean over counted rows: their losses summed in row order (the contract's blocked pairwise
// order, SumOrder.h), divided by their number. No counted row: 0 / 0, NaN.
AMP_TM float amp_ce_mean(float total, long long counted) { return total / (float)counted; }

// The gradient's common factor dloss / counted (infinite or NaN with no counted row, when no
// element uses it).
AMP_TM float amp_ce_grad_coeff(float dloss, long long counted) { return dloss / (float)counted; }

// One element of a counted row's gradient: (softmax_j - target_j) * coeff with softmax_j = e_j / s
// and target_j = (j == label ? 1 - eps : 0) + eps / C. Ignored rows are +0 without this.
AMP_TM float amp_ce_grad_element(float e, float sumExp, bool isLabel, float keepWeight, float gradSmoothWeight,
                                 float coeff) {
  const float p = e / sumExp;
  const float target = (isLabel ? keepWeight : 0.0f) + gradSmoothWeight;
  return (p - target) * coeff;
}

#endif  // AMP_RUNTIME_KERNELS_MATH_LOSSMATH_H
