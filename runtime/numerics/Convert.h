// Bit-exact conversions between f32 and the low-precision formats of the numeric contract
// (docs/numerics.md). Every function is pure and defined for every input bit pattern.
#ifndef AMP_RUNTIME_NUMERICS_CONVERT_H
#define AMP_RUNTIME_NUMERICS_CONVERT_H

#include <cstdint>

#include "runtime/DType.h"

namespace amp::rt {

// IEEE binary16. f32 -> f16 rounds to nearest even, produces subnormals, overflows to +-inf
// (|x| >= 65520), keeps the sign of zero, and turns NaN into a quiet NaN keeping the top 9 payload
// bits: bit-identical to x86 F16C vcvtps2ph with imm=0 (tested on 10^8 patterns). f16 -> f32 is
// exact; NaNs come back quiet with the payload kept, bit-identical to vcvtph2ps (all 2^16 tested).
// Pure integer code: independent of MXCSR (rounding mode, FTZ/DAZ).
uint16_t f32ToF16(float x);
float f16ToF32(uint16_t h);

// bfloat16. f32 -> bf16 rounds to nearest even, f32 subnormals included (as PyTorch's
// c10::BFloat16 does); NaN becomes a quiet NaN keeping the top payload bits. This equals AVX512-BF16
// vcvtneps2bf16 on every input except f32 subnormals, which that instruction flushes to a signed
// zero (docs/numerics.md). bf16 -> f32 is the exact 16-bit shift, NaN bits untouched.
uint16_t f32ToBF16(float x);
float bf16ToF32(uint16_t b);

// OCP FP8 (OFP8 spec v1.0). E4M3FN: no infinities, one NaN pattern per sign (S.1111.111), max 448.
// E5M2: IEEE-like with infinities, max 57344. Rounding is nearest-even. With saturate=true, finite
// values whose rounded magnitude exceeds max clamp to +-max, and so does +-inf (both formats, as
// ONNX Cast(saturate=1) and CUDA __NV_SATFINITE do); with saturate=false, overflow and +-inf give
// NaN (E4M3FN, sign kept) or +-inf (E5M2). Overflow is decided after rounding: E4M3FN's max 448
// absorbs |x| <= 464, E5M2's max 57344 absorbs |x| < 61440. NaN always maps to NaN (S.1111.111 for
// E4M3FN, S.11111.11 for E5M2). Decoding NaN gives a quiet f32 NaN of the same sign.
uint8_t f32ToF8E4M3FN(float x, bool saturate);
float f8E4M3FNToF32(uint8_t v);
uint8_t f32ToF8E5M2(float x, bool saturate);
float f8E5M2ToF32(uint8_t v);

// Rounds an f32 value to the nearest value representable in `t` (RNE) and returns it as f32.
// For F32 and F64 this is the identity. FP8 uses non-saturating mode. For integer types and bool
// it is the value storeFromF32 followed by loadAsF32 yields.
float roundToDType(DType t, float x);

// Element access used by executors: reads element `index` of a buffer of dtype `t` as f32 (integers
// and bools convert exactly when representable, else RNE), or writes an f32 value rounded RNE to
// `t` (integers: truncation toward zero, saturating, NaN -> 0; bool: value != 0, so NaN -> 1).
float loadAsF32(DType t, const void* base, int64_t index);
void storeFromF32(DType t, void* base, int64_t index, float value);

// Converts n elements from one dtype to another. Every rounding is a single correct RNE from the
// source value: float->float goes through f32, and f64/i64 sources reach f16/bf16/FP8 through an
// f32 rounded to odd so they are not double-rounded. float->int truncates toward zero as C++ does,
// and where C++ is undefined saturates to the type's range with NaN -> 0 (CUDA cvt.rzi.sat);
// int->int narrowing wraps (two's complement); ->bool is value != 0. FP8 is non-saturating.
// f32 <-> f16/bf16 run SimdConvert's vector loops when the host has AVX2 and F16C (the cpu
// features AMP_CPU_FEATURES leaves, checked once); every result bit is the scalar code's.
void convertBuffer(DType src, const void* in, DType dst, void* out, int64_t n);

// convertBuffer on scalar code only (what it does on a host without AVX2+F16C): for tests and
// for SimdConvert's own non-vector path.
void convertBufferScalar(DType src, const void* in, DType dst, void* out, int64_t n);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_NUMERICS_CONVERT_H
