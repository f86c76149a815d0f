// The passes around a linear layer's cuBLASLt call, where the call cannot carry them
// (runtime/devices/cuda/GemmVariants.h). ampc appends this file, after EpilogueMath.h, to every cuda
// bundle's kernels (codegen/CMakeLists.txt). Block (256, 1, 1), any grid (grid-stride loops).
//   amp_relu_inplace_<T>(void* d, long long n): the reference's relu of each of D's n elements
//     (EpilogueMath.h: NaN kept, -0 -> +0), in place.
//   amp_bias_rows_b16 / _b32(const void* bias, void* d, long long rows, long long cols): D's rows
//     [rows, cols] each a bit copy of bias[cols], for a GEMM that then accumulates onto them.

template <int T>
__device__ void amp_relu_inplace(void* d, long long n) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    if (!amp_relu_keeps(amp_load<T>(d, i))) amp_store<T>(d, i, 0.0f);
}

#define AMP_RELU_KERNEL(name, T)                                                                   \
  extern "C" __global__ void __launch_bounds__(256) amp_relu_inplace_##name(void* d, long long n) { \
    amp_relu_inplace<T>(d, n);                                                                     \
  }
AMP_RELU_KERNEL(f32, 0)
AMP_RELU_KERNEL(bf16, 1)
AMP_RELU_KERNEL(f16, 2)

template <class Bits>
__device__ void amp_bias_rows(const void* bias, void* d, long long rows, long long cols) {
  const Bits* b = static_cast<const Bits*>(bias);
  Bits* out = static_cast<Bits*>(d);
  const long long count = rows * cols;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += (long long)gridDim.x * blockDim.x)
    out[i] = b[i % cols];
}

extern "C" __global__ void __launch_bounds__(256) amp_bias_rows_b16(const void* bias, void* d, long long rows, long long cols) {
  amp_bias_rows<unsigned short>(bias, d, rows, cols);
}
extern "C" __global__ void __launch_bounds__(256) amp_bias_rows_b32(const void* bias, void* d, long long rows, long long cols) {
  amp_bias_rows<unsigned int>(bias, d, rows, cols);
}
