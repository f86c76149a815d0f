#include "runtime/plan/MemoryPlan.h"

#include <algorithm>
#include <map>

namespace amp::rt {
namespace {

int64_t alignUp(int64_t n) { return (n + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment; }

struct Interval {
  int32_t id;
  int64_t start, end, bytes;  // live over steps [start, end]
};

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
  const int64_t endOfCall = static_cast<int64_t>(entry.steps.size());
  std::vector<int64_t> def(count, -1), last(count, -1);
  for (size_t s = 0; s < entry.steps.size(); ++s) {
    const PlanStep& step = entry.steps[s];
    for (int32_t id : step.operands) {
      int32_t r = root(id);
      last[r] = std::max<int64_t>(last[r], static_cast<int64_t>(s));
    }
    const bool isAlias = step.op == "amp.reshape" && step.operands.size() == 1 && step.results.size() == 1;
    for (int32_t id : step.results) {
      if (isAlias) {
        mp.aliasOf[id] = step.operands[0];
        continue;
      }
      def[id] = static_cast<int64_t>(s);
      last[id] = std::max<int64_t>(last[id], static_cast<int64_t>(s));
    }
  }
  for (int32_t id : entry.results) last[root(id)] = endOfCall;
  for (const auto& update : entry.updates) last[root(update.first)] = endOfCall;

  std::vector<Interval> intervals;
  for (size_t id = 0; id < count; ++id) {
    if (def[id] < 0 || plan.buffers[id].kind != BufferKind::Temp) continue;
    if (!options.external.empty() && options.external[id]) continue;
    const int64_t bytes = alignUp(plan.buffers[id].byteSize());
    mp.unplannedBytes += plan.buffers[id].byteSize();
    intervals.push_back({static_cast<int32_t>(id), def[id], last[id], bytes});
  }
  // Largest first; among equals, earliest first (deterministic).
  std::sort(intervals.begin(), intervals.end(), [](const Interval& a, const Interval& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.start != b.start ? a.start < b.start : a.id < b.id;
  });
  std::vector<const Interval*> placed;
  std::vector<std::pair<int64_t, int64_t>> busy;  // [offset, offset + bytes) of overlapping placed buffers
  for (const Interval& iv : intervals) {
    busy.clear();
    for (const Interval* p : placed)
      if (p->start <= iv.end && iv.start <= p->end) busy.emplace_back(mp.offset[p->id], mp.offset[p->id] + p->bytes);
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0;
    for (const auto& [lo, hi] : busy) {
      if (offset + iv.bytes <= lo) break;
      offset = std::max(offset, hi);
    }
    mp.offset[iv.id] = offset;
    mp.arenaBytes = std::max(mp.arenaBytes, offset + iv.bytes);
    placed.push_back(&iv);
  }
  return mp;
}

}  // namespace amp::rt
