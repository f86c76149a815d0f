// The cuda device's lowering of the loss-scaling, clipping and optimizer steps (the multi-tensor
// and one-thread kernels of runtime/kernels/cuda/TrainKernels.cu), amp.grad_stats' fused
// statistics pass included.
#include <map>
#include <type_traits>
#include <variant>

#include "absl/strings/str_cat.h"
#include "runtime/devices/cuda/KernelTypes.h"
#include "runtime/devices/cuda/CudaActions.h"
#include "runtime/plan/UpdateLayout.h"
#include "runtime/devices/cuda/MultiTensor.h"
#include "runtime/kernels/cuda/MultiTensorArgs.h"
#include "runtime/kernels/cuda/TrainArgs.h"

namespace amp::rt::cuda {
namespace {

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

}  // namespace

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
    report.add(kMultiTensorLaunches);
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
  fill.what = absl::StrCat("step ", s, " amp.unscale_check: found_inf = 0");
  fill.category = Action::Category::ScalerOptimizer;
  actions_.push_back(std::move(fill));
  report_.add(kFills);
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
  report_.add(kMultiTensorLaunches);
  return absl::OkStatus();
}

// amp.grad_stats (amp-fuse-grad-pipeline): found_inf and, with a norm result, the global norm of
// the unscaled gradients, reading each stored gradient once; a 16-bit gradient is widened to f32
// before it is unscaled (the "w" kernels). One launch sequence per stored type; the partial sums
// of each tensor stay in the tensor order the norm combines.
absl::Status ActionBuilder::gradStats(size_t s) {
  const PlanStep& step = entry_.steps[s];
  auto unscales = step.attrs.getBool(step.op, "unscales", false);
  if (!unscales.ok()) return unscales.status();
  const size_t n = step.operands.size() - (*unscales ? 1 : 0);
  if (step.operands.size() < (*unscales ? 2u : 1u) || step.results.empty() || step.results.size() > 2)
    return absl::InvalidArgumentError("expected gradients, an optional scale, found_inf and an optional norm");
  const DevicePtr scale = *unscales ? ptr_[step.operands[n]] : 0;
  const DevicePtr found = ptr_[step.results[0]];
  const bool withNorm = step.results.size() == 2;
  Action fill;
  fill.kind = Action::Kind::Fill;
  fill.dst = found;
  fill.bytes = 4;
  fill.what = absl::StrCat("step ", s, " ", step.op, ": found_inf = 0");
  fill.category = Action::Category::ScalerOptimizer;
  actions_.push_back(std::move(fill));
  report_.add(kFills);
  // One launch sequence per kernel; its members' partial sums follow the groups before it.
  struct Group {
    std::vector<size_t> members;
    std::vector<int64_t> numels;
    MultiTensorSchedule schedule;
    int32_t base = 0;
  };
  std::map<std::string, Group> groups;
  for (size_t i = 0; i < n; ++i) {
    const BufferDesc& g = plan_.buffers[step.operands[i]];
    if (!floatSuffix(g.dtype)) return absl::InvalidArgumentError(absl::StrCat("gradient ", i, " must be f32, bf16 or f16"));
    Group& group = groups["amp_mt_grad_stats_" + *floatSuffix(g.dtype) + (g.dtype != DType::F32 ? "w" : "")];
    group.members.push_back(i);
    group.numels.push_back(g.numel());
  }
  std::vector<int32_t> slotRange(2 * n, 0);
  int32_t slots = 0;
  for (auto& [name, group] : groups) {
    auto schedule = scheduleMultiTensor(group.numels, 1);
    if (!schedule.ok()) return schedule.status();
    group.schedule = std::move(*schedule);
    group.base = slots;
    for (size_t j = 0; j < group.members.size(); ++j) {
      slotRange[2 * group.members[j]] = slots + group.schedule.tensorFirstSlot[j];
      slotRange[2 * group.members[j] + 1] = slots + group.schedule.tensorFirstSlot[j + 1];
    }
    slots += group.schedule.slots;
  }
  DevicePtr partials = 0;
  if (withNorm) {
    auto p = scratch(int64_t{4} * slots);
    if (!p.ok()) return p.status();
    partials = *p;
  }
  for (const auto& [name, group] : groups) {
    auto fn = kernel(name);
    if (!fn.ok()) return fn.status();
    Action proto = launch(name, s);
    proto.fn = *fn;
    auto pointer = [&](int, int32_t t) { return device<void>(ptr_[step.operands[group.members[static_cast<size_t>(t)]]]); };
    const DevicePtr groupPartials = partials ? partials + static_cast<DevicePtr>(4 * group.base) : 0;
    auto extra = [&](Action& a, const MultiTensorLaunch&) {
      a.arg(device<const float>(scale));
      a.arg(device<float>(found));
      a.arg(device<float>(groupPartials));
    };
    if (auto st = listLaunches<1>(actions_, report_, proto, group.numels, pointer, extra); !st.ok()) return st;
  }
  if (!withNorm) return absl::OkStatus();
  return combineNorm(s, partials, slotRange, ptr_[step.results[1]]);
}

