#include "runtime/plan/StateValidation.h"

#include <cmath>
#include <cstring>
#include <optional>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "runtime/numerics/Convert.h"
#include "runtime/schema/StateNames.h"

namespace amp::rt {
namespace {

// Counters are int64 with room for any run length added to them (kMaxCheckpointStep).
constexpr int64_t kMaxCounter = int64_t{1} << 62;

std::string describe(const BufferDesc& b) {
  return absl::StrCat(std::string(bufferKindName(b.kind)), " '", b.name, "'");
}

absl::Status invalid(const BufferDesc& b, int64_t element, double value, const std::string& rule) {
  std::string where = b.shape.empty() ? "" : absl::StrCat(" at element ", element);
  return absl::InvalidArgumentError(absl::StrCat(describe(b), " holds ", value, where, "; ", rule));
}

// The first element of an f32 tensor that fails `ok`, checked against `rule`.
template <typename Ok>
absl::Status checkFloats(const BufferDesc& b, const Tensor& t, Ok ok, const std::string& rule) {
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float v = loadAsF32(t.dtype(), t.data(), i);  // f32, or bf16 moments widened exactly
    if (!ok(v)) return invalid(b, i, v, rule);
  }
  return absl::OkStatus();
}

// The growth interval of the plan's dynamic loss scaler; none without one.
std::optional<int64_t> growthInterval(const Plan& plan) {
  for (const EntryPoint& e : plan.entries)
    for (const PlanStep& s : e.steps)
      if (s.code == OpCode::UpdateScale)
        if (auto attrs = s.typedAttrs<UpdateScaleAttrs>(); attrs.ok()) return attrs->growthInterval;
  return std::nullopt;
}

// Whether buffer `b` is operand `index` of some amp.batch_norm (3: running mean, 4: running var).
bool isBatchNormOperand(const Plan& plan, const BufferDesc& b, size_t index) {
  const std::optional<int32_t> id = plan.findBuffer(b.name);
  for (const EntryPoint& e : plan.entries)
    for (const PlanStep& s : e.steps)
      if (s.is(OpCode::BatchNorm) && s.operands.size() > index && id && s.operands[index] == *id) return true;
  return false;
}

absl::Status checkState(const Plan& plan, const BufferDesc& b, const Tensor& t,
                        const std::vector<NamedTensor>& tensors) {
  const bool scalar = t.numel() == 1;
  if (b.dtype == DType::F32 && isBatchNormOperand(plan, b, 3))
    return checkFloats(b, t, [](float v) { return std::isfinite(v); },
                       "a running mean averages finite batch means, so it is finite");
  if (b.dtype == DType::F32 && isBatchNormOperand(plan, b, 4))
    return checkFloats(b, t, [](float v) { return std::isfinite(v) && v >= 0; },
                       "a running variance averages batch variances, so it is finite and >= 0");
  if (b.name == schema::kLossScaleState && b.dtype == DType::F32 && scalar)
    return checkFloats(b, t, [](float v) { return std::isfinite(v) && v > 0; },
                       "the loss scale must be finite and > 0");
  if (b.name == schema::kGrowthTrackerState && b.dtype == DType::I32 && scalar) {
    const int32_t v = t.as<int32_t>()[0];
    if (v < 0) return invalid(b, 0, v, "the growth tracker counts steps since the last scale change, so it is >= 0");
    if (auto interval = growthInterval(plan); interval && v >= *interval)
      return invalid(b, 0, v,
                     absl::StrCat("the growth tracker is below the growth interval (", *interval,
                                  "): the scaler resets it when it reaches it"));
    return absl::OkStatus();
  }
  if ((b.name == schema::kStepState || b.name == schema::kSkippedStepsState) && b.dtype == DType::I64 && scalar) {
    const int64_t v = t.as<int64_t>()[0];
    if (v < 0 || v > kMaxCounter)
      return invalid(b, 0, static_cast<double>(v), "a step counter is in [0, 2^62]");
    return absl::OkStatus();
  }
  const bool moment = b.dtype == DType::F32 || b.dtype == DType::BF16;  // bf16: --optimizer-state=bf16
  if (moment && absl::EndsWith(b.name, ".exp_avg"))
    return checkFloats(b, t, [](float v) { return std::isfinite(v); },
                       "Adam's first moment averages finite gradients, so it is finite");
  if (moment && absl::EndsWith(b.name, ".exp_avg_sq"))
    return checkFloats(b, t, [](float v) { return v >= 0; },
                       "Adam's second moment averages squared gradients, so it is >= 0 and not NaN");
  if (b.dtype == DType::F32 && absl::EndsWith(b.name, ".momentum_buffer"))
    return checkFloats(b, t, [](float v) { return !std::isnan(v); },
                       "a momentum buffer sums finite gradients, so it is not NaN");
  if (b.init && b.init->kind == "cast") {
    // The copy the forward reads must be its master's rounding, or the step computes with weights
    // that the master (which the checkpoint also saves) does not hold.
    const NamedTensor* master = nullptr;
    for (const NamedTensor& m : tensors)
      if (m.name == b.init->from) master = &m;
    if (!master || master->tensor.dtype() != DType::F32 || master->tensor.shape() != t.shape()) return absl::OkStatus();
    Tensor rounded(b.dtype, b.shape);
    convertBuffer(DType::F32, master->tensor.data(), b.dtype, rounded.data(), t.numel());
    if (!rounded.bitwiseEquals(t)) {
      const size_t size = dtypeSize(b.dtype);
      int64_t i = 0;
      while (i < t.numel() && std::memcmp(rounded.data() + i * size, t.data() + i * size, size) == 0) ++i;
      return absl::InvalidArgumentError(absl::StrCat(
          describe(b), " differs from the ", std::string(dtypeName(b.dtype)), " rounding of its master '",
          b.init->from, "' at element ", i, "; the low-precision copy is always the rounding of its master"));
    }
  }
  return absl::OkStatus();
}

std::optional<int64_t> counterIn(const std::vector<NamedTensor>& tensors, const std::string& name) {
  for (const NamedTensor& t : tensors)
    if (t.name == name && t.tensor.dtype() == DType::I64 && t.tensor.numel() == 1) return t.tensor.as<int64_t>()[0];
  return std::nullopt;
}

}  // namespace

