// --check-numerics on the CUDA device: after each step of an entry's checked graph, one launch per
// float result finds its first non-finite element. ampc appends this file to every cuda bundle's
// kernels (codegen/CMakeLists.txt); the host reads the words after the call and reports the first
// step, in plan order, whose result holds one (runtime/exec/NumericsCheck.h).
//   amp_check_finite_<T>(const void* values, long long n, unsigned long long* first)
//     grid (any, 1, 1), block (256, 1, 1); *first must start as ~0 (a fill of the graph). After the
//     launch *first is the smallest index i < n with values[i] not finite, or still ~0.
template <int T>
__device__ void amp_check_finite(const void* values, long long n, unsigned long long* first) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    if (!isfinite(amp_load<T>(values, i))) atomicMin(first, (unsigned long long)i);
}

#define AMP_CHECK_KERNEL(name, T)                                                                          \
  extern "C" __global__ void __launch_bounds__(256)                                                        \
      amp_check_finite_##name(const void* values, long long n, unsigned long long* first) {                \
    amp_check_finite<T>(values, n, first);                                                                 \
  }
AMP_CHECK_KERNEL(f32, 0)
AMP_CHECK_KERNEL(bf16, 1)
AMP_CHECK_KERNEL(f16, 2)
