// What one call's scalar log (runtime/exec/ScalarLog.h) says about a training step, read one way
// by the training loop and by callers that drive steps themselves (the Python package's
// Trainer.step): the micro-step's loss, and what train_step's log records of the optimizer step.
// runOptimizerStep is that caller's step: the micro-batches of one optimizer step, synchronously.
#ifndef AMP_RUNTIME_TRAIN_STEPLOG_H
#define AMP_RUNTIME_TRAIN_STEPLOG_H

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/exec/ScalarLog.h"
#include "runtime/exec/Session.h"
#include "runtime/train/Trainer.h"

namespace amp::rt {

// The loss a micro-step's call logged: its "loss" result, else its first scalar result.
std::optional<double> loggedLoss(const LoggedCall& call);

// From train_step's log: the scale the step ran with and after its update, the growth tracker,
// found_inf, the gradient norm and the learning rate; `skippedAfter` receives the skipped-steps
// counter after the step, where the plan keeps one.
void recordTrainStep(const LoggedCall& call, StepRecord& record, std::optional<double>* skippedAfter = nullptr);

// The loss of an accumulating plan that keeps a window sum: train_step reports the window's mean.
bool hasWindowLoss(const Plan& plan, int64_t accumulate);

// Runs one optimizer step: `accumulate` entries for every micro-batch but the last, train_step for
// the last (microFeeds.size() must be the plan's accumulation), and returns its record (loss: mean
// over the micro-batches). `stepsDone` is the optimizer steps before this one (the dropout RNG's
// counter). Synchronous: params and state are up to date on return.
absl::StatusOr<StepRecord> runOptimizerStep(Session& session, const std::vector<std::map<std::string, Tensor>>& microFeeds,
                                            int64_t stepsDone, const Session::RunOptions& options);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_TRAIN_STEPLOG_H
