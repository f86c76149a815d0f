// Internal to the cpu device: whether a stored float run holds a NaN or an infinity, decided on
// the bits (exponent field all ones), so f32/bf16/f16 are read in place, without widening, by a
// branch-free loop the compiler vectorises at the baseline ISA (no dispatch needed). The answer is
// a yes/no, so the order elements are looked at in cannot change it.
#ifndef AMP_RUNTIME_DEVICES_CPU_KERNELS_NONFINITESCAN_H
#define AMP_RUNTIME_DEVICES_CPU_KERNELS_NONFINITESCAN_H

#include <cmath>
#include <cstdint>

#include "runtime/DType.h"
#include "runtime/numerics/Convert.h"

namespace amp::rt::cpu {

namespace nonfinite_detail {

// Any element of bits[0..n) whose `Exp` bits are all set; blocks of 2048 so a hit stops the scan.
template <typename Bits, Bits Exp>
bool anyExponentAllOnes(const uint8_t* data, int64_t n) {
  constexpr int64_t kBlock = 2048;
  const Bits* bits = reinterpret_cast<const Bits*>(data);
  for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
    const Bits* block = bits + i0;
    const int64_t m = n - i0 < kBlock ? n - i0 : kBlock;
    Bits hit = 0;
    for (int64_t k = 0; k < m; ++k) hit |= static_cast<Bits>((block[k] & Exp) == Exp);
    if (hit) return true;
  }
  return false;
}

}  // namespace nonfinite_detail

// Whether any of the n elements of `data` (type t) is NaN or +-inf.
inline bool anyNonFinite(DType t, const uint8_t* data, int64_t n) {
  switch (t) {
    case DType::F32: return nonfinite_detail::anyExponentAllOnes<uint32_t, 0x7f800000u>(data, n);
    case DType::BF16: return nonfinite_detail::anyExponentAllOnes<uint16_t, 0x7f80u>(data, n);
    case DType::F16: return nonfinite_detail::anyExponentAllOnes<uint16_t, 0x7c00u>(data, n);
    default: break;
  }
  const size_t es = dtypeSize(t);
  alignas(64) float v[512];
  for (int64_t i0 = 0; i0 < n; i0 += 512) {
    const int64_t m = n - i0 < 512 ? n - i0 : 512;
    convertBuffer(t, data + i0 * static_cast<int64_t>(es), DType::F32, v, m);
    for (int64_t k = 0; k < m; ++k)
      if (!std::isfinite(v[k])) return true;
  }
  return false;
}

}  // namespace amp::rt::cpu

#endif  // AMP_RUNTIME_DEVICES_CPU_KERNELS_NONFINITESCAN_H
