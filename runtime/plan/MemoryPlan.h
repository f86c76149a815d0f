// Liveness-based arena planning for one entry point: every temporary buffer gets an offset in a
// single arena, buffers whose lifetimes do not overlap share bytes, reshapes are aliases of their
// operand, elementwise steps write into an operand that dies there, and optimizer/scaler results
// are written straight into the persistent buffer they update. The cpu executor allocates exactly
// this plan and `ampc --emit=memory-report` prints it, so the report and amp-run's
// peak_memory_bytes come from one planner.
#ifndef AMP_RUNTIME_PLAN_MEMORYPLAN_H
#define AMP_RUNTIME_PLAN_MEMORYPLAN_H

#include <cstdint>
#include <utility>
#include <vector>

#include "runtime/plan/Plan.h"

namespace amp::rt {

inline constexpr int64_t kArenaAlignment = 64;  // a cache line; what AVX-512 and oneDNN want

struct MemoryPlan {
  static constexpr int64_t kNotInArena = -1;
  // Indexed by buffer id. offset >= 0: the buffer lives in the arena at that byte offset.
  // aliasOf >= 0: the buffer shares the storage of that buffer (a reshape, or an elementwise
  // result written over an operand that dies at that step). Aliases are listed in step order.
  std::vector<int64_t> offset;
  std::vector<int32_t> aliasOf;
  // (update source, persistent target): the source is written into the target's storage.
  std::vector<std::pair<int32_t, int32_t>> inPlaceUpdates;
  int64_t arenaBytes = 0;
  // Sum of the temporaries' sizes: what an allocator without reuse would need.
  int64_t unplannedBytes = 0;
  // Indexed by buffer id, for buffers with an offset: the steps [first, last] during which its
  // arena bytes hold a value in use (through its views; entry results and update sources to the
  // end of the call, step count). {-1, -1} for the others.
  std::vector<std::pair<int64_t, int64_t>> liveSteps;
};

struct MemoryPlanOptions {
  // Buffers that must not be placed in the arena (a device stores them elsewhere, e.g. decoded
  // constants). Indexed by buffer id; empty means none.
  std::vector<char> external;
};

// The options every device plans with: constants are decoded at prepare, outside the arena.
MemoryPlanOptions constantsOutsideArena(const Plan& plan, const EntryPoint& entry);

// Pairs (result index, operand index) of `step` whose storage may be shared: the step reads
// element i of the operand only before writing element i of the result. Elementwise math, casts
// between types of one size and select pair their result with any same-typed operand; the
// multi-tensor scaler and optimizer steps pair each result with the operand it updates;
// softmax, log_softmax and softmax_grad pair their result with operand 0 (every device reads a
// slice's operands before writing any of its results, then element j before result j).
std::vector<std::pair<int, int>> inPlacePairs(const Plan& plan, const PlanStep& step);

// Plans the temporaries of `entry`. A buffer lives from the step that writes it to the last step
// that reads it (through any alias); entry results and update sources live to the end. Placement
// is greedy by size (largest first, lowest offset that fits between buffers live at the same time)
// up to kFirstFitMaxBuffers temporaries, whose cost grows with their square; larger entries are
// placed in step order by a best-fit free list, in O(n log n), so compile time stays linear.
inline constexpr size_t kFirstFitMaxBuffers = 4096;
MemoryPlan planMemory(const Plan& plan, const EntryPoint& entry, const MemoryPlanOptions& options = {});

// The plan in the form a bundle stores (Plan.h's MemoryLayout).
MemoryLayout layoutOf(const MemoryPlan& memory, const EntryPoint& entry);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_PLAN_MEMORYPLAN_H
