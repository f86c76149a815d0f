// --check-numerics: what a non-finite step result means, by where the step comes from (the
// plan's step phase). A forward overflow is an error no loss scale can cure, reported with what
// to change; a non-finite gradient in a loss-scaled step is what dynamic loss scaling exists
// for: it is recorded (the scaler skips the step and backs off) and the run goes on.
#ifndef AMP_RUNTIME_EXEC_NUMERICSCHECK_H
#define AMP_RUNTIME_EXEC_NUMERICSCHECK_H

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "runtime/DType.h"
#include "runtime/plan/Plan.h"

namespace amp::rt {

// Index of the first NaN/inf element of a float buffer, or -1 (non-float buffers: -1).
int64_t firstNonFinite(DType dtype, const void* data, int64_t n);

// The first non-finite gradient a run saw (RunArgs::gradientOverflow).
struct GradientOverflow {
  bool seen = false;
  std::string op, loc, buffer, dtype;
};

// Step `s` of `entry` wrote a non-finite value at element `bad` of buffer `id`. Returns the error
// to stop with, or OK after filling `record` when the value is a gradient of a loss-scaled plan.
absl::Status nonFiniteResult(const Plan& plan, const EntryPoint& entry, size_t s, int32_t id, int64_t bad,
                             GradientOverflow* record);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_EXEC_NUMERICSCHECK_H
