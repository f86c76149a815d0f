// The ops of the amp dialect as an enum, for the runtime (which links no MLIR). The list comes
// from the dialect's ODS through runtime/plan/OpCatalog.inc (generated, checked in, tested for
// staleness), so code that switches over OpCode without a default is checked at compile time to
// cover every op.
#ifndef AMP_RUNTIME_PLAN_OPCODE_H
#define AMP_RUNTIME_PLAN_OPCODE_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace amp::rt {

enum class OpCode : uint16_t {
#define AMP_OP(code, name) code,
#include "runtime/plan/OpCatalog.inc"
#undef AMP_OP
};

inline constexpr std::string_view kOpNames[] = {
#define AMP_OP(code, name) name,
#include "runtime/plan/OpCatalog.inc"
#undef AMP_OP
};
inline constexpr size_t kOpCodeCount = sizeof(kOpNames) / sizeof(kOpNames[0]);

inline constexpr std::string_view opName(OpCode code) { return kOpNames[static_cast<size_t>(code)]; }

// The op called `name` ("amp.matmul"), or nullopt for a name the dialect does not define.
std::optional<OpCode> opCodeOf(std::string_view name);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_PLAN_OPCODE_H