absl::Status ActionBuilder::clipGrads(size_t s) {
  const PlanStep& step = entry_.steps[s];
  const size_t n = step.results.size();
  if (n < 1 || step.operands.size() != n + 1) return absl::InvalidArgumentError("expected gradients, the norm and their clipped copies");
  auto attrs = step.typedAttrs<ClipGradsAttrs>();
  if (!attrs.ok()) return attrs.status();
  const double maxNorm = attrs->maxNorm;
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
    a.arg(maxNorm);
  };
  return listLaunches<2>(actions_, report_, proto, numels, pointer, extra);
}

absl::Status ActionBuilder::scalarKernel(size_t s) {
  const PlanStep& step = entry_.steps[s];
  auto in = [&](size_t i) { return ptr_[step.operands[i]]; };
  auto out = [&](size_t i) { return ptr_[step.results[i]]; };
  Action a;
  if (step.code == OpCode::StepCounters) {
    if (step.operands.size() != 3 || step.results.size() != 2) return absl::InvalidArgumentError("expected (step, skipped, found_inf) -> (step, skipped)");
    a = launch("amp_step_counters_kernel", s);
    a.arg(device<const long long>(in(0)));
    a.arg(device<const long long>(in(1)));
    a.arg(device<const float>(in(2)));
    a.arg(device<long long>(out(0)));
    a.arg(device<long long>(out(1)));
  } else if (step.code == OpCode::LrSchedule) {
    if (step.operands.size() != 1 || step.results.size() != 1) return absl::InvalidArgumentError("expected (step) -> (lr)");
    auto attrs = step.typedAttrs<LrScheduleAttrs>();
    if (!attrs.ok()) return attrs.status();
    a = launch("amp_lr_schedule_kernel", s);
    a.arg(device<const long long>(in(0)));
    a.arg(int32_t{attrs->kind == LrScheduleKind::Cosine});
    a.arg(attrs->baseLr);
    a.arg(static_cast<long long>(attrs->warmupSteps));
    a.arg(static_cast<long long>(attrs->totalSteps));
    a.arg(attrs->minLr);
    a.arg(device<float>(out(0)));
  } else {
    if (step.operands.size() != 3 || step.results.size() != 2) return absl::InvalidArgumentError("expected (scale, growth_tracker, found_inf) -> (scale, growth_tracker)");
    auto attrs = step.typedAttrs<UpdateScaleAttrs>();
    if (!attrs.ok()) return attrs.status();
    a = launch("amp_update_scale_kernel", s);
    a.arg(device<const float>(in(0)));
    a.arg(device<const int>(in(1)));
    a.arg(device<const float>(in(2)));
    a.arg(device<float>(out(0)));
    a.arg(device<int>(out(1)));
    a.arg(attrs->growthFactor);
    a.arg(attrs->backoffFactor);
    a.arg(static_cast<long long>(attrs->growthInterval));
  }
  const std::string name = a.what.substr(a.what.rfind(' ') + 1);
  auto fn = kernel(name);
  if (!fn.ok()) return fn.status();
  a.fn = *fn;
  a.blocks = 1;
  a.threads = 1;
  actions_.push_back(std::move(a));
  report_.add(kMultiTensorLaunches);
  return absl::OkStatus();
}

