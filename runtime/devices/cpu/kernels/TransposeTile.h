// The transpose step's copy kernels (CpuLayout.cpp): a tile transposed through registers and a
// short row copied inline. Bit moves only (integer unpacks, no float arithmetic), so the values,
// NaN payloads included, arrive unchanged. SSE2 is part of x86-64, so no run-time dispatch.
#ifndef AMP_RUNTIME_DEVICES_CPU_KERNELS_TRANSPOSETILE_H
#define AMP_RUNTIME_DEVICES_CPU_KERNELS_TRANSPOSETILE_H

#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace amp::rt::cpu::transpose {

#if defined(__SSE2__)
inline __m128i load(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }
inline void store(void* p, __m128i v) { _mm_storeu_si128(static_cast<__m128i*>(p), v); }

// 8x8 blocks of 2-byte elements: y[i * ldy + j] = x[i + j * ldx] for i, j < 8.
inline void block8x8(const uint16_t* x, int64_t ldx, uint16_t* y, int64_t ldy) {
  __m128i r[8], a[8], b[8];
  for (int j = 0; j < 8; ++j) r[j] = load(x + j * ldx);
  for (int k = 0; k < 4; ++k) {
    a[2 * k] = _mm_unpacklo_epi16(r[2 * k], r[2 * k + 1]);
    a[2 * k + 1] = _mm_unpackhi_epi16(r[2 * k], r[2 * k + 1]);
  }
  for (int h = 0; h < 2; ++h)
    for (int k = 0; k < 2; ++k) {
      b[4 * h + 2 * k] = _mm_unpacklo_epi32(a[4 * h + k], a[4 * h + k + 2]);
      b[4 * h + 2 * k + 1] = _mm_unpackhi_epi32(a[4 * h + k], a[4 * h + k + 2]);
    }
  for (int k = 0; k < 4; ++k) {
    store(y + (2 * k) * ldy, _mm_unpacklo_epi64(b[k], b[k + 4]));
    store(y + (2 * k + 1) * ldy, _mm_unpackhi_epi64(b[k], b[k + 4]));
  }
}

// 4x4 blocks of 4-byte elements, the same contract.
inline void block4x4(const uint32_t* x, int64_t ldx, uint32_t* y, int64_t ldy) {
  const __m128i r0 = load(x), r1 = load(x + ldx), r2 = load(x + 2 * ldx), r3 = load(x + 3 * ldx);
  const __m128i a0 = _mm_unpacklo_epi32(r0, r1), a1 = _mm_unpackhi_epi32(r0, r1);
  const __m128i a2 = _mm_unpacklo_epi32(r2, r3), a3 = _mm_unpackhi_epi32(r2, r3);
  store(y, _mm_unpacklo_epi64(a0, a2));
  store(y + ldy, _mm_unpackhi_epi64(a0, a2));
  store(y + 2 * ldy, _mm_unpacklo_epi64(a1, a3));
  store(y + 3 * ldy, _mm_unpackhi_epi64(a1, a3));
}
#endif

// y[i * ldy + j] = x[i + j * ldx] for i < m, j < n: register blocks where they fit, element copies
// on the edges.
template <typename T>
inline void tile(const T* x, int64_t ldx, T* y, int64_t ldy, int64_t m, int64_t n) {
  int64_t i0 = 0, j0 = 0;
#if defined(__SSE2__)
  constexpr int64_t kB = 16 / sizeof(T);
  static_assert(sizeof(T) == 2 || sizeof(T) == 4, "2- and 4-byte elements");
  for (; i0 + kB <= m; i0 += kB)
    for (int64_t j = 0; j + kB <= n; j += kB) {
      if constexpr (sizeof(T) == 2)
        block8x8(x + i0 + j * ldx, ldx, y + i0 * ldy + j, ldy);
      else
        block4x4(x + i0 + j * ldx, ldx, y + i0 * ldy + j, ldy);
    }
  j0 = n - n % kB;
  // Right edge of the blocked rows (columns j0..n), then the rows below them, all columns.
  for (int64_t i = 0; i < i0; ++i)
    for (int64_t j = j0; j < n; ++j) y[i * ldy + j] = x[i + j * ldx];
#endif
  for (int64_t i = i0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) y[i * ldy + j] = x[i + j * ldx];
}

// tile() on raw elements of `es` bytes (2: bf16/f16, 4: f32), for callers typed only by size.
inline void tileBits(size_t es, const void* x, int64_t ldx, void* y, int64_t ldy, int64_t m, int64_t n) {
  if (es == 4)
    tile(static_cast<const uint32_t*>(x), ldx, static_cast<uint32_t*>(y), ldy, m, n);
  else
    tile(static_cast<const uint16_t*>(x), ldx, static_cast<uint16_t*>(y), ldy, m, n);
}

// A row of `bytes` bytes; short rows (a head's D elements) are copied inline, 16 bytes at a time.
inline void copyRow(uint8_t* dst, const uint8_t* src, size_t bytes) {
  if (bytes > 256) {
    std::memcpy(dst, src, bytes);
    return;
  }
  size_t k = 0;
  for (; k + 16 <= bytes; k += 16) std::memcpy(dst + k, src + k, 16);
  for (; k < bytes; ++k) dst[k] = src[k];
}

}  // namespace amp::rt::cpu::transpose

#endif  // AMP_RUNTIME_DEVICES_CPU_KERNELS_TRANSPOSETILE_H
