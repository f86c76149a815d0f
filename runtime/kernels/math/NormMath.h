// The per-slice and per-element arithmetic of the CUDA device's softmax and normalisation kernels
// (NormKernels.cu), written once for the GPU and the host. ampc compiles it into every CUDA bundle's
// kernels with NVRTC; the host tests compile the same text as C++ and require bit-identical results
// against the reference executor (amp.softmax / amp.log_softmax: softmaxSlice in
// runtime/reference/ReferenceReduction.cpp; amp.layer_norm / amp.rms_norm: ReferenceNormalization.cpp;
// their gradients: ReferenceGrad.cpp; amp.batch_norm and its gradient: ReferenceBatchNorm.cpp), whose f32 operation order every line below follows: values
// are f32, exp, log and 1/sqrt are evaluated in f64 and rounded once, sums run in f32 from +0 in
// element order inside a slice, group or channel and in group order across groups. eps is a Python float:
// f64, added in f64. Compile with no multiply-add contraction (nvrtc --fmad=false,
// g++ -ffp-contract=off).
#ifndef AMP_RUNTIME_KERNELS_MATH_NORMMATH_H
#define AMP_RUNTIME_KERNELS_MATH_NORMMATH_H

#if !defined(__CUDACC_RTC__)  // NVRTC sees RowMath.h earlier in the same translation unit
#include "runtime/kernels/math/RowMath.h"
#endif

#if !defined(__CUDACC_RTC__)  // NVRTC sees HostDevice.h first in the same translation unit
#include "runtime/kernels/math/HostDevice.h"
#endif

// ---------------------------------------------------------------------------------------------
// softmax / log_softmax

// The slice max: amp_row_max_step / amp_row_max_combine (RowMath.h).

// e_j = f32(exp(fl(x_j - m))); the slice's sum s adds them in element order from +0.
AMP_TM float amp_nrm_exp(float x, float max) { return (float)exp((double)(x - max)); }

// softmax: y_j = fl(e_j / s).
AMP_TM float amp_nrm_softmax_out(float e, float sumExp) { return e / sumExp; }

// log_softmax: lse = f32(log(s)), y_j = fl(fl(x_j - m) - lse).
AMP_TM float amp_nrm_lse(float sumExp) { return (float)log((double)sumExp); }
AMP_TM float amp_nrm_log_softmax_out(float x, float max, float lse) { return (x - max) - lse; }

// ---------------------------------------------------------------------------------------------
// layer_norm / rms_norm statistics, shared by the forward ops and their gradients

// A sum over the group divided by its element count n, as f32: mean = fl(sum / n), and the
// gradients' fl(sg / n), fl(sgx / n). n reaches f32 by one RNE conversion, as the reference's
// static_cast<float>.
AMP_TM float amp_nrm_mean(float sum, long long n) { return sum / (float)n; }

// layer_norm's variance terms: fl(d * d), d = fl(x - mean) (two passes: the mean first).
AMP_TM float amp_nrm_centered_square(float x, float mean) { return (x - mean) * (x - mean); }

// rms_norm's terms: fl(x * x).
AMP_TM float amp_nrm_square(float x) { return x * x; }

// rstd = f32(1 / sqrt(f64(fl(sumSq / n)) + eps)) for both norms: sumSq is layer_norm's sum of
// centred squares (so fl(sumSq / n) is the biased variance) or rms_norm's sum of squares. f64
// division and sqrt are correctly rounded on both sides.
AMP_TM float amp_nrm_rstd(float sumSq, long long n, double eps) {
  return (float)(1.0 / sqrt((double)(sumSq / (float)n) + eps));
}

// ---------------------------------------------------------------------------------------------
// Forward outputs

// layer_norm: fl(fl(x - mean) * rstd), then fl(. * w) with a weight, then fl(. + b) with a bias.
AMP_TM float amp_nrm_layer_out(float x, float mean, float rstd, bool hasWeight, float w, bool hasBias, float b) {
  float v = (x - mean) * rstd;
  if (hasWeight) v = v * w;
  if (hasBias) v = v + b;
  return v;
}

// rms_norm: fl(x * rstd), then fl(. * w) with a weight.
AMP_TM float amp_nrm_rms_out(float x, float rstd, bool hasWeight, float w) {
  float v = x * rstd;
  if (hasWeight) v = v * w;
  return v;
}

