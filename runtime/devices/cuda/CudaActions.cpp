#include "runtime/devices/cuda/CudaActions.h"

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <set>

#include "absl/strings/str_cat.h"
#include "runtime/devices/cuda/KernelTypes.h"
#include "runtime/devices/cuda/GemmStep.h"
#include "runtime/devices/cuda/GemmVariants.h"
#include "runtime/devices/cuda/LaunchConfig.h"
#include "runtime/plan/KernelBinding.h"

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
    case Kind::Collective:
      if (!collectives || !*collectives) return absl::InternalError("a collective enqueued before the job's collectives were bound");
      return collective->enqueue(api, **collectives);
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

std::string Action::origin() const {
  if (planStep < 0) return what;
  return absl::StrCat(kind == Kind::Launch ? "kernel " : "", kernel.empty() ? what : kernel, " (plan step ", planStep, " '",
                      op, "'", loc.empty() ? "" : ", " + loc, ")");
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
  a.what = absl::StrCat("step ", s, " ", entry_.steps[s].op, ": ", name);
  a.kernel = name;
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
  report_.add(kCopies);
}

// Every operation of the step (copies and fills included) carries the step's plan number, op and
// source location, so a fault found by a synchronisation after it can name them.
absl::StatusOr<size_t> ActionBuilder::lower(size_t s) {
  const size_t first = actions_.size();
  auto consumed = lowerStep(s);
  const PlanStep& step = entry_.steps[s];
  for (size_t i = first; i < actions_.size(); ++i) {
    Action& a = actions_[i];
    if (a.planStep >= 0) continue;
    a.planStep = static_cast<int64_t>(s);
    a.op = step.op;
    a.loc = step.loc;
  }
  return consumed;
}

absl::StatusOr<size_t> ActionBuilder::lowerStep(size_t s) {
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
      case OpCode::Matmul:
      case OpCode::GemmEpilogue: status = gemm(s); break;
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
      case OpCode::SoftmaxGrad: status = softmaxGrad(s); break;
      case OpCode::Softmax:
      case OpCode::LogSoftmax:
      case OpCode::LayerNorm:
      case OpCode::LayerNormGrad:
      case OpCode::RmsNorm:
      case OpCode::RmsNormGrad: status = normOp(s); break;
      case OpCode::BatchNorm:
      case OpCode::BatchNormGrad: status = batchNorm(s); break;
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
      case OpCode::AllGather:
      case OpCode::AllReduce:
      case OpCode::RankChunk:
      case OpCode::ReduceScatter: status = collective(s); break;
      // Elementwise ops and fused regions run as generated kernels (cuda_symbol above); one
      // without its kernel, a constant (uploaded by the executor) and a yield outside a body have
      // no lowering here: the executor names them.
      case OpCode::Abs:
      case OpCode::Add:
      case OpCode::BroadcastTo:
      case OpCode::Cast:
      case OpCode::Compare:
      case OpCode::Constant:
      case OpCode::Div:
      case OpCode::Erf:
      case OpCode::Exp:
      case OpCode::Fused:
      case OpCode::Gelu:
      case OpCode::Log:
      case OpCode::Maximum:
      case OpCode::Minimum:
      case OpCode::Mul:
      case OpCode::Neg:
      case OpCode::Pow:
      case OpCode::Reciprocal:
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
  auto recorded = step.attrs.getString(step.op, "cuda_symbol");
  if (!recorded.ok()) return recorded.status();
  // The kernel is the one named by this step's own region (KernelBinding.h), never a name the
  // plan supplies; a recorded name that differs means the plan was edited under its kernels.
  const std::string symbol = cudaKernelName(plan_, step);
  if (*recorded != symbol)
    return absl::InvalidArgumentError(absl::StrCat(
        "its cuda_symbol '", recorded->substr(0, 64), "' is not the kernel generated for its region (", symbol,
        "): the plan was changed after ampc compiled it"));
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
  auto fn = kernel(symbol);
  if (!fn.ok()) return fn.status();
  Action a = launch(symbol, s);
  a.fn = *fn;
  const LaunchConfig grid = gridStrideLaunch(items, api_.info().multiprocessors);
  a.blocks = grid.blocks;
  a.threads = grid.threads;
  for (int32_t id : step.operands) a.arg(ptr_[id]);
  for (int32_t id : step.results) a.arg(ptr_[id]);
  actions_.push_back(std::move(a));
  report_.add(kGeneratedKernels);
  return absl::OkStatus();
}

