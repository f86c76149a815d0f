#include "runtime/plan/Plan.h"

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

StepKind stepKindOf(std::string_view op) {
  static constexpr std::string_view kLibrary[] = {
      "amp.matmul", "amp.linear", "amp.conv2d", "amp.conv2d_grad_input", "amp.conv2d_grad_weight",
      "amp.max_pool2d", "amp.avg_pool2d", "amp.max_pool2d_grad", "amp.avg_pool2d_grad", "amp.softmax",
      "amp.softmax_grad", "amp.log_softmax", "amp.layer_norm", "amp.layer_norm_grad", "amp.rms_norm", "amp.rms_norm_grad",
      "amp.batch_norm", "amp.batch_norm_grad",
      "amp.cross_entropy", "amp.cross_entropy_grad", "amp.mse_loss", "amp.reduce_sum", "amp.reduce_mean",
      "amp.reduce_max", "amp.embedding", "amp.embedding_grad", "amp.dropout", "amp.gemm_epilogue"};
  static constexpr std::string_view kMultiTensor[] = {
      "amp.unscale_check", "amp.grad_stats", "amp.update_scale", "amp.global_norm", "amp.clip_grads", "amp.step_counters",
      "amp.lr_schedule", "amp.sgd_update", "amp.adam_update"};
  if (op == "amp.fused") return StepKind::Fused;
  if (op == "amp.reshape") return StepKind::Alias;
  for (std::string_view l : kLibrary)
    if (l == op) return StepKind::Library;
  for (std::string_view m : kMultiTensor)
    if (m == op) return StepKind::MultiTensor;
  return StepKind::Op;
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
