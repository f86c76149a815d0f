#include "runtime/plan/Plan.h"

#include <cstdio>
#include <cstdlib>
#include <type_traits>

namespace amp::rt {

std::string_view bufferKindName(BufferKind k) {
  switch (k) {
    case BufferKind::Param: return "param";
    case BufferKind::State: return "state";
    case BufferKind::Input: return "input";
    case BufferKind::Label: return "label";
    case BufferKind::Constant: return "constant";
    case BufferKind::Temp: return "temp";
  }
  return "?";
}

std::optional<BufferKind> parseBufferKind(std::string_view s) {
  for (BufferKind k : {BufferKind::Param, BufferKind::State, BufferKind::Input, BufferKind::Label,
                       BufferKind::Constant, BufferKind::Temp})
    if (bufferKindName(k) == s) return k;
  return std::nullopt;
}

std::string_view stepKindName(StepKind k) {
  switch (k) {
    case StepKind::Op: return "op";
    case StepKind::Library: return "library";
    case StepKind::Fused: return "fused";
    case StepKind::MultiTensor: return "multi_tensor";
    case StepKind::Alias: return "alias";
  }
  return "?";
}

std::optional<StepKind> parseStepKind(std::string_view s) {
  for (StepKind k : {StepKind::Op, StepKind::Library, StepKind::Fused, StepKind::MultiTensor, StepKind::Alias})
    if (stepKindName(k) == s) return k;
  return std::nullopt;
}

const OpSchema& opSchema(OpCode code) {
  static constexpr OpSchema kSchemas[] = {
#define AMP_OP_SCHEMA(code, kind, minOperands, maxOperands, minResults, maxResults, regions, attributes) \
  {StepKind::kind, minOperands, maxOperands, minResults, maxResults, regions, attributes},
#include "runtime/plan/OpSchema.inc"
#undef AMP_OP_SCHEMA
  };
  static_assert(sizeof(kSchemas) / sizeof(kSchemas[0]) == kOpCodeCount, "OpSchema.inc and OpCatalog.inc disagree");
  return kSchemas[static_cast<size_t>(code)];
}

StepKind stepKindOf(OpCode code) { return opSchema(code).kind; }

bool attrsDecodedFor(const OpAttrs& decoded, OpCode code) {
  return std::visit(
      [&](const auto& a) {
        using A = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<A, std::monostate>) return opSchema(code).attributes == 0;
        else return A::kCode == code;
      },
      decoded);
}

StepKind stepKindOf(std::string_view op) {
  std::optional<OpCode> code = opCodeOf(op);
  return code ? stepKindOf(*code) : StepKind::Op;
}

std::vector<int32_t> modelBufferIds(const Plan& plan) {
  std::vector<bool> read(plan.buffers.size(), false);
  if (const EntryPoint* eval = plan.findEntry("eval"))
    for (const PlanStep& step : eval->steps)
      for (int32_t id : step.operands)
        if (id >= 0 && static_cast<size_t>(id) < read.size()) read[static_cast<size_t>(id)] = true;
  std::vector<int32_t> ids;
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const BufferDesc& b = plan.buffers[i];
    if (read[i] && b.kind == BufferKind::State && !(b.init && b.init->kind == "cast"))
      ids.push_back(static_cast<int32_t>(i));
  }
  return ids;
}

void PlanStep::abortUndecoded(OpCode wanted) const {
  std::fprintf(stderr, "amp runtime: internal error: step '%s' read as %s without its attributes decoded\n",
               op.c_str(), std::string(opName(wanted)).c_str());
  std::abort();
}

const EntryPoint* Plan::findEntry(std::string_view name) const {
  for (const EntryPoint& e : entries)
    if (e.name == name) return &e;
  return nullptr;
}

std::optional<int32_t> Plan::findBuffer(std::string_view name) const {
  for (size_t i = 0; i < buffers.size(); ++i)
    if (buffers[i].name == name) return static_cast<int32_t>(i);
  return std::nullopt;
}

absl::StatusOr<TrainingConfig> Plan::trainingConfig() const { return TrainingConfig::decode(metadata); }

std::string Plan::metadataValue(std::string_view key) const {
  for (const auto& [k, v] : metadata)
    if (k == key) return v;
  return "";
}

}  // namespace amp::rt
