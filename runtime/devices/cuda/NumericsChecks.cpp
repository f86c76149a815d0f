#include "runtime/devices/cuda/NumericsChecks.h"

namespace amp::rt::cuda {

std::vector<ResultCheck> resultChecks(const Plan& plan, const EntryPoint& entry) {
  std::vector<ResultCheck> checks;
  for (size_t s = 0; s < entry.steps.size(); ++s) {
    if (entry.steps[s].code == OpCode::Constant || entry.steps[s].kind == StepKind::Alias) continue;
    for (int32_t id : entry.steps[s].results) {
      const BufferDesc& b = plan.buffers[id];
      if ((b.dtype == DType::F32 || b.dtype == DType::BF16 || b.dtype == DType::F16) && b.numel() > 0)
        checks.push_back({s, id});
    }
  }
  return checks;
}

absl::Status judgeChecks(const Plan& plan, const EntryPoint& entry, const std::vector<ResultCheck>& checks,
                         const uint64_t* words, GradientOverflow* overflow) {
  for (size_t k = 0; k < checks.size(); ++k) {
    if (words[k] == kAllFinite) continue;
    const ResultCheck& c = checks[k];
    if (auto st = nonFiniteResult(plan, entry, c.step, c.buffer, static_cast<int64_t>(words[k]), overflow); !st.ok()) return st;
  }
  return absl::OkStatus();
}

}  // namespace amp::rt::cuda