absl::Status validatePersistentValues(const Plan& plan, const std::vector<NamedTensor>& tensors) {
  for (const NamedTensor& nt : tensors) {
    const std::optional<int32_t> id = plan.findBuffer(nt.name);
    if (!id) continue;
    const BufferDesc& b = plan.buffers[*id];
    if (nt.tensor.dtype() != b.dtype || nt.tensor.shape() != b.shape) continue;
    if (b.kind == BufferKind::Param && b.dtype == DType::F32) {
      // A NaN or inf master weight poisons every step after it; a file that carries one is corrupt.
      const float* v = nt.tensor.as<float>();
      for (int64_t i = 0; i < nt.tensor.numel(); ++i)
        if (!std::isfinite(v[i]))
          return absl::InvalidArgumentError(absl::StrCat("param '", nt.name, "': element ", i, " is ", v[i],
                                                         "; parameter values must be finite"));
    } else if (b.kind == BufferKind::State) {
      if (auto s = checkState(plan, b, nt.tensor, tensors); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

absl::Status validateRecordedStep(const Plan& plan, const std::vector<NamedTensor>& tensors, int64_t step) {
  if (!plan.findBuffer(schema::kStepState) || !plan.findBuffer(schema::kSkippedStepsState)) return absl::OkStatus();
  const std::optional<int64_t> applied = counterIn(tensors, schema::kStepState),
                               skipped = counterIn(tensors, schema::kSkippedStepsState);
  if (!applied || !skipped) return absl::OkStatus();  // the loader reports the missing or mistyped counter
  int64_t taken = 0;
  if (__builtin_add_overflow(*applied, *skipped, &taken) || taken != step)
    return absl::InvalidArgumentError(absl::StrCat(
        "metadata step ", step, " disagrees with the state's step counters (amp.step ", *applied,
        " + amp.skipped_steps ", *skipped, "): every optimizer step advances exactly one of them"));
  return absl::OkStatus();
}

}  // namespace amp::rt
