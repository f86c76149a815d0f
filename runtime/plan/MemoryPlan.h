// Liveness-based arena planning for one entry point: every temporary buffer gets an offset in a
// single arena, buffers whose lifetimes do not overlap share bytes, and reshapes are aliases of
// their operand. The cpu executor allocates exactly this arena, and `ampc --emit=memory-report`
// prints the same figure, so the report and amp-run's peak_memory_bytes agree by construction.
#ifndef AMP_RUNTIME_PLAN_MEMORYPLAN_H
#define AMP_RUNTIME_PLAN_MEMORYPLAN_H

#include <cstdint>
#include <vector>

#include "runtime/plan/Plan.h"

namespace amp::rt {

inline constexpr int64_t kArenaAlignment = 64;  // a cache line; what AVX-512 and oneDNN want

struct MemoryPlan {
  static constexpr int64_t kNotInArena = -1;
  // Indexed by buffer id. offset >= 0: the buffer lives in the arena at that byte offset.
  // aliasOf >= 0: the buffer is a view of that buffer (reshape), no storage of its own.
  std::vector<int64_t> offset;
  std::vector<int32_t> aliasOf;
  int64_t arenaBytes = 0;
  // Sum of the temporaries' sizes: what an allocator without reuse would need.
  int64_t unplannedBytes = 0;
};

struct MemoryPlanOptions {
  // Buffers that must not be placed in the arena (a device stores them elsewhere, e.g. results
  // written in place into a persistent buffer). Indexed by buffer id; empty means none.
  std::vector<char> external;
};

// Plans the temporaries of `entry`. A buffer lives from the step that writes it to the last step
// that reads it (through any alias); entry results and update sources live to the end. Steps
// whose op is "amp.reshape" become aliases. Placement is greedy by size (largest first, lowest
// offset that fits between buffers live at the same time).
MemoryPlan planMemory(const Plan& plan, const EntryPoint& entry, const MemoryPlanOptions& options = {});

}  // namespace amp::rt

#endif  // AMP_RUNTIME_PLAN_MEMORYPLAN_H
