#include "runtime/numerics/SimdConvert.h"

#include "runtime/numerics/Convert.h"
#include "runtime/schema/CpuFeatures.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define AMP_CONVERT_X86_SIMD 1
#endif

namespace amp::rt {
namespace {

#ifdef AMP_CONVERT_X86_SIMD
// Compiled for AVX2+F16C regardless of the build's -march; called only when the host has both.
#define AMP_AVX2_F16C __attribute__((target("avx2,f16c")))

// vcvtph2ps is exact and quiets NaNs keeping the payload, as f16ToF32 does (Convert.h).
AMP_AVX2_F16C void f16ToF32Simd(const uint16_t* in, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
  for (; i < n; ++i) out[i] = f16ToF32(in[i]);
}

// vcvtps2ph with imm 0 (RNE, MXCSR ignored) is bit-identical to f32ToF16 (Convert.h).
AMP_AVX2_F16C void f32ToF16Simd(const float* in, uint16_t* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; ++i) out[i] = f32ToF16(in[i]);
}

AMP_AVX2_F16C void bf16ToF32Simd(const uint16_t* in, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm256_slli_epi32(w, 16));
  }
  for (; i < n; ++i) out[i] = bf16ToF32(in[i]);
}

// f32ToBF16's integer RNE, 8 lanes at a time (not vcvtneps2bf16, which flushes f32 subnormals).
AMP_AVX2_F16C void f32ToBF16Simd(const float* in, uint16_t* out, int64_t n) {
  const __m256i absMask = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
  const __m256i bias = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1), quiet = _mm256_set1_epi32(0x40);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i u = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i));
    const __m256i isNan = _mm256_cmpgt_epi32(_mm256_and_si256(u, absMask), inf);  // both < 2^31
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), one);
    const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(bias, lsb)), 16);
    const __m256i nan = _mm256_or_si256(_mm256_srli_epi32(u, 16), quiet);
    const __m256i r = _mm256_blendv_epi8(rounded, nan, isNan);
    // Every lane is <= 0xffff, so the unsigned-saturating pack is exact; it packs per 128-bit
    // half, and the permute brings the two halves' results together.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm256_castsi256_si128(packed));
  }
  for (; i < n; ++i) out[i] = f32ToBF16(in[i]);
}
#endif  // AMP_CONVERT_X86_SIMD

}  // namespace

bool simdConvertOnHost() {
#ifdef AMP_CONVERT_X86_SIMD
  static const bool simd = [] {
    const CpuFeatures& f = CpuFeatures::host();  // honours AMP_CPU_FEATURES, as the cpu device does
    return f.avx2 && f.f16c;
  }();
  return simd;
#else
  return false;
#endif
}

void widenToF32(DType from, const void* in, float* out, int64_t n, bool simd) {
#ifdef AMP_CONVERT_X86_SIMD
  if (simd && from == DType::F16) return f16ToF32Simd(static_cast<const uint16_t*>(in), out, n);
  if (simd && from == DType::BF16) return bf16ToF32Simd(static_cast<const uint16_t*>(in), out, n);
#endif
  (void)simd;
  convertBufferScalar(from, in, DType::F32, out, n);
}

void narrowFromF32(const float* in, DType to, void* out, int64_t n, bool simd) {
#ifdef AMP_CONVERT_X86_SIMD
  if (simd && to == DType::F16) return f32ToF16Simd(in, static_cast<uint16_t*>(out), n);
  if (simd && to == DType::BF16) return f32ToBF16Simd(in, static_cast<uint16_t*>(out), n);
#endif
  (void)simd;
  convertBufferScalar(DType::F32, in, to, out, n);
}

}  // namespace amp::rt
