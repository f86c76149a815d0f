#include "runtime/plan/OpCode.h"

#include <algorithm>

namespace amp::rt {

// The catalogue is sorted by name (the generator sorts it), so a name is found by bisection.
static_assert([] {
  for (size_t i = 1; i < kOpCodeCount; ++i)
    if (!(kOpNames[i - 1] < kOpNames[i])) return false;
  return true;
}(), "runtime/plan/OpCatalog.inc must be sorted by op name");

std::optional<OpCode> opCodeOf(std::string_view name) {
  const std::string_view* end = kOpNames + kOpCodeCount;
  const std::string_view* it = std::lower_bound(kOpNames, end, name);
  if (it == end || *it != name) return std::nullopt;
  return static_cast<OpCode>(it - kOpNames);
}

}  // namespace amp::rt
