// Bit-exact conversions between f32 and the low-precision formats of the numeric contract
// (docs/numerics.md). Every function is pure and defined for every input bit pattern.
#ifndef AMP_RUNTIME_NUMERICS_CONVERT_H
#define AMP_RUNTIME_NUMERICS_CONVERT_H

#include <cstdint>

#include "runtime/DType.h"

namespace amp::rt {

// IEEE binary16. f32 -> f16 rounds to nearest even, produces subnormals, overflows to +-inf,
// keeps the sign of zero, and turns NaN into a quiet NaN keeping the top payload bits
// (the behaviour of x86 F16C vcvtps2ph with imm=0).
uint16_t f32ToF16(float x);
float f16ToF32(uint16_t h);

// bfloat16. f32 -> bf16 rounds to nearest even; NaN becomes a quiet NaN keeping the top payload
// bits (the behaviour of AVX512-BF16 vcvtneps2bf16, which does not flush subnormals... see docs).
uint16_t f32ToBF16(float x);
float bf16ToF32(uint16_t b);

// OCP FP8 (OFP8 spec v1.0). E4M3FN: no infinities, one NaN pattern per sign (S.1111.111), max 448.
// E5M2: IEEE-like with infinities, max 57344. Rounding is nearest-even. With saturate=true, finite
// values beyond the max clamp to +-max (and +-inf clamps to +-max for E5M2, to +-max for E4M3FN);
// with saturate=false, overflow gives NaN (E4M3FN) or +-inf (E5M2). NaN always maps to NaN.
uint8_t f32ToF8E4M3FN(float x, bool saturate);
float f8E4M3FNToF32(uint8_t v);
uint8_t f32ToF8E5M2(float x, bool saturate);
float f8E5M2ToF32(uint8_t v);

// Rounds an f32 value to the nearest value representable in `t` (RNE) and returns it as f32.
// For F32 this is the identity. FP8 uses non-saturating mode.
float roundToDType(DType t, float x);

// Element access used by executors: reads element `index` of a buffer of dtype `t` as f32 (integers
// and bools convert exactly when representable), or writes an f32 value rounded RNE to `t`.
float loadAsF32(DType t, const void* base, int64_t index);
void storeFromF32(DType t, void* base, int64_t index, float value);

// Converts n elements from one dtype to another (float<->float through f32 with RNE;
// float->int truncates toward zero as C++ does; bool is value != 0).
void convertBuffer(DType src, const void* in, DType dst, void* out, int64_t n);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_NUMERICS_CONVERT_H
