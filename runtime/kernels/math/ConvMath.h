// The arithmetic of the CUDA device's convolution and pooling kernels (ConvKernels.cu), written once
// for the GPU and the host. ampc compiles it into every CUDA bundle's kernels with NVRTC; the host
// test (test/unit/kernels/ConvKernelTest.cpp) runs ConvKernels.cu over it as C++ and requires bit-identical
// results against the reference executor (runtime/reference/ReferenceLinalg.cpp, ReferenceGrad.cpp).
// Each function computes one result element as one sequential f32 sum in the reference's order:
// conv2d over (ci, kh, kw) with padded taps adding fl(0 * w), grad_input over (o, kh, kw),
// grad_weight over (n, oh, ow); pooling windows row-major, max with NaN sticking. The pooling
// gradients gather, for each input element, the windows that cover it in (oh, ow) order, which is
// the order in which the reference scatters into it. Element reads go through an accessor (`X`:
// any type with `float operator()(long long) const`). Compile with no multiply-add contraction
// (nvrtc --fmad=false, g++ -ffp-contract=off).
#ifndef AMP_RUNTIME_KERNELS_MATH_CONVMATH_H
#define AMP_RUNTIME_KERNELS_MATH_CONVMATH_H

#if !defined(__CUDACC_RTC__)  // NVRTC sees HostDevice.h first in the same translation unit
#include "runtime/kernels/math/HostDevice.h"
#endif

// x [N, C, H, W], w [O, C / groups, KH, KW], y [N, O, OH, OW]; OG = O / groups, CG = C / groups.
struct AmpConvShape {
  long long N, C, H, W, O, CG, KH, KW, OH, OW, OG;
  long long strideH, strideW, padH, padW, dilH, dilW;
};

// amp.conv2d at y[n, o, oh, ow], before the bias.
template <class X, class Wt>
AMP_TM float amp_conv2d_at(const AmpConvShape& s, long long n, long long o, long long oh, long long ow, const X& x,
                           const Wt& w) {
  const long long g = o / s.OG;
  float acc = 0.0f;
  for (long long ci = 0; ci < s.CG; ++ci)
    for (long long kh = 0; kh < s.KH; ++kh)
      for (long long kw = 0; kw < s.KW; ++kw) {
        const long long ih = oh * s.strideH - s.padH + kh * s.dilH;
        const long long iw = ow * s.strideW - s.padW + kw * s.dilW;
        const bool inside = ih >= 0 && ih < s.H && iw >= 0 && iw < s.W;
        const float xv = inside ? x(((n * s.C + g * s.CG + ci) * s.H + ih) * s.W + iw) : 0.0f;
        acc += xv * w(((o * s.CG + ci) * s.KH + kh) * s.KW + kw);
      }
  return acc;
}

// amp.conv2d_grad_input at dx[n, ch, ih, iw]: the taps that read that input element.
template <class DY, class Wt>
AMP_TM float amp_conv2d_grad_input_at(const AmpConvShape& s, long long n, long long ch, long long ih, long long iw,
                                      const DY& dy, const Wt& w) {
  const long long g = ch / s.CG, ci = ch % s.CG;
  float acc = 0.0f;
  for (long long o = g * s.OG; o < (g + 1) * s.OG; ++o)
    for (long long kh = 0; kh < s.KH; ++kh) {
      const long long th = ih + s.padH - kh * s.dilH;
      if (th < 0 || th % s.strideH != 0 || th / s.strideH >= s.OH) continue;
      const long long oh = th / s.strideH;
      for (long long kw = 0; kw < s.KW; ++kw) {
        const long long tw = iw + s.padW - kw * s.dilW;
        if (tw < 0 || tw % s.strideW != 0 || tw / s.strideW >= s.OW) continue;
        const long long ow = tw / s.strideW;
        acc += dy(((n * s.O + o) * s.OH + oh) * s.OW + ow) * w(((o * s.CG + ci) * s.KH + kh) * s.KW + kw);
      }
    }
  return acc;
}

// amp.conv2d_grad_weight at dw[o, ci, kh, kw]; padded taps add fl(0 * dy).
template <class X, class DY>
AMP_TM float amp_conv2d_grad_weight_at(const AmpConvShape& s, long long o, long long ci, long long kh, long long kw,
                                       const X& x, const DY& dy) {
  const long long g = o / s.OG;
  float acc = 0.0f;
  for (long long n = 0; n < s.N; ++n)
    for (long long oh = 0; oh < s.OH; ++oh)
      for (long long ow = 0; ow < s.OW; ++ow) {
        const long long ih = oh * s.strideH - s.padH + kh * s.dilH;
        const long long iw = ow * s.strideW - s.padW + kw * s.dilW;
        const bool inside = ih >= 0 && ih < s.H && iw >= 0 && iw < s.W;
        const float xv = inside ? x(((n * s.C + g * s.CG + ci) * s.H + ih) * s.W + iw) : 0.0f;
        acc += xv * dy(((n * s.O + o) * s.OH + oh) * s.OW + ow);
      }
  return acc;
}

