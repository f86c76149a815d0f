// Where each step's run-only scratch lives. A device step may need scratch that holds nothing
// between calls (a GEMM's widened operands and oneDNN's scratchpad, a norm's f32 rows, a packed
// all-reduce). Steps run one at a time, so a step's scratch can use any arena bytes that no
// buffer live at that step holds: it goes at the lowest such offset, and the arena grows only
// where no gap is large enough. One buffer sized for the largest request, next to the arena, would
// add that request to every peak.
#ifndef AMP_RUNTIME_PLAN_STEPSCRATCH_H
#define AMP_RUNTIME_PLAN_STEPSCRATCH_H

#include <cstdint>
#include <vector>

#include "runtime/plan/MemoryPlan.h"
#include "runtime/plan/Plan.h"

namespace amp::rt {

struct StepScratch {
  // Indexed by step: the byte offset of its scratch in the arena (kArenaAlignment-aligned), or -1
  // for steps that asked for none.
  std::vector<int64_t> offset;
  // The arena the buffers and every step's scratch need: at least memory.arenaBytes, a multiple of
  // kArenaAlignment.
  int64_t arenaBytes = 0;
};

// `bytes[s]` is the scratch step s needs (0: none); `memory` is the entry's plan (offsets and
// liveSteps). O((steps + buffers) log buffers + the live buffers scanned at each scratch step).
StepScratch placeStepScratch(const Plan& plan, const MemoryPlan& memory, const std::vector<int64_t>& bytes);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_PLAN_STEPSCRATCH_H
