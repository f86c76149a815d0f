// The CUDA device's convolution and pooling kernels: amp.conv2d, conv2d_grad_input,
// conv2d_grad_weight, max/avg_pool2d and their gradients, one thread per result element
// (grid-strided), each element one sequential f32 sum in the reference's order (ConvMath.h), so
// the results are the reference executor's bits. This is the exact direct form, not a fast one:
// no tiling, no tensor cores. ampc appends this file, after ConvMath.h, to every cuda bundle's
// kernels (codegen/CMakeLists.txt).
//
// Names end in the element type T (f32, bf16, f16); every tensor is dense NCHW of type T and the
// result is rounded to T once. Block (256, 1, 1), any grid.
//   amp_conv2d_<T>(const void* x, const void* w, const void* bias (or null), void* y, AmpConvShape s)
//   amp_conv2d_grad_input_<T>(const void* dy, const void* w, void* dx, AmpConvShape s)
//   amp_conv2d_grad_weight_<T>(const void* x, const void* dy, void* dw, AmpConvShape s)
//   amp_max_pool2d_<T> / amp_avg_pool2d_<T>(const void* x, void* y, AmpPoolShape p)
//   amp_max_pool2d_grad_<T>(const void* x, const void* dy, void* dx, AmpPoolShape p)
//   amp_avg_pool2d_grad_<T>(const void* dy, void* dx, AmpPoolShape p)

template <int T>
struct AmpConvLoad {
  const void* p;
  __device__ __forceinline__ float operator()(long long i) const { return amp_load<T>(p, i); }
};

#define AMP_GRID_STRIDE(i, n) \
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (long long)gridDim.x * blockDim.x)

template <int T>
__device__ void amp_conv2d(const void* x, const void* w, const void* bias, void* y, const AmpConvShape& s) {
  const AmpConvLoad<T> xl{x}, wl{w};
  AMP_GRID_STRIDE(i, s.N * s.O * s.OH * s.OW) {
    const long long ow = i % s.OW, oh = i / s.OW % s.OH, o = i / (s.OW * s.OH) % s.O, n = i / (s.OW * s.OH * s.O);
    float acc = amp_conv2d_at(s, n, o, oh, ow, xl, wl);
    if (bias) acc += amp_load<T>(bias, o);  // bias last, like a GEMM epilogue
    amp_store<T>(y, i, acc);
  }
}

template <int T>
__device__ void amp_conv2d_grad_input(const void* dy, const void* w, void* dx, const AmpConvShape& s) {
  const AmpConvLoad<T> dyl{dy}, wl{w};
  AMP_GRID_STRIDE(i, s.N * s.C * s.H * s.W) {
    const long long iw = i % s.W, ih = i / s.W % s.H, ch = i / (s.W * s.H) % s.C, n = i / (s.W * s.H * s.C);
    amp_store<T>(dx, i, amp_conv2d_grad_input_at(s, n, ch, ih, iw, dyl, wl));
  }
}

template <int T>
__device__ void amp_conv2d_grad_weight(const void* x, const void* dy, void* dw, const AmpConvShape& s) {
  const AmpConvLoad<T> xl{x}, dyl{dy};
  AMP_GRID_STRIDE(i, s.O * s.CG * s.KH * s.KW) {
    const long long kw = i % s.KW, kh = i / s.KW % s.KH, ci = i / (s.KW * s.KH) % s.CG, o = i / (s.KW * s.KH * s.CG);
    amp_store<T>(dw, i, amp_conv2d_grad_weight_at(s, o, ci, kh, kw, xl, dyl));
  }
}

template <int T, bool Max>
__device__ void amp_pool2d(const void* x, void* y, const AmpPoolShape& p) {
  const AmpConvLoad<T> xl{x};
  AMP_GRID_STRIDE(i, p.NC * p.OH * p.OW) {
    const long long ow = i % p.OW, oh = i / p.OW % p.OH, nc = i / (p.OW * p.OH);
    float v;
    if (Max)
      amp_max_pool_pick(p, nc, oh, ow, xl, &v);
    else
      v = amp_avg_pool_at(p, nc, oh, ow, xl);
    amp_store<T>(y, i, v);
  }
}

template <int T>
__device__ void amp_max_pool2d_grad(const void* x, const void* dy, void* dx, const AmpPoolShape& p) {
  const AmpConvLoad<T> xl{x}, dyl{dy};
  AMP_GRID_STRIDE(i, p.NC * p.H * p.W) {
    const long long iw = i % p.W, ih = i / p.W % p.H, nc = i / (p.W * p.H);
    amp_store<T>(dx, i, amp_max_pool_grad_at(p, nc, ih, iw, xl, dyl));
  }
}

template <int T>
__device__ void amp_avg_pool2d_grad(const void* dy, void* dx, const AmpPoolShape& p) {
  const AmpConvLoad<T> dyl{dy};
  AMP_GRID_STRIDE(i, p.NC * p.H * p.W) {
    const long long iw = i % p.W, ih = i / p.W % p.H, nc = i / (p.W * p.H);
    amp_store<T>(dx, i, amp_avg_pool_grad_at(p, nc, ih, iw, dyl));
  }
}

#define AMP_CONV_KERNELS(name, T)                                                                                  \
  extern "C" __global__ void __launch_bounds__(256)                                                               \
      amp_conv2d_##name(const void* x, const void* w, const void* bias, void* y, AmpConvShape s) {                \
    amp_conv2d<T>(x, w, bias, y, s);                                                                               \
  }                                                                                                                \
  extern "C" __global__ void __launch_bounds__(256)                                                               \
      amp_conv2d_grad_input_##name(const void* dy, const void* w, void* dx, AmpConvShape s) {                     \
    amp_conv2d_grad_input<T>(dy, w, dx, s);                                                                        \
  }                                                                                                                \
  extern "C" __global__ void __launch_bounds__(256)                                                               \
      amp_conv2d_grad_weight_##name(const void* x, const void* dy, void* dw, AmpConvShape s) {                    \
    amp_conv2d_grad_weight<T>(x, dy, dw, s);                                                                       \
  }                                                                                                                \
  extern "C" __global__ void __launch_bounds__(256) amp_max_pool2d_##name(const void* x, void* y, AmpPoolShape p) { \
    amp_pool2d<T, true>(x, y, p);                                                                                  \
  }                                                                                                                \
  extern "C" __global__ void __launch_bounds__(256) amp_avg_pool2d_##name(const void* x, void* y, AmpPoolShape p) { \
    amp_pool2d<T, false>(x, y, p);                                                                                 \
  }                                                                                                                \
  extern "C" __global__ void __launch_bounds__(256)                                                               \
      amp_max_pool2d_grad_##name(const void* x, const void* dy, void* dx, AmpPoolShape p) {                       \
    amp_max_pool2d_grad<T>(x, dy, dx, p);                                                                          \
  }                                                                                                                \
  extern "C" __global__ void __launch_bounds__(256)                                                               \
      amp_avg_pool2d_grad_##name(const void* dy, void* dx, AmpPoolShape p) {                                      \
    amp_avg_pool2d_grad<T>(dy, dx, p);                                                                             \
  }
AMP_CONV_KERNELS(f32, 0)
AMP_CONV_KERNELS(bf16, 1)
AMP_CONV_KERNELS(f16, 2)
