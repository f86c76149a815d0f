// What a plan's memory holds, from the plan alone: the bytes of each buffer class a user
// recognises (params, optimizer moments, weight copies, ...) and, at the peak of an entry's arena,
// the live temporaries by the phase that made them. `ampc --emit=memory-report` prints both and
// amp-run's --summary carries them as its `memory` object, so the two read one computation.
#ifndef AMP_RUNTIME_PLAN_MEMORYBREAKDOWN_H
#define AMP_RUNTIME_PLAN_MEMORYBREAKDOWN_H

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/plan/Plan.h"

namespace amp::rt {

// From the kind and the naming convention of docs/training-ir.md. The first five are what a
// session allocates once (Session::persistentBytes); inputs and labels are fed per call,
// constants decoded per prepared entry, temporaries live in the arena.
enum class BufferClass {
  Params,                // f32 masters
  WeightCopies,          // low-precision copies of the masters kept as state (init "cast")
  OptimizerMoments,      // *.exp_avg, *.exp_avg_sq, *.momentum_buffer
  GradientAccumulators,  // *.grad_accum
  ScalerAndCounters,     // every other state: loss scale, growth tracker, step counters
  Constants,
  InputsAndLabels,
  Temporaries,
};
inline constexpr int kBufferClasses = 8;
// Params and state: what a session allocates once and holds (Session::persistentBytes).
inline constexpr std::array<BufferClass, 5> kPersistentClasses = {
    BufferClass::Params, BufferClass::WeightCopies, BufferClass::OptimizerMoments, BufferClass::GradientAccumulators,
    BufferClass::ScalerAndCounters};

BufferClass classifyBuffer(const BufferDesc& b);
std::string_view bufferClassLabel(BufferClass c);  // the memory report's row: "params (f32 masters)"
std::string_view bufferClassKey(BufferClass c);    // the summary's JSON key: "params"

// Bytes of every non-temporary buffer of a plan, by class.
struct ClassBytes {
  std::array<int64_t, kBufferClasses> bytes{};
  std::array<int32_t, kBufferClasses> buffers{};  // how many: a class the plan lacks has none

  int64_t operator[](BufferClass c) const { return bytes[static_cast<int>(c)]; }
  bool has(BufferClass c) const { return buffers[static_cast<int>(c)] > 0; }
  // Params and state: what a session allocates once and holds (Session::persistentBytes).
  int64_t persistentBytes() const;
};
ClassBytes bytesByClass(const Plan& plan);

// The arena an entry's temporaries get: the layout the bundle stores and the cpu device
// allocates, else what the planner gives it (constants decoded outside it).
int64_t plannedArenaBytes(const Plan& plan, const EntryPoint& entry);
// What the temporaries would take without reuse: every step's results at once.
int64_t temporariesAllAtOnce(const Plan& plan, const EntryPoint& entry);

// The temporaries live at an entry's peak, by the phase of the step that made them: what the
// arena holds at its fullest, and why. The four phase sums add up to `live`.
struct PeakSplit {
  int64_t step = -1;  // 0-based index of the step at the peak; -1: no temporaries (or no entry)
  int64_t steps = 0;  // steps of the entry
  std::string phase;  // that step's phase ("forward", "backward", "update"; empty if unmarked)
  int64_t savedActivations = 0;  // forward values a backward step still reads
  int64_t forwardOther = 0;      // forward values only the forward reads
  int64_t backward = 0;          // gradients and the backward's intermediates
  int64_t update = 0;            // unscale/clip/optimizer/scaler values (and steps without a phase)
  int64_t live = 0;              // bytes live at that step
  int64_t arena = 0;             // the planned arena: live plus placement gaps
};
PeakSplit peakSplit(const Plan& plan, std::string_view entry);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_PLAN_MEMORYBREAKDOWN_H
