#include "runtime/plan/PlanValidation.h"

#include <vector>

#include "absl/strings/str_cat.h"

namespace amp::rt {

absl::Status validateBuffers(const Plan& plan) {
  for (const BufferDesc& b : plan.buffers) {
    int64_t n = 1;
    for (int64_t d : b.shape) {
      if (d < 0) return absl::InvalidArgumentError(absl::StrCat("buffer '", b.name, "' has a negative dimension"));
      if (d != 0 && n > kMaxBufferBytes / d)
        return absl::InvalidArgumentError(absl::StrCat("buffer '", b.name, "' ", shapeToString(b.shape),
                                                       " is larger than the runtime's limit of ",
                                                       kMaxBufferBytes, " bytes"));
      n *= d;
    }
    if (n > kMaxBufferBytes / static_cast<int64_t>(dtypeSize(b.dtype)))
      return absl::InvalidArgumentError(absl::StrCat("buffer '", b.name, "' ", shapeToString(b.shape),
                                                     " is larger than the runtime's limit of ", kMaxBufferBytes,
                                                     " bytes"));
  }
  return absl::OkStatus();
}

absl::Status validateEntryStructure(const Plan& plan, const EntryPoint& entry) {
  const int32_t count = static_cast<int32_t>(plan.buffers.size());
  auto where = [&](size_t s) {
    const PlanStep& step = entry.steps[s];
    return absl::StrCat(step.loc.empty() ? "" : step.loc + ": ", "entry '", entry.name, "' step ", s, " (",
                        step.op, ")");
  };
  std::vector<char> written(plan.buffers.size(), 0);
  for (int32_t i = 0; i < count; ++i) written[i] = plan.buffers[i].kind != BufferKind::Temp;
  for (size_t s = 0; s < entry.steps.size(); ++s) {
    const PlanStep& step = entry.steps[s];
    for (int32_t id : step.operands) {
      if (id < 0 || id >= count)
        return absl::InvalidArgumentError(absl::StrCat(where(s), ": operand buffer id ", id, " is out of range"));
      if (!written[id])
        return absl::InvalidArgumentError(
            absl::StrCat(where(s), ": operand buffer '", plan.buffers[id].name, "' is read before it is written"));
    }
    for (int32_t id : step.results) {
      if (id < 0 || id >= count)
        return absl::InvalidArgumentError(absl::StrCat(where(s), ": result buffer id ", id, " is out of range"));
      if (plan.buffers[id].kind != BufferKind::Temp)
        return absl::InvalidArgumentError(absl::StrCat(where(s), ": result buffer '", plan.buffers[id].name,
                                                       "' is a ", std::string(bufferKindName(plan.buffers[id].kind)),
                                                       ", not a temporary"));
      if (written[id])
        return absl::InvalidArgumentError(
            absl::StrCat(where(s), ": result buffer '", plan.buffers[id].name, "' is written twice"));
      written[id] = 1;
    }
  }
  if (entry.resultNames.size() != entry.results.size())
    return absl::InvalidArgumentError(absl::StrCat("entry '", entry.name, "' has ", entry.results.size(),
                                                   " results but ", entry.resultNames.size(), " result names"));
  for (int32_t id : entry.results)
    if (id < 0 || id >= count || !written[id])
      return absl::InvalidArgumentError(
          absl::StrCat("entry '", entry.name, "' returns buffer id ", id, ", which nothing writes"));
  std::vector<char> targeted(plan.buffers.size(), 0);
  for (const auto& [from, to] : entry.updates) {
    if (from < 0 || from >= count || !written[from] || to < 0 || to >= count)
      return absl::InvalidArgumentError(
          absl::StrCat("entry '", entry.name, "' has an update [", from, ", ", to, "] with an invalid buffer id"));
    const BufferDesc &src = plan.buffers[from], &dst = plan.buffers[to];
    if (dst.kind != BufferKind::Param && dst.kind != BufferKind::State)
      return absl::InvalidArgumentError(absl::StrCat("entry '", entry.name, "' updates '", dst.name,
                                                     "', which is not a param or state buffer"));
    if (src.dtype != dst.dtype || src.shape != dst.shape)
      return absl::InvalidArgumentError(absl::StrCat("entry '", entry.name, "' updates '", dst.name,
                                                     "' from a buffer of another type"));
    if (targeted[to])
      return absl::InvalidArgumentError(absl::StrCat("entry '", entry.name, "' updates '", dst.name, "' twice"));
    targeted[to] = 1;
  }
  return absl::OkStatus();
}

}  // namespace amp::rt
