// The per-slice and per-element arithmetic of the CUDA device's softmax and normalisation kernels
// (NormKernels.cu), written once for the GPU and the host. ampc compiles it into every CUDA bundle's
// kernels with NVRTC; the host tests compile the same text as C++ and require bit-identical results
// against the reference executor (amp.softmax / amp.log_softmax: softmaxSlice in
// runtime/reference/ReferenceReduction.cpp; amp.layer_norm / amp.rms_norm: ReferenceNormalization.cpp;
// their gradients: ReferenceGrad.cpp), whose f32 operation order every line below follows: values
// are f32, exp, log and 1/sqrt are evaluated in f64 and rounded once, sums run in f32 from +0 in
// element order inside a slice or group and in group order across groups. eps is a Python float:
// f64, added in f64. Compile with no multiply-add contraction (nvrtc --fmad=false,
// g++ -ffp-contract=off).
#ifndef AMP_RUNTIME_DEVICES_CUDA_KERNELS_NORMMATH_H
#define AMP_RUNTIME_DEVICES_CUDA_KERNELS_NORMMATH_H

#if !defined(__CUDACC_RTC__)  // NVRTC sees RowMath.h earlier in the same translation unit
#include "runtime/devices/cuda/kernels/RowMath.h"
#endif

#if !defined(__CUDACC_RTC__)  // NVRTC sees HostDevice.h first in the same translation unit
#include "runtime/devices/cuda/kernels/HostDevice.h"
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

#endif  // AMP_RUNTIME_DEVICES_CUDA_KERNELS_NORMMATH_H