// amp.linear / amp.matmul through cuBLASLt with the layer's own bias and relu epilogue, and
// amp.gemm_epilogue with the training epilogue of its kind (GemmStep.h: where its bias, auxiliary
// matrix and bias gradient are). A ReLU mask is cuBLASLt's bit mask, stored in the i1 tensor the
// op gives (forward) or reads (backward), which must hold auxBytes of it.
absl::Status ActionBuilder::gemm(size_t s) {
  const PlanStep& step = entry_.steps[s];
  auto decoded = decodeGemmStep(plan_, step);
  if (!decoded.ok()) return decoded.status();
  const GemmStep& g = *decoded;
  const GemmEpilogue e = g.epilogue;
  const BufferDesc& x = plan_.buffers[step.operands[0]];
  const auto isMask = [&](bool operand, size_t i) {
    return epilogueAux(e) == GemmAux::ReluMask && static_cast<int>(i) == (operand ? g.auxOperand : g.auxResult);
  };
  for (size_t i = 0; i < step.operands.size(); ++i)
    if (plan_.buffers[step.operands[i]].dtype != (isMask(true, i) ? DType::Bool : x.dtype))
      return absl::InvalidArgumentError("GEMM operands of different types");
  for (size_t i = 0; i < step.results.size(); ++i)
    if (plan_.buffers[step.results[i]].dtype != (isMask(false, i) ? DType::Bool : x.dtype))
      return absl::InvalidArgumentError("the GEMM's results must have its operands' type");
  auto plan = planGemm(g.problem);
  if (!plan.ok()) return plan.status();
  const BufferDesc& out = plan_.buffers[step.results[0]];
  if (numElements(plan->resultShape) != out.numel())
    return absl::InvalidArgumentError(absl::StrCat("the GEMM computes ", shapeToString(plan->resultShape),
                                                   ", the plan's result is ", shapeToString(out.shape)));
  DevicePtr aux = 0, biasPtr = g.bias >= 0 ? ptr_[step.operands[g.bias]] : 0;
  if (e != GemmEpilogue::None) {
    if (auto st = setTrainingEpilogue(*plan, e); !st.ok()) return st;
    if (g.biasGrad >= 0) {
      const int32_t db = step.results[g.biasGrad];
      if (plan_.buffers[db].numel() != (e == GemmEpilogue::BgradB ? plan->n : plan->m))
        return absl::InvalidArgumentError(absl::StrCat("the bias gradient ", plan_.buffers[db].name, " ",
                                                       shapeToString(plan_.buffers[db].shape), " does not fit the GEMM"));
      biasPtr = ptr_[db];
    }
    if (epilogueAux(e) != GemmAux::None) {
      const int32_t id = g.auxOperand >= 0 ? step.operands[g.auxOperand] : step.results[g.auxResult];
      const BufferDesc& buffer = plan_.buffers[id];
      if (buffer.numel() != out.numel())
        return absl::InvalidArgumentError(absl::StrCat("the epilogue's auxiliary tensor ", buffer.name, " ",
                                                       shapeToString(buffer.shape), " must have the result's shape"));
      if (buffer.byteSize() < auxBytes(*plan))
        return absl::InvalidArgumentError(absl::StrCat("the epilogue's auxiliary tensor ", buffer.name, " holds ",
                                                       buffer.byteSize(), " bytes, cuBLASLt's ",
                                                       std::string(gemmEpilogueName(e)), " needs ", auxBytes(*plan)));
      aux = ptr_[id];
    }
  }
  alignForCall(*plan, ptr_[step.operands[0]], ptr_[step.operands[1]], biasPtr, ptr_[step.results[0]], aux);
  return gemmWithFallbacks(s, *plan, g.kind.has_value(), ptr_[step.operands[0]], ptr_[step.operands[1]], biasPtr,
                           ptr_[step.results[0]], aux);
}

namespace {

// Each distinct fallback is reported once per process, however many entries or sessions meet it.
void noteOnce(const std::string& message) {
  static std::mutex mutex;
  static std::set<std::string> noted;
  std::lock_guard<std::mutex> lock(mutex);
  if (noted.insert(message).second) std::fprintf(stderr, "amp cuda: %s\n", message.c_str());
}

}  // namespace

