#include "runtime/devices/cuda/CudaActions.h"

#include <algorithm>
#include <type_traits>
#include <variant>

#include "absl/strings/str_cat.h"
#include "runtime/devices/cuda/GradPipeline.h"
#include "runtime/devices/cuda/LaunchConfig.h"
#include "runtime/devices/cuda/MultiTensor.h"
#include "runtime/devices/cuda/kernels/ConvMath.h"
#include "runtime/devices/cuda/kernels/MultiTensorArgs.h"
#include "runtime/devices/cuda/kernels/ReduceArgs.h"
#include "runtime/devices/cuda/kernels/ShapeMath.h"
#include "runtime/devices/cuda/kernels/TrainArgs.h"

namespace amp::rt::cuda {
namespace {

// The kernels' names for an element type: f32, bf16, f16.
std::optional<std::string> floatSuffix(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::BF16: return "bf16";
    case DType::F16: return "f16";
    default: return std::nullopt;
  }
}

// Attribute values equal (tensor attributes never are: updates have none).
bool sameAttr(const AttrValue& a, const AttrValue& b) {
  if (a.index() != b.index() || std::holds_alternative<Tensor>(a)) return false;
  return std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, Tensor>) {
          return false;
        } else {
          return x == std::get<T>(b);
        }
      },
      a);
}

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

