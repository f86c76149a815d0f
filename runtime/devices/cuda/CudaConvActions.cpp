// The cuda device's lowering of amp.conv2d, pooling and their gradients: implicit GEMMs through
// ConvGemm.h and ConvGatherKernels.cu, or the direct kernels of kernels/ConvKernels.cu.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "runtime/plan/PoolWindow.h"
#include "runtime/devices/cuda/CudaActions.h"
#include "runtime/devices/cuda/KernelTypes.h"
#include "runtime/devices/cuda/LaunchConfig.h"
#include "runtime/devices/cuda/ConvGemm.h"
#include "runtime/kernels/math/ConvMath.h"
#include "runtime/WindowGeometry.h"

namespace amp::rt::cuda {

namespace {

// A pair attribute ([h, w]) of a conv or pooling step, every value at least `least`.
absl::StatusOr<std::pair<long long, long long>> pairAttr(const absl::StatusOr<std::vector<int64_t>>& v, const char* name,
                                                         long long least) {
  if (!v.ok()) return v.status();
  if (v->size() != 2 || (*v)[0] < least || (*v)[1] < least)
    return absl::InvalidArgumentError(absl::StrCat("attribute '", name, "' must be two integers >= ", least));
  return std::make_pair(static_cast<long long>((*v)[0]), static_cast<long long>((*v)[1]));
}

}  // namespace

// One thread per result element, a wave of the GPU at a time (grid-strided).
Action ActionBuilder::elementKernel(const std::string& name, size_t s, int64_t elements, KernelFn fn) {
  Action a = launch(name, s);
  a.fn = fn;
  a.threads = 256;
  a.blocks = std::max<int64_t>(1, std::min<int64_t>((elements + 255) / 256, int64_t{8} * api_.info().multiprocessors));
  return a;
}

namespace {

absl::StatusOr<ConvProblem> convProblem(const Plan& plan, const PlanStep& step) {
  ConvProblem out;
  const bool forward = step.code == OpCode::Conv2D, gradInput = step.code == OpCode::Conv2DGradInput;
  out.pass = forward ? ConvPass::Forward : gradInput ? ConvPass::GradInput : ConvPass::GradWeight;
  if (step.results.size() != 1 || step.operands.size() < 2 || step.operands.size() > (forward ? 3u : 2u))
    return absl::InvalidArgumentError("unexpected operands for the convolution");
  // The shapes: x and w of the forward; dy and w (dx the result); x and dy (dw the result).
  const BufferDesc& r = plan.buffers[step.results[0]];
  const BufferDesc& a = plan.buffers[step.operands[0]];
  const BufferDesc& b = plan.buffers[step.operands[1]];
  const Shape& xs = forward || !gradInput ? a.shape : r.shape;
  const Shape& ws = forward || gradInput ? b.shape : r.shape;
  const Shape& ys = forward ? r.shape : gradInput ? a.shape : b.shape;
  if (!floatSuffix(r.dtype) || a.dtype != r.dtype || b.dtype != r.dtype || xs.size() != 4 || ws.size() != 4 || ys.size() != 4)
    return absl::InvalidArgumentError("convolution tensors must be NCHW of one float type");
  out.dtype = r.dtype;
  auto window = step.withAttrsOf<Conv2DAttrs, Conv2DGradInputAttrs, Conv2DGradWeightAttrs>(
      [](const auto& a) { return std::array{a.stride, a.padding, a.dilation}; });
  auto groups = step.withAttrsOf<Conv2DAttrs, Conv2DGradInputAttrs, Conv2DGradWeightAttrs>([](const auto& a) { return a.groups; });
  if (!window.ok()) return window.status();
  auto stride = pairAttr((*window)[0], "stride", 1), pad = pairAttr((*window)[1], "padding", 0),
       dil = pairAttr((*window)[2], "dilation", 1);
  for (const absl::Status& st : {stride.status(), pad.status(), dil.status(), groups.status()})
    if (!st.ok()) return st;
  AmpConvShape& c = out.shape;
  c.N = xs[0], c.C = xs[1], c.H = xs[2], c.W = xs[3];
  c.O = ws[0], c.CG = ws[1], c.KH = ws[2], c.KW = ws[3], c.OH = ys[2], c.OW = ys[3];
  c.strideH = stride->first, c.strideW = stride->second, c.padH = pad->first, c.padW = pad->second;
  c.dilH = dil->first, c.dilW = dil->second;
  // The shapes must be the ones the kernels' index math assumes (validated plans are).
  const std::optional<int64_t> spanH = windowSpan(c.H, c.padH, c.dilH, c.KH), spanW = windowSpan(c.W, c.padW, c.dilW, c.KW);
  const bool consistent = *groups >= 1 && c.C % *groups == 0 && c.O % *groups == 0 && c.CG == c.C / *groups &&
                          ys[0] == c.N && ys[1] == c.O && c.KH >= 1 && c.KW >= 1 && spanH && spanW && *spanH >= 0 &&
                          *spanW >= 0 && c.OH == *spanH / c.strideH + 1 && c.OW == *spanW / c.strideW + 1;
  if (!consistent) return absl::InvalidArgumentError("convolution shapes disagree with its attributes");
  c.OG = c.O / *groups;
  if (forward && step.operands.size() == 3) {
    const BufferDesc& bias = plan.buffers[step.operands[2]];
    if (bias.dtype != r.dtype || bias.shape != Shape{c.O}) return absl::InvalidArgumentError("bias must be [O] of the type");
    out.bias = true;
  }
  return out;
}

bool isConv(const PlanStep& step) {
  return step.code == OpCode::Conv2D || step.code == OpCode::Conv2DGradInput || step.code == OpCode::Conv2DGradWeight;
}

const char* gatherKernel(DType t) { return dtypeSize(t) == 2 ? "amp_conv_gather_b16" : "amp_conv_gather_b32"; }

}  // namespace

// amp.conv2d and its gradients: an implicit GEMM (ConvGemm.h), or the direct, exact kernels
// (ConvKernels.cu) when asked for, or when the GEMM form declines the step.
absl::Status ActionBuilder::convOp(size_t s) {
  const PlanStep& step = entry_.steps[s];
  auto conv = convProblem(plan_, step);
  if (!conv.ok()) return conv.status();
  std::string declined;
  if (options_.conv == ConvAlgorithm::ImplicitGemm) {
    auto done = convAsGemm(s, *conv, &declined);
    if (!done.ok()) return done.status();
    if (*done) return absl::OkStatus();
  }
  const bool forward = conv->pass == ConvPass::Forward, gradInput = conv->pass == ConvPass::GradInput;
  const std::string name = absl::StrCat(forward ? "amp_conv2d_" : gradInput ? "amp_conv2d_grad_input_" : "amp_conv2d_grad_weight_",
                                        *floatSuffix(conv->dtype));
  auto fn = kernel(name);
  if (!fn.ok()) return fn.status();
  Action k = elementKernel(name, s, plan_.buffers[step.results[0]].numel(), *fn);
  if (!declined.empty()) absl::StrAppend(&k.what, " (direct: ", declined, ")");
  k.arg(device<const void>(ptr_[step.operands[0]]));
  k.arg(device<const void>(ptr_[step.operands[1]]));
  if (forward) k.arg(device<const void>(conv->bias ? ptr_[step.operands[2]] : 0));
  k.arg(device<void>(ptr_[step.results[0]]));
  k.arg(conv->shape);
  actions_.push_back(std::move(k));
  report_.add(kGeneratedKernels);
  return absl::OkStatus();
}

absl::StatusOr<DevicePtr> ActionBuilder::convColumns(int64_t needed) {
  if (columns_.ptr && columns_.bytes >= needed) return *columns_.ptr;
  int64_t most = needed;  // more than the plan's largest: an executor given another plan
  for (const EntryPoint& e : plan_.entries)  // the device's rewrites leave convolutions as they are
    for (const PlanStep& step : e.steps) {
      if (!isConv(step)) continue;
      auto conv = convProblem(plan_, step);
      if (!conv.ok()) continue;  // its own lowering reports it
      auto lowered = lowerConvToGemm(conv->pass, conv->dtype, conv->shape, conv->bias, options_.convColumnsLimitBytes);
      if (lowered.ok()) most = std::max(most, lowered->workspaceBytes);
    }
  auto columns = sharedMemory_.device(std::max<int64_t>(most, 1));
  if (!columns.ok()) return columns.status();
  report_.scratchBytes += most;  // counted once, in the entry that allocated it
  columns_.ptr = *columns;
  columns_.bytes = most;
  return *columns;
}

absl::StatusOr<bool> ActionBuilder::convAsGemm(size_t s, const ConvProblem& conv, std::string* declined) {
  const PlanStep& step = entry_.steps[s];
  auto lowered = lowerConvToGemm(conv.pass, conv.dtype, conv.shape, conv.bias, options_.convColumnsLimitBytes);
  if (!lowered.ok()) {
    *declined = std::string(lowered.status().message());
    return false;
  }
  auto gather = kernel(gatherKernel(conv.dtype));
  if (!gather.ok()) {  // a bundle compiled before the gathers existed
    *declined = "the bundle's code has no column gathers; recompile it with this ampc";
    return false;
  }
  absl::StatusOr<DevicePtr> columns = DevicePtr{0};  // a pointwise forward or input gradient needs none
  if (lowered->workspaceBytes > 0) columns = convColumns(lowered->workspaceBytes);
  if (!columns.ok()) return columns.status();
  auto address = [&](const ConvBuffer& b, int64_t chunk) -> DevicePtr {
    const DevicePtr moved = static_cast<DevicePtr>(chunk * b.chunkStride);
    switch (b.kind) {
      case ConvBuffer::Kind::Operand: return ptr_[step.operands[static_cast<size_t>(b.operand)]] + moved;
      case ConvBuffer::Kind::Result: return ptr_[step.results[0]] + moved;
      case ConvBuffer::Kind::Workspace: return *columns + static_cast<DevicePtr>(b.offset);
    }
    return 0;
  };
  // One algorithm serves every chunk: it must work at each chunk's addresses.
  GemmPlan plan = lowered->gemm;
  for (int64_t chunk = 0; chunk < lowered->chunks; ++chunk)
    alignForCall(plan, address(lowered->a, chunk), address(lowered->b, chunk), 0, address(lowered->d, chunk), 0);
  auto id = api_.prepareGemm(plan);
  if (!id.ok() && absl::IsUnimplemented(id.status())) {  // cuBLASLt has no algorithm for the shape
    *declined = std::string(id.status().message());
    return false;
  }
  if (!id.ok()) return id.status();
  for (int64_t chunk = 0; chunk < lowered->chunks; ++chunk) {
    const std::string images =
        lowered->chunks > 1 ? absl::StrCat(", images ", chunk * lowered->shape.N, "..", (chunk + 1) * lowered->shape.N - 1) : "";
    for (const ConvGather& g : lowered->gathers) {
      if (chunk > 0 && !g.everyChunk) continue;
      Action k = elementKernel(gatherKernel(conv.dtype), s, g.elements, *gather);
      absl::StrAppend(&k.what, " ", convGatherName(g.mode), ", ", g.elements, " elements", images);
      k.arg(device<const void>(address(g.source, chunk)));
      k.arg(device<void>(address(g.target, chunk)));
      k.arg(lowered->shape);
      k.arg(static_cast<int>(g.mode));
      actions_.push_back(std::move(k));
      report_.add(kGeneratedKernels);
    }
    pushGemm(s, *id, plan, "implicit GEMM, ", absl::StrCat(plan.accumulate ? " onto the bias" : "", images),
             address(lowered->a, chunk), address(lowered->b, chunk), 0, address(lowered->d, chunk));
  }
  return true;
}

// amp.max_pool2d, amp.avg_pool2d and their gradients (ConvKernels.cu).
absl::Status ActionBuilder::poolOp(size_t s) {
  const PlanStep& step = entry_.steps[s];
  const bool grad = step.code == OpCode::MaxPool2DGrad || step.code == OpCode::AvgPool2DGrad;
  const bool isMax = step.code == OpCode::MaxPool2D || step.code == OpCode::MaxPool2DGrad;
  const size_t operands = step.code == OpCode::MaxPool2DGrad ? 2 : 1;
  if (step.results.size() != 1 || step.operands.size() != operands)
    return absl::InvalidArgumentError("unexpected operands for the pooling");
  const BufferDesc& r = plan_.buffers[step.results[0]];
  const Shape& xs = grad ? r.shape : plan_.buffers[step.operands[0]].shape;
  const Shape& ys = grad ? plan_.buffers[step.operands.back()].shape : r.shape;
  auto type = floatSuffix(r.dtype);
  for (int32_t id : step.operands)
    if (plan_.buffers[id].dtype != r.dtype) type.reset();
  if (!type || xs.size() != 4 || ys.size() != 4) return absl::InvalidArgumentError("pooling tensors must be NCHW of one float type");
  auto window = poolWindowOf(step);
  if (!window.ok()) return window.status();
  auto k = pairAttr(window->kernel, "kernel", 1), stride = pairAttr(window->stride, "stride", 1),
       pad = pairAttr(window->padding, "padding", 0);
  for (const absl::Status& st : {k.status(), stride.status(), pad.status()})
    if (!st.ok()) return st;
  AmpPoolShape p{};
  p.NC = xs[0] * xs[1], p.H = xs[2], p.W = xs[3], p.OH = ys[2], p.OW = ys[3];
  p.KH = k->first, p.KW = k->second, p.strideH = stride->first, p.strideW = stride->second;
  p.padH = pad->first, p.padW = pad->second;
  const std::optional<int64_t> spanH = windowSpan(p.H, p.padH, 1, p.KH), spanW = windowSpan(p.W, p.padW, 1, p.KW);
  const bool consistent = ys[0] == xs[0] && ys[1] == xs[1] && p.padH <= p.KH / 2 && p.padW <= p.KW / 2 && spanH &&
                          spanW && *spanH >= 0 && *spanW >= 0 && p.OH == *spanH / p.strideH + 1 &&
                          p.OW == *spanW / p.strideW + 1;
  if (!consistent) return absl::InvalidArgumentError("pooling shapes disagree with its attributes");
  const std::string name = absl::StrCat(isMax ? "amp_max_pool2d_" : "amp_avg_pool2d_", grad ? "grad_" : "", *type);
  auto fn = kernel(name);
  if (!fn.ok()) return fn.status();
  Action a = elementKernel(name, s, r.numel(), *fn);
  for (int32_t id : step.operands) a.arg(device<const void>(ptr_[id]));
  a.arg(device<void>(ptr_[step.results[0]]));
  a.arg(p);
  actions_.push_back(std::move(a));
  report_.add(kGeneratedKernels);
  return absl::OkStatus();
}

}  // namespace amp::rt::cuda
