#include "runtime/plan/MemoryBreakdown.h"

#include <algorithm>
#include <vector>

#include "runtime/plan/MemoryPlan.h"

namespace amp::rt {

BufferClass classifyBuffer(const BufferDesc& b) {
  auto ends = [&](std::string_view suffix) {
    return b.name.size() > suffix.size() && b.name.compare(b.name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  switch (b.kind) {
    case BufferKind::Param: return BufferClass::Params;
    case BufferKind::Input:
    case BufferKind::Label: return BufferClass::InputsAndLabels;
    case BufferKind::Constant: return BufferClass::Constants;
    case BufferKind::Temp: return BufferClass::Temporaries;
    case BufferKind::State:
      if (b.init && b.init->kind == "cast") return BufferClass::WeightCopies;
      if (ends(".exp_avg") || ends(".exp_avg_sq") || ends(".momentum_buffer")) return BufferClass::OptimizerMoments;
      if (ends(".grad_accum")) return BufferClass::GradientAccumulators;
      return BufferClass::ScalerAndCounters;
  }
  return BufferClass::Temporaries;
}

std::string_view bufferClassLabel(BufferClass c) {
  switch (c) {
    case BufferClass::Params: return "params (f32 masters)";
    case BufferClass::WeightCopies: return "low-precision weight copies";
    case BufferClass::OptimizerMoments: return "optimizer moments";
    case BufferClass::GradientAccumulators: return "gradient accumulators";
    case BufferClass::ScalerAndCounters: return "scaler and counters";
    case BufferClass::Constants: return "constants";
    case BufferClass::InputsAndLabels: return "inputs and labels";
    case BufferClass::Temporaries: return "temporaries";
  }
  return "other";
}

std::string_view bufferClassKey(BufferClass c) {
  switch (c) {
    case BufferClass::Params: return "params";
    case BufferClass::WeightCopies: return "weight_copies";
    case BufferClass::OptimizerMoments: return "optimizer_moments";
    case BufferClass::GradientAccumulators: return "gradient_accumulators";
    case BufferClass::ScalerAndCounters: return "scaler_and_counters";
    case BufferClass::Constants: return "constants";
    case BufferClass::InputsAndLabels: return "inputs_and_labels";
    case BufferClass::Temporaries: return "temporaries";
  }
  return "other";
}

int64_t ClassBytes::persistentBytes() const {
  int64_t sum = 0;
  for (BufferClass c : kPersistentClasses)
    sum += (*this)[c];
  return sum;
}

ClassBytes bytesByClass(const Plan& plan) {
  ClassBytes out;
  for (const BufferDesc& b : plan.buffers) {
    if (b.kind == BufferKind::Temp) continue;  // the arena's, counted by entry
    const int c = static_cast<int>(classifyBuffer(b));
    out.bytes[c] += b.byteSize();
    ++out.buffers[c];
  }
  return out;
}

int64_t plannedArenaBytes(const Plan& plan, const EntryPoint& entry) {
  return entry.memory ? entry.memory->arenaBytes : planMemory(plan, entry, constantsOutsideArena(plan, entry)).arenaBytes;
}

int64_t temporariesAllAtOnce(const Plan& plan, const EntryPoint& entry) {
  int64_t all = 0;
  for (const PlanStep& s : entry.steps)
    for (int32_t id : s.results) all += plan.buffers[id].byteSize();
  return all;
}

PeakSplit peakSplit(const Plan& plan, std::string_view entry) {
  PeakSplit out;
  const EntryPoint* e = plan.findEntry(entry);
  if (!e) return out;
  const MemoryPlan memory = planMemory(plan, *e, constantsOutsideArena(plan, *e));
  auto root = [&](int32_t id) {
    while (memory.aliasOf[id] >= 0) id = memory.aliasOf[id];
    return id;
  };
  const int64_t n = static_cast<int64_t>(e->steps.size());
  // Per arena buffer (the root of its views): the step that writes it, the last that reads it,
  // and whether a backward step reads it (a saved activation, when the forward made it).
  std::vector<int64_t> def(plan.buffers.size(), -1), last(plan.buffers.size(), -1);
  std::vector<char> readByBackward(plan.buffers.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    const PlanStep& s = e->steps[i];
    for (int32_t r : s.results) {
      int32_t b = root(r);
      if (memory.offset[b] >= 0 && def[b] < 0) def[b] = i;
      last[b] = std::max(last[b], i);
    }
    for (int32_t o : s.operands) {
      int32_t b = root(o);
      last[b] = std::max(last[b], i);
      if (s.phase == "backward") readByBackward[b] = 1;
    }
  }
  for (int32_t r : e->results) last[root(r)] = n;
  std::vector<int64_t> delta(n + 2, 0);
  for (size_t b = 0; b < plan.buffers.size(); ++b)
    if (def[b] >= 0 && memory.offset[b] >= 0)
      delta[def[b]] += plan.buffers[b].byteSize(), delta[last[b] + 1] -= plan.buffers[b].byteSize();
  int64_t live = 0;
  for (int64_t i = 0; i < n; ++i)
    if ((live += delta[i]) > out.live) out.live = live, out.step = i;
  out.steps = n;
  out.arena = memory.arenaBytes;
  if (out.step < 0) return out;
  out.phase = e->steps[out.step].phase;
  for (size_t b = 0; b < plan.buffers.size(); ++b) {
    if (def[b] < 0 || memory.offset[b] < 0 || def[b] > out.step || last[b] < out.step) continue;
    const std::string& made = e->steps[def[b]].phase;
    const int64_t bytes = plan.buffers[b].byteSize();
    if (made == "forward") (readByBackward[b] ? out.savedActivations : out.forwardOther) += bytes;
    else if (made == "backward") out.backward += bytes;
    else out.update += bytes;
  }
  return out;
}

}  // namespace amp::rt
