// The names of the state the training passes create (docs/training-ir.md): the compiler names the
// buffers with them (passes/TrainStep.h), and the runtime finds the scaler and step counters by
// them (plan validation, the training loop's log). One spelling for both sides.
#ifndef AMP_RUNTIME_SCHEMA_STATENAMES_H
#define AMP_RUNTIME_SCHEMA_STATENAMES_H

namespace amp::schema {

inline constexpr const char kLossScaleState[] = "amp.loss_scale";        // f32 scalar, dynamic/static scaling
inline constexpr const char kGrowthTrackerState[] = "amp.growth_tracker";  // i32 scalar, dynamic scaling
inline constexpr const char kStepState[] = "amp.step";                    // i64 scalar: applied steps
inline constexpr const char kSkippedStepsState[] = "amp.skipped_steps";   // i64 scalar: skipped steps
inline constexpr const char kLossSumState[] = "amp.loss_sum";             // f32 scalar, accumulation window

}  // namespace amp::schema

#endif  // AMP_RUNTIME_SCHEMA_STATENAMES_H