AMP_TM float amp_pool_neg_inf() {
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
  return __uint_as_float(0xff800000u);
#else
  return -HUGE_VALF;
#endif
}

// x [NC, H, W] (N and C flattened), windows KH x KW with stride and padding, y [NC, OH, OW].
struct AmpPoolShape {
  long long NC, H, W, OH, OW, KH, KW, strideH, strideW, padH, padW;
};

// The index into x of the element amp.max_pool2d's window (nc, oh, ow) picks: the row-major scan
// with a strict > and NaN sticking; an all -inf window its first in-bounds element; -1 for none.
template <class X>
AMP_TM long long amp_max_pool_pick(const AmpPoolShape& p, long long nc, long long oh, long long ow, const X& x,
                                   float* best) {
  float b = amp_pool_neg_inf();
  long long pos = -1, first = -1;
  for (long long kh = 0; kh < p.KH; ++kh)
    for (long long kw = 0; kw < p.KW; ++kw) {
      const long long ih = oh * p.strideH - p.padH + kh, iw = ow * p.strideW - p.padW + kw;
      if (ih < 0 || ih >= p.H || iw < 0 || iw >= p.W) continue;
      const long long idx = (nc * p.H + ih) * p.W + iw;
      const float v = x(idx);
      if (first < 0) first = idx;
      if (v > b || isnan(v)) {
        b = v;
        pos = idx;
      }
    }
  *best = b;
  return pos >= 0 ? pos : first;
}

// amp.avg_pool2d at y[nc, oh, ow]: the in-bounds sum over the full window's size (count_include_pad).
template <class X>
AMP_TM float amp_avg_pool_at(const AmpPoolShape& p, long long nc, long long oh, long long ow, const X& x) {
  float acc = 0.0f;
  for (long long kh = 0; kh < p.KH; ++kh)
    for (long long kw = 0; kw < p.KW; ++kw) {
      const long long ih = oh * p.strideH - p.padH + kh, iw = ow * p.strideW - p.padW + kw;
      if (ih < 0 || ih >= p.H || iw < 0 || iw >= p.W) continue;
      acc += x((nc * p.H + ih) * p.W + iw);
    }
  return acc / (float)(p.KH * p.KW);
}

// The windows covering input row ih (or column: pass the W-side fields): [*lo, *hi], maybe empty.
AMP_TM void amp_pool_cover(long long i, long long pad, long long k, long long stride, long long outs, long long* lo,
                           long long* hi) {
  const long long top = i + pad;  // window o covers i iff o * stride <= top <= o * stride + k - 1
  long long l = top - k + 1 <= 0 ? 0 : (top - k + 1 + stride - 1) / stride;
  long long h = top / stride;
  if (h > outs - 1) h = outs - 1;
  *lo = l;
  *hi = h;
}

// amp.max_pool2d_grad at dx[nc, ih, iw]: dy of every window that picks this element, in (oh, ow)
// order from +0.
template <class X, class DY>
AMP_TM float amp_max_pool_grad_at(const AmpPoolShape& p, long long nc, long long ih, long long iw, const X& x,
                                  const DY& dy) {
  long long ohLo, ohHi, owLo, owHi;
  amp_pool_cover(ih, p.padH, p.KH, p.strideH, p.OH, &ohLo, &ohHi);
  amp_pool_cover(iw, p.padW, p.KW, p.strideW, p.OW, &owLo, &owHi);
  const long long me = (nc * p.H + ih) * p.W + iw;
  float acc = 0.0f;
  for (long long oh = ohLo; oh <= ohHi; ++oh)
    for (long long ow = owLo; ow <= owHi; ++ow) {
      float best;
      if (amp_max_pool_pick(p, nc, oh, ow, x, &best) == me) acc += dy((nc * p.OH + oh) * p.OW + ow);
    }
  return acc;
}

// amp.avg_pool2d_grad at dx[nc, ih, iw]: fl(dy / window size) of every covering window, in order.
template <class DY>
AMP_TM float amp_avg_pool_grad_at(const AmpPoolShape& p, long long nc, long long ih, long long iw, const DY& dy) {
  long long ohLo, ohHi, owLo, owHi;
  amp_pool_cover(ih, p.padH, p.KH, p.strideH, p.OH, &ohLo, &ohHi);
  amp_pool_cover(iw, p.padW, p.KW, p.strideW, p.OW, &owLo, &owHi);
  const float divisor = (float)(p.KH * p.KW);
  float acc = 0.0f;
  for (long long oh = ohLo; oh <= ohHi; ++oh)
    for (long long ow = owLo; ow <= owHi; ++ow) acc += dy((nc * p.OH + oh) * p.OW + ow) / divisor;
  return acc;
}

#endif  // AMP_RUNTIME_KERNELS_MATH_CONVMATH_H
