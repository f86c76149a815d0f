// Checking a stored memory layout before a device trusts it. A bundle's layout (Plan.h's
// MemoryLayout) says where every temporary of an entry lives; a device that used a corrupted or
// hostile one would read and write out of bounds, or clobber values still in use. So prepare
// adopts a layout only after proving, against the entry itself, that it is one the planner could
// have made.
#ifndef AMP_RUNTIME_PLAN_MEMORYLAYOUT_H
#define AMP_RUNTIME_PLAN_MEMORYLAYOUT_H

#include "absl/status/statusor.h"
#include "runtime/plan/MemoryPlan.h"
#include "runtime/plan/Plan.h"

namespace amp::rt {

// Validates `layout` for `entry` (whose structure validateEntryStructure has accepted) and returns
// it as a MemoryPlan. It holds when:
//  - the alignment is kArenaAlignment and the arena a multiple of it, at most kMaxBufferBytes;
//  - every temporary a step writes has exactly one place (an offset, a view, or an in-place update
//    target), constants none, and every reshape result is a view of its operand;
//  - offsets are aligned and each buffer fits inside the arena;
//  - a view is a reshape of its source, or an elementwise (or multi-tensor scaler/optimizer)
//    result paired with that operand by inPlacePairs, over a temporary, and no larger than it;
//  - an in-place update is one of the entry's updates, and its step reads the target only as the
//    operand it updates;
//  - no step reads a value after its storage was overwritten (by an in-place result or update);
//  - no two arena buffers live at the same time share a byte.
// Errors name the entry and the buffer.
absl::StatusOr<MemoryPlan> adoptMemoryLayout(const Plan& plan, const EntryPoint& entry, const MemoryLayout& layout);

// What a device allocates for `entry`: the bundle's layout once adoptMemoryLayout has proven it,
// or, for plans built in memory without one, the planner's (constants outside the arena).
absl::StatusOr<MemoryPlan> entryMemoryPlan(const Plan& plan, const EntryPoint& entry);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_PLAN_MEMORYLAYOUT_H
