// Element loads and stores of the CUDA device's library kernels, by type code T: 0 f32, 1 bf16,
// 2 f16 (the 16-bit types as their bit patterns, through the prelude's integer RNE conversions).
// Every value a library kernel computes in f32 is stored through amp_store, rounded once. ampc
// puts this file first among the library kernels (codegen/CMakeLists.txt), after the prelude.
#ifndef AMP_RUNTIME_KERNELS_CUDA_DEVICEIO_CUH
#define AMP_RUNTIME_KERNELS_CUDA_DEVICEIO_CUH

template <int T>
__device__ __forceinline__ float amp_load(const void* p, long long i) {
  if (T == 1) return amp_ld_bf16(((const unsigned short*)p)[i]);
  if (T == 2) return amp_ld_f16(((const unsigned short*)p)[i]);
  return ((const float*)p)[i];
}

template <int T>
__device__ __forceinline__ void amp_store(void* p, long long i, float x) {
  if (T == 1) ((unsigned short*)p)[i] = amp_st_bf16(x);
  if (T == 2) ((unsigned short*)p)[i] = amp_st_f16(x);
  if (T == 0) ((float*)p)[i] = x;
}

// x rounded to type T and back: the value a T tensor holds.
template <int T>
__device__ __forceinline__ float amp_round(float x) {
  if (T == 1) return amp_rn_bf16(x);
  if (T == 2) return amp_rn_f16(x);
  return x;
}

#endif  // AMP_RUNTIME_KERNELS_CUDA_DEVICEIO_CUH
