// Buffer conversions between f32 and f16/bf16/FP8 with the numeric contract's bits, on AVX2 + F16C
// where the caller says the host has them: the cpu device's GEMMs widen their operands with these
// and round their results back (runtime/devices/cpu/kernels/Gemm.h), and convertBuffer takes them for
// f32 <-> f16/bf16 when simdConvertOnHost().
#ifndef AMP_RUNTIME_NUMERICS_SIMDCONVERT_H
#define AMP_RUNTIME_NUMERICS_SIMDCONVERT_H

#include <cstdint>

#include "runtime/DType.h"

namespace amp::rt {

// Bit-identical to convertBuffer (Convert.h) for every input. With `simd` (pass it only when the
// host has AVX2 and F16C: the loops are compiled for them whatever the build's -march) f16 and
// bf16 take 8-lane F16C/AVX2 loops instead of convertBuffer's scalar code.
void widenToF32(DType from, const void* in, float* out, int64_t n, bool simd);
void narrowFromF32(const float* in, DType to, void* out, int64_t n, bool simd);

// Whether this host runs the loops above: AVX2 and F16C in CpuFeatures::host() (so
// AMP_CPU_FEATURES=x86-64 turns them off). Checked once; convertBuffer asks it.
bool simdConvertOnHost();

}  // namespace amp::rt

#endif  // AMP_RUNTIME_NUMERICS_SIMDCONVERT_H