// A run of adam (or sgd) updates sharing their attributes, scalar operands and gradient type: the
// step's constants once, then one multi-tensor pass updating every param and its moments in place.
// Each result starts as a copy of its operand unless the memory plan already made them one buffer.
// A fused update (amp-fuse-grad-pipeline) also unscales and clips its stored gradient, widened to
// f32 first (the "w" kernels), and may write the master's low-precision copy as a last result.
absl::StatusOr<size_t> ActionBuilder::updates(size_t s) {
  const PlanStep& first = entry_.steps[s];
  auto decoded = decodeUpdate(first);
  if (!decoded.ok()) return decoded.status();
  const UpdateLayout& layout = *decoded;
  const bool adam = layout.adam;
  const size_t base = first.operands.size() - (layout.scale ? 1 : 0) - (layout.norm ? 1 : 0);
  const size_t scalars = adam ? 4 : 2;  // adam: step, lr, found; sgd: lr, found
  const bool momentum = !adam && layout.states() == 2;
  const size_t states = layout.states();  // param [, exp_avg, exp_avg_sq | momentum_buffer]
  const bool copies = layout.weightCopy.has_value();
  const DType gradType = plan_.buffers[first.operands[1]].dtype;
  const bool widened = gradType != DType::F32 && (layout.scale || layout.norm);
  const DType copyType = copies ? plan_.buffers[first.results[states]].dtype : DType::F32;
  if (!floatSuffix(gradType)) return absl::InvalidArgumentError("gradients must be f32, bf16 or f16");
  if (adam && plan_.buffers[first.operands[2]].dtype != DType::F32)
    return absl::InvalidArgumentError(
        "bf16 Adam moments (--optimizer-state=bf16) run on the cpu and reference devices; the cuda device's "
        "multi-tensor Adam keeps f32 moments");
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
      return absl::InvalidArgumentError(absl::StrCat("step ", k, ": the param must be f32, its gradient and copy its size"));
    for (size_t j = 0; j < states; ++j) {
      const BufferDesc& in = plan_.buffers[st.operands[stateOperand[j]]];
      const BufferDesc& out = plan_.buffers[st.results[j]];
      if (in.dtype != DType::F32 || in.numel() != p.numel() || out.dtype != DType::F32 || out.numel() != p.numel())
        return absl::InvalidArgumentError(absl::StrCat("step ", k, ": optimizer state must be f32 like its param"));
      if (ptr_[st.results[j]] != ptr_[st.operands[stateOperand[j]]])
        copy(ptr_[st.results[j]], ptr_[st.operands[stateOperand[j]]], in.byteSize(),
             absl::StrCat("step ", k, " ", st.op, ": ", plan_.buffers[st.results[j]].name, " <- ", in.name));
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
  args.scale = layout.scale ? device<const float>(ptr_[first.operands[*layout.scale]]) : nullptr;
  args.norm = layout.norm ? device<const float>(ptr_[first.operands[*layout.norm]]) : nullptr;
  args.maxNorm = layout.maxNorm.value_or(0.0);
  if (adam) {
    auto attrs = first.typedAttrs<AdamUpdateAttrs>();
    if (!attrs.ok()) return attrs.status();
    args.beta1 = attrs->beta1;
    args.beta2 = attrs->beta2;
    args.eps = attrs->eps;
    args.weightDecay = attrs->weightDecay;
    args.decoupled = attrs->decoupled;
  } else {
    auto attrs = first.typedAttrs<SgdUpdateAttrs>();
    if (!attrs.ok()) return attrs.status();
    if ((attrs->momentum != 0.0) != momentum)
      return absl::InvalidArgumentError("momentum and the momentum_buffer disagree");
    args.weightDecay = attrs->weightDecay;
    args.momentum = attrs->momentum;
    args.nesterov = attrs->nesterov;
  }
  args.out = device<AmpStepScalars>(*stepScalars);
  auto scalarsFn = kernel("amp_optimizer_scalars");
  if (!scalarsFn.ok()) return scalarsFn.status();
  Action a = launch("amp_optimizer_scalars", s);
  a.fn = *scalarsFn;
  a.blocks = 1;
  a.threads = 1;
  a.arg(args);
  actions_.push_back(std::move(a));
  report_.add(kMultiTensorLaunches);

  const std::string name = absl::StrCat("amp_mt_", adam ? "adam_" : "sgd_", *floatSuffix(gradType), widened ? "w_" : "_",
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
