#include "runtime/devices/cuda/GradPipeline.h"

#include <algorithm>
#include <set>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"

namespace amp::rt::cuda {
namespace {

struct Read {
  size_t step;
  size_t operand;
};

bool isUpdate(const PlanStep& step) { return step.code == OpCode::AdamUpdate || step.code == OpCode::SgdUpdate; }
size_t foundOperand(const PlanStep& update) { return update.code == OpCode::AdamUpdate ? 6 : 3; }
bool isHalf(DType t) { return t == DType::BF16 || t == DType::F16; }

// A lone cast: one operand and one result of one shape.
bool isLoneCast(const Plan& plan, const PlanStep& step) {
  return step.code == OpCode::Cast && step.operands.size() == 1 && step.results.size() == 1 &&
         plan.buffers[step.operands[0]].shape == plan.buffers[step.results[0]].shape;
}

}  // namespace

std::optional<FusedGradPipeline> fuseGradPipeline(const Plan& plan, const EntryPoint& entry) {
  const std::vector<PlanStep>& steps = entry.steps;
  const size_t buffers = plan.buffers.size();
  std::vector<std::vector<Read>> readers(buffers);
  std::vector<int64_t> producer(buffers, -1);
  std::optional<size_t> unscale;
  for (size_t s = 0; s < steps.size(); ++s) {
    for (size_t o = 0; o < steps[s].operands.size(); ++o) readers[steps[s].operands[o]].push_back({s, o});
    for (int32_t r : steps[s].results) producer[r] = static_cast<int64_t>(s);
    if (steps[s].code == OpCode::UnscaleCheck) {
      if (unscale) return std::nullopt;  // one pipeline per entry
      unscale = s;
    }
  }
  if (!unscale) return std::nullopt;
  // Values the caller sees (results, update sources) must be materialised as the plan says.
  std::vector<char> escapes(buffers, 0);
  for (int32_t id : entry.results) escapes[id] = 1;
  for (const auto& [src, tgt] : entry.updates) escapes[src] = escapes[tgt] = 1;
  auto internal = [&](int32_t id) { return !escapes[id] && plan.buffers[id].kind == BufferKind::Temp; };

  const PlanStep& check = steps[*unscale];
  if (check.results.size() < 2) return std::nullopt;
  const size_t n = check.results.size() - 1;
  const bool scaled = check.operands.size() == n + 1;
  if (!scaled && check.operands.size() != n) return std::nullopt;
  const int32_t found = check.results[n];

  // Who reads each unscaled gradient: the norm, the clip (both at the gradient's own position)
  // and exactly one optimizer update.
  std::optional<size_t> norm, clip;
  std::vector<int64_t> updateOf(n, -1);
  auto claim = [](std::optional<size_t>& slot, size_t s) {
    if (slot && *slot != s) return false;
    slot = s;
    return true;
  };
  auto readByUpdate = [&](const Read& r, size_t i) {
    if (!isUpdate(steps[r.step]) || r.operand != 1 || updateOf[i] >= 0) return false;
    updateOf[i] = static_cast<int64_t>(r.step);
    return true;
  };
  for (size_t i = 0; i < n; ++i) {
    const int32_t u = check.results[i];
    if (!internal(u)) return std::nullopt;
    for (const Read& r : readers[u]) {
      const std::optional<OpCode> op = steps[r.step].code;
      const bool ok = op == OpCode::GlobalNorm  ? r.operand == i && claim(norm, r.step)
                      : op == OpCode::ClipGrads ? r.operand == i && claim(clip, r.step)
                                               : readByUpdate(r, i);
      if (!ok) return std::nullopt;
    }
  }
  if (norm && (steps[*norm].operands.size() != n || steps[*norm].results.size() != 1)) return std::nullopt;
  double maxNorm = 0.0;
  if (clip) {
    const PlanStep& c = steps[*clip];
    if (!norm || c.operands.size() != n + 1 || c.results.size() != n || c.operands[n] != steps[*norm].results[0])
      return std::nullopt;
    auto attr = c.attrs.getDouble(c.op, "max_norm");
    if (!attr.ok()) return std::nullopt;
    maxNorm = *attr;
    for (size_t i = 0; i < n; ++i) {
      if (updateOf[i] >= 0 || !internal(c.results[i])) return std::nullopt;  // the optimizer reads the clipped one
      for (const Read& r : readers[c.results[i]])
        if (!readByUpdate(r, i)) return std::nullopt;
    }
  }
  std::set<size_t> updates;
  for (size_t i = 0; i < n; ++i) {
    if (updateOf[i] < 0) return std::nullopt;
    const PlanStep& u = steps[static_cast<size_t>(updateOf[i])];
    if (u.operands.size() <= foundOperand(u) || u.operands[foundOperand(u)] != found || u.results.empty())
      return std::nullopt;
    updates.insert(static_cast<size_t>(updateOf[i]));
  }
  for (size_t s = 0; s < steps.size(); ++s)
    if (isUpdate(steps[s]) && !updates.count(s)) return std::nullopt;  // an update outside the pipeline

  // Gradients the plan widened from 16 bits only to unscale them are read as stored.
  std::vector<char> dropped(steps.size(), 0);
  std::vector<int32_t> source(n);
  std::vector<int64_t> widened(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const int32_t g = check.operands[i];
    source[i] = g;
    const int64_t p = producer[g];
    if (p < 0 || !isLoneCast(plan, steps[static_cast<size_t>(p)]) || !internal(g) || readers[g].size() != 1) continue;
    const int32_t narrow = steps[static_cast<size_t>(p)].operands[0];
    if (plan.buffers[g].dtype != DType::F32 || !isHalf(plan.buffers[narrow].dtype)) continue;
    source[i] = narrow;
    widened[i] = 1;
    dropped[static_cast<size_t>(p)] = 1;
  }
  // The first cast of each updated master to 16 bits becomes the optimizer's low-precision copy.
  std::vector<int32_t> copyOf(steps.size(), -1);
  for (size_t k : updates) {
    for (const Read& r : readers[steps[k].results[0]]) {
      const PlanStep& c = steps[r.step];
      if (r.step > k && !dropped[r.step] && isLoneCast(plan, c) && isHalf(plan.buffers[c.results[0]].dtype)) {
        copyOf[k] = c.results[0];
        dropped[r.step] = 1;
        break;
      }
    }
  }
  if (norm) dropped[*norm] = 1;
  if (clip) dropped[*clip] = 1;

  // Updates that run as one kernel become adjacent, so each kernel is one multi-tensor launch
  // sequence: all of them move to the first update's place, when every operand they read is
  // ready there. Updates are independent of one another, so the order changes no value.
  const size_t firstUpdate = *updates.begin();
  bool regroup = true;
  for (size_t k : updates)
    for (int32_t id : steps[k].operands)
      if (producer[id] >= static_cast<int64_t>(firstUpdate)) regroup = false;
  std::vector<size_t> order(updates.begin(), updates.end());
  auto kernelOf = [&](size_t k) {
    const size_t i = static_cast<size_t>(std::find(updateOf.begin(), updateOf.end(), static_cast<int64_t>(k)) - updateOf.begin());
    return std::make_tuple(steps[k].op, plan.buffers[source[i]].dtype, widened[i],
                           copyOf[k] >= 0 ? plan.buffers[copyOf[k]].dtype : DType::F32, copyOf[k] >= 0);
  };
  if (regroup) std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return kernelOf(a) < kernelOf(b); });

  FusedGradPipeline out;
  out.entry.name = entry.name;
  out.entry.results = entry.results;
  out.entry.resultNames = entry.resultNames;
  out.entry.updates = entry.updates;
  std::vector<size_t> gradientOf(steps.size(), n);
  for (size_t i = 0; i < n; ++i) gradientOf[static_cast<size_t>(updateOf[i])] = i;
  int widenings = 0, copies = 0;
  // Update k reading its stored gradient, unscaling and clipping it, and writing the copy.
  auto emitUpdate = [&](size_t k) {
    PlanStep step = steps[k];
    const size_t i = gradientOf[k];
    step.operands[1] = source[i];
    step.attrs.set(kWidenedAttr, widened[i] != 0);
    step.attrs.set(kUnscaleAttr, scaled);
    if (scaled) step.operands.push_back(check.operands[n]);
    if (clip) {
      step.attrs.set(kMaxNormAttr, maxNorm);
      step.operands.push_back(steps[*norm].results[0]);
    }
    if (copyOf[k] >= 0) {
      step.results.push_back(copyOf[k]);
      ++copies;
    }
    widenings += widened[i] != 0;
    out.entry.steps.push_back(std::move(step));
    out.planStep.push_back(k);
  };
  for (size_t s = 0; s < steps.size(); ++s) {
    if (dropped[s]) continue;
    if (s == *unscale) {
      PlanStep stats;
      stats.op = kGradStatsOp;
      stats.kind = StepKind::MultiTensor;
      stats.loc = check.loc;
      stats.phase = check.phase;
      stats.operands = source;
      if (scaled) stats.operands.push_back(check.operands[n]);
      stats.results = {found};
      if (norm) stats.results.push_back(steps[*norm].results[0]);
      stats.attrs.set("widened", widened);
      out.entry.steps.push_back(std::move(stats));
      out.planStep.push_back(s);
    } else if (gradientOf[s] < n) {
      if (!regroup) {
        emitUpdate(s);
      } else if (s == firstUpdate) {
        for (size_t k : order) emitUpdate(k);
      }
    } else {
      out.entry.steps.push_back(steps[s]);
      out.planStep.push_back(s);
    }
  }
  out.summary = absl::StrCat("gradient pipeline fused: amp.unscale_check", norm ? ", amp.global_norm" : "",
                             clip ? ", amp.clip_grads" : "", ", ", widenings, " widening cast(s) and ", copies,
                             " weight-copy cast(s) run as one grad-stats pass and the optimizer pass over ", n,
                             " gradient(s)");
  return out;
}

}  // namespace amp::rt::cuda
