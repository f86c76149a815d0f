// An elementwise function of one bf16 or f16 value has only 65536 inputs. Where the function is
// expensive (libm calls, the certified erf and tanh GELUs), the cpu device evaluates it once per
// process for every input, with the very kernel it would run per element, and from then on reads
// the results from a table: the kernel's bits by construction, for one table read per element.
#ifndef AMP_RUNTIME_DEVICES_CPU_KERNELS_HALFTABLE_H
#define AMP_RUNTIME_DEVICES_CPU_KERNELS_HALFTABLE_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>

#include "runtime/DType.h"

namespace amp::rt::cpu {

inline constexpr int64_t kHalfInputs = 65536;

// Fills `out` (65536 entries of the table's entry size) from `x`, the 65536 inputs widened to f32,
// in the order of their bit patterns.
using HalfTableFill = std::function<void(const float* x, void* out)>;

// The process's table named `key` over inputs of `dtype` (BF16 or F16), filled on first use.
// Thread-safe; a table lives as long as the process.
const void* halfTable(std::string_view key, DType dtype, size_t entryBytes, const HalfTableFill& fill);

inline bool hasHalfTable(DType dtype) { return dtype == DType::BF16 || dtype == DType::F16; }

}  // namespace amp::rt::cpu

#endif  // AMP_RUNTIME_DEVICES_CPU_KERNELS_HALFTABLE_H
