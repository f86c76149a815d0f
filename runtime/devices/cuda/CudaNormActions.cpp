// The cuda device's lowering of softmax, log_softmax, layer_norm, rms_norm, batch_norm and their
// gradients (kernels/NormKernels.cu).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "runtime/devices/cuda/CudaActions.h"
#include "runtime/devices/cuda/KernelTypes.h"
#include "runtime/devices/cuda/LaunchConfig.h"

namespace amp::rt::cuda {

// Softmax, log_softmax, layer_norm, rms_norm and their gradients: kernels/NormKernels.cu. Every
// kernel takes a block of 256 threads per unit (a slice, a group, or 256 columns), grid-strided.
absl::Status ActionBuilder::normOp(size_t s) {
  const PlanStep& step = entry_.steps[s];
  const BufferDesc& x = plan_.buffers[step.operands.empty() ? 0 : step.operands[0]];
  auto type = floatSuffix(x.dtype);
  if (step.operands.empty() || step.results.empty() || !type)
    return absl::InvalidArgumentError("expected a float operand and a result");
  for (int32_t id : step.operands)
    if (plan_.buffers[id].dtype != x.dtype) return absl::InvalidArgumentError("operands of different types");
  for (int32_t id : step.results)
    if (plan_.buffers[id].dtype != x.dtype) return absl::InvalidArgumentError("results must have the operand's type");
  auto emit = [&](const std::string& name, long long units, auto&& args) -> absl::Status {
    auto fn = kernel(name);
    if (!fn.ok()) return fn.status();
    Action a = launch(name, s);
    a.fn = *fn;
    a.blocks = std::max<long long>(1, std::min<long long>(units, int64_t{8} * api_.info().multiprocessors));
    a.threads = 256;
    args(a);
    actions_.push_back(std::move(a));
    report_.add(kGeneratedKernels);
    return absl::OkStatus();
  };
  auto in = [&](size_t i) { return device<const void>(ptr_[step.operands[i]]); };
  auto out = [&](size_t i) { return device<void>(ptr_[step.results[i]]); };
  if (step.code == OpCode::Softmax || step.code == OpCode::LogSoftmax) {
    auto axis = step.withAttrsOf<SoftmaxAttrs, LogSoftmaxAttrs>([](const auto& a) { return a.axis; });
    if (!axis.ok()) return axis.status();
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    if (*axis < 0 || *axis >= rank || step.operands.size() != 1 || step.results.size() != 1 ||
        plan_.buffers[step.results[0]].numel() != x.numel())
      return absl::InvalidArgumentError("axis out of range, or a result unlike the operand");
    long long outer = 1, inner = 1;
    for (int64_t d = 0; d < *axis; ++d) outer *= x.shape[static_cast<size_t>(d)];
    for (int64_t d = *axis + 1; d < rank; ++d) inner *= x.shape[static_cast<size_t>(d)];
    const long long len = x.shape[static_cast<size_t>(*axis)];
    if (len == 0 || outer * inner == 0) return absl::OkStatus();
    const long long units = inner == 1 ? outer : outer * ((inner + 255) / 256);
    return emit(absl::StrCat(step.code == OpCode::Softmax ? "amp_softmax_" : "amp_log_softmax_", *type), units,
                [&](Action& a) {
                  a.arg(in(0));
                  a.arg(out(0));
                  a.arg(outer);
                  a.arg(len);
                  a.arg(inner);
                });
  }
  auto ndim = step.withAttrsOf<LayerNormAttrs, RmsNormAttrs, LayerNormGradAttrs, RmsNormGradAttrs>(
      [](const auto& a) { return a.normalizedNdim; });
  auto eps = step.withAttrsOf<LayerNormAttrs, RmsNormAttrs, LayerNormGradAttrs, RmsNormGradAttrs>(
      [](const auto& a) { return a.eps; });
  if (!ndim.ok()) return ndim.status();
  if (!eps.ok()) return eps.status();
  if (*ndim < 1 || *ndim > static_cast<int64_t>(x.shape.size()))
    return absl::InvalidArgumentError("normalized_ndim out of range");
  long long n = 1;
  for (size_t d = x.shape.size() - static_cast<size_t>(*ndim); d < x.shape.size(); ++d) n *= x.shape[d];
  const long long groups = n > 0 ? x.numel() / n : 0;
  const bool layer = step.code == OpCode::LayerNorm || step.code == OpCode::LayerNormGrad;
  const bool grad = step.code == OpCode::LayerNormGrad || step.code == OpCode::RmsNormGrad;
  if (!grad) {
    auto hasWeight = step.attrs.getBool(step.op, "has_weight", false);
    auto hasBias = step.attrs.getBool(step.op, "has_bias", false);
    if (!hasWeight.ok()) return hasWeight.status();
    if (!hasBias.ok()) return hasBias.status();
    const bool bias = layer && *hasBias;
    if (step.operands.size() != 1u + *hasWeight + bias || step.results.size() != 1)
      return absl::InvalidArgumentError("operands disagree with has_weight/has_bias");
    const void* weight = *hasWeight ? in(1) : nullptr;
    const void* biasPtr = bias ? in(1 + *hasWeight) : nullptr;
    if (n == 0 || groups == 0) return absl::OkStatus();
    return emit(absl::StrCat(layer ? "amp_layer_norm_" : "amp_rms_norm_", *type), groups, [&](Action& a) {
      a.arg(in(0));
      a.arg(weight);
      if (layer) a.arg(biasPtr);
      a.arg(out(0));
      a.arg(groups);
      a.arg(n);
      a.arg(*eps);
    });
  }
  // Gradients: (x, [weight], dy) -> (dx, dweight[, dbias]); the row pass, then the column pass.
  if ((step.operands.size() != 2 && step.operands.size() != 3) || step.results.size() != (layer ? 3u : 2u))
    return absl::InvalidArgumentError("expected (x, [weight], dy) -> (dx, dweight[, dbias])");
  if (n == 0) return absl::OkStatus();
  const void* weight = step.operands.size() == 3 ? in(1) : nullptr;
  const void* dy = in(step.operands.size() - 1);
  auto stats = scratch(4 * std::max<long long>(1, (layer ? 2 : 1) * groups));
  if (!stats.ok()) return stats.status();
  const std::string prefix = layer ? "amp_layer_norm_grad_" : "amp_rms_norm_grad_";
  if (groups > 0)
    if (auto st = emit(prefix + *type, groups, [&](Action& a) {
          a.arg(in(0));
          a.arg(weight);
          a.arg(dy);
          a.arg(out(0));
          a.arg(device<float>(*stats));
          a.arg(groups);
          a.arg(n);
          a.arg(*eps);
        });
        !st.ok())
      return st;
  return emit(prefix + "affine_" + *type, (n + 255) / 256, [&](Action& a) {
    a.arg(in(0));
    a.arg(dy);
    a.arg(device<const float>(*stats));
    a.arg(out(1));
    if (layer) a.arg(out(2));
    a.arg(groups);
    a.arg(n);
  });
}

// softmax_grad (y, dy -> dx; axis): kernels/NormKernels.cu, one launch laid out as softmax's.
// dy has y's type, or is bf16/f16 under an f32 y (amp_softmax_grad_f32_<G> widens it); dx may be
// y's storage (the memory planner's in-place pair), which the kernel allows for. Checked as the
// reference checks it: the kernel trusts the types and shapes.
absl::Status ActionBuilder::softmaxGrad(size_t s) {
  const PlanStep& step = entry_.steps[s];
  if (step.operands.size() != 2 || step.results.size() != 1)
    return absl::InvalidArgumentError("expected (output, grad) -> result");
  const BufferDesc &y = plan_.buffers[step.operands[0]], &dy = plan_.buffers[step.operands[1]];
  const BufferDesc& dx = plan_.buffers[step.results[0]];
  auto type = floatSuffix(y.dtype), gradType = floatSuffix(dy.dtype);
  if (!type || !gradType) return absl::InvalidArgumentError("output and grad must be f32, bf16 or f16");
  if (dy.dtype != y.dtype && y.dtype != DType::F32)
    return absl::InvalidArgumentError("grad must have the output's type, or be bf16/f16 under an f32 output");
  if (dy.shape != y.shape || dx.shape != y.shape || dx.dtype != y.dtype)
    return absl::InvalidArgumentError("grad and result must have the output's shape, the result its type");
  auto axis = step.withAttrsOf<SoftmaxGradAttrs>([](const auto& a) { return a.axis; });
  if (!axis.ok()) return axis.status();
  const int64_t rank = static_cast<int64_t>(y.shape.size());
  if (*axis < 0 || *axis >= rank) return absl::InvalidArgumentError("axis out of range");
  long long outer = 1, inner = 1;
  for (int64_t d = 0; d < *axis; ++d) outer *= y.shape[static_cast<size_t>(d)];
  for (int64_t d = *axis + 1; d < rank; ++d) inner *= y.shape[static_cast<size_t>(d)];
  const long long len = y.shape[static_cast<size_t>(*axis)];
  if (len == 0 || outer * inner == 0) return absl::OkStatus();
  std::string name = absl::StrCat("amp_softmax_grad_", *type);
  if (dy.dtype != y.dtype) absl::StrAppend(&name, "_", *gradType);
  auto fn = kernel(name);
  if (!fn.ok()) return fn.status();
  const long long units = inner == 1 ? outer : outer * ((inner + 255) / 256);
  Action a = launch(name, s);
  a.fn = *fn;
  a.blocks = std::max<long long>(1, std::min<long long>(units, int64_t{8} * api_.info().multiprocessors));
  a.threads = 256;
  a.arg(device<const void>(ptr_[step.operands[0]]));
  a.arg(device<const void>(ptr_[step.operands[1]]));
  a.arg(device<void>(ptr_[step.results[0]]));
  a.arg(outer);
  a.arg(len);
  a.arg(inner);
  actions_.push_back(std::move(a));
  report_.add(kGeneratedKernels);
  return absl::OkStatus();
}

// batch_norm and batch_norm_grad: kernels/NormKernels.cu, one launch of 256-thread blocks, one
// block per channel (grid-strided). Checked as the reference checks them, and the buffers' types
// and shapes too: the kernel trusts them.
absl::Status ActionBuilder::batchNorm(size_t s) {
  const PlanStep& step = entry_.steps[s];
  const bool grad = step.code == OpCode::BatchNormGrad;
  if (step.operands.size() != 5 || step.results.size() != 3)
    return absl::InvalidArgumentError(grad ? "expected (x, dy, scale, running_mean, running_var) -> (dx, dscale, dbias)"
                                           : "expected (x, scale, bias, running_mean, running_var) -> (y, "
                                             "new_running_mean, new_running_var)");
  const BufferDesc& x = plan_.buffers[step.operands[0]];
  auto type = floatSuffix(x.dtype);
  if (!type || x.shape.size() < 2) return absl::InvalidArgumentError("x must be a float [N, C, ...] (rank >= 2)");
  auto eps = step.withAttrsOf<BatchNormAttrs, BatchNormGradAttrs>([](const auto& a) { return a.epsilon; });
  if (!eps.ok()) return eps.status();
  auto training = step.withAttrsOf<BatchNormAttrs, BatchNormGradAttrs>([](const auto& a) { return a.training; });
  if (!training.ok()) return training.status();
  double momentum = 0;
  if (!grad) {
    auto m = step.withAttrsOf<BatchNormAttrs>([](const auto& a) { return a.momentum; });
    if (!m.ok()) return m.status();
    momentum = *m;
    if (!(momentum >= 0 && momentum <= 1))
      return absl::InvalidArgumentError(absl::StrCat("attribute 'momentum' must be in [0, 1], got ", momentum));
  }
  if (!(*eps > 0)) return absl::InvalidArgumentError(absl::StrCat("attribute 'epsilon' must be > 0, got ", *eps));
  const long long n = x.shape[0], channels = x.shape[1];
  long long spatial = 1;
  for (size_t d = 2; d < x.shape.size(); ++d) spatial *= x.shape[d];
  if (*training && n * spatial < 2) return absl::InvalidArgumentError("training needs more than one value per channel");
  const Shape perChannel{channels};
  auto f32PerChannel = [&](int32_t id) {
    return plan_.buffers[id].dtype == DType::F32 && plan_.buffers[id].shape == perChannel;
  };
  auto likeX = [&](int32_t id) { return plan_.buffers[id].dtype == x.dtype && plan_.buffers[id].shape == x.shape; };
  for (size_t i = grad ? 2 : 1; i < 5; ++i)
    if (!f32PerChannel(step.operands[i]))
      return absl::InvalidArgumentError(absl::StrCat("operand ", i, " must be f32[", channels, "] (one per channel)"));
  if (grad && !likeX(step.operands[1])) return absl::InvalidArgumentError("dy must have x's type");
  if (!likeX(step.results[0]) || !f32PerChannel(step.results[1]) || !f32PerChannel(step.results[2]))
    return absl::InvalidArgumentError("results must be x's type, then two f32 [C]");
  if (channels == 0) return absl::OkStatus();
  const std::string name = absl::StrCat(grad ? "amp_batch_norm_grad_" : "amp_batch_norm_", *type);
  auto fn = kernel(name);
  if (!fn.ok()) return fn.status();
  Action a = launch(name, s);
  a.fn = *fn;
  a.blocks = std::max<long long>(1, std::min<long long>(channels, int64_t{8} * api_.info().multiprocessors));
  a.threads = 256;
  auto in = [&](size_t i) { return device<const void>(ptr_[step.operands[i]]); };
  auto out = [&](size_t i) { return device<void>(ptr_[step.results[i]]); };
  a.arg(in(0));
  if (grad) a.arg(in(1));
  for (size_t i = grad ? 2 : 1; i < 5; ++i) a.arg(device<const float>(ptr_[step.operands[i]]));
  a.arg(out(0));
  a.arg(device<float>(ptr_[step.results[1]]));
  a.arg(device<float>(ptr_[step.results[2]]));
  a.arg(n);
  a.arg(channels);
  a.arg(spatial);
  a.arg(*eps);
  if (!grad) a.arg(momentum);
  a.arg(static_cast<int>(*training));
  actions_.push_back(std::move(a));
  report_.add(kGeneratedKernels);
  return absl::OkStatus();
}

}  // namespace amp::rt::cuda
