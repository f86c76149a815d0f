// Structural validation of a plan, done before any executor touches it: a corrupted or hostile
// bundle gets a clear error here, never an out-of-bounds access later.
#ifndef AMP_RUNTIME_PLAN_PLANVALIDATION_H
#define AMP_RUNTIME_PLAN_PLANVALIDATION_H

#include <cstdint>

#include "absl/status/status.h"
#include "runtime/plan/Plan.h"

namespace amp::rt {

// Largest buffer a plan may declare (bytes); larger ones are refused before anything allocates.
inline constexpr int64_t kMaxBufferBytes = int64_t{1} << 36;  // 64 GiB

// Every buffer: non-negative dims, element count and byte size without overflow and within
// kMaxBufferBytes.
absl::Status validateBuffers(const Plan& plan);
// Part of validateBuffers: every amp.shard_of state buffer is the ZeRO-1 chunk of a param
// (runtime/plan/Plan.h, BufferDesc::shardOf).
absl::Status validateShardedState(const Plan& plan);

// The most memory a session over `plan` holds: every param, state, input, label and constant
// buffer plus the arena of every entry (each prepared entry has its own). Refused, before anything
// is allocated, when above `limitBytes` (0: the machine's physical memory) or the process's
// address-space limit.
absl::Status validateMemory(const Plan& plan, int64_t limitBytes = 0);
int64_t physicalMemoryBytes();
// The process's address-space or data-segment limit (ulimit -v, -d); INT64_MAX when unlimited.
int64_t addressSpaceLimitBytes();
// What this process can allocate at most: the smaller of the two.
int64_t availableMemoryBytes();

// One entry: every operand/result/update id in range; step results are temps written once, by
// one step; operands are written before they are read (or are params, state, inputs, labels or
// constants); updates target a param or state of the same dtype and shape as their source;
// results are written. Errors name the entry, the step, its op and location.
absl::Status validateEntryStructure(const Plan& plan, const EntryPoint& entry);

// Decodes every step (fused bodies included) against the op's ODS, generated into
// runtime/plan/OpSchema.inc and OpAttrs.h: sets `code` from the op name, `kind` from the op's
// step-kind trait and `decoded` from the attributes, and checks the operand and result counts. An
// op the dialect does not define, a wrong arity or a missing, ill-typed or out-of-range attribute
// is refused, naming the entry, the step and its location. Session::create runs it, so every
// device sees decoded steps and reads typed attributes.
absl::Status decodeSteps(Plan& plan);

// A fused step's body (operands and results already checked against the plan): locals typed like
// the step's operands, body ops reading only earlier locals and defining the next ones in order,
// no nesting, yields typed like the step's results.
absl::Status validateFusedBody(const Plan& plan, const PlanStep& step);

// A fused step's generated-kernel layout, when it has one (codegen sets it; every device checks
// it, so none runs a plan another refuses): `row_length` divides the iteration space (the
// body's first value), `reduced_results` names distinct results, which are the column sums
// [row_length] of a space whose last dim is row_length, and every other result is the space.
// Run after validateFusedBody.
absl::Status validateFusedLayout(const PlanStep& step);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_PLAN_PLANVALIDATION_H
