// scaleByTable (HalfTable.h) for AVX-512F: 16 elements a step, each f32(f64(dy)·table[x]) with
// the table entries gathered as doubles. vmulpd and vcvtpd2ps (round to nearest even, the MXCSR
// default) are the scalar loop's IEEE operations lane by lane. This file alone is compiled with
// -mavx512f (runtime/devices/CMakeLists.txt); HalfTable.cpp calls it only where the host has it.
#include <immintrin.h>

#include <cstdint>

namespace amp::rt::cpu::half_table {

void scaleByTableAvx512(const double* table, const uint16_t* x, const float* dy, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {  // n is a multiple of 16
    const __m512i idx = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)));
    const __m512d dLo = _mm512_i32gather_pd(_mm512_castsi512_si256(idx), table, 8);
    const __m512d dHi = _mm512_i32gather_pd(_mm512_extracti64x4_epi64(idx, 1), table, 8);
    const __m512d gLo = _mm512_cvtps_pd(_mm256_loadu_ps(dy + i));
    const __m512d gHi = _mm512_cvtps_pd(_mm256_loadu_ps(dy + i + 8));
    _mm256_storeu_ps(y + i, _mm512_cvtpd_ps(_mm512_mul_pd(gLo, dLo)));
    _mm256_storeu_ps(y + i + 8, _mm512_cvtpd_ps(_mm512_mul_pd(gHi, dHi)));
  }
}

}  // namespace amp::rt::cpu::half_table
