#include "runtime/plan/MemoryPlan.h"
#include "runtime/plan/UpdateLayout.h"

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <set>
#include <string_view>

namespace amp::rt {
namespace {

int64_t alignUp(int64_t n) { return (n + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment; }

struct Interval {
  int32_t id;
  int64_t start, end, bytes;  // live over steps [start, end]
};

// The elementwise ops whose result may take an operand's storage (each element is read before
// it is written, on every device).
bool isInPlaceElementwise(OpCode code) {
  switch (code) {
    case OpCode::Neg: case OpCode::Abs: case OpCode::Exp: case OpCode::Log: case OpCode::Sqrt:
    case OpCode::Rsqrt: case OpCode::Reciprocal: case OpCode::Tanh: case OpCode::Erf: case OpCode::Sigmoid:
    case OpCode::Relu: case OpCode::Silu: case OpCode::Gelu: case OpCode::Add: case OpCode::Sub:
    case OpCode::Mul: case OpCode::Div: case OpCode::Maximum: case OpCode::Minimum: case OpCode::Pow:
    case OpCode::Select: case OpCode::Cast:
      return true;
    default:
      return false;
  }
}

}  // namespace

MemoryPlanOptions constantsOutsideArena(const Plan& plan, const EntryPoint& entry) {
  MemoryPlanOptions options;
  options.external.assign(plan.buffers.size(), 0);
  for (const PlanStep& step : entry.steps)
    if (step.is(OpCode::Constant))
      for (int32_t id : step.results) options.external[id] = 1;
  return options;
}

MemoryLayout layoutOf(const MemoryPlan& memory, const EntryPoint& entry) {
  MemoryLayout layout;
  layout.arenaBytes = memory.arenaBytes;
  layout.alignment = kArenaAlignment;
  for (size_t id = 0; id < memory.offset.size(); ++id)
    if (memory.offset[id] >= 0) layout.offsets.emplace_back(static_cast<int32_t>(id), memory.offset[id]);
  for (const PlanStep& step : entry.steps)  // views in step order, as executors resolve them
    for (int32_t id : step.results)
      if (memory.aliasOf[id] >= 0) layout.views.emplace_back(id, memory.aliasOf[id]);
  layout.inPlaceUpdates = memory.inPlaceUpdates;
  return layout;
}

std::vector<std::pair<int, int>> inPlacePairs(const Plan& plan, const PlanStep& step) {
  std::vector<std::pair<int, int>> pairs;
  const std::optional<OpCode> code = step.code ? step.code : opCodeOf(step.op);
  if (!code) return pairs;  // not an amp op: the validator's to report
  auto same = [&](int r, int o) {
    if (r >= static_cast<int>(step.results.size()) || o >= static_cast<int>(step.operands.size())) return false;
    const BufferDesc &a = plan.buffers[step.results[r]], &b = plan.buffers[step.operands[o]];
    return a.dtype == b.dtype && a.shape == b.shape;
  };
  switch (*code) {
    case OpCode::Softmax: case OpCode::LogSoftmax: case OpCode::SoftmaxGrad:
      // Every device reads a slice's inputs (for its max and sum) before writing any of its results,
      // and then element j before writing result j.
      if (same(0, 0)) pairs.emplace_back(0, 0);
      break;
    case OpCode::UnscaleCheck: case OpCode::ClipGrads:
      for (size_t r = 0; r + (*code == OpCode::UnscaleCheck ? 1 : 0) < step.results.size(); ++r)
        if (same(static_cast<int>(r), static_cast<int>(r))) pairs.emplace_back(static_cast<int>(r), static_cast<int>(r));
      break;
    case OpCode::AdamUpdate: case OpCode::SgdUpdate:
      if (auto u = decodeUpdate(step); u.ok())  // a malformed step is the validator's to report
        for (size_t r = 0; r < u->states(); ++r)
          if (same(static_cast<int>(r), static_cast<int>(u->stateOperands[r])))
            pairs.emplace_back(static_cast<int>(r), static_cast<int>(u->stateOperands[r]));
      break;
    case OpCode::UpdateScale: case OpCode::StepCounters:
      for (auto [r, o] : {std::pair{0, 0}, {1, 1}})
        if (same(r, o)) pairs.emplace_back(r, o);
      break;
    default:
      if (isInPlaceElementwise(*code) && step.results.size() == 1)
        for (size_t o = 0; o < step.operands.size(); ++o)
          if (same(0, static_cast<int>(o))) pairs.emplace_back(0, static_cast<int>(o));
  }
  return pairs;
}

namespace {

// Largest first; among equals, earliest first (deterministic); each at the lowest offset that
// fits between the buffers live at the same time. The placed buffers are kept ordered by offset,
// so first fit is one scan that stops at the first gap. Tight arenas, but the scan visits every
// placed buffer: quadratic in the number of temporaries.
void placeFirstFitDecreasing(std::vector<Interval>& intervals, MemoryPlan& mp) {
  std::sort(intervals.begin(), intervals.end(), [](const Interval& a, const Interval& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.start != b.start ? a.start < b.start : a.id < b.id;
  });
  struct Placed {
    int64_t lo, hi, start, end;
  };
  std::vector<Placed> placed;
  for (const Interval& iv : intervals) {
    int64_t offset = 0;
    for (const Placed& p : placed) {
      if (p.start > iv.end || iv.start > p.end) continue;  // not live at the same time
      if (offset + iv.bytes <= p.lo) break;
      offset = std::max(offset, p.hi);
    }
    mp.offset[iv.id] = offset;
    mp.arenaBytes = std::max(mp.arenaBytes, offset + iv.bytes);
    const Placed entry{offset, offset + iv.bytes, iv.start, iv.end};
    placed.insert(std::upper_bound(placed.begin(), placed.end(), entry,
                                   [](const Placed& a, const Placed& b) { return a.lo < b.lo; }),
                  entry);
  }
}

// In step order, as an allocator would see them: buffers whose last step has passed return their
// bytes to an address-ordered free list (coalesced); each new buffer takes the smallest free
// block that fits, or grows the arena. O(n log n), for graphs too large for first fit.
void placeInStepOrder(std::vector<Interval>& intervals, MemoryPlan& mp) {
  std::sort(intervals.begin(), intervals.end(), [](const Interval& a, const Interval& b) {
    return a.start != b.start ? a.start < b.start : a.bytes != b.bytes ? a.bytes > b.bytes : a.id < b.id;
  });
  std::map<int64_t, int64_t> freeByOffset;             // offset -> bytes
  std::set<std::pair<int64_t, int64_t>> freeBySize;    // (bytes, offset)
  using Live = std::pair<int64_t, std::pair<int64_t, int64_t>>;  // (last step, (offset, bytes))
  std::priority_queue<Live, std::vector<Live>, std::greater<Live>> live;
  int64_t top = 0;
  auto release = [&](int64_t offset, int64_t bytes) {
    auto next = freeByOffset.lower_bound(offset);
    if (next != freeByOffset.end() && offset + bytes == next->first) {  // merge with the block after
      bytes += next->second;
      freeBySize.erase({next->second, next->first});
      next = freeByOffset.erase(next);
    }
    if (next != freeByOffset.begin()) {  // ... and with the block before
      auto prev = std::prev(next);
      if (prev->first + prev->second == offset) {
        offset = prev->first, bytes += prev->second;
        freeBySize.erase({prev->second, prev->first});
        freeByOffset.erase(prev);
      }
    }
    if (offset + bytes == top) {  // the arena's end is free again
      top = offset;
      return;
    }
    freeByOffset[offset] = bytes;
    freeBySize.insert({bytes, offset});
  };
  for (const Interval& iv : intervals) {
    while (!live.empty() && live.top().first < iv.start) {
      release(live.top().second.first, live.top().second.second);
      live.pop();
    }
    int64_t offset;
    if (auto fit = freeBySize.lower_bound({iv.bytes, 0}); fit != freeBySize.end()) {
      auto [bytes, at] = *fit;
      freeBySize.erase(fit);
      freeByOffset.erase(at);
      offset = at;
      if (bytes > iv.bytes) {
        freeByOffset[at + iv.bytes] = bytes - iv.bytes;
        freeBySize.insert({bytes - iv.bytes, at + iv.bytes});
      }
    } else {
      offset = top;
      top += iv.bytes;
    }
    mp.offset[iv.id] = offset;
    mp.arenaBytes = std::max(mp.arenaBytes, offset + iv.bytes);
    live.push({iv.end, {offset, iv.bytes}});
  }
}

}  // namespace


MemoryPlan planMemory(const Plan& plan, const EntryPoint& entry, const MemoryPlanOptions& options) {
  const size_t count = plan.buffers.size();
  MemoryPlan mp;
  mp.offset.assign(count, MemoryPlan::kNotInArena);
  mp.aliasOf.assign(count, -1);
  auto root = [&](int32_t id) {
    while (mp.aliasOf[id] >= 0) id = mp.aliasOf[id];
    return id;
  };
  auto external = [&](int32_t id) { return !options.external.empty() && options.external[id]; };
  const int64_t endOfCall = static_cast<int64_t>(entry.steps.size());
  const int64_t steps = endOfCall;

  // Reshapes first: they only rename storage.
  std::vector<int64_t> def(count, -1), last(count, -1), lastRead(count, -1);
  for (int64_t s = 0; s < steps; ++s) {
    const PlanStep& step = entry.steps[s];
    const bool isAlias = step.is(OpCode::Reshape) && step.operands.size() == 1 && step.results.size() == 1;
    for (int32_t id : step.results) {
      if (isAlias) mp.aliasOf[id] = step.operands[0];
      else def[id] = s;
    }
  }
  for (int64_t s = 0; s < steps; ++s)
    for (int32_t id : entry.steps[s].operands) lastRead[root(id)] = s;
  for (int64_t s = 0; s < steps; ++s)
    for (int32_t id : entry.steps[s].results) last[root(id)] = std::max(last[root(id)], std::max(s, lastRead[root(id)]));
  for (int32_t id : entry.results) last[root(id)] = endOfCall;
  for (const auto& update : entry.updates) last[root(update.first)] = endOfCall;

  // Updates written straight into their persistent target: the producing step either pairs the
  // source with the target as an operand, or does not read the target; nothing reads the target
  // after it (its old value would be gone).
  std::vector<int32_t> producer(count, -1);
  for (int64_t s = 0; s < steps; ++s)
    for (int32_t id : entry.steps[s].results) producer[id] = static_cast<int32_t>(s);
  std::vector<char> inPlaceSource(count, 0);
  for (const auto& [src, tgt] : entry.updates) {
    const int32_t s = producer[src];
    if (s < 0 || mp.aliasOf[src] >= 0 || entry.steps[s].is(OpCode::Fused) || lastRead[tgt] > s) continue;
    const PlanStep& step = entry.steps[s];
    const int r = static_cast<int>(std::find(step.results.begin(), step.results.end(), src) - step.results.begin());
    bool readsTarget = false, paired = false;
    for (size_t o = 0; o < step.operands.size(); ++o)
      if (root(step.operands[o]) == tgt) readsTarget = true;
    for (auto [pr, po] : inPlacePairs(plan, step))
      if (pr == r && step.operands[po] == tgt) paired = true;
    if (readsTarget && !paired) continue;
    mp.inPlaceUpdates.emplace_back(src, tgt);
    inPlaceSource[src] = 1;
  }

  // Elementwise results written over an operand that dies at their step.
  for (int64_t s = 0; s < steps; ++s) {
    const PlanStep& step = entry.steps[s];
    if (step.is(OpCode::Fused)) continue;  // generated kernels take restrict-qualified pointers
    std::vector<int32_t> taken;  // operands already given to a result of this step
    for (auto [r, o] : inPlacePairs(plan, step)) {
      const int32_t result = step.results[r], operand = root(step.operands[o]);
      if (mp.aliasOf[result] >= 0 || inPlaceSource[result] || external(result) ||
          std::find(taken.begin(), taken.end(), operand) != taken.end())
        continue;
      if (plan.buffers[operand].kind != BufferKind::Temp || def[operand] < 0 || external(operand) ||
          inPlaceSource[operand] || last[operand] != s)
        continue;
      if (std::count(step.operands.begin(), step.operands.end(), step.operands[o]) > 1) continue;
      mp.aliasOf[result] = operand;
      taken.push_back(operand);
      last[operand] = std::max(last[operand], last[result]);
    }
  }

  std::vector<Interval> intervals;
  for (size_t id = 0; id < count; ++id) {
    if (def[id] < 0 || plan.buffers[id].kind != BufferKind::Temp) continue;
    mp.unplannedBytes += plan.buffers[id].byteSize();
    if (mp.aliasOf[id] >= 0 || inPlaceSource[id] || external(static_cast<int32_t>(id))) continue;
    intervals.push_back({static_cast<int32_t>(id), def[id], last[id], alignUp(plan.buffers[id].byteSize())});
  }
  mp.liveSteps.assign(count, {-1, -1});
  for (const Interval& iv : intervals) mp.liveSteps[iv.id] = {iv.start, iv.end};
  if (intervals.size() <= kFirstFitMaxBuffers)
    placeFirstFitDecreasing(intervals, mp);
  else
    placeInStepOrder(intervals, mp);
  return mp;
}

}  // namespace amp::rt
