#include "runtime/exec/StepProfile.h"

#include <algorithm>
#include <vector>

namespace amp::rt {
namespace {

double numel(const BufferDesc& b) { return static_cast<double>(b.numel()); }

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// K of a matmul-like step whose lhs is operand 0, `[..., M, K]` or `[..., K, M]` transposed.
double innerDim(const Plan& plan, const PlanStep& step, bool transposeA) {
  const Shape& lhs = plan.buffers[step.operands[0]].shape;
  if (lhs.size() < 2) return 0;
  return static_cast<double>(transposeA ? lhs[lhs.size() - 2] : lhs.back());
}

}  // namespace

std::string_view profileCategory(const PlanStep& step) {
  if (!step.code) return "other";
  switch (*step.code) {
    case OpCode::Matmul:
    case OpCode::Linear:
    case OpCode::GemmEpilogue:
      return "GEMM";
    case OpCode::Conv2D:
    case OpCode::Conv2DGradInput:
    case OpCode::Conv2DGradWeight:
      return "conv";
    case OpCode::BatchNorm:
    case OpCode::BatchNormGrad:
    case OpCode::LayerNorm:
    case OpCode::LayerNormGrad:
    case OpCode::RmsNorm:
    case OpCode::RmsNormGrad:
    case OpCode::Softmax:
    case OpCode::LogSoftmax:
    case OpCode::SoftmaxGrad:
      return "norm";
    default:
      break;
  }
  if (step.phase == "update") return "optimizer/scaler";
  switch (*step.code) {
    case OpCode::Cast:
      return "conversion";
    case OpCode::Transpose:
    case OpCode::BroadcastTo:
    case OpCode::Slice:
    case OpCode::SliceGrad:
    case OpCode::Concat:
    case OpCode::Reshape:
    case OpCode::Constant:
      return "layout";
    default:
      break;
  }
  if (step.kind == StepKind::Fused || step.kind == StepKind::Op) return "elementwise/fused";
  return "other";
}

double stepFlops(const Plan& plan, const PlanStep& step) {
  if (!step.code || step.results.empty() || step.operands.size() < 2) return 0;
  const double out = numel(plan.buffers[step.results[0]]);
  switch (*step.code) {
    case OpCode::Matmul: {
      auto t = step.withAttrsOf<MatmulAttrs>([](const MatmulAttrs& a) { return a.transposeA; });
      return t.ok() ? 2 * out * innerDim(plan, step, *t) : 0;
    }
    case OpCode::GemmEpilogue: {
      auto t = step.withAttrsOf<GemmEpilogueAttrs>([](const GemmEpilogueAttrs& a) { return a.transposeA; });
      return t.ok() ? 2 * out * innerDim(plan, step, *t) : 0;
    }
    case OpCode::Linear:
      return 2 * out * innerDim(plan, step, false);  // input [..., in]
    case OpCode::Conv2D:
    case OpCode::Conv2DGradInput:
    case OpCode::Conv2DGradWeight: {
      // Every form is the forward convolution's products: one per element of the [N, O, OH, OW]
      // output and weight element [C/groups, KH, KW] of its filter.
      const bool gradWeight = *step.code == OpCode::Conv2DGradWeight;
      const BufferDesc& output = plan.buffers[*step.code == OpCode::Conv2D ? step.results[0]
                                              : gradWeight                 ? step.operands[1]
                                                                           : step.operands[0]];
      const Shape& w = plan.buffers[gradWeight ? step.results[0] : step.operands[1]].shape;
      if (w.size() != 4) return 0;
      return 2 * numel(output) * static_cast<double>(w[1] * w[2] * w[3]);
    }
    default:
      return 0;
  }
}

double stepBytes(const Plan& plan, const PlanStep& step) {
  double bytes = 0;
  std::vector<int32_t> seen;
  for (int32_t id : step.operands) {
    if (std::find(seen.begin(), seen.end(), id) != seen.end()) continue;
    seen.push_back(id);
    bytes += static_cast<double>(plan.buffers[id].byteSize());
  }
  for (int32_t id : step.results) bytes += static_cast<double>(plan.buffers[id].byteSize());
  return bytes;
}

StepProfiler::StepProfiler(const Plan& plan, const EntryPoint& entry)
    : plan_(plan), entry_(entry), stepMs_(entry.steps.size()) {}

void StepProfiler::addCall(absl::Span<const double> stepMs, double callMs) {
  for (size_t s = 0; s < stepMs_.size() && s < stepMs.size(); ++s) stepMs_[s].push_back(stepMs[s]);
  callMs_.push_back(callMs);
}

EntryProfile StepProfiler::summary(size_t slowest) const {
  EntryProfile out;
  out.calls = static_cast<int>(callMs_.size());
  out.callMs = median(callMs_);
  for (std::string_view name : kProfileCategories) out.categories.push_back({std::string(name), 0, 0, 0});
  std::vector<EntryProfile::Step> steps;
  for (size_t s = 0; s < entry_.steps.size(); ++s) {
    const PlanStep& step = entry_.steps[s];
    if (step.kind == StepKind::Alias || (step.code && *step.code == OpCode::Reshape)) continue;  // views: no work
    const std::string_view category = profileCategory(step);
    EntryProfile::Step row{s, step.op, step.loc, std::string(category), median(stepMs_[s]),
                           stepFlops(plan_, step) / 1e9, stepBytes(plan_, step) / 1e6};
    for (auto& c : out.categories)
      if (c.name == category) {
        c.ms += row.ms;
        c.gflop += row.gflop;
        c.mbytes += row.mbytes;
        ++c.operations;
      }
    auto op = std::find_if(out.ops.begin(), out.ops.end(), [&](const EntryProfile::Op& o) { return o.op == step.op; });
    if (op == out.ops.end()) op = out.ops.insert(out.ops.end(), EntryProfile::Op{step.op, std::string(category)});
    ++op->steps;
    op->ms += row.ms;
    op->gflop += row.gflop;
    op->mbytes += row.mbytes;
    steps.push_back(std::move(row));
  }
  std::stable_sort(out.ops.begin(), out.ops.end(), [](const auto& a, const auto& b) { return a.ms > b.ms; });
  std::stable_sort(steps.begin(), steps.end(), [](const auto& a, const auto& b) { return a.ms > b.ms; });
  if (steps.size() > slowest) steps.resize(slowest);
  out.slowest = std::move(steps);
  return out;
}

double profileMsSince(ProfileClock::time_point start) {
  return std::chrono::duration<double, std::milli>(ProfileClock::now() - start).count();
}

absl::StatusOr<EntryProfile> profileHostCalls(const Plan& plan, const EntryPoint& entry, int calls,
                                              absl::FunctionRef<absl::Status(double* stepMs)> run) {
  StepProfiler profiler(plan, entry);
  std::vector<double> stepMs(entry.steps.size());
  for (int c = 0; c < calls; ++c) {
    std::fill(stepMs.begin(), stepMs.end(), 0.0);
    const auto start = ProfileClock::now();
    if (auto s = run(stepMs.data()); !s.ok()) return s;
    profiler.addCall(stepMs, profileMsSince(start));
  }
  return profiler.summary();
}

}  // namespace amp::rt
