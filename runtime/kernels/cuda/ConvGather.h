// The index maps that turn amp.conv2d and its two gradients into one cuBLASLt GEMM each (the cuda
// device's implicit-GEMM convolutions, runtime/devices/cuda/ConvGemm.h). Each gather fills a column
// buffer whose element i is a copy of its source's element amp_conv_gather_source(i), or +0 where
// that is -1 (a tap in the padding, or one the stride skips). Gathers copy bits and change no
// value. Written once for the GPU (ConvGatherKernels.cu) and the host test
// (test/unit/cuda/ConvGemmTest.cpp). Ungrouped convolutions only: C == CG, O == OG.
//
// With k the contraction index of each GEMM, the column layouts are:
//   forward       y[n] [O, P]   = w [O, K] . cols[n] [K, P],       K = (c, kh, kw), P = (oh, ow)
//   grad_input   dx[n] [C, HW]  = wt [C, R] . dcols[n] [R, HW],    R = (o, kh, kw), HW = (ih, iw)
//   grad_weight  dw [O, K]      = dyt [O, NP] . colsT [K, NP]^T,   NP = (n, oh, ow)
// so every GEMM sums its k in the order the reference's loops do (ConvMath.h).
#ifndef AMP_RUNTIME_KERNELS_CUDA_CONVGATHER_H
#define AMP_RUNTIME_KERNELS_CUDA_CONVGATHER_H

#if !defined(__CUDACC_RTC__)  // NVRTC sees ConvMath.h first in the same translation unit
#include "runtime/kernels/math/ConvMath.h"
#endif

// What a gather builds (the kernels' `mode` argument).
enum AmpConvGatherMode {
  AMP_CONV_COLUMNS = 0,        // x -> cols [N][K][P]: the forward's b
  AMP_CONV_COLUMNS_BY_TAP = 1, // x -> colsT [K][N][P]: the weight gradient's b
  AMP_CONV_DY_COLUMNS = 2,     // dy -> dcols [N][R][HW]: the input gradient's b
  AMP_CONV_DY_BY_CHANNEL = 3,  // dy [N][O][P] -> dyt [O][N][P]: the weight gradient's a
  AMP_CONV_W_BY_INPUT = 4,     // w [O][C][KH][KW] -> wt [C][O][KH][KW]: the input gradient's a
  AMP_CONV_BIAS_ROWS = 5,      // bias [O] -> y [N][O][P]: the forward's C, which the GEMM adds to
};

// The elements a gather writes.
AMP_TM long long amp_conv_gather_count(const AmpConvShape& s, int mode) {
  const long long K = s.C * s.KH * s.KW, P = s.OH * s.OW;
  switch (mode) {
    case AMP_CONV_COLUMNS:
    case AMP_CONV_COLUMNS_BY_TAP: return s.N * K * P;
    case AMP_CONV_DY_COLUMNS: return s.N * s.O * s.KH * s.KW * s.H * s.W;
    case AMP_CONV_DY_BY_CHANNEL:
    case AMP_CONV_BIAS_ROWS: return s.N * s.O * P;
    case AMP_CONV_W_BY_INPUT: return s.O * K;
  }
  return 0;
}

// x's element under tap (c, kh, kw) of output position (oh, ow) of image n, or -1 in the padding.
AMP_TM long long amp_conv_tap_source(const AmpConvShape& s, long long n, long long tap, long long p) {
  const long long kw = tap % s.KW, kh = tap / s.KW % s.KH, c = tap / (s.KW * s.KH);
  const long long ow = p % s.OW, oh = p / s.OW;
  const long long ih = oh * s.strideH - s.padH + kh * s.dilH, iw = ow * s.strideW - s.padW + kw * s.dilW;
  if (ih < 0 || ih >= s.H || iw < 0 || iw >= s.W) return -1;
  return ((n * s.C + c) * s.H + ih) * s.W + iw;
}

// The source element of a gather's element i, or -1 for a zero.
AMP_TM long long amp_conv_gather_source(const AmpConvShape& s, int mode, long long i) {
  const long long K = s.C * s.KH * s.KW, P = s.OH * s.OW;
  switch (mode) {
    case AMP_CONV_COLUMNS: return amp_conv_tap_source(s, i / (K * P), i / P % K, i % P);
    case AMP_CONV_COLUMNS_BY_TAP: return amp_conv_tap_source(s, i / P % s.N, i / (s.N * P), i % P);
    case AMP_CONV_DY_COLUMNS: {
      // dy's element that tap (o, kh, kw) reads into input position (ih, iw), as the reference's
      // grad_input loop finds it; -1 where no output position has that tap there.
      const long long HW = s.H * s.W, R = s.O * s.KH * s.KW;
      const long long iw = i % s.W, ih = i / s.W % s.H, r = i / HW % R, n = i / (HW * R);
      const long long kw = r % s.KW, kh = r / s.KW % s.KH, o = r / (s.KW * s.KH);
      const long long th = ih + s.padH - kh * s.dilH, tw = iw + s.padW - kw * s.dilW;
      if (th < 0 || th % s.strideH != 0 || th / s.strideH >= s.OH) return -1;
      if (tw < 0 || tw % s.strideW != 0 || tw / s.strideW >= s.OW) return -1;
      return ((n * s.O + o) * s.OH + th / s.strideH) * s.OW + tw / s.strideW;
    }
    case AMP_CONV_DY_BY_CHANNEL: {  // i = (o, n, p)
      const long long p = i % P, n = i / P % s.N, o = i / (P * s.N);
      return (n * s.O + o) * P + p;
    }
    case AMP_CONV_W_BY_INPUT: {  // i = (c, o, kh, kw)
      const long long taps = s.KH * s.KW;
      const long long t = i % taps, o = i / taps % s.O, c = i / (taps * s.O);
      return (o * s.C + c) * taps + t;
    }
    case AMP_CONV_BIAS_ROWS: return i / P % s.O;
  }
  return -1;
}

#endif  // AMP_RUNTIME_KERNELS_CUDA_CONVGATHER_H
