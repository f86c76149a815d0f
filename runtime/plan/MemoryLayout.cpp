#include "runtime/plan/MemoryLayout.h"

#include <algorithm>
#include <map>
#include <queue>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/plan/PlanValidation.h"

namespace amp::rt {
namespace {

struct LiveRange {
  int64_t start, end;  // steps [start, end]
  int64_t lo, hi;      // bytes [lo, hi) of the arena
  int32_t id;
};

}  // namespace

absl::StatusOr<MemoryPlan> adoptMemoryLayout(const Plan& plan, const EntryPoint& entry, const MemoryLayout& layout) {
  const int64_t count = static_cast<int64_t>(plan.buffers.size());
  const int64_t steps = static_cast<int64_t>(entry.steps.size());
  auto bad = [&](auto&&... parts) {
    return absl::InvalidArgumentError(absl::StrCat("entry '", entry.name, "': memory layout: ", parts...));
  };
  auto name = [&](int32_t id) { return absl::StrCat("'", plan.buffers[id].name, "'"); };
  auto inRange = [&](int64_t id) { return id >= 0 && id < count; };
  if (layout.alignment != kArenaAlignment)
    return bad("alignment ", layout.alignment, " is not the runtime's ", kArenaAlignment);
  if (layout.arenaBytes < 0 || layout.arenaBytes > kMaxBufferBytes)
    return bad("an arena of ", layout.arenaBytes, " bytes is outside [0, ", kMaxBufferBytes, "]");
  // The planner's arenas are whole alignment units, and devices allocate them with aligned_alloc,
  // whose size must be a multiple of the alignment.
  if (layout.arenaBytes % layout.alignment != 0)
    return bad("an arena of ", layout.arenaBytes, " bytes is not a multiple of its ", layout.alignment,
               "-byte alignment");

  std::vector<int64_t> producer(count, -1);
  for (int64_t s = 0; s < steps; ++s)
    for (int32_t id : entry.steps[s].results) producer[id] = s;
  MemoryPlan mp;
  mp.offset.assign(count, MemoryPlan::kNotInArena);
  mp.aliasOf.assign(count, -1);
  mp.arenaBytes = layout.arenaBytes;
  std::vector<int32_t> updateTarget(count, -1);  // in-place update source -> its persistent target
  std::vector<char> placed(count, 0);
  auto claim = [&](int64_t id, const char* what) -> absl::Status {
    if (!inRange(id)) return bad(what, " names buffer id ", id, ", but the plan has ", count, " buffers");
    if (producer[id] < 0) return bad(what, " places ", name(id), ", which no step of the entry writes");
    if (placed[id]) return bad(name(id), " is placed twice");
    if (entry.steps[producer[id]].is(OpCode::Constant)) return bad("constant ", name(id), " is placed; devices decode constants outside the arena");
    placed[id] = 1;
    return absl::OkStatus();
  };

  for (const auto& [id, offset] : layout.offsets) {
    if (auto status = claim(id, "an offset"); !status.ok()) return status;
    if (entry.steps[producer[id]].is(OpCode::Reshape)) return bad("reshape result ", name(id), " must be a view, not an offset");
    const int64_t bytes = plan.buffers[id].byteSize();
    if (offset < 0 || offset % layout.alignment != 0 || offset > layout.arenaBytes - bytes)
      return bad(name(id), " (", bytes, " bytes) at offset ", offset, " does not fit a ", layout.arenaBytes,
                 "-byte arena with ", layout.alignment, "-byte alignment");
    mp.offset[id] = offset;
  }
  for (const auto& [src, tgt] : layout.inPlaceUpdates) {
    if (std::find(entry.updates.begin(), entry.updates.end(), std::pair{src, tgt}) == entry.updates.end())
      return bad("in-place update [", src, ", ", tgt, "] is not one of the entry's updates");
    if (auto status = claim(src, "an in-place update"); !status.ok()) return status;
    const PlanStep& producerStep = entry.steps[producer[src]];
    if (producerStep.is(OpCode::Fused) || producerStep.is(OpCode::Reshape))
      return bad(name(src), " cannot be computed into ", name(tgt), " by ", producerStep.op);
    updateTarget[src] = tgt;
    mp.inPlaceUpdates.emplace_back(src, tgt);
  }
  auto root = [&](int32_t id) {
    while (mp.aliasOf[id] >= 0) id = mp.aliasOf[id];
    return id;
  };
  // Where a buffer's bytes are: its root, or the persistent target its root is computed into.
  auto home = [&](int32_t id) {
    const int32_t r = root(id);
    return updateTarget[r] >= 0 ? updateTarget[r] : r;
  };
  int64_t previousStep = -1;
  for (const auto& [id, src] : layout.views) {
    if (auto status = claim(id, "a view"); !status.ok()) return status;
    if (!inRange(src)) return bad("view ", name(id), " names source id ", src, ", out of range");
    const int64_t s = producer[id];
    if (s < previousStep) return bad("views are not in step order at ", name(id));
    previousStep = s;
    const PlanStep& step = entry.steps[s];
    bool legal = false;
    if (step.is(OpCode::Reshape)) {
      legal = step.operands.size() == 1 && root(step.operands[0]) == root(src);
    } else if (!step.is(OpCode::Fused)) {
      const int r = static_cast<int>(std::find(step.results.begin(), step.results.end(), id) - step.results.begin());
      for (auto [pr, po] : inPlacePairs(plan, step))
        legal |= pr == r && root(step.operands[po]) == root(src);
      const int32_t base = root(src);
      if (legal && (plan.buffers[base].kind != BufferKind::Temp || mp.offset[base] < 0))
        return bad(name(id), " would be written over ", name(base), ", which is not a temporary in the arena");
    }
    if (!legal)
      return bad(name(id), " cannot share the storage of ", name(src), ": step ", s, " (", step.op, ") does not allow it");
    if (plan.buffers[id].byteSize() > plan.buffers[root(src)].byteSize())
      return bad("view ", name(id), " is larger than its source ", name(root(src)));
    mp.aliasOf[id] = src;
  }
  for (int64_t s = 0; s < steps; ++s)
    for (int32_t id : entry.steps[s].results) {
      if (!entry.steps[s].is(OpCode::Reshape)) mp.unplannedBytes += plan.buffers[id].byteSize();  // as the planner counts
      if (!placed[id] && !entry.steps[s].is(OpCode::Constant))
        return bad(name(id), ", written by step ", s, " (", entry.steps[s].op, "), has no place");
      if (!placed[id] || !entry.steps[s].is(OpCode::Reshape) || mp.aliasOf[id] >= 0) continue;
      return bad("reshape result ", name(id), " must be a view");
    }

  // Values: a buffer read after its storage received another value would read the wrong data.
  std::vector<int64_t> version(count, 0), current(count, 0);
  std::vector<int64_t> last(count, -1);  // last step at which a buffer's bytes are in use
  auto stale = [&](int32_t id) { return version[id] != current[home(id)]; };
  for (int64_t s = 0; s < steps; ++s) {
    const PlanStep& step = entry.steps[s];
    for (int32_t id : step.operands) {
      if (stale(id)) return bad("step ", s, " (", step.op, ") reads ", name(id), " after its storage was overwritten");
      last[home(id)] = s;
    }
    const auto pairs = inPlacePairs(plan, step);
    for (size_t r = 0; r < step.results.size(); ++r) {
      const int32_t id = step.results[r];
      if (const int32_t tgt = updateTarget[id]; tgt >= 0)  // the step may read the target only where it updates it
        for (size_t o = 0; o < step.operands.size(); ++o) {
          if (home(step.operands[o]) != tgt) continue;
          const bool paired = std::find(pairs.begin(), pairs.end(), std::pair{static_cast<int>(r), static_cast<int>(o)}) != pairs.end();
          if (!paired) return bad(name(id), " is computed into ", name(tgt), " by a step that also reads it otherwise");
        }
      if (step.is(OpCode::Reshape)) version[id] = version[step.operands[0]];
      else if (mp.aliasOf[id] >= 0 || updateTarget[id] >= 0) version[id] = ++current[home(id)];
      else version[id] = current[home(id)];
      last[home(id)] = std::max(last[home(id)], s);
    }
  }
  auto liveToTheEnd = [&](int32_t id) -> absl::Status {
    if (stale(id)) return bad(name(id), " is overwritten before the end of the call, which needs it");
    last[home(id)] = steps;
    return absl::OkStatus();
  };
  for (int32_t id : entry.results)
    if (auto status = liveToTheEnd(id); !status.ok()) return status;
  for (const auto& [src, tgt] : entry.updates)
    if (auto status = liveToTheEnd(src); !status.ok()) return status;

  // No two arena buffers live at the same step share a byte: a sweep over steps that keeps the
  // live buffers ordered by offset, so each newcomer is checked against its two neighbours.
  std::vector<LiveRange> ranges;
  mp.liveSteps.assign(count, {-1, -1});
  for (int32_t id = 0; id < count; ++id) {
    if (mp.offset[id] >= 0) mp.liveSteps[id] = {producer[id], last[id]};
    if (mp.offset[id] >= 0 && plan.buffers[id].byteSize() > 0)
      ranges.push_back({producer[id], last[id], mp.offset[id], mp.offset[id] + plan.buffers[id].byteSize(), id});
  }
  std::sort(ranges.begin(), ranges.end(), [](const LiveRange& a, const LiveRange& b) { return a.start < b.start; });
  std::map<int64_t, const LiveRange*> live;  // by lo
  std::priority_queue<std::pair<int64_t, int64_t>, std::vector<std::pair<int64_t, int64_t>>, std::greater<>> ends;
  for (const LiveRange& r : ranges) {
    while (!ends.empty() && ends.top().first < r.start) {
      live.erase(ends.top().second);
      ends.pop();
    }
    auto next = live.lower_bound(r.lo);
    const LiveRange* clash = nullptr;
    if (next != live.end() && next->second->lo < r.hi) clash = next->second;
    if (!clash && next != live.begin() && std::prev(next)->second->hi > r.lo) clash = std::prev(next)->second;
    if (clash)
      return bad(name(r.id), " and ", name(clash->id), " are live at the same time and share arena bytes");
    live.emplace(r.lo, &r);
    ends.emplace(r.end, r.lo);
  }
  return mp;
}

absl::StatusOr<MemoryPlan> entryMemoryPlan(const Plan& plan, const EntryPoint& entry) {
  if (entry.memory) return adoptMemoryLayout(plan, entry, *entry.memory);
  return planMemory(plan, entry, constantsOutsideArena(plan, entry));
}

}  // namespace amp::rt