// ---------------------------------------------------------------------------------------------
// Gradients

// xhat_j: layer_norm fl(fl(x - mean) * rstd), rms_norm fl(x * rstd).
AMP_TM float amp_nrm_layer_xhat(float x, float mean, float rstd) { return (x - mean) * rstd; }
AMP_TM float amp_nrm_rms_xhat(float x, float rstd) { return x * rstd; }

// g_j = fl(dy_j * w_j), or dy_j without a weight; sg adds g_j in element order.
AMP_TM float amp_nrm_grad_g(float dy, bool hasWeight, float w) { return hasWeight ? dy * w : dy; }

// The terms of sgx (fl(g_j * xhat_j), element order) and of dweight (fl(dy_j * xhat_j), group
// order).
AMP_TM float amp_nrm_product(float a, float b) { return a * b; }

// layer_norm: dx_j = fl(rstd * fl(fl(g_j - mg) - fl(xhat_j * mgx))), mg = fl(sg / n), mgx = fl(sgx / n).
AMP_TM float amp_nrm_layer_dx(float g, float xhat, float rstd, float meanG, float meanGXhat) {
  return rstd * ((g - meanG) - xhat * meanGXhat);
}

// rms_norm: dx_j = fl(rstd * fl(g_j - fl(xhat_j * mgx))).
AMP_TM float amp_nrm_rms_dx(float g, float xhat, float rstd, float meanGXhat) {
  return rstd * (g - xhat * meanGXhat);
}

// The column sums of the affine gradients: dweight_j += fl(dy_j * xhat_j) and dbias_j += dy_j for
// each group in order, from +0.
AMP_TM float amp_nrm_accumulate(float acc, float term) { return acc + term; }

// ---------------------------------------------------------------------------------------------
// batch_norm / batch_norm_grad (runtime/reference/ReferenceBatchNorm.cpp): x is [N, C, ...]; the
// per-channel operands and statistics are f32 [C] whatever x's type. Per channel c, its M = N * S
// elements (S = the product of the trailing dims, 1 for [N, C]) in the reference's order: n-major,
// then the trailing dims row-major. Every sum over a channel adds its terms in that order from +0;
// the layer_norm helpers above give the rest (mean = fl(sum / M), the centred squares, invstd =
// amp_nrm_rstd(sq, M, eps) in training, xhat = fl(fl(x - mean) * invstd), fl(dy * xhat)).

// The flat index of channel c's element j (0 <= j < M): (n * C + c) * S + i, n = j / S, i = j % S.
AMP_TM long long amp_bn_index(long long j, long long c, long long channels, long long spatial) {
  return (j / spatial * channels + c) * spatial + j % spatial;
}

// Without training: invstd = f32(1 / sqrt(f64(running_var) + eps)).
AMP_TM float amp_bn_invstd(float var, double eps) { return (float)(1.0 / sqrt((double)var + eps)); }

// y = fl(fl(fl(fl(x - mean) * invstd) * scale_c) + bias_c).
AMP_TM float amp_bn_out(float x, float mean, float invstd, float scale, float bias) {
  return (x - mean) * invstd * scale + bias;
}

// The unbiased batch variance of the running update: fl(sq / f32(M - 1)).
AMP_TM float amp_bn_unbiased(float sq, long long count) { return sq / (float)(count - 1); }

// The running update: fl(fl(f32(1 - momentum) * running) + fl(f32(momentum) * batch)), momentum
// the op's f64 attribute and 1 - momentum taken in f64 (PyTorch's rule, the reference's order).
AMP_TM float amp_bn_running(float running, float batch, double momentum) {
  return (float)(1.0 - momentum) * running + (float)momentum * batch;
}

// The gradient's a = fl(scale_c * invstd); dx = fl(a * fl(fl(dy - mg) - fl(xhat * mgx))) in
// training (amp_nrm_layer_dx with a for rstd; mg = fl(dbias / M), mgx = fl(dscale / M)), and
// fl(a * dy) without it.
AMP_TM float amp_bn_grad_scale(float scale, float invstd) { return scale * invstd; }
AMP_TM float amp_bn_eval_dx(float a, float dy) { return a * dy; }

#endif  // AMP_RUNTIME_KERNELS_MATH_NORMMATH_H
