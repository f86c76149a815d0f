#include "runtime/exec/NumericsCheck.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "runtime/numerics/Convert.h"

namespace amp::rt {

int64_t firstNonFinite(DType dtype, const void* data, int64_t n) {
  if (!isFloat(dtype)) return -1;
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(loadAsF32(dtype, data, i))) return i;
  return -1;
}

absl::Status nonFiniteResult(const Plan& plan, const EntryPoint& entry, size_t s, int32_t id, int64_t bad,
                             GradientOverflow* record) {
  const PlanStep& step = entry.steps[s];
  const BufferDesc& b = plan.buffers[id];
  const std::string dtype(dtypeName(b.dtype));
  auto config = plan.trainingConfig();
  const bool lossScaled = config.ok() && config->lossScaling != ScalingKind::None;
  // A collective's operands on this rank were finite, so the value came from another rank; that
  // rank's own check names the op that produced it.
  const bool fromAnotherRank = step.is(OpCode::AllReduce) || step.is(OpCode::ReduceScatter) || step.is(OpCode::AllGather);
  if (step.phase == "backward" && lossScaled && record) {
    if (!record->seen)
      *record = {true, fromAnotherRank ? step.op + " (from another rank)" : step.op, step.loc, b.name, dtype};
    return absl::OkStatus();
  }
  std::string what = absl::StrCat(step.loc.empty() ? "" : step.loc + ": ", "entry '", entry.name, "' step ", s, " (",
                                  step.op, ") produced a non-finite value at element ", bad, " of '", b.name, "' (",
                                  dtype, ")");
  std::string advice;
  if (fromAnotherRank) {
    return absl::OutOfRangeError(absl::StrCat(
        what, "; its operands on this rank were finite, so the value came from another rank of the data-parallel "
              "job: that rank's --check-numerics report names the op that produced it"));
  } else if (step.phase == "backward") {
    advice = absl::StrCat(" in the backward pass (a gradient), and the step has no loss scaling",
                          b.dtype == DType::F16 ? ": compile with --loss-scale=dynamic, or train in bf16" : "");
  } else if (step.phase == "update") {
    advice = " in the optimizer step (check the learning rate and the optimizer's settings)";
  } else if (b.dtype == DType::F16 || b.dtype == DType::BF16) {
    advice = absl::StrCat(" in the forward pass, computing in ", dtype,
                          ". No loss scale can cure a forward overflow: run this op in f32 (amp.precision = \"f32\" "
                          "on it, or --precision-override=op:", step.op, "=f32)",
                          b.dtype == DType::F16 ? " or train in bf16, whose range is f32's" : "");
  } else if (!step.phase.empty()) {
    advice = " in the forward pass";
  }
  return absl::OutOfRangeError(absl::StrCat(what, advice, "; its operands were finite"));
}

}  // namespace amp::rt
