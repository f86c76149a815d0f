// The cuda device's lowering of the losses: cross_entropy and its gradient, mse_loss
// (kernels/LossKernels.cu).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "runtime/devices/cuda/CudaActions.h"
#include "runtime/devices/cuda/KernelTypes.h"
#include "runtime/devices/cuda/LaunchConfig.h"

namespace amp::rt::cuda {

// amp.cross_entropy (row losses, then their mean in row order) and amp.cross_entropy_grad (the
// counted rows, then every gradient element): the launch protocol of kernels/LossKernels.cu.
absl::Status ActionBuilder::crossEntropy(size_t s) {
  const PlanStep& step = entry_.steps[s];
  const bool grad = step.code == OpCode::CrossEntropyGrad;
  if (step.operands.size() != (grad ? 3u : 2u) || step.results.size() != 1)
    return absl::InvalidArgumentError(grad ? "expected (logits, labels, dloss) -> dlogits" : "expected (logits, labels) -> loss");
  const BufferDesc& logits = plan_.buffers[step.operands[0]];
  const BufferDesc& labels = plan_.buffers[step.operands[1]];
  const BufferDesc& out = plan_.buffers[step.results[0]];
  auto type = floatSuffix(logits.dtype);
  if (!type || out.dtype != logits.dtype || (grad && plan_.buffers[step.operands[2]].dtype != logits.dtype))
    return absl::InvalidArgumentError("logits, loss and gradients must share one float type (f32, bf16, f16)");
  if (labels.dtype != DType::I64 && labels.dtype != DType::I32)
    return absl::InvalidArgumentError("labels must be i64 or i32");
  if (logits.shape.size() < 2) return absl::InvalidArgumentError("logits must be [rows, classes]");
  const long long classes = logits.shape.back();
  const long long rows = classes > 0 ? logits.numel() / classes : 0;
  if (labels.numel() != rows) return absl::InvalidArgumentError("one label per row of logits");
  auto ignore = step.withAttrsOf<CrossEntropyAttrs, CrossEntropyGradAttrs>([](const auto& a) { return a.ignoreIndex; });
  auto smoothing = step.withAttrsOf<CrossEntropyAttrs, CrossEntropyGradAttrs>([](const auto& a) { return a.labelSmoothing; });
  if (!ignore.ok()) return ignore.status();
  if (!smoothing.ok()) return smoothing.status();
  const std::string labelType = labels.dtype == DType::I64 ? "i64" : "i32";
  const std::string suffix = *type + "_" + labelType;
  // Rows are grid-strided, one block each at a time: a wave of the GPU is enough.
  const int64_t rowBlocks = std::max<int64_t>(1, std::min<int64_t>(rows, int64_t{8} * api_.info().multiprocessors));
  auto add = [&](const std::string& name, int64_t blocks, int threads, auto&& args) -> absl::Status {
    auto fn = kernel(name);
    if (!fn.ok()) return fn.status();
    Action a = launch(name, s);
    a.fn = *fn;
    a.blocks = blocks;
    a.threads = threads;
    args(a);
    actions_.push_back(std::move(a));
    report_.add(kGeneratedKernels);
    return absl::OkStatus();
  };
  const DevicePtr x = ptr_[step.operands[0]], y = ptr_[step.operands[1]], result = ptr_[step.results[0]];
  if (!grad) {
    auto rowLoss = scratch(4 * std::max<int64_t>(rows, 1));
    if (!rowLoss.ok()) return rowLoss.status();
    if (auto st = add("amp_cross_entropy_" + suffix, rowBlocks, 256, [&](Action& a) {
          a.arg(device<const void>(x));
          a.arg(device<const void>(y));
          a.arg(device<float>(*rowLoss));
          a.arg(rows);
          a.arg(classes);
          a.arg(static_cast<long long>(*ignore));
          a.arg(*smoothing);
        });
        !st.ok())
      return st;
    return add("amp_cross_entropy_mean_" + suffix, 1, 1, [&](Action& a) {
      a.arg(device<const float>(*rowLoss));
      a.arg(device<const void>(y));
      a.arg(device<void>(result));
      a.arg(rows);
      a.arg(classes);
      a.arg(static_cast<long long>(*ignore));
    });
  }
  auto counted = scratch(8);
  if (!counted.ok()) return counted.status();
  if (auto st = add("amp_cross_entropy_count_" + labelType, 1, 256, [&](Action& a) {
        a.arg(device<const void>(y));
        a.arg(rows);
        a.arg(classes);
        a.arg(static_cast<long long>(*ignore));
        a.arg(device<long long>(*counted));
      });
      !st.ok())
    return st;
  return add("amp_cross_entropy_grad_" + suffix, rowBlocks, 256, [&](Action& a) {
    a.arg(device<const void>(x));
    a.arg(device<const void>(y));
    a.arg(device<const void>(ptr_[step.operands[2]]));
    a.arg(device<const long long>(*counted));
    a.arg(device<void>(result));
    a.arg(rows);
    a.arg(classes);
    a.arg(static_cast<long long>(*ignore));
    a.arg(*smoothing);
  });
}


// amp.mse_loss: per-block sums of squares in a fixed tree, then their mean (LossKernels.cu).
absl::Status ActionBuilder::mseLoss(size_t s) {
  const PlanStep& step = entry_.steps[s];
  if (step.operands.size() != 2 || step.results.size() != 1) return absl::InvalidArgumentError("expected (pred, target) -> loss");
  const BufferDesc& pred = plan_.buffers[step.operands[0]];
  const BufferDesc& target = plan_.buffers[step.operands[1]];
  const BufferDesc& loss = plan_.buffers[step.results[0]];
  auto type = floatSuffix(pred.dtype);
  if (!type || target.dtype != pred.dtype || target.shape != pred.shape || loss.dtype != pred.dtype || loss.numel() != 1)
    return absl::InvalidArgumentError("pred and target must have one float type and shape, the loss a scalar of it");
  constexpr int64_t kChunk = 16384;  // AMP_MSE_CHUNK
  const long long n = pred.numel();
  const long long blocks = (n + kChunk - 1) / kChunk;
  if (blocks > int64_t{2147483647}) return absl::InvalidArgumentError("mse_loss over more than 2^31 - 1 chunks");
  auto partials = scratch(4 * std::max<int64_t>(blocks, 1));
  if (!partials.ok()) return partials.status();
  if (blocks > 0) {
    auto fn = kernel("amp_mse_partials_" + *type);
    if (!fn.ok()) return fn.status();
    Action a = launch("amp_mse_partials_" + *type, s);
    a.fn = *fn;
    a.blocks = blocks;
    a.threads = 256;
    a.arg(device<const void>(ptr_[step.operands[0]]));
    a.arg(device<const void>(ptr_[step.operands[1]]));
    a.arg(n);
    a.arg(device<float>(*partials));
    actions_.push_back(std::move(a));
    report_.add(kGeneratedKernels);
  }
  auto fn = kernel("amp_mse_mean_" + *type);
  if (!fn.ok()) return fn.status();
  Action a = launch("amp_mse_mean_" + *type, s);
  a.fn = *fn;
  a.blocks = 1;
  a.threads = 1;
  a.arg(device<const float>(*partials));
  a.arg(blocks);
  a.arg(n);
  a.arg(device<void>(ptr_[step.results[0]]));
  actions_.push_back(std::move(a));
  report_.add(kGeneratedKernels);
  return absl::OkStatus();
}

}  // namespace amp::rt::cuda
