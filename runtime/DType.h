// Element types the runtime stores and computes with.
#ifndef AMP_RUNTIME_DTYPE_H
#define AMP_RUNTIME_DTYPE_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace amp::rt {

enum class DType : uint8_t {
  F32,
  F16,
  BF16,
  F8E4M3FN,
  F8E5M2,
  I64,
  I32,
  U8,
  Bool,  // i1 in the IR; one byte per element in memory.
  F64,   // only for I/O of reference data; never produced by compiled programs.
};

// Bytes per element in memory.
size_t dtypeSize(DType t);
// Spelling used in the IR and in plans: "f32", "f16", "bf16", "f8E4M3FN", "f8E5M2", "i64",
// "i32", "ui8", "i1", "f64".
std::string_view dtypeName(DType t);
std::optional<DType> parseDType(std::string_view name);
bool isFloat(DType t);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_DTYPE_H
