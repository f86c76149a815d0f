#include "runtime/plan/StepScratch.h"

#include <algorithm>
#include <map>
#include <queue>

namespace amp::rt {
namespace {

int64_t alignUp(int64_t n) { return (n + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment; }

struct Range {
  int64_t start, end;  // live over steps [start, end]
  int64_t lo, hi;      // arena bytes [lo, hi)
};

}  // namespace

StepScratch placeStepScratch(const Plan& plan, const MemoryPlan& memory, const std::vector<int64_t>& bytes) {
  StepScratch out;
  out.offset.assign(bytes.size(), -1);
  out.arenaBytes = alignUp(memory.arenaBytes);
  std::vector<Range> ranges;
  for (size_t id = 0; id < memory.offset.size(); ++id) {
    const int64_t size = plan.buffers[id].byteSize();
    if (memory.offset[id] < 0 || size <= 0) continue;
    const auto [start, end] = memory.liveSteps[id];
    ranges.push_back({start, end, memory.offset[id], memory.offset[id] + alignUp(size)});
  }
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.start < b.start; });
  // A sweep over the steps: `live` holds the buffers live at step s, ordered by offset.
  std::multimap<int64_t, int64_t> live;  // lo -> hi
  using End = std::pair<int64_t, std::multimap<int64_t, int64_t>::iterator>;
  auto later = [](const End& a, const End& b) { return a.first > b.first; };
  std::priority_queue<End, std::vector<End>, decltype(later)> ends(later);
  size_t next = 0;
  for (int64_t s = 0; s < static_cast<int64_t>(bytes.size()); ++s) {
    while (next < ranges.size() && ranges[next].start <= s) {
      ends.push({ranges[next].end, live.emplace(ranges[next].lo, ranges[next].hi)});
      ++next;
    }
    while (!ends.empty() && ends.top().first < s) {
      live.erase(ends.top().second);
      ends.pop();
    }
    if (bytes[s] <= 0) continue;
    const int64_t need = alignUp(bytes[s]);
    int64_t at = 0;  // the lowest offset past every live buffer below it
    for (const auto& [lo, hi] : live) {
      if (at + need <= lo) break;
      at = std::max(at, hi);
    }
    out.offset[s] = at;
    out.arenaBytes = std::max(out.arenaBytes, at + need);
  }
  return out;
}

}  // namespace amp::rt
