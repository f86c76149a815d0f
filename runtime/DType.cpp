#include "runtime/DType.h"

namespace amp::rt {

size_t dtypeSize(DType t) {
  switch (t) {
    case DType::F32: return 4;
    case DType::F16: return 2;
    case DType::BF16: return 2;
    case DType::F8E4M3FN: return 1;
    case DType::F8E5M2: return 1;
    case DType::I64: return 8;
    case DType::I32: return 4;
    case DType::U8: return 1;
    case DType::Bool: return 1;
    case DType::F64: return 8;
  }
  return 0;
}

std::string_view dtypeName(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::F8E4M3FN: return "f8E4M3FN";
    case DType::F8E5M2: return "f8E5M2";
    case DType::I64: return "i64";
    case DType::I32: return "i32";
    case DType::U8: return "ui8";
    case DType::Bool: return "i1";
    case DType::F64: return "f64";
  }
  return "?";
}

std::optional<DType> parseDType(std::string_view name) {
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F8E4M3FN, DType::F8E5M2, DType::I64,
                  DType::I32, DType::U8, DType::Bool, DType::F64})
    if (dtypeName(t) == name) return t;
  return std::nullopt;
}

bool isFloat(DType t) {
  switch (t) {
    case DType::F32:
    case DType::F16:
    case DType::BF16:
    case DType::F8E4M3FN:
    case DType::F8E5M2:
    case DType::F64: return true;
    default: return false;
  }
}

}  // namespace amp::rt
