// Internal to the cpu device: amp.relu applied in place on the stored bits of an f32, bf16 or f16
// run, as the reference computes it: negative values and -0 become +0; NaN (of either sign),
// +inf and positive values stay. Read as a signed integer, a float is negative and not a NaN
// exactly when its bits are <= those of -inf (the negative NaNs lie between -inf and -1), so the
// whole test is one signed compare, which the compiler vectorises at the baseline ISA.
#ifndef AMP_RUNTIME_DEVICES_CPU_KERNELS_RELUBITS_H
#define AMP_RUNTIME_DEVICES_CPU_KERNELS_RELUBITS_H

#include <cstdint>

#include "runtime/DType.h"

namespace amp::rt::cpu {

namespace relu_detail {

// Elements [begin, end) of `bits`; `NegInf` is -inf's bit pattern read as `Signed`.
template <typename Signed, Signed NegInf>
void reluRun(Signed* bits, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) bits[i] = bits[i] <= NegInf ? Signed{0} : bits[i];
}

}  // namespace relu_detail

// relu on elements [begin, end) of the run `data` of type t (f32, bf16 or f16).
inline void reluBitsInPlace(DType t, uint8_t* data, int64_t begin, int64_t end) {
  switch (t) {
    case DType::F32:
      relu_detail::reluRun<int32_t, static_cast<int32_t>(0xff800000u)>(reinterpret_cast<int32_t*>(data), begin, end);
      break;
    case DType::BF16:
      relu_detail::reluRun<int16_t, static_cast<int16_t>(0xff80u)>(reinterpret_cast<int16_t*>(data), begin, end);
      break;
    default:  // f16
      relu_detail::reluRun<int16_t, static_cast<int16_t>(0xfc00u)>(reinterpret_cast<int16_t*>(data), begin, end);
      break;
  }
}

}  // namespace amp::rt::cpu

#endif  // AMP_RUNTIME_DEVICES_CPU_KERNELS_RELUBITS_H
