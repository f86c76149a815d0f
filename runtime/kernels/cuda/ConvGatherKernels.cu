// The column gathers of the cuda device's implicit-GEMM convolutions (ConvGather.h): bit copies
// of 2- or 4-byte elements, +0 where the map says -1. One thread per element written, grid-strided.
// Block (256, 1, 1), any grid. ampc appends this file, after ConvGather.h, to every cuda bundle's
// kernels (codegen/CMakeLists.txt).
//   amp_conv_gather_b16 / _b32(const void* src, void* dst, AmpConvShape s, int mode)

template <class Bits>
__device__ void amp_conv_gather(const void* src, void* dst, const AmpConvShape& s, int mode) {
  const Bits* in = static_cast<const Bits*>(src);
  Bits* out = static_cast<Bits*>(dst);
  const long long count = amp_conv_gather_count(s, mode);
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += (long long)gridDim.x * blockDim.x) {
    const long long j = amp_conv_gather_source(s, mode, i);
    out[i] = j >= 0 ? in[j] : Bits(0);
  }
}

extern "C" __global__ void __launch_bounds__(256) amp_conv_gather_b16(const void* src, void* dst, AmpConvShape s, int mode) {
  amp_conv_gather<unsigned short>(src, dst, s, mode);
}
extern "C" __global__ void __launch_bounds__(256) amp_conv_gather_b32(const void* src, void* dst, AmpConvShape s, int mode) {
  amp_conv_gather<unsigned int>(src, dst, s, mode);
}
