// Bit-exact conversions of the numeric contract (docs/numerics.md).
//
// Every narrowing conversion is done on the integer bit pattern, never with FP arithmetic, so the
// result does not depend on MXCSR (rounding mode, FTZ/DAZ) and needs no libm. The one exception is
// the f64/i64 -> narrow-float path in convertBuffer, which uses C++ casts (documented below).
#include "runtime/numerics/Convert.h"

#include <cstring>
#include <limits>

#include "runtime/numerics/SimdConvert.h"

namespace amp::rt {
namespace {

inline uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float floatOf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

constexpr uint32_t kF32Inf = 0x7f800000u;

// Rounds |x| (f32 bits `a`, finite, sign cleared) to a binary format with M mantissa bits and
// exponent bias B, round-to-nearest-even, with an unbounded exponent range upwards. Returns the
// magnitude code (exponent << M | mantissa) of the target format; a code above the format's max
// finite code means overflow and is handled by the caller. Subnormals are produced exactly.
template <int M, int B>
inline uint32_t roundMagnitude(uint32_t a) {
  constexpr int kDrop = 23 - M;              // f32 mantissa bits that are rounded away
  constexpr uint32_t kMinNormalExp = 127 - B + 1;  // f32 biased exponent of the target's 2^(1-B)
  const uint32_t e = a >> 23;
  // Both candidates are computed and one selected, so a loop over a buffer has no data-dependent
  // branch (mixed normal/subnormal data would otherwise mispredict).
  // Normal: rebias the exponent in place; a mantissa carry rolls into the exponent, which is
  // exactly right (including the carry to the next binade and to overflow).
  const uint32_t h = a - ((127 - B) << 23);
  const uint32_t normal = (h + ((1u << (kDrop - 1)) - 1) + ((h >> kDrop) & 1)) >> kDrop;
  // Subnormal (or zero) in the target: the value in units of the target's smallest subnormal
  // 2^(1-B-M) is m * 2^-shift. f32 denormals (e == 0) have no implicit bit and exponent 1.
  const uint32_t m = (a & 0x7fffffu) | (e ? 0x800000u : 0u);
  const uint32_t eff = e ? e : 1;
  uint32_t shift = eff < kMinNormalExp ? (kMinNormalExp + kDrop) - eff : kDrop + 1;
  shift = shift > 31 ? 31 : shift;  // m < 2^24, so any shift >= 25 already rounds to 0
  const uint32_t half = 1u << (shift - 1);
  const uint32_t sub = (m + (half - 1) + ((m >> shift) & 1)) >> shift;
  return e >= kMinNormalExp ? normal : sub;
}

// Decodes sign/exponent/mantissa fields of a small binary format with M mantissa bits and bias B,
// for codes that are finite (the caller handles inf/NaN). Exact: every such value is an f32 normal.
template <int M, int B>
inline float decodeFinite(uint32_t sign32, uint32_t exp, uint32_t mant) {
  // Subnormal: mant * 2^(1-B-M), an exact int->float conversion times an exact power of two.
  constexpr uint32_t kScaleBits = uint32_t(127 + 1 - B - M) << 23;
  const uint32_t sub = bitsOf(float(mant) * floatOf(kScaleBits));
  const uint32_t normal = ((exp + 127 - B) << 23) | (mant << (23 - M));
  return floatOf(sign32 | (exp == 0 ? sub : normal));  // a select, not a branch
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// f16

uint16_t f32ToF16(float x) {
  const uint32_t u = bitsOf(x);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t a = u & 0x7fffffffu;
  // Selects instead of early returns keep a conversion loop branch-free. inf needs no case of its
  // own: its exponent rounds far above max and takes the overflow select.
  const uint32_t r = roundMagnitude<10, 15>(a);
  const uint32_t finite = r > 0x7bffu ? 0x7c00u : r;  // overflow (|x| >= 65520) -> inf
  // NaN: set the quiet bit, keep the top 9 payload bits (x86 F16C).
  const uint32_t nan = 0x7e00u | ((a >> 13) & 0x3ffu);
  return uint16_t(sign | (a > kF32Inf ? nan : finite));
}

float f16ToF32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  // inf, or NaN made quiet like x86 vcvtph2ps (payload kept)
  const uint32_t special = sign | kF32Inf | (mant ? 0x400000u : 0u) | (mant << 13);
  const float finite = decodeFinite<10, 15>(sign, exp, mant);
  return exp == 0x1f ? floatOf(special) : finite;
}

// ---------------------------------------------------------------------------------------------
// bf16: the upper half of an f32, so rounding is a single add on the low half.

uint16_t f32ToBF16(float x) {
  const uint32_t u = bitsOf(x);
  if ((u & 0x7fffffffu) > kF32Inf) return uint16_t((u >> 16) | 0x0040u);  // quiet, keep payload
  // RNE; a carry out of the mantissa correctly reaches the next binade or inf. f32 subnormals are
  // rounded like any other value (no flush: this differs from vcvtneps2bf16, see docs).
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

float bf16ToF32(uint16_t b) { return floatOf(uint32_t(b) << 16); }  // exact, NaN bits untouched

// ---------------------------------------------------------------------------------------------
// OCP FP8

uint8_t f32ToF8E4M3FN(float x, bool saturate) {
  const uint32_t u = bitsOf(x);
  const uint32_t sign = (u >> 24) & 0x80u;
  const uint32_t a = u & 0x7fffffffu;
  constexpr uint32_t kMax = 0x7e, kNaN = 0x7f;  // S.1111.110 = 448, S.1111.111 = NaN
  if (a > kF32Inf) return uint8_t(sign | kNaN);
  // E4M3FN has no inf: inf and finite overflow both become NaN, or max when saturating.
  const uint32_t r = a == kF32Inf ? kNaN : roundMagnitude<3, 7>(a);
  return uint8_t(sign | (r <= kMax ? r : saturate ? kMax : kNaN));
}

float f8E4M3FNToF32(uint8_t v) {
  const uint32_t sign = uint32_t(v & 0x80u) << 24;
  if ((v & 0x7fu) == 0x7fu) return floatOf(sign | 0x7fc00000u);
  return decodeFinite<3, 7>(sign, (v >> 3) & 0xfu, v & 0x7u);
}

uint8_t f32ToF8E5M2(float x, bool saturate) {
  const uint32_t u = bitsOf(x);
  const uint32_t sign = (u >> 24) & 0x80u;
  const uint32_t a = u & 0x7fffffffu;
  constexpr uint32_t kMax = 0x7b, kInf = 0x7c;  // S.11110.11 = 57344, S.11111.00 = inf
  if (a > kF32Inf) return uint8_t(sign | 0x7fu);  // the NaN PyTorch's c10::Float8_e5m2 produces
  const uint32_t r = a == kF32Inf ? kInf : roundMagnitude<2, 15>(a);
  return uint8_t(sign | (r <= kMax ? r : saturate ? kMax : kInf));
}

float f8E5M2ToF32(uint8_t v) {
  const uint32_t sign = uint32_t(v & 0x80u) << 24;
  const uint32_t exp = (v >> 2) & 0x1fu, mant = v & 0x3u;
  if (exp == 0x1f) return floatOf(sign | kF32Inf | (mant ? 0x400000u | (mant << 21) : 0u));
  return decodeFinite<2, 15>(sign, exp, mant);
}

// ---------------------------------------------------------------------------------------------
// DType-generic helpers

namespace {

// float -> integer: truncation toward zero (as C++), with the cases C++ leaves undefined defined
// as CUDA's cvt.rzi.sat does: NaN -> 0, out-of-range values saturate to the type's min/max.
template <typename T>
T floatToInt(double d) {
  using L = std::numeric_limits<T>;
  if (d != d) return 0;
  const double hiPlus1 = double(uint64_t(1) << L::digits);  // 2^63, 2^31 or 2^8: exact doubles
  const double loMinus1 = L::is_signed ? -hiPlus1 - 1.0 : -1.0;  // anything <= this saturates
  if (d >= hiPlus1) return L::max();
  if (d <= loMinus1) return L::min();
  return static_cast<T>(d);
}

// Rounds to f32 with round-to-odd (truncate, then set the last bit if anything was dropped).
// Rounding that result again to a format with at most 22 significant bits gives the correctly
// rounded result, so f64/i64 -> f16/bf16/f8 is not double-rounded. Uses the hardware's RNE cast
// and needs the default MXCSR (no FTZ/DAZ); f64 is only used for I/O of reference data.
float f32RoundOdd(double d) {
  const float f = static_cast<float>(d);
  if (double(f) == d || (f - f) != 0.0f || d != d) return f;  // exact, inf or NaN
  const uint32_t b = bitsOf(f);
  if (b & 1u) return f;  // RNE landed on the odd neighbour: that is the round-to-odd result
  // RNE picked the even neighbour; the odd one is one ulp towards d.
  const bool awayFromZero = (f < 0 ? -double(f) : double(f)) > (d < 0 ? -d : d);
  return floatOf(awayFromZero ? b - 1 : b + 1);
}

float f32RoundOdd(int64_t v) {
  const bool neg = v < 0;
  uint64_t mag = neg ? 0 - uint64_t(v) : uint64_t(v);
  uint32_t scaleExp = 0;
  if (mag >> 24) {  // keep 24 significant bits, OR-ing everything dropped into the last one
    const int sh = 40 - __builtin_clzll(mag);
    mag = (mag >> sh) | ((mag & ((uint64_t(1) << sh) - 1)) != 0);
    scaleExp = uint32_t(sh);
  }
  const float f = float(mag) * floatOf((127 + scaleExp) << 23);  // both factors exact
  return neg ? -f : f;
}

// A float source element read in full precision (f64 keeps its own precision).
struct Wide {
  bool isInt;
  int64_t i;
  double d;
};

Wide loadWide(DType t, const void* base, int64_t index) {
  switch (t) {
    case DType::I64: return {true, static_cast<const int64_t*>(base)[index], 0};
    case DType::I32: return {true, static_cast<const int32_t*>(base)[index], 0};
    case DType::U8: return {true, static_cast<const uint8_t*>(base)[index], 0};
    case DType::Bool: return {true, static_cast<const uint8_t*>(base)[index] != 0, 0};
    case DType::F64: return {false, 0, static_cast<const double*>(base)[index]};
    default: return {false, 0, loadAsF32(t, base, index)};
  }
}

void storeWide(DType t, void* base, int64_t index, const Wide& w, DType src) {
  switch (t) {
    case DType::I64:
      static_cast<int64_t*>(base)[index] = w.isInt ? w.i : floatToInt<int64_t>(w.d);
      return;
    case DType::I32:  // int -> int narrowing wraps (two's complement), as C++20 defines it
      static_cast<int32_t*>(base)[index] = w.isInt ? int32_t(uint32_t(w.i)) : floatToInt<int32_t>(w.d);
      return;
    case DType::U8:
      static_cast<uint8_t*>(base)[index] = w.isInt ? uint8_t(w.i) : floatToInt<uint8_t>(w.d);
      return;
    case DType::Bool:
      static_cast<uint8_t*>(base)[index] = w.isInt ? w.i != 0 : w.d != 0.0;  // NaN -> true
      return;
    case DType::F64:
      static_cast<double*>(base)[index] = w.isInt ? double(w.i) : w.d;
      return;
    case DType::F32:
      static_cast<float*>(base)[index] = w.isInt ? float(w.i) : float(w.d);
      return;
    default: {
      // Narrow float. f32-or-narrower sources are already exact in f32; wider ones go through
      // round-to-odd so the final RNE is the only rounding that counts.
      float f;
      if (w.isInt)
        f = f32RoundOdd(w.i);
      else
        f = src == DType::F64 ? f32RoundOdd(w.d) : float(w.d);
      storeFromF32(t, base, index, f);
    }
  }
}

}  // namespace

float roundToDType(DType t, float x) {
  switch (t) {
    case DType::F16: return f16ToF32(f32ToF16(x));
    case DType::BF16: return bf16ToF32(f32ToBF16(x));
    case DType::F8E4M3FN: return f8E4M3FNToF32(f32ToF8E4M3FN(x, false));
    case DType::F8E5M2: return f8E5M2ToF32(f32ToF8E5M2(x, false));
    case DType::F32:
    case DType::F64: return x;
    default: {
      // Integer types: the value a store followed by a load yields (truncate, saturate, NaN->0).
      uint8_t tmp[8];
      storeFromF32(t, tmp, 0, x);
      return loadAsF32(t, tmp, 0);
    }
  }
}

float loadAsF32(DType t, const void* base, int64_t index) {
  switch (t) {
    case DType::F32: return static_cast<const float*>(base)[index];
    case DType::F16: return f16ToF32(static_cast<const uint16_t*>(base)[index]);
    case DType::BF16: return bf16ToF32(static_cast<const uint16_t*>(base)[index]);
    case DType::F8E4M3FN: return f8E4M3FNToF32(static_cast<const uint8_t*>(base)[index]);
    case DType::F8E5M2: return f8E5M2ToF32(static_cast<const uint8_t*>(base)[index]);
    case DType::I64: return float(static_cast<const int64_t*>(base)[index]);  // RNE if > 2^24
    case DType::I32: return float(static_cast<const int32_t*>(base)[index]);
    case DType::U8: return float(static_cast<const uint8_t*>(base)[index]);
    case DType::Bool: return static_cast<const uint8_t*>(base)[index] != 0 ? 1.0f : 0.0f;
    case DType::F64: return float(static_cast<const double*>(base)[index]);
  }
  return 0.0f;
}

void storeFromF32(DType t, void* base, int64_t index, float value) {
  switch (t) {
    case DType::F32: static_cast<float*>(base)[index] = value; return;
    case DType::F16: static_cast<uint16_t*>(base)[index] = f32ToF16(value); return;
    case DType::BF16: static_cast<uint16_t*>(base)[index] = f32ToBF16(value); return;
    case DType::F8E4M3FN: static_cast<uint8_t*>(base)[index] = f32ToF8E4M3FN(value, false); return;
    case DType::F8E5M2: static_cast<uint8_t*>(base)[index] = f32ToF8E5M2(value, false); return;
    case DType::I64: static_cast<int64_t*>(base)[index] = floatToInt<int64_t>(value); return;
    case DType::I32: static_cast<int32_t*>(base)[index] = floatToInt<int32_t>(value); return;
    case DType::U8: static_cast<uint8_t*>(base)[index] = floatToInt<uint8_t>(value); return;
    case DType::Bool: static_cast<uint8_t*>(base)[index] = value != 0.0f; return;
    case DType::F64: static_cast<double*>(base)[index] = value; return;
  }
}

void convertBufferScalar(DType src, const void* in, DType dst, void* out, int64_t n) {
  // Hot paths (f32 <-> f16/bf16 on every step) first, so a short call pays no dtypeSize or switch.
  auto map = [n](const auto* from, auto* to, auto fn) {
    for (int64_t i = 0; i < n; ++i) to[i] = fn(from[i]);
  };
  const auto* f32In = static_cast<const float*>(in);
  auto* f32Out = static_cast<float*>(out);
  auto* u16Out = static_cast<uint16_t*>(out);
  const auto* u16In = static_cast<const uint16_t*>(in);
  if (src == DType::F32 && dst == DType::BF16) return map(f32In, u16Out, [](float x) { return f32ToBF16(x); });
  if (src == DType::BF16 && dst == DType::F32) return map(u16In, f32Out, [](uint16_t b) { return bf16ToF32(b); });
  if (src == DType::F32 && dst == DType::F16) return map(f32In, u16Out, [](float x) { return f32ToF16(x); });
  if (src == DType::F16 && dst == DType::F32) return map(u16In, f32Out, [](uint16_t h) { return f16ToF32(h); });
  if (src == dst) {
    std::memcpy(out, in, size_t(n) * dtypeSize(src));
    return;
  }
  if (src == DType::F32 && dst != DType::F64 && isFloat(dst)) {  // f32 -> FP8
    for (int64_t i = 0; i < n; ++i) storeFromF32(dst, out, i, f32In[i]);
    return;
  }
  if (dst == DType::F32 && src != DType::F64 && isFloat(src)) {  // FP8 -> f32
    for (int64_t i = 0; i < n; ++i) f32Out[i] = loadAsF32(src, in, i);
    return;
  }
  for (int64_t i = 0; i < n; ++i) storeWide(dst, out, i, loadWide(src, in, i), src);
}

void convertBuffer(DType src, const void* in, DType dst, void* out, int64_t n) {
  // f32 <-> f16/bf16 take SimdConvert's AVX2/F16C loops where the host has them (decided once);
  // they are bit-identical to the scalar code, so only the speed depends on the machine.
  if (src == DType::F32 && (dst == DType::BF16 || dst == DType::F16))
    return narrowFromF32(static_cast<const float*>(in), dst, out, n, simdConvertOnHost());
  if (dst == DType::F32 && (src == DType::BF16 || src == DType::F16))
    return widenToF32(src, in, static_cast<float*>(out), n, simdConvertOnHost());
  convertBufferScalar(src, in, dst, out, n);
}

}  // namespace amp::rt
