#include "runtime/plan/PoolWindow.h"

#include <type_traits>
#include <variant>

namespace amp::rt {
namespace {

template <typename A>
PoolWindow windowOf(const A& a) {
  if constexpr (std::is_same_v<decltype(a.stride), std::optional<std::vector<int64_t>>>)
    return {a.kernel, a.stride.value_or(a.kernel), a.padding};
  else
    return {a.kernel, a.stride, a.padding};
}

}  // namespace

std::optional<PoolWindow> poolWindowOf(const OpAttrs& decoded) {
  if (const auto* a = std::get_if<MaxPool2DAttrs>(&decoded)) return windowOf(*a);
  if (const auto* a = std::get_if<AvgPool2DAttrs>(&decoded)) return windowOf(*a);
  if (const auto* a = std::get_if<MaxPool2DGradAttrs>(&decoded)) return windowOf(*a);
  if (const auto* a = std::get_if<AvgPool2DGradAttrs>(&decoded)) return windowOf(*a);
  return std::nullopt;
}

absl::StatusOr<PoolWindow> poolWindowOf(const PlanStep& step) {
  return step.withAttrsOf<MaxPool2DAttrs, AvgPool2DAttrs, MaxPool2DGradAttrs, AvgPool2DGradAttrs>(
      [](const auto& a) { return windowOf(a); });
}

}  // namespace amp::rt
