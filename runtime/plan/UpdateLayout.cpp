#include "runtime/plan/UpdateLayout.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace amp::rt {

absl::StatusOr<UpdateLayout> decodeUpdate(const PlanStep& step) {
  return decodeUpdate(step.op, step.attrs, step.operands.size(), step.results.size());
}

absl::StatusOr<UpdateLayout> decodeUpdate(std::string_view op, const AttrMap& attrs, size_t operands, size_t results) {
  const std::string name(op);  // for messages
  UpdateLayout u;
  u.adam = op == opName(OpCode::AdamUpdate);
  if (!u.adam && op != opName(OpCode::SgdUpdate))
    return absl::InvalidArgumentError(absl::StrCat(name, " is not an optimizer update"));
  auto unscales = attrs.getBool(op, "unscales", false);
  if (!unscales.ok()) return unscales.status();
  if (attrs.has("max_norm")) {
    auto maxNorm = attrs.getDouble(op, "max_norm");
    if (!maxNorm.ok()) return maxNorm.status();
    u.maxNorm = *maxNorm;
  }
  const size_t extras = (*unscales ? 1 : 0) + (u.maxNorm ? 1 : 0);
  if (operands < extras) return absl::InvalidArgumentError(absl::StrCat(name, ": too few operands"));
  const size_t own = operands - extras;
  if (u.adam) {
    if (own != 7) return absl::InvalidArgumentError(absl::StrCat(name, ": expected 7 operands before the fused ones, got ", own));
    u.step = 4;
    u.lr = 5;
    u.foundInf = 6;
    u.stateOperands = {0, 2, 3};
  } else {
    if (own != 4 && own != 5)
      return absl::InvalidArgumentError(absl::StrCat(name, ": expected 4 or 5 operands before the fused ones, got ", own));
    u.lr = 2;
    u.foundInf = 3;
    u.stateOperands = own == 5 ? std::vector<size_t>{0, 4} : std::vector<size_t>{0};
  }
  size_t next = own;
  if (*unscales) u.scale = next++;
  if (u.maxNorm) u.norm = next++;
  if (results == u.states() + 1) u.weightCopy = u.states();
  else if (results != u.states())
    return absl::InvalidArgumentError(absl::StrCat(name, ": expected ", u.states(), " results (", u.states() + 1,
                                                   " with a weight copy), got ", results));
  return u;
}

}  // namespace amp::rt