template <class T>
T* device(DevicePtr p) {
  return reinterpret_cast<T*>(static_cast<uintptr_t>(p));
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
    case Kind::Gemm: return api.gemm(gemm, a, b, bias, d);
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
  a.category = step.attrs.has("cuda_symbol")                                                ? Action::Category::Fused
               : step.kind == StepKind::MultiTensor || step.op == kGradStatsOp ? Action::Category::ScalerOptimizer
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
  if (step.attrs.has("cuda_symbol")) {
    status = generated(s);
  } else if (step.op == "amp.linear" || step.op == "amp.matmul") {
    status = gemm(s);
  } else if (step.op == "amp.unscale_check") {
    status = unscaleCheck(s);
  } else if (step.op == kGradStatsOp) {
    status = gradStats(s);
  } else if (step.op == "amp.global_norm") {
    status = globalNorm(s);
  } else if (step.op == "amp.clip_grads") {
    status = clipGrads(s);
  } else if (step.op == "amp.step_counters" || step.op == "amp.lr_schedule" || step.op == "amp.update_scale") {
    status = scalarKernel(s);
  } else if (step.op == "amp.reduce_sum" || step.op == "amp.reduce_mean" || step.op == "amp.reduce_max") {
    status = reduce(s);
  } else if (step.op == "amp.softmax" || step.op == "amp.log_softmax" || step.op == "amp.layer_norm" ||
             step.op == "amp.layer_norm_grad" || step.op == "amp.rms_norm" || step.op == "amp.rms_norm_grad") {
    status = normOp(s);
  } else if (step.op == "amp.embedding" || step.op == "amp.embedding_grad" || step.op == "amp.transpose" ||
             step.op == "amp.gelu_grad" || step.op == "amp.dropout" || step.op == "amp.slice" || step.op == "amp.slice_grad" ||
             step.op == "amp.concat") {
    status = shapeOp(s);
  } else if (step.op == "amp.conv2d" || step.op == "amp.conv2d_grad_input" || step.op == "amp.conv2d_grad_weight") {
    status = convOp(s);
  } else if (step.op == "amp.max_pool2d" || step.op == "amp.avg_pool2d" || step.op == "amp.max_pool2d_grad" ||
             step.op == "amp.avg_pool2d_grad") {
    status = poolOp(s);
  } else if (step.op == "amp.mse_loss") {
    status = mseLoss(s);
  } else if (step.op == "amp.cross_entropy" || step.op == "amp.cross_entropy_grad") {
    status = crossEntropy(s);
  } else if (step.op == "amp.adam_update" || step.op == "amp.sgd_update") {
    return updates(s);
  } else {
    return 0;
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
    const Shape& space = step.op == "amp.fused" && !step.body.empty() && !step.body[0].results.empty()
                             ? step.locals[step.body[0].results[0]].shape
                             : plan_.buffers[step.results[0]].shape;
    items = workItems(numElements(space), static_cast<int>(*width));
  }
  {
    const Shape& space = step.op == "amp.fused" && !step.body.empty() && !step.body[0].results.empty()
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

absl::Status ActionBuilder::gemm(size_t s) {
  const PlanStep& step = entry_.steps[s];
  GemmProblem p;
  const bool linear = step.op == "amp.linear";
  if (step.operands.size() < 2 || step.results.size() != 1 || (!linear && step.operands.size() != 2) ||
      step.operands.size() > 3)
    return absl::InvalidArgumentError("expected the GEMM's operands and one result");
  const BufferDesc& x = plan_.buffers[step.operands[0]];
  const BufferDesc& w = plan_.buffers[step.operands[1]];
  if (linear) {
    auto tw = step.attrs.getBool(step.op, "transpose_w", true);
    if (!tw.ok()) return tw.status();
    auto activation = step.attrs.getString(step.op, "activation", "none");
    if (!activation.ok()) return activation.status();
    if (*activation != "none" && *activation != "relu")
      return absl::InvalidArgumentError(absl::StrCat("activation \"", *activation, "\" has no cuBLASLt epilogue"));
    p = linearProblem(x.dtype, x.shape, w.shape, *tw, step.operands.size() == 3, *activation == "relu");
  } else {
    auto ta = step.attrs.getBool(step.op, "transpose_a", false);
    auto tb = step.attrs.getBool(step.op, "transpose_b", false);
    if (!ta.ok()) return ta.status();
    if (!tb.ok()) return tb.status();
    p.dtype = x.dtype;
    p.a = x.shape;
    p.b = w.shape;
    p.transA = *ta;
    p.transB = *tb;
  }
  for (int32_t id : step.operands)
    if (plan_.buffers[id].dtype != x.dtype) return absl::InvalidArgumentError("GEMM operands of different types");
  const BufferDesc& out = plan_.buffers[step.results[0]];
  if (out.dtype != x.dtype) return absl::InvalidArgumentError("the GEMM's result must have its operands' type");
  auto plan = planGemm(p);
  if (!plan.ok()) return plan.status();
  if (numElements(plan->resultShape) != out.numel())
    return absl::InvalidArgumentError(absl::StrCat("the GEMM computes ", shapeToString(plan->resultShape),
                                                   ", the plan's result is ", shapeToString(out.shape)));
  auto id = api_.prepareGemm(*plan);
  if (!id.ok()) return id.status();
  Action a;
  a.kind = Action::Kind::Gemm;
  a.category = Action::Category::Gemm;
  a.what = absl::StrCat("step ", number(s), " ", step.op, ": cuBLASLt ", std::string(dtypeName(p.dtype)), " ", plan->m, " x ",
                        plan->n, " x ", plan->k, plan->batch > 1 ? absl::StrCat(" in ", plan->batch, " batches") : "",
                        " ", std::string(gemmEpilogueName(plan->epilogue)));
  a.gemm = *id;
  a.a = ptr_[step.operands[0]];
  a.b = ptr_[step.operands[1]];
  a.bias = step.operands.size() == 3 ? ptr_[step.operands[2]] : 0;
  a.d = ptr_[step.results[0]];
  actions_.push_back(std::move(a));
  ++report_.gemms;
  return absl::OkStatus();
}

namespace {

// One multi-tensor kernel over `tensors` (indices into the step's operand lists), with Depth
// pointers each from `pointer(d, t)`; `extra` appends the kernel's other arguments.
template <int Depth, class PointerOf, class Extra>
absl::Status listLaunches(std::vector<Action>& actions, EntryReport& report, const Action& prototype,
                          const std::vector<int64_t>& numels, PointerOf pointer, Extra extra) {
  auto schedule = scheduleMultiTensor(numels, Depth);
  if (!schedule.ok()) return schedule.status();
  for (const MultiTensorLaunch& l : schedule->launches) {
    Action a = prototype;
    AmpTensorList<Depth> list;
    fillTensorList<Depth>(l, numels, pointer, list);
    a.arg(list);
    extra(a, l);
    a.blocks = static_cast<int64_t>(l.blocks.size());
    a.threads = AMP_MT_BLOCK_THREADS;
    a.what += absl::StrCat(" (", l.tensors.size(), " tensors, ", l.blocks.size(), " blocks)");
    actions.push_back(std::move(a));
    ++report.multiTensorLaunches;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ActionBuilder::unscaleCheck(size_t s) {
  const PlanStep& step = entry_.steps[s];
  const size_t n = step.results.size() - 1;
  if (step.results.size() < 2 || (step.operands.size() != n && step.operands.size() != n + 1))
    return absl::InvalidArgumentError("expected gradients, an optional scale, their unscaled copies and found_inf");
  const DevicePtr scale = step.operands.size() == n + 1 ? ptr_[step.operands[n]] : 0;
  const DevicePtr found = ptr_[step.results[n]];
  Action fill;
  fill.kind = Action::Kind::Fill;
  fill.dst = found;
  fill.bytes = 4;
  fill.what = absl::StrCat("step ", number(s), " amp.unscale_check: found_inf = 0");
  fill.category = Action::Category::ScalerOptimizer;
  actions_.push_back(std::move(fill));
  ++report_.fills;
  // One launch sequence per gradient type.
  std::map<DType, std::vector<size_t>> byType;
  for (size_t i = 0; i < n; ++i) {
    const BufferDesc& g = plan_.buffers[step.operands[i]];
    const BufferDesc& r = plan_.buffers[step.results[i]];
    if (!floatSuffix(g.dtype) || r.dtype != g.dtype || r.numel() != g.numel())
      return absl::InvalidArgumentError(absl::StrCat("gradient ", i, " must be f32, bf16 or f16 with a result like it"));
    byType[g.dtype].push_back(i);
  }
  for (const auto& [type, members] : byType) {
    const std::string name = "amp_mt_unscale_check_" + *floatSuffix(type);
    auto fn = kernel(name);
    if (!fn.ok()) return fn.status();
    Action proto = launch(name, s);
    proto.fn = *fn;
    std::vector<int64_t> numels;
    for (size_t i : members) numels.push_back(plan_.buffers[step.operands[i]].numel());
    auto pointer = [&](int d, int32_t t) {
      const size_t i = members[static_cast<size_t>(t)];
      return device<void>(ptr_[d == 0 ? step.operands[i] : step.results[i]]);
    };
    auto extra = [&](Action& a, const MultiTensorLaunch&) {
      a.arg(device<const float>(scale));
      a.arg(device<float>(found));
    };
    if (auto st = listLaunches<2>(actions_, report_, proto, numels, pointer, extra); !st.ok()) return st;
  }
  return absl::OkStatus();
}

absl::Status ActionBuilder::globalNorm(size_t s) {
  const PlanStep& step = entry_.steps[s];
  if (step.operands.empty() || step.results.size() != 1) return absl::InvalidArgumentError("expected gradients and one result");
  std::vector<int64_t> numels;
  for (int32_t id : step.operands) {
    if (plan_.buffers[id].dtype != DType::F32) return absl::InvalidArgumentError("global_norm takes f32 gradients");
    numels.push_back(plan_.buffers[id].numel());
  }
  auto schedule = scheduleMultiTensor(numels, 1);
  if (!schedule.ok()) return schedule.status();
  std::vector<int32_t> slotRange;
  for (size_t t = 0; t < numels.size(); ++t) {
    slotRange.push_back(schedule->tensorFirstSlot[t]);
    slotRange.push_back(schedule->tensorFirstSlot[t + 1]);
  }
  auto partials = scratch(int64_t{4} * schedule->slots);
  if (!partials.ok()) return partials.status();
  auto sums = kernel("amp_mt_sum_squares_f32");
  if (!sums.ok()) return sums.status();
  Action proto = launch("amp_mt_sum_squares_f32", s);
  proto.fn = *sums;
  auto pointer = [&](int, int32_t t) { return device<void>(ptr_[step.operands[static_cast<size_t>(t)]]); };
  const DevicePtr partialsPtr = *partials;
  auto extra = [&](Action& a, const MultiTensorLaunch&) { a.arg(device<float>(partialsPtr)); };
  if (auto st = listLaunches<1>(actions_, report_, proto, numels, pointer, extra); !st.ok()) return st;
  return combineNorm(s, *partials, slotRange, ptr_[step.results[0]]);
}

// The global norm from per-block partial sums: tensor t's blocks are slots
// [slotRange[2t], slotRange[2t + 1]) of `partials`.
absl::Status ActionBuilder::combineNorm(size_t s, DevicePtr partials, const std::vector<int32_t>& slotRange, DevicePtr out) {
  const int tensors = static_cast<int>(slotRange.size() / 2);
  auto ranges = scratch(int64_t{4} * static_cast<int64_t>(slotRange.size()));
  auto norms = scratch(int64_t{4} * tensors);
  if (!ranges.ok()) return ranges.status();
  if (!norms.ok()) return norms.status();
  // The slot table is constant: written once, now.
  if (auto st = api_.copyToDevice(*ranges, slotRange.data(), int64_t{4} * static_cast<int64_t>(slotRange.size())); !st.ok())
    return st;
  if (auto st = api_.synchronize(); !st.ok()) return st;
  auto combine = kernel("amp_global_norm");
  if (!combine.ok()) return combine.status();
  Action a = launch("amp_global_norm", s);
  a.fn = *combine;
  a.blocks = 1;
  a.threads = AMP_MT_BLOCK_THREADS;
  a.arg(device<const float>(partials));
  a.arg(device<const int>(*ranges));
  a.arg(tensors);
  a.arg(device<float>(*norms));
  a.arg(device<float>(out));
  actions_.push_back(std::move(a));
  ++report_.multiTensorLaunches;
  return absl::OkStatus();
}

// cuda.grad_stats (GradPipeline.h): found_inf and, with a norm result, the global norm of the
// unscaled gradients, reading each stored gradient once. One launch sequence per (stored type,
// unscaled type); the partial sums of each tensor stay in the tensor order the norm combines.
absl::Status ActionBuilder::gradStats(size_t s) {
  const PlanStep& step = entry_.steps[s];
  auto widened = step.attrs.getInts(step.op, "widened");
  if (!widened.ok()) return widened.status();
  const size_t n = widened->size();
  if (n == 0 || (step.operands.size() != n && step.operands.size() != n + 1) || step.results.empty() || step.results.size() > 2)
    return absl::InvalidArgumentError("expected gradients, an optional scale, found_inf and an optional norm");
  const DevicePtr scale = step.operands.size() == n + 1 ? ptr_[step.operands[n]] : 0;
  const DevicePtr found = ptr_[step.results[0]];
  const bool withNorm = step.results.size() == 2;
  Action fill;
  fill.kind = Action::Kind::Fill;
  fill.dst = found;
  fill.bytes = 4;
  fill.what = absl::StrCat("step ", number(s), " ", step.op, ": found_inf = 0");
  fill.category = Action::Category::ScalerOptimizer;
  actions_.push_back(std::move(fill));
  ++report_.fills;
  std::map<std::string, std::vector<size_t>> byKernel;
  for (size_t i = 0; i < n; ++i) {
    const DType t = plan_.buffers[step.operands[i]].dtype;
    const bool wide = (*widened)[i] != 0;
    if (!floatSuffix(t) || (wide && t == DType::F32) || (withNorm && !wide && t != DType::F32))
      return absl::InvalidArgumentError(absl::StrCat("gradient ", i, ": unexpected type for the fused statistics"));
    byKernel["amp_mt_grad_stats_" + *floatSuffix(t) + (wide ? "w" : "")].push_back(i);
  }
  std::vector<int32_t> slotRange(2 * n, 0);
  std::vector<std::pair<std::string, MultiTensorSchedule>> schedules;
  int32_t slots = 0;
  for (const auto& [name, members] : byKernel) {
    std::vector<int64_t> numels;
    for (size_t i : members) numels.push_back(plan_.buffers[step.operands[i]].numel());
    auto schedule = scheduleMultiTensor(numels, 1);
    if (!schedule.ok()) return schedule.status();
    for (size_t j = 0; j < members.size(); ++j) {
      slotRange[2 * members[j]] = slots + schedule->tensorFirstSlot[j];
      slotRange[2 * members[j] + 1] = slots + schedule->tensorFirstSlot[j + 1];
    }
    slots += schedule->slots;
    schedules.emplace_back(name, std::move(*schedule));
  }
  DevicePtr partials = 0;
  if (withNorm) {
    auto p = scratch(int64_t{4} * slots);
    if (!p.ok()) return p.status();
    partials = *p;
  }
  int32_t base = 0;
  for (const auto& [name, schedule] : schedules) {
    const std::vector<size_t>& members = byKernel[name];
    auto fn = kernel(name);
    if (!fn.ok()) return fn.status();
    Action proto = launch(name, s);
    proto.fn = *fn;
    std::vector<int64_t> numels;
    for (size_t i : members) numels.push_back(plan_.buffers[step.operands[i]].numel());
    auto pointer = [&](int, int32_t t) { return device<void>(ptr_[step.operands[members[static_cast<size_t>(t)]]]); };
    const DevicePtr groupPartials = partials ? partials + static_cast<DevicePtr>(4 * base) : 0;
    auto extra = [&](Action& a, const MultiTensorLaunch&) {
      a.arg(device<const float>(scale));
      a.arg(device<float>(found));
      a.arg(device<float>(groupPartials));
    };
    if (auto st = listLaunches<1>(actions_, report_, proto, numels, pointer, extra); !st.ok()) return st;
    base += schedule.slots;
  }
  if (!withNorm) return absl::OkStatus();
  return combineNorm(s, partials, slotRange, ptr_[step.results[1]]);
}

absl::Status ActionBuilder::clipGrads(size_t s) {
  const PlanStep& step = entry_.steps[s];
  const size_t n = step.results.size();
  if (n < 1 || step.operands.size() != n + 1) return absl::InvalidArgumentError("expected gradients, the norm and their clipped copies");
  auto maxNorm = step.attrs.getDouble(step.op, "max_norm");
  if (!maxNorm.ok()) return maxNorm.status();
  std::vector<int64_t> numels;
  for (size_t i = 0; i < n; ++i) {
    if (plan_.buffers[step.operands[i]].dtype != DType::F32 || plan_.buffers[step.results[i]].dtype != DType::F32)
      return absl::InvalidArgumentError("clip_grads takes f32 gradients");
    numels.push_back(plan_.buffers[step.operands[i]].numel());
  }
  auto fn = kernel("amp_mt_clip");
  if (!fn.ok()) return fn.status();
  Action proto = launch("amp_mt_clip", s);
  proto.fn = *fn;
  const DevicePtr norm = ptr_[step.operands[n]];
  auto pointer = [&](int d, int32_t t) {
    const size_t i = static_cast<size_t>(t);
    return device<void>(ptr_[d == 0 ? step.operands[i] : step.results[i]]);
  };
  auto extra = [&](Action& a, const MultiTensorLaunch&) {
    a.arg(device<const float>(norm));
    a.arg(*maxNorm);
  };
  return listLaunches<2>(actions_, report_, proto, numels, pointer, extra);
}

absl::Status ActionBuilder::scalarKernel(size_t s) {
  const PlanStep& step = entry_.steps[s];
  auto in = [&](size_t i) { return ptr_[step.operands[i]]; };
  auto out = [&](size_t i) { return ptr_[step.results[i]]; };
  Action a;
  if (step.op == "amp.step_counters") {
    if (step.operands.size() != 3 || step.results.size() != 2) return absl::InvalidArgumentError("expected (step, skipped, found_inf) -> (step, skipped)");
    a = launch("amp_step_counters_kernel", s);
    a.arg(device<const long long>(in(0)));
    a.arg(device<const long long>(in(1)));
    a.arg(device<const float>(in(2)));
    a.arg(device<long long>(out(0)));
    a.arg(device<long long>(out(1)));
  } else if (step.op == "amp.lr_schedule") {
    if (step.operands.size() != 1 || step.results.size() != 1) return absl::InvalidArgumentError("expected (step) -> (lr)");
    auto kind = step.attrs.getString(step.op, "kind");
    auto base = step.attrs.getDouble(step.op, "base_lr");
    auto warmup = step.attrs.getInt(step.op, "warmup_steps", 0);
    auto total = step.attrs.getInt(step.op, "total_steps", 0);
    auto minLr = step.attrs.getDouble(step.op, "min_lr", 0.0);
    for (const absl::Status& st : {kind.status(), base.status(), warmup.status(), total.status(), minLr.status()})
      if (!st.ok()) return st;
    if (*kind != "constant" && *kind != "cosine") return absl::InvalidArgumentError("kind must be constant or cosine");
    if (*kind == "cosine" && *total <= *warmup) return absl::InvalidArgumentError("cosine needs total_steps > warmup_steps");
    a = launch("amp_lr_schedule_kernel", s);
    a.arg(device<const long long>(in(0)));
    a.arg(int32_t{*kind == "cosine"});
    a.arg(*base);
    a.arg(static_cast<long long>(*warmup));
    a.arg(static_cast<long long>(*total));
    a.arg(*minLr);
    a.arg(device<float>(out(0)));
  } else {
    if (step.operands.size() != 3 || step.results.size() != 2) return absl::InvalidArgumentError("expected (scale, growth_tracker, found_inf) -> (scale, growth_tracker)");
    auto growth = step.attrs.getDouble(step.op, "growth_factor");
    auto backoff = step.attrs.getDouble(step.op, "backoff_factor");
    auto interval = step.attrs.getInt(step.op, "growth_interval");
    for (const absl::Status& st : {growth.status(), backoff.status(), interval.status()})
      if (!st.ok()) return st;
    a = launch("amp_update_scale_kernel", s);
    a.arg(device<const float>(in(0)));
    a.arg(device<const int>(in(1)));
    a.arg(device<const float>(in(2)));
    a.arg(device<float>(out(0)));
    a.arg(device<int>(out(1)));
    a.arg(*growth);
    a.arg(*backoff);
    a.arg(static_cast<long long>(*interval));
  }
  const std::string name = a.what.substr(a.what.rfind(' ') + 1);
  auto fn = kernel(name);
  if (!fn.ok()) return fn.status();
  a.fn = *fn;
  a.blocks = 1;
  a.threads = 1;
  actions_.push_back(std::move(a));
  ++report_.multiTensorLaunches;
  return absl::OkStatus();
}

// A reduction over any sorted set of dims: one thread per output element (kernels/ReduceKernels.cu).
absl::Status ActionBuilder::reduce(size_t s) {
  const PlanStep& step = entry_.steps[s];
  if (step.operands.size() != 1 || step.results.size() != 1) return absl::InvalidArgumentError("expected one operand and one result");
  const BufferDesc& x = plan_.buffers[step.operands[0]];
  const BufferDesc& out = plan_.buffers[step.results[0]];
  auto type = floatSuffix(x.dtype);
  if (!type || out.dtype != x.dtype) return absl::InvalidArgumentError("the operand and result must share one float type");
  auto dims = step.attrs.getInts(step.op, "dims");
  if (!dims.ok()) return dims.status();
  const int rank = static_cast<int>(x.shape.size());
  if (rank > AMP_REDUCE_MAX_DIMS) return absl::UnimplementedError(absl::StrCat("reductions of rank above ", AMP_REDUCE_MAX_DIMS));
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (size_t i = 0; i < dims->size(); ++i) {
    const int64_t d = (*dims)[i];
    if (d < 0 || d >= rank || (i > 0 && d <= (*dims)[i - 1]))
      return absl::InvalidArgumentError("attribute 'dims' must be sorted, unique and in range");
    reduced[static_cast<size_t>(d)] = true;
  }
  AmpReduceShape shape = {};
  long long stride = 1;
  std::vector<long long> strides(static_cast<size_t>(rank));
  for (int d = rank - 1; d >= 0; --d) {
    strides[static_cast<size_t>(d)] = stride;
    stride *= x.shape[static_cast<size_t>(d)];
  }
  shape.outputs = 1;
  shape.reducedCount = 1;
  for (int d = 0; d < rank; ++d) {
    const long long size = x.shape[static_cast<size_t>(d)];
    if (reduced[static_cast<size_t>(d)]) {
      shape.reducedSize[shape.reducedDims] = size;
      shape.reducedStride[shape.reducedDims++] = strides[static_cast<size_t>(d)];
      shape.reducedCount *= size;
    } else {
      shape.keptSize[shape.keptDims] = size;
      shape.keptStride[shape.keptDims++] = strides[static_cast<size_t>(d)];
      shape.outputs *= size;
    }
  }
  if (shape.outputs != out.numel()) return absl::InvalidArgumentError("the result's size is not the kept dims'");
  if (step.op == "amp.reduce_max" && shape.reducedCount == 0 && shape.outputs > 0)
    return absl::InvalidArgumentError("maximum over an empty set of elements");
  const std::string name = absl::StrCat("amp_reduce_", step.op.substr(std::string("amp.reduce_").size()), "_", *type);
  auto fn = kernel(name);
  if (!fn.ok()) return fn.status();
  Action a = launch(name, s);
  a.fn = *fn;
  const LaunchConfig grid = gridStrideLaunch(shape.outputs, api_.info().multiprocessors);
  a.blocks = grid.blocks;
  a.threads = grid.threads;
  a.arg(device<const void>(ptr_[step.operands[0]]));
  a.arg(device<void>(ptr_[step.results[0]]));
  a.arg(shape);
  if (a.blocks > 0) actions_.push_back(std::move(a));
  ++report_.kernels;
  return absl::OkStatus();
}

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
    ++report_.kernels;
    return absl::OkStatus();
  };
  auto in = [&](size_t i) { return device<const void>(ptr_[step.operands[i]]); };
  auto out = [&](size_t i) { return device<void>(ptr_[step.results[i]]); };
  if (step.op == "amp.softmax" || step.op == "amp.log_softmax") {
    auto axis = step.attrs.getInt(step.op, "axis");
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
    return emit(absl::StrCat(step.op == "amp.softmax" ? "amp_softmax_" : "amp_log_softmax_", *type), units,
                [&](Action& a) {
                  a.arg(in(0));
                  a.arg(out(0));
                  a.arg(outer);
                  a.arg(len);
                  a.arg(inner);
                });
  }
  auto ndim = step.attrs.getInt(step.op, "normalized_ndim");
  auto eps = step.attrs.getDouble(step.op, "eps");
  if (!ndim.ok()) return ndim.status();
  if (!eps.ok()) return eps.status();
  if (*ndim < 1 || *ndim > static_cast<int64_t>(x.shape.size()))
    return absl::InvalidArgumentError("normalized_ndim out of range");
  long long n = 1;
  for (size_t d = x.shape.size() - static_cast<size_t>(*ndim); d < x.shape.size(); ++d) n *= x.shape[d];
  const long long groups = n > 0 ? x.numel() / n : 0;
  const bool layer = step.op == "amp.layer_norm" || step.op == "amp.layer_norm_grad";
  const bool grad = step.op == "amp.layer_norm_grad" || step.op == "amp.rms_norm_grad";
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

// Embedding and its gradient, transpose, gelu_grad and dropout: kernels/ShapeKernels.cu, one launch
// each.
absl::Status ActionBuilder::shapeOp(size_t s) {
  const PlanStep& step = entry_.steps[s];
  if (step.results.size() != 1 || step.operands.empty()) return absl::InvalidArgumentError("expected one result");
  const BufferDesc& out = plan_.buffers[step.results[0]];
  const BufferDesc& in0 = plan_.buffers[step.operands[0]];
  const int sms = api_.info().multiprocessors;
  auto emit = [&](const std::string& name, int64_t work, auto&& args, int64_t blocksY = 1) -> absl::Status {
    auto fn = kernel(name);
    if (!fn.ok()) return fn.status();
    Action a = launch(name, s);
    a.fn = *fn;
    const LaunchConfig grid = gridStrideLaunch(work, sms);
    a.blocks = std::max<int64_t>(grid.blocks, 1);
    a.blocksY = blocksY;
    a.threads = grid.threads;
    args(a);
    actions_.push_back(std::move(a));
    ++report_.kernels;
    return absl::OkStatus();
  };
  if (step.op == "amp.slice" || step.op == "amp.slice_grad") {
    const bool grad = step.op == "amp.slice_grad";
    const BufferDesc& whole = grad ? out : in0;  // the tensor the slice is taken of
    auto starts = step.attrs.getInts(step.op, "starts");
    auto limits = step.attrs.getInts(step.op, "limits");
    auto steps = step.attrs.getInts(step.op, "strides");
    for (const absl::Status& st : {starts.status(), limits.status(), steps.status()})
      if (!st.ok()) return st;
    const size_t rank = whole.shape.size();
    if (starts->size() != rank || limits->size() != rank || steps->size() != rank || out.dtype != in0.dtype)
      return absl::InvalidArgumentError("starts, limits and strides must cover the sliced tensor's dims");
    std::vector<long long> shape(whole.shape.begin(), whole.shape.end()), b(starts->begin(), starts->end()),
        e(limits->begin(), limits->end()), st(steps->begin(), steps->end());
    AmpTransposeShape t = {};
    long long offset = 0;
    if (!amp_shp_slice_shape(&t, static_cast<int>(rank), shape.data(), b.data(), e.data(), st.data(), &offset))
      return absl::UnimplementedError("a slice out of bounds, or with more than 8 dims after merging");
    if (t.elements != (grad ? in0 : out).numel()) return absl::InvalidArgumentError("the slice's size is not the piece's");
    const DevicePtr base = ptr_[grad ? step.results[0] : step.operands[0]];
    const DevicePtr at = base + static_cast<DevicePtr>(offset * static_cast<long long>(dtypeSize(in0.dtype)));
    if (grad && out.byteSize() > 0)
      if (auto z = emit("amp_zero_bytes", out.byteSize(), [&](Action& a) {
            a.arg(device<void>(base));
            a.arg(static_cast<long long>(out.byteSize()));
          });
          !z.ok())
        return z;
    if (t.elements == 0) return absl::OkStatus();
    return emit(absl::StrCat(grad ? "amp_scatter_" : "amp_transpose_", dtypeSize(in0.dtype)), t.elements, [&](Action& a) {
      a.arg(device<const void>(grad ? ptr_[step.operands[0]] : at));
      a.arg(device<void>(grad ? at : ptr_[step.results[0]]));
      a.arg(t);
    });
  }
  if (step.op == "amp.concat") {
    auto axis = step.attrs.getInt(step.op, "axis");
    if (!axis.ok()) return axis.status();
    const int64_t rank = static_cast<int64_t>(out.shape.size());
    if (*axis < 0 || *axis >= rank) return absl::InvalidArgumentError("axis out of range");
    int64_t inner = 1;
    for (int64_t d = *axis + 1; d < rank; ++d) inner *= out.shape[static_cast<size_t>(d)];
    const long long row = out.shape[static_cast<size_t>(*axis)] * inner;
    long long at = 0, total = 0;
    for (int32_t id : step.operands) {
      const BufferDesc& in = plan_.buffers[id];
      bool fits = in.dtype == out.dtype && static_cast<int64_t>(in.shape.size()) == rank;
      for (int64_t d = 0; fits && d < rank; ++d) fits = d == *axis || in.shape[static_cast<size_t>(d)] == out.shape[static_cast<size_t>(d)];
      if (!fits) return absl::InvalidArgumentError("operands must match the result outside the axis");
      const long long chunk = in.shape[static_cast<size_t>(*axis)] * inner;
      total += in.numel();
      if (in.numel() > 0)
        if (auto st = emit(absl::StrCat("amp_concat_part_", dtypeSize(in.dtype)), in.numel(), [&](Action& a) {
              a.arg(device<const void>(ptr_[id]));
              a.arg(device<void>(ptr_[step.results[0]]));
              a.arg(static_cast<long long>(in.numel()));
              a.arg(chunk);
              a.arg(row);
              a.arg(at);
            });
            !st.ok())
          return st;
      at += chunk;
    }
    if (total != out.numel()) return absl::InvalidArgumentError("the operands' sizes do not add up to the result's");
    return absl::OkStatus();
  }
  if (step.op == "amp.transpose") {
    auto perm = step.attrs.getInts(step.op, "permutation");
    if (!perm.ok()) return perm.status();
    const int rank = static_cast<int>(in0.shape.size());
    if (static_cast<int>(perm->size()) != rank || out.dtype != in0.dtype || out.numel() != in0.numel())
      return absl::InvalidArgumentError("the permutation must cover the input's dims, the result its elements");
    std::vector<long long> shape(in0.shape.begin(), in0.shape.end()), p(perm->begin(), perm->end());
    AmpTransposeShape t = {};
    if (!amp_shp_transpose_shape(&t, rank, shape.data(), p.data()))
      return absl::UnimplementedError("a permutation that is invalid or leaves more than 8 dims after merging");
    if (t.elements == 0) return absl::OkStatus();
    const std::string name = absl::StrCat("amp_transpose_", dtypeSize(in0.dtype));
    return emit(name, t.elements, [&](Action& a) {
      a.arg(device<const void>(ptr_[step.operands[0]]));
      a.arg(device<void>(ptr_[step.results[0]]));
      a.arg(t);
    });
  }
  if (step.op == "amp.gelu_grad" || step.op == "amp.dropout") {
    auto type = floatSuffix(in0.dtype);
    if (!type || out.dtype != in0.dtype || out.numel() != in0.numel())
      return absl::InvalidArgumentError("operands and result must share one float type and size");
    const long long n = out.numel();
    if (step.op == "amp.gelu_grad") {
      if (step.operands.size() != 2 || plan_.buffers[step.operands[1]].dtype != in0.dtype)
        return absl::InvalidArgumentError("expected (x, dy) of one type");
      auto approximate = step.attrs.getString(step.op, "approximate", "none");
      if (!approximate.ok()) return approximate.status();
      if (*approximate != "none" && *approximate != "tanh") return absl::InvalidArgumentError("approximate must be none or tanh");
      return emit(absl::StrCat("amp_gelu_grad_", *approximate == "tanh" ? "tanh_" : "", *type), n, [&](Action& a) {
        a.arg(device<const void>(ptr_[step.operands[0]]));
        a.arg(device<const void>(ptr_[step.operands[1]]));
        a.arg(device<void>(ptr_[step.results[0]]));
        a.arg(n);
      });
    }
    auto rate = step.attrs.getDouble(step.op, "rate");
    auto seed = step.attrs.getInt(step.op, "seed");
    if (!rate.ok()) return rate.status();
    if (!seed.ok()) return seed.status();
    if (!(*rate >= 0.0 && *rate < 1.0)) return absl::InvalidArgumentError("rate must be in [0, 1)");
    return emit(absl::StrCat("amp_dropout_", *type), (n + 3) / 4, [&](Action& a) {
      a.arg(device<const void>(ptr_[step.operands[0]]));
      a.arg(device<void>(ptr_[step.results[0]]));
      a.arg(n);
      a.arg(static_cast<long long>(*seed));
      a.arg(*rate);
      a.arg(device<const long long>(stepWord_));
    });
  }
  // Embedding: the table and ids; its gradient: the ids, dy and num_embeddings.
  const bool grad = step.op == "amp.embedding_grad";
  if (step.operands.size() != 2) return absl::InvalidArgumentError("expected two operands");
  const BufferDesc& ids = plan_.buffers[step.operands[grad ? 0 : 1]];
  const BufferDesc& values = plan_.buffers[step.operands[grad ? 1 : 0]];
  auto type = floatSuffix(values.dtype);
  if (!type || out.dtype != values.dtype || (ids.dtype != DType::I64 && ids.dtype != DType::I32))
    return absl::InvalidArgumentError("a float table and i64/i32 ids");
  const std::string suffix = absl::StrCat(*type, "_", ids.dtype == DType::I64 ? "i64" : "i32");
  const long long tokens = ids.numel();
  long long rows = 0, dim = 0;
  if (grad) {
    auto v = step.attrs.getInt(step.op, "num_embeddings");
    if (!v.ok()) return v.status();
    rows = *v;
    dim = out.shape.size() == 2 ? out.shape[1] : 0;
    if (out.shape.size() != 2 || out.shape[0] != rows || values.numel() != tokens * dim)
      return absl::InvalidArgumentError("the gradient must be [num_embeddings, D] and dy one row per id");
  } else {
    if (values.shape.size() != 2) return absl::InvalidArgumentError("the table must be [V, D]");
    rows = values.shape[0];
    dim = values.shape[1];
    if (out.numel() != tokens * dim) return absl::InvalidArgumentError("the result must have one row per id");
  }
  if (!grad) {
    if (tokens * dim == 0) return absl::OkStatus();
    return emit("amp_embedding_" + suffix, tokens * dim, [&](Action& a) {
      a.arg(device<const void>(ptr_[step.operands[0]]));
      a.arg(device<const long long>(ptr_[step.operands[1]]));
      a.arg(device<void>(ptr_[step.results[0]]));
      a.arg(tokens);
      a.arg(rows);
      a.arg(dim);
    });
  }
  if (rows * dim == 0) return absl::OkStatus();
  DevicePtr acc = ptr_[step.results[0]];  // f32: the result is its own accumulator
  if (values.dtype != DType::F32) {
    auto scratchAcc = scratch(4 * rows * dim);
    if (!scratchAcc.ok()) return scratchAcc.status();
    acc = *scratchAcc;
  }
  const int64_t gx = (dim + 255) / 256;
  const int64_t gy = std::min<int64_t>({rows, 65535, std::max<int64_t>(1, int64_t{8} * sms / gx)});
  auto fn = kernel("amp_embedding_grad_" + suffix);
  if (!fn.ok()) return fn.status();
  Action a = launch("amp_embedding_grad_" + suffix, s);
  a.fn = *fn;
  a.blocks = gx;
  a.blocksY = gy;
  a.threads = 256;
  a.arg(device<const long long>(ptr_[step.operands[0]]));
  a.arg(device<const void>(ptr_[step.operands[1]]));
  a.arg(device<float>(acc));
  a.arg(device<void>(ptr_[step.results[0]]));
  a.arg(tokens);
  a.arg(rows);
  a.arg(dim);
  actions_.push_back(std::move(a));
  ++report_.kernels;
  return absl::OkStatus();
}

// amp.cross_entropy (row losses, then their mean in row order) and amp.cross_entropy_grad (the
// counted rows, then every gradient element): the launch protocol of kernels/LossKernels.cu.
absl::Status ActionBuilder::crossEntropy(size_t s) {
  const PlanStep& step = entry_.steps[s];
  const bool grad = step.op == "amp.cross_entropy_grad";
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
  auto ignore = step.attrs.getInt(step.op, "ignore_index", -100);
  auto smoothing = step.attrs.getDouble(step.op, "label_smoothing", 0.0);
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
    ++report_.kernels;
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

namespace {

// A pair attribute ([h, w]) of a conv or pooling step, every value at least `least`.
absl::StatusOr<std::pair<long long, long long>> pairAttr(const PlanStep& step, const char* name, long long least) {
  auto v = step.attrs.getInts(step.op, name);
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

// amp.conv2d and its gradients (ConvKernels.cu): the direct, exact form.
absl::Status ActionBuilder::convOp(size_t s) {
  const PlanStep& step = entry_.steps[s];
  const bool forward = step.op == "amp.conv2d", gradInput = step.op == "amp.conv2d_grad_input";
  if (step.results.size() != 1 || step.operands.size() < 2 || step.operands.size() > (forward ? 3u : 2u))
    return absl::InvalidArgumentError("unexpected operands for the convolution");
  // The shapes: x and w of the forward; dy and w (dx the result); x and dy (dw the result).
  const BufferDesc& r = plan_.buffers[step.results[0]];
  const BufferDesc& a = plan_.buffers[step.operands[0]];
  const BufferDesc& b = plan_.buffers[step.operands[1]];
  const Shape& xs = forward || !gradInput ? a.shape : r.shape;
  const Shape& ws = forward || gradInput ? b.shape : r.shape;
  const Shape& ys = forward ? r.shape : gradInput ? a.shape : b.shape;
  auto type = floatSuffix(r.dtype);
  if (!type || a.dtype != r.dtype || b.dtype != r.dtype || xs.size() != 4 || ws.size() != 4 || ys.size() != 4)
    return absl::InvalidArgumentError("convolution tensors must be NCHW of one float type");
  auto stride = pairAttr(step, "stride", 1), pad = pairAttr(step, "padding", 0), dil = pairAttr(step, "dilation", 1);
  auto groups = step.attrs.getInt(step.op, "groups");
  for (const absl::Status& st : {stride.status(), pad.status(), dil.status(), groups.status()})
    if (!st.ok()) return st;
  AmpConvShape c{};
  c.N = xs[0], c.C = xs[1], c.H = xs[2], c.W = xs[3];
  c.O = ws[0], c.CG = ws[1], c.KH = ws[2], c.KW = ws[3], c.OH = ys[2], c.OW = ys[3];
  c.strideH = stride->first, c.strideW = stride->second, c.padH = pad->first, c.padW = pad->second;
  c.dilH = dil->first, c.dilW = dil->second;
  // The shapes must be the ones the kernels' index math assumes (validated plans are).
  const bool consistent = *groups >= 1 && c.C % *groups == 0 && c.O % *groups == 0 && c.CG == c.C / *groups &&
                          ys[0] == c.N && ys[1] == c.O && c.KH >= 1 && c.KW >= 1 &&
                          c.OH == (c.H + 2 * c.padH - c.dilH * (c.KH - 1) - 1) / c.strideH + 1 &&
                          c.OW == (c.W + 2 * c.padW - c.dilW * (c.KW - 1) - 1) / c.strideW + 1 &&
                          c.H + 2 * c.padH - c.dilH * (c.KH - 1) - 1 >= 0 && c.W + 2 * c.padW - c.dilW * (c.KW - 1) - 1 >= 0;
  if (!consistent) return absl::InvalidArgumentError("convolution shapes disagree with its attributes");
  c.OG = c.O / *groups;
  if (forward && step.operands.size() == 3) {
    const BufferDesc& bias = plan_.buffers[step.operands[2]];
    if (bias.dtype != r.dtype || bias.shape != Shape{c.O}) return absl::InvalidArgumentError("bias must be [O] of the type");
  }
  const std::string name = absl::StrCat(forward ? "amp_conv2d_" : gradInput ? "amp_conv2d_grad_input_" : "amp_conv2d_grad_weight_", *type);
  auto fn = kernel(name);
  if (!fn.ok()) return fn.status();
  Action k = elementKernel(name, s, r.numel(), *fn);
  k.arg(device<const void>(ptr_[step.operands[0]]));
  k.arg(device<const void>(ptr_[step.operands[1]]));
  if (forward) k.arg(device<const void>(step.operands.size() == 3 ? ptr_[step.operands[2]] : 0));
  k.arg(device<void>(ptr_[step.results[0]]));
  k.arg(c);
  actions_.push_back(std::move(k));
  ++report_.kernels;
  return absl::OkStatus();
}

// amp.max_pool2d, amp.avg_pool2d and their gradients (ConvKernels.cu).
absl::Status ActionBuilder::poolOp(size_t s) {
  const PlanStep& step = entry_.steps[s];
  const bool grad = step.op == "amp.max_pool2d_grad" || step.op == "amp.avg_pool2d_grad";
  const bool isMax = step.op == "amp.max_pool2d" || step.op == "amp.max_pool2d_grad";
  const size_t operands = step.op == "amp.max_pool2d_grad" ? 2 : 1;
  if (step.results.size() != 1 || step.operands.size() != operands)
    return absl::InvalidArgumentError("unexpected operands for the pooling");
  const BufferDesc& r = plan_.buffers[step.results[0]];
  const Shape& xs = grad ? r.shape : plan_.buffers[step.operands[0]].shape;
  const Shape& ys = grad ? plan_.buffers[step.operands.back()].shape : r.shape;
  auto type = floatSuffix(r.dtype);
  for (int32_t id : step.operands)
    if (plan_.buffers[id].dtype != r.dtype) type.reset();
  if (!type || xs.size() != 4 || ys.size() != 4) return absl::InvalidArgumentError("pooling tensors must be NCHW of one float type");
  auto k = pairAttr(step, "kernel", 1), stride = pairAttr(step, "stride", 1), pad = pairAttr(step, "padding", 0);
  for (const absl::Status& st : {k.status(), stride.status(), pad.status()})
    if (!st.ok()) return st;
  AmpPoolShape p{};
  p.NC = xs[0] * xs[1], p.H = xs[2], p.W = xs[3], p.OH = ys[2], p.OW = ys[3];
  p.KH = k->first, p.KW = k->second, p.strideH = stride->first, p.strideW = stride->second;
  p.padH = pad->first, p.padW = pad->second;
  const bool consistent = ys[0] == xs[0] && ys[1] == xs[1] && p.padH <= p.KH / 2 && p.padW <= p.KW / 2 &&
                          p.H + 2 * p.padH - p.KH >= 0 && p.W + 2 * p.padW - p.KW >= 0 &&
                          p.OH == (p.H + 2 * p.padH - p.KH) / p.strideH + 1 && p.OW == (p.W + 2 * p.padW - p.KW) / p.strideW + 1;
  if (!consistent) return absl::InvalidArgumentError("pooling shapes disagree with its attributes");
  const std::string name = absl::StrCat(isMax ? "amp_max_pool2d_" : "amp_avg_pool2d_", grad ? "grad_" : "", *type);
  auto fn = kernel(name);
  if (!fn.ok()) return fn.status();
  Action a = elementKernel(name, s, r.numel(), *fn);
  for (int32_t id : step.operands) a.arg(device<const void>(ptr_[id]));
  a.arg(device<void>(ptr_[step.results[0]]));
  a.arg(p);
  actions_.push_back(std::move(a));
  ++report_.kernels;
  return absl::OkStatus();
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
    ++report_.kernels;
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
  ++report_.kernels;
  return absl::OkStatus();
}

// A run of adam (or sgd) updates sharing their attributes, scalar operands and gradient type: the
// step's constants once, then one multi-tensor pass updating every param and its moments in place.
// Each result starts as a copy of its operand unless the memory plan already made them one buffer.
// A fused update (GradPipeline.h) also unscales and clips its stored gradient, whose loss scale and
// norm follow the op's operands, and may write the master's low-precision copy as a last result.
absl::StatusOr<size_t> ActionBuilder::updates(size_t s) {
  const PlanStep& first = entry_.steps[s];
  const bool adam = first.op == "amp.adam_update";
  auto unscales = first.attrs.getBool(first.op, kUnscaleAttr, false);
  auto widened = first.attrs.getBool(first.op, kWidenedAttr, false);
  auto maxNorm = first.attrs.getDouble(first.op, kMaxNormAttr, 0.0);
  if (!unscales.ok()) return unscales.status();
  if (!widened.ok()) return widened.status();
  if (!maxNorm.ok()) return maxNorm.status();
  const bool clips = first.attrs.has(kMaxNormAttr);
  const size_t extras = (*unscales ? 1 : 0) + (clips ? 1 : 0);  // [scale][, norm] after the op's operands
  if (first.operands.size() < extras + 4) return absl::InvalidArgumentError("unexpected operands for the optimizer update");
  const size_t base = first.operands.size() - extras;
  const size_t scalars = adam ? 4 : 2;  // adam: step, lr, found; sgd: lr, found
  if ((adam && base != 7) || (!adam && base != 4 && base != 5))
    return absl::InvalidArgumentError("unexpected operands for the optimizer update");
  const bool momentum = !adam && base == 5;
  const size_t states = adam ? 3 : (momentum ? 2 : 1);  // param [, exp_avg, exp_avg_sq | momentum_buffer]
  if (first.results.size() != states && first.results.size() != states + 1)
    return absl::InvalidArgumentError("unexpected results for the optimizer update");
  const bool copies = first.results.size() == states + 1;
  const DType gradType = plan_.buffers[first.operands[1]].dtype;
  const DType copyType = copies ? plan_.buffers[first.results[states]].dtype : DType::F32;
  if (!floatSuffix(gradType) || (*widened && gradType == DType::F32))
    return absl::InvalidArgumentError("gradients must be f32, bf16 or f16");
  if (copies && copyType != DType::BF16 && copyType != DType::F16)
    return absl::InvalidArgumentError("the weight copy must be bf16 or f16");
  auto sameRun = [&](const PlanStep& st) {
    if (st.op != first.op || st.operands.size() != first.operands.size() || st.results.size() != first.results.size() ||
        plan_.buffers[st.operands[1]].dtype != gradType ||
        (copies && plan_.buffers[st.results[states]].dtype != copyType))
      return false;
    for (size_t k = scalars; k < scalars + (adam ? 3 : 2); ++k)
      if (st.operands[k] != first.operands[k]) return false;
    for (size_t k = base; k < first.operands.size(); ++k)
      if (st.operands[k] != first.operands[k]) return false;
    if (st.attrs.size() != first.attrs.size()) return false;
    for (const auto& [name, value] : first.attrs) {
      const AttrValue* other = st.attrs.find(name);
      if (!other || !sameAttr(*other, value)) return false;
    }
    return true;
  };
  size_t end = s + 1;
  while (end < entry_.steps.size() && sameRun(entry_.steps[end])) ++end;

  // Operand indices of each state (param, moments) and the results they become.
  const std::vector<size_t> stateOperand = adam ? std::vector<size_t>{0, 2, 3} : (momentum ? std::vector<size_t>{0, 4} : std::vector<size_t>{0});
  std::vector<int64_t> numels;
  for (size_t k = s; k < end; ++k) {
    const PlanStep& st = entry_.steps[k];
    const BufferDesc& p = plan_.buffers[st.operands[0]];
    if (p.dtype != DType::F32 || plan_.buffers[st.operands[1]].numel() != p.numel() ||
        (copies && plan_.buffers[st.results[states]].numel() != p.numel()))
      return absl::InvalidArgumentError(absl::StrCat("step ", number(k), ": the param must be f32, its gradient and copy its size"));
    for (size_t j = 0; j < states; ++j) {
      const BufferDesc& in = plan_.buffers[st.operands[stateOperand[j]]];
      const BufferDesc& out = plan_.buffers[st.results[j]];
      if (in.dtype != DType::F32 || in.numel() != p.numel() || out.dtype != DType::F32 || out.numel() != p.numel())
        return absl::InvalidArgumentError(absl::StrCat("step ", number(k), ": optimizer state must be f32 like its param"));
      if (ptr_[st.results[j]] != ptr_[st.operands[stateOperand[j]]])
        copy(ptr_[st.results[j]], ptr_[st.operands[stateOperand[j]]], in.byteSize(),
             absl::StrCat("step ", number(k), " ", st.op, ": ", plan_.buffers[st.results[j]].name, " <- ", in.name));
    }
    numels.push_back(p.numel());
  }
  for (size_t k = base; k < first.operands.size(); ++k)
    if (plan_.buffers[first.operands[k]].dtype != DType::F32 || plan_.buffers[first.operands[k]].numel() != 1)
      return absl::InvalidArgumentError("the loss scale and the norm must be f32 scalars");

  auto stepScalars = scratch(static_cast<int64_t>(sizeof(AmpStepScalars)));
  if (!stepScalars.ok()) return stepScalars.status();
  AmpOptimizerArgs args = {};
  args.optimizer = adam ? 1 : 2;
  args.lr = device<const float>(ptr_[first.operands[adam ? 5 : 2]]);
  args.foundInf = device<const float>(ptr_[first.operands[adam ? 6 : 3]]);
  args.step = adam ? device<const long long>(ptr_[first.operands[4]]) : nullptr;
  args.scale = *unscales ? device<const float>(ptr_[first.operands[base]]) : nullptr;
  args.norm = clips ? device<const float>(ptr_[first.operands.back()]) : nullptr;
  args.maxNorm = *maxNorm;
  auto attr = [&](const char* name, double dflt) { return first.attrs.getDouble(first.op, name, dflt); };
  auto flag = [&](const char* name) { return first.attrs.getBool(first.op, name, false); };
  auto beta1 = attr("beta1", 0.9), beta2 = attr("beta2", 0.999), eps = attr("eps", 1e-8), wd = attr("weight_decay", 0.0),
       mom = attr("momentum", 0.0);
  auto decoupled = flag("decoupled"), nesterov = flag("nesterov");
  for (const absl::Status& st : {beta1.status(), beta2.status(), eps.status(), wd.status(), mom.status(),
                                 decoupled.status(), nesterov.status()})
    if (!st.ok()) return st;
  if (!adam && (*mom != 0.0) != momentum) return absl::InvalidArgumentError("momentum and the momentum_buffer disagree");
  args.beta1 = *beta1;
  args.beta2 = *beta2;
  args.eps = *eps;
  args.weightDecay = *wd;
  args.momentum = *mom;
  args.decoupled = *decoupled;
  args.nesterov = *nesterov;
  args.out = device<AmpStepScalars>(*stepScalars);
  auto scalarsFn = kernel("amp_optimizer_scalars");
  if (!scalarsFn.ok()) return scalarsFn.status();
  Action a = launch("amp_optimizer_scalars", s);
  a.fn = *scalarsFn;
  a.blocks = 1;
  a.threads = 1;
  a.arg(args);
  actions_.push_back(std::move(a));
  ++report_.multiTensorLaunches;

  const std::string name = absl::StrCat("amp_mt_", adam ? "adam_" : "sgd_", *floatSuffix(gradType), *widened ? "w_" : "_",
                                        copies ? *floatSuffix(copyType) : "none");
  auto fn = kernel(name);
  if (!fn.ok()) return fn.status();
  Action proto = launch(name, s);
  proto.fn = *fn;
  proto.what += end - s == 1 ? std::string() : absl::StrCat(" for ", end - s, " updates");
  const DevicePtr scalarsPtr = *stepScalars;
  auto extra = [&](Action& l, const MultiTensorLaunch&) { l.arg(device<const AmpStepScalars>(scalarsPtr)); };
  // [grad, param, exp_avg, exp_avg_sq, copy] or [grad, param, momentum_buffer, copy].
  const int copySlot = adam ? 4 : 3;
  auto pointer = [&](int d, int32_t t) -> void* {
    const PlanStep& st = entry_.steps[s + static_cast<size_t>(t)];
    if (d == 0) return device<void>(ptr_[st.operands[1]]);
    if (d == copySlot) return copies ? device<void>(ptr_[st.results[states]]) : nullptr;
    const size_t j = static_cast<size_t>(d - 1);
    return j < states ? device<void>(ptr_[st.results[j]]) : nullptr;
  };
  absl::Status st = adam ? listLaunches<5>(actions_, report_, proto, numels, pointer, extra)
                         : listLaunches<4>(actions_, report_, proto, numels, pointer, extra);
  if (!st.ok()) return st;
  return end - s;
}

}  // namespace amp::rt::cuda