absl::Status ActionBuilder::gemmWithFallbacks(size_t s, const GemmPlan& planned, bool trainingEpilogue, DevicePtr a,
                                              DevicePtr b, DevicePtr bias, DevicePtr d, DevicePtr aux) {
  const std::string reluKernel = absl::StrCat("amp_relu_inplace_", std::string(dtypeName(planned.dtype)));
  const std::string rowsKernel = dtypeSize(planned.dtype) == 2 ? "amp_bias_rows_b16" : "amp_bias_rows_b32";
  const bool passes = !trainingEpilogue && kernel(reluKernel).ok() && kernel(rowsKernel).ok();
  const int64_t element = static_cast<int64_t>(dtypeSize(planned.dtype));
  // Call i of a per-batch variant reads and writes batch i (cuBLASLt's A is the step's b).
  auto at = [&](DevicePtr p, int64_t stride, int64_t i) { return p + static_cast<DevicePtr>(i * stride * element); };
  std::string refused;  // why the variants before the one taken were passed over
  for (GemmVariant& v : gemmVariants(planned, trainingEpilogue, passes)) {
    const int64_t calls = v.perBatch ? planned.batch : 1;
    const bool takesBias = epilogueReadsBias(v.plan.epilogue) || epilogueWritesBiasGrad(v.plan.epilogue);
    for (int64_t i = 0; i < calls; ++i)
      alignForCall(v.plan, at(a, planned.strideB, i), at(b, planned.strideA, i), takesBias ? bias : 0,
                   at(d, planned.strideC, i), aux);
    auto id = api_.prepareGemm(v.plan);
    if (!id.ok()) {
      if (!absl::IsUnimplemented(id.status())) return id.status();
      absl::StrAppend(&refused, refused.empty() ? "" : "; ", id.status().message());
      continue;
    }
    const std::string fallback = refused.empty() ? "" : absl::StrCat(" (fallback: ", v.change, ")");
    if (v.biasRows)
      if (auto st = epiloguePass(s, rowsKernel, planned, bias, d); !st.ok()) return st;
    for (int64_t i = 0; i < calls; ++i)
      pushGemm(s, *id, v.plan, "",
               absl::StrCat(" ", std::string(gemmEpilogueName(v.plan.epilogue)), v.biasRows ? " onto the bias rows" : "",
                            v.perBatch ? absl::StrCat(", batch ", i + 1, " of ", calls) : "", fallback),
               at(a, planned.strideB, i), at(b, planned.strideA, i), takesBias ? bias : 0, at(d, planned.strideC, i), aux);
    if (v.relu)
      if (auto st = epiloguePass(s, reluKernel, planned, 0, d); !st.ok()) return st;
    if (!refused.empty()) {
      const PlanStep& step = entry_.steps[s];
      noteOnce(absl::StrCat(step.loc.empty() ? "" : step.loc + ": ", "entry '", entry_.name, "' step ", s, " (",
                            step.op, "): ", refused, "; it runs as ", v.change, ", with the same results"));
    }
    return absl::OkStatus();
  }
  return absl::UnimplementedError(refused);
}

absl::Status ActionBuilder::epiloguePass(size_t s, const std::string& name, const GemmPlan& plan, DevicePtr bias,
                                         DevicePtr d) {
  const int64_t elements = numElements(plan.resultShape);
  if (elements == 0) return absl::OkStatus();
  auto fn = kernel(name);
  if (!fn.ok()) return fn.status();
  Action k = launch(name, s);
  k.fn = *fn;
  const LaunchConfig grid = gridStrideLaunch(elements, api_.info().multiprocessors);
  k.blocks = grid.blocks;
  k.threads = grid.threads;
  if (bias) {  // the bias rows: D as [elements / m, m], each row the bias (cuBLASLt's m is the step's N)
    k.arg(bias);
    k.arg(d);
    k.arg(static_cast<long long>(elements / plan.m));
    k.arg(static_cast<long long>(plan.m));
  } else {
    k.arg(d);
    k.arg(static_cast<long long>(elements));
  }
  actions_.push_back(std::move(k));
  report_.add(kGeneratedKernels);
  return absl::OkStatus();
}

void ActionBuilder::pushGemm(size_t s, GemmId id, const GemmPlan& plan, const std::string& kind, const std::string& detail,
                             DevicePtr a, DevicePtr b, DevicePtr bias, DevicePtr d, DevicePtr aux) {
  Action g;
  g.kind = Action::Kind::Gemm;
  g.category = Action::Category::Gemm;
  g.what = absl::StrCat("step ", s, " ", entry_.steps[s].op, ": ", kind, "cuBLASLt ", std::string(dtypeName(plan.dtype)),
                        " ", plan.m, " x ", plan.n, " x ", plan.k,
                        plan.batch > 1 ? absl::StrCat(" in ", plan.batch, " batches") : "", detail);
  g.kernel = absl::StrCat("cuBLASLt GEMM ", plan.m, " x ", plan.n, " x ", plan.k, detail);
  g.gemm = id;
  g.a = a;
  g.b = b;
  g.bias = bias;
  g.d = d;
  g.aux = aux;
  actions_.push_back(std::move(g));
  report_.add(kGemms);
}

}  // namespace amp::rt::cuda
