#include "runtime/devices/cuda/CudaActions.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "runtime/devices/cuda/KernelTypes.h"
#include "runtime/devices/cuda/GemmEpilogues.h"
#include "runtime/devices/cuda/LaunchConfig.h"

namespace amp::rt::cuda {
namespace {

// Whether a generated kernel over `space` can read an operand of shape `in`: the space itself, a
// scalar, a broadcast along leading dims, a per-row value ([M, 1] against [M, N]) or a broadcast
// along one run of inner dims ([A, 1, C] against [A, B, C]), the accesses
// the CUDA flavour compiles (codegen/emit/KernelEmitter.h). The kernel's sizes are compiled in, so
// an edited plan whose shapes disagree would make it read or write out of bounds.
bool readableBy(const Shape& in, const Shape& space) {
  if (in == space || numElements(in) == 1) return true;
  size_t lead = 0;
  while (lead < in.size() && in[lead] == 1) ++lead;
  const size_t k = in.size() - lead;
  if (k <= space.size() && std::equal(in.begin() + static_cast<std::ptrdiff_t>(lead), in.end(), space.end() - static_cast<std::ptrdiff_t>(k)))
    return true;
  if (in.size() > space.size()) return false;
  Shape padded(space.size() - in.size(), 1);
  padded.insert(padded.end(), in.begin(), in.end());
  size_t kept = padded.size();
  while (kept > 0 && padded[kept - 1] == 1) --kept;
  if (std::equal(padded.begin(), padded.begin() + static_cast<std::ptrdiff_t>(kept), space.begin())) return true;
  // One run of broadcast dims between equal leading and trailing dims ([A, 1, C] against [A, B, C]).
  size_t first = 0;
  while (first < padded.size() && padded[first] == space[first]) ++first;
  size_t last = first;
  while (last < padded.size() && padded[last] == 1) ++last;
  return first < last && last < padded.size() &&
         std::equal(padded.begin() + static_cast<std::ptrdiff_t>(last), padded.end(), space.begin() + static_cast<std::ptrdiff_t>(last));
}

}  // namespace

DeviceMemory::~DeviceMemory() {
  for (DevicePtr p : device_) api_.release(p);
  for (void* p : pinned_) api_.releasePinned(p);
}

absl::StatusOr<DevicePtr> DeviceMemory::device(int64_t bytes) {
  auto p = api_.allocate(bytes);
  if (p.ok()) device_.push_back(*p);
  return p;
}

absl::StatusOr<uint8_t*> DeviceMemory::pinned(int64_t bytes) {
  auto p = api_.allocatePinned(bytes);
  if (!p.ok()) return p.status();
  pinned_.push_back(*p);
  return static_cast<uint8_t*>(*p);
}

Action Action::hostToDevice(DevicePtr dst, uint8_t* host, int64_t bytes, std::string what) {
  Action a;
  a.kind = Kind::HostToDevice;
  a.dst = dst;
  a.host = host;
  a.bytes = bytes;
  a.what = "copy in: " + what;
  return a;
}

Action Action::deviceToHost(uint8_t* host, DevicePtr src, int64_t bytes, std::string what) {
  Action a;
  a.kind = Kind::DeviceToHost;
  a.src = src;
  a.host = host;
  a.bytes = bytes;
  a.what = "copy out: " + what;
  return a;
}

absl::Status Action::enqueue(GpuApi& api) {
  switch (kind) {
    case Kind::Launch: {
      std::vector<void*> params;
      std::vector<size_t> sizes;
      params.reserve(args.size());
      sizes.reserve(args.size());
      for (std::vector<uint8_t>& v : args) {
        params.push_back(v.data());
        sizes.push_back(v.size());
      }
      return api.launch(fn, blocks, threads, params.data(), blocksY, sizes);
    }
    case Kind::Gemm: return api.gemm(gemm, a, b, bias, d, aux);
    case Kind::Copy: return api.copyOnDevice(dst, src, bytes);
    case Kind::Fill: return api.fill32(dst, value, bytes / 4);
    case Kind::HostToDevice: return api.copyToDevice(dst, host, bytes);
    case Kind::DeviceToHost: return api.copyToHost(host, src, bytes);
  }
  return absl::InternalError("unknown action");
}

absl::StatusOr<KernelFn> ActionBuilder::kernel(const std::string& name) {
  if (auto it = kernels_.find(name); it != kernels_.end()) return it->second;
  auto fn = api_.function(name);
  if (!fn.ok()) return fn.status();
  kernels_.emplace(name, *fn);
  return *fn;
}

const char* Action::categoryName(Category c) {
  switch (c) {
    case Category::Gemm: return "GEMM";
    case Category::Fused: return "fused";
    case Category::ScalerOptimizer: return "scaler/optimizer";
    case Category::Other: return "other";
  }
  return "other";
}

Action ActionBuilder::launch(const std::string& name, size_t s) {
  Action a;
  a.kind = Action::Kind::Launch;
  const PlanStep& step = entry_.steps[s];
  a.category = step.attrs.has("cuda_symbol")         ? Action::Category::Fused
               : step.kind == StepKind::MultiTensor ? Action::Category::ScalerOptimizer
                                                    : Action::Category::Other;
  a.what = absl::StrCat("step ", number(s), " ", entry_.steps[s].op, ": ", name);
  return a;
}

absl::StatusOr<DevicePtr> ActionBuilder::scratch(int64_t bytes) {
  report_.scratchBytes += bytes;
  return memory_.device(bytes > 0 ? bytes : 1);
}

void ActionBuilder::copy(DevicePtr dst, DevicePtr src, int64_t bytes, std::string what) {
  Action a;
  a.kind = Action::Kind::Copy;
  a.dst = dst;
  a.src = src;
  a.bytes = bytes;
  a.what = "copy: " + what;
  actions_.push_back(std::move(a));
  ++report_.copies;
}

absl::StatusOr<size_t> ActionBuilder::lower(size_t s) {
  const PlanStep& step = entry_.steps[s];
  absl::Status status = absl::OkStatus();
  if (step.kind == StepKind::Alias) return 1;  // a view: the memory plan gave it its source's storage
  // A kernel ampc generated (a fused region or a lone elementwise op) carries its symbol.
  if (step.attrs.has("cuda_symbol")) {
    status = generated(s);
  } else if (!step.code) {
    return 0;
  } else {
    // One case per OpCode (-Werror=switch): a new dialect op is a build error here until the
    // device says how it runs it.
    switch (*step.code) {
      case OpCode::Linear:
      case OpCode::Matmul: status = gemm(s); break;
      case OpCode::UnscaleCheck: status = unscaleCheck(s); break;
      case OpCode::GradStats: status = gradStats(s); break;
      case OpCode::GlobalNorm: status = globalNorm(s); break;
      case OpCode::ClipGrads: status = clipGrads(s); break;
      case OpCode::StepCounters:
      case OpCode::LrSchedule:
      case OpCode::UpdateScale: status = scalarKernel(s); break;
      case OpCode::ReduceSum:
      case OpCode::ReduceMean:
      case OpCode::ReduceMax: status = reduce(s); break;
      case OpCode::Softmax:
      case OpCode::LogSoftmax:
      case OpCode::LayerNorm:
      case OpCode::LayerNormGrad:
      case OpCode::RmsNorm:
      case OpCode::RmsNormGrad: status = normOp(s); break;
      case OpCode::Embedding:
      case OpCode::EmbeddingGrad:
      case OpCode::Transpose:
      case OpCode::GeluGrad:
      case OpCode::Dropout:
      case OpCode::Slice:
      case OpCode::SliceGrad:
      case OpCode::Concat: status = shapeKernels(s); break;
      case OpCode::Conv2D:
      case OpCode::Conv2DGradInput:
      case OpCode::Conv2DGradWeight: status = convOp(s); break;
      case OpCode::MaxPool2D:
      case OpCode::AvgPool2D:
      case OpCode::MaxPool2DGrad:
      case OpCode::AvgPool2DGrad: status = poolOp(s); break;
      case OpCode::MseLoss: status = mseLoss(s); break;
      case OpCode::CrossEntropy:
      case OpCode::CrossEntropyGrad: status = crossEntropy(s); break;
      case OpCode::AdamUpdate:
      case OpCode::SgdUpdate: return updates(s);
      // Elementwise ops and fused regions run as generated kernels (cuda_symbol above); one
      // without its kernel, a constant (uploaded by the executor), a yield outside a body and the
      // collectives (no NCCL yet) have no lowering here: the executor names them.
      case OpCode::Abs:
      case OpCode::Add:
      case OpCode::AllGather:
      case OpCode::AllReduce:
      case OpCode::BroadcastTo:
      case OpCode::Cast:
      case OpCode::Compare:
      case OpCode::Constant:
      case OpCode::Div:
      case OpCode::Exp:
      case OpCode::Fused:
      case OpCode::Gelu:
      case OpCode::Log:
      case OpCode::Maximum:
      case OpCode::Minimum:
      case OpCode::Mul:
      case OpCode::Neg:
      case OpCode::Pow:
      case OpCode::RankChunk:
      case OpCode::Reciprocal:
      case OpCode::ReduceScatter:
      case OpCode::Relu:
      case OpCode::Reshape:
      case OpCode::Rsqrt:
      case OpCode::Select:
      case OpCode::Sigmoid:
      case OpCode::Silu:
      case OpCode::Sqrt:
      case OpCode::Sub:
      case OpCode::Tanh:
      case OpCode::Yield: return 0;
    }
  }
  if (!status.ok()) return status;
  return 1;
}

// A kernel ampc generated (a fused region, or a lone elementwise op): its inputs, then its
// results, by pointer; one thread per vector of cuda_vector_width elements, or per column for a
// kernel ending in row reductions, capped at one wave of the GPU (grid-stride loops).
absl::Status ActionBuilder::generated(size_t s) {
  const PlanStep& step = entry_.steps[s];
  auto symbol = step.attrs.getString(step.op, "cuda_symbol");
  if (!symbol.ok()) return symbol.status();
  auto width = step.attrs.getInt(step.op, "cuda_vector_width", 1);
  if (!width.ok()) return width.status();
  if (*width < 1 || *width > 16) return absl::InvalidArgumentError(absl::StrCat("cuda_vector_width ", *width, " outside [1, 16]"));
  int64_t items = 0;
  if (step.attrs.has("reduced_results")) {
    auto rowLength = step.attrs.getInt(step.op, "row_length");
    if (!rowLength.ok()) return rowLength.status();
    items = *rowLength;
  } else {
    const Shape& space = step.code == OpCode::Fused && !step.body.empty() && !step.body[0].results.empty()
                             ? step.locals[step.body[0].results[0]].shape
                             : plan_.buffers[step.results[0]].shape;
    items = workItems(numElements(space), static_cast<int>(*width));
  }
  {
    const Shape& space = step.code == OpCode::Fused && !step.body.empty() && !step.body[0].results.empty()
                             ? step.locals[step.body[0].results[0]].shape
                             : plan_.buffers[step.results[0]].shape;
    for (int32_t id : step.operands)
      if (!readableBy(plan_.buffers[id].shape, space))
        return absl::InvalidArgumentError(absl::StrCat("operand ", plan_.buffers[id].name, " ",
                                                       shapeToString(plan_.buffers[id].shape),
                                                       " is not an access the kernel compiles for ", shapeToString(space)));
    const bool reduces = step.attrs.has("reduced_results");
    for (int32_t id : step.results)
      if (plan_.buffers[id].shape != space && !(reduces && space.size() >= 1 && plan_.buffers[id].shape == Shape{space.back()}))
        return absl::InvalidArgumentError(absl::StrCat("result ", plan_.buffers[id].name, " ",
                                                       shapeToString(plan_.buffers[id].shape),
                                                       " is not the kernel's iteration space ", shapeToString(space)));
  }
  auto fn = kernel(*symbol);
  if (!fn.ok()) return fn.status();
  Action a = launch(*symbol, s);
  a.fn = *fn;
  const LaunchConfig grid = gridStrideLaunch(items, api_.info().multiprocessors);
  a.blocks = grid.blocks;
  a.threads = grid.threads;
  for (int32_t id : step.operands) a.arg(ptr_[id]);
  for (int32_t id : step.results) a.arg(ptr_[id]);
  actions_.push_back(std::move(a));
  ++report_.kernels;
  return absl::OkStatus();
}

// amp.linear / amp.matmul through cuBLASLt, with the layer's own bias and relu epilogue, or the
// training epilogue the opt-in rewrite asked for (GemmEpilogues.h). Operands: a, b, then the
// bias (a linear that has one) or the GELU input (DGELU forms). Results: D, then the GELU input
// (GELU_AUX forms), then the bias gradient (the BGRAD forms).
absl::Status ActionBuilder::gemm(size_t s) {
  const PlanStep& step = entry_.steps[s];
  auto requested = requestedEpilogue(step);
  if (!requested.ok()) return requested.status();
  const GemmEpilogue e = *requested;
  const bool linear = step.code == OpCode::Linear;
  const bool readsGelu = e == GemmEpilogue::DGelu || e == GemmEpilogue::DGeluBgrad;
  const bool writesGelu = e == GemmEpilogue::GeluAux || e == GemmEpilogue::GeluAuxBias;
  const bool biasGrad = epilogueWritesBiasGrad(e);
  const size_t results = 1 + (writesGelu ? 1 : 0) + (biasGrad ? 1 : 0);
  if (step.operands.size() < 2 || step.results.size() != results ||
      step.operands.size() > (linear ? 3u : readsGelu ? 3u : 2u) || (readsGelu && step.operands.size() != 3))
    return absl::InvalidArgumentError("expected the GEMM's operands and results");
  auto problem = gemmProblemOf(plan_, step);
  if (!problem.ok()) return problem.status();
  const bool bias = linear && step.operands.size() == 3;
  const BufferDesc& x = plan_.buffers[step.operands[0]];
  for (int32_t id : step.operands)
    if (plan_.buffers[id].dtype != x.dtype) return absl::InvalidArgumentError("GEMM operands of different types");
  for (int32_t id : step.results)
    if (plan_.buffers[id].dtype != x.dtype) return absl::InvalidArgumentError("the GEMM's results must have its operands' type");
  auto plan = planGemm(*problem);
  if (!plan.ok()) return plan.status();
  const BufferDesc& out = plan_.buffers[step.results[0]];
  if (numElements(plan->resultShape) != out.numel())
    return absl::InvalidArgumentError(absl::StrCat("the GEMM computes ", shapeToString(plan->resultShape),
                                                   ", the plan's result is ", shapeToString(out.shape)));
  DevicePtr aux = 0, biasPtr = bias ? ptr_[step.operands[2]] : 0;
  if (e != GemmEpilogue::None) {
    // A forward form must be the layer's own: its bias, and a ReLU mask exactly for a relu layer
    // (a plan asking for RELU_BIAS or a bias it lacks is refused, never run with a null pointer).
    const bool forward = epilogueIsForward(e);
    const bool relu = linear && problem->relu;
    const bool consistent = forward ? linear && epilogueReadsBias(e) == bias &&
                                          relu == (epilogueAux(e) == GemmAux::ReluMask)
                                    : !linear;
    if (!consistent)
      return absl::InvalidArgumentError(absl::StrCat("epilogue ", std::string(gemmEpilogueName(e)), " does not fit this ", step.op));
    if (auto st = setTrainingEpilogue(*plan, e); !st.ok()) return st;
    if (biasGrad) {
      const int32_t db = step.results.back();
      if (plan_.buffers[db].numel() != (e == GemmEpilogue::BgradB ? plan->n : plan->m))
        return absl::InvalidArgumentError(absl::StrCat("the bias gradient ", plan_.buffers[db].name, " ",
                                                       shapeToString(plan_.buffers[db].shape), " does not fit the GEMM"));
      biasPtr = ptr_[db];
    }
    if (epilogueAux(e) == GemmAux::GeluInput) {
      const int32_t input = readsGelu ? step.operands[2] : step.results[1];
      if (plan_.buffers[input].numel() != out.numel())
        return absl::InvalidArgumentError("the GELU input must have the GEMM result's shape");
      aux = ptr_[input];
    } else if (epilogueAux(e) == GemmAux::ReluMask) {
      auto owner = step.attrs.getInt(step.op, kReluMaskAttr);
      if (!owner.ok()) return owner.status();
      const int64_t bytes = auxBytes(*plan);
      if (forward) {
        auto mask = scratch(bytes);
        if (!mask.ok()) return mask.status();
        reluMasks_[*owner] = {*mask, bytes};
      }
      auto it = reluMasks_.find(*owner);
      if (it == reluMasks_.end() || it->second.second != bytes)
        return absl::InvalidArgumentError(absl::StrCat("no ReLU mask of ", bytes, " bytes written for buffer ", *owner,
                                                       " before this step"));
      aux = it->second.first;
    }
  }
  alignForCall(*plan, ptr_[step.operands[0]], ptr_[step.operands[1]], biasPtr, ptr_[step.results[0]], aux);
  auto id = api_.prepareGemm(*plan);
  if (!id.ok()) return id.status();
  pushGemm(s, *id, *plan, "", " " + std::string(gemmEpilogueName(plan->epilogue)), ptr_[step.operands[0]],
           ptr_[step.operands[1]], biasPtr, ptr_[step.results[0]], aux);
  return absl::OkStatus();
}

void ActionBuilder::pushGemm(size_t s, GemmId id, const GemmPlan& plan, const std::string& kind, const std::string& detail,
                             DevicePtr a, DevicePtr b, DevicePtr bias, DevicePtr d, DevicePtr aux) {
  Action g;
  g.kind = Action::Kind::Gemm;
  g.category = Action::Category::Gemm;
  g.what = absl::StrCat("step ", number(s), " ", entry_.steps[s].op, ": ", kind, "cuBLASLt ", std::string(dtypeName(plan.dtype)),
                        " ", plan.m, " x ", plan.n, " x ", plan.k,
                        plan.batch > 1 ? absl::StrCat(" in ", plan.batch, " batches") : "", detail);
  g.gemm = id;
  g.a = a;
  g.b = b;
  g.bias = bias;
  g.d = d;
  g.aux = aux;
  actions_.push_back(std::move(g));
  ++report_.gemms;
}

}  // namespace amp::rt::cuda
