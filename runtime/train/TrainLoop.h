// The step loop of a training run, once train() (runtime/train/Trainer.h) has checked the run and
// worked out its steps: feeds each optimizer step its examples of the epoch's order, enqueues its
// micro-steps, completes each step's record from the scalar logs the device delivers, evaluates
// and checkpoints where asked, stops between steps on request, reports progress, and totals the
// run into its report.
#ifndef AMP_RUNTIME_TRAIN_TRAINLOOP_H
#define AMP_RUNTIME_TRAIN_TRAINLOOP_H

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/exec/Session.h"
#include "runtime/train/BatchFeeds.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/train/Dataset.h"
#include "runtime/train/Trainer.h"

namespace amp::rt {

// The steps to run and the examples they read, as train() checked them.
struct TrainSchedule {
  BatchBindings batches;      // where each micro-step's examples go
  int64_t accumulate = 1;     // micro-steps per optimizer step
  int64_t stepsPerEpoch = 0;  // optimizer steps per pass over this rank's shard
  CheckpointInfo start;       // the steps done before this run and the data order (seed, shuffle)
  int64_t lastStep = 0;       // the step to end after
};

class TrainLoop {
 public:
  TrainLoop(Session& session, const Dataset& data, const Dataset* eval, const TrainOptions& options,
            const TrainCallbacks& callbacks, const TrainSchedule& schedule);

  // Runs the steps and returns the report; call once.
  absl::StatusOr<TrainReport> run();

 private:
  using Clock = std::chrono::steady_clock;

  // Steps are enqueued and their records completed from the scalar logs the device delivers
  // (Session::enqueue/poll): on a device with a stream the host runs ahead and reads each step's
  // loss, scale and found_inf a step or more late, without waiting. Evaluations, checkpoints and
  // the end wait for every step in flight first; host devices deliver each step at once.
  struct PendingStep {
    StepRecord record;
    Clock::time_point launched;
    double lossSum = 0;
    int64_t logs = 0;  // micro-step logs delivered (complete at `accumulate`)
    std::optional<double> skippedAfter;
    GradientOverflow overflow;
  };

  // This rank's examples of `epoch`, in training order (kept: an epoch spans many steps).
  const std::vector<int64_t>& rankOrder(int64_t epoch);
  // Enqueues the micro-steps of optimizer step step_ + 1.
  absl::Status launch(int64_t epoch);
  void deliver(const LoggedCall& call, bool trainStep);
  // Delivered logs, then every step whose logs are all in, oldest first. `held`: the step whose
  // progress waits for its evaluation and checkpoint (kept as heldStep_).
  absl::Status collect(bool wait, int64_t held);
  bool isLogPoint(int64_t step) const;
  void progress(const PendingStep& done, std::optional<double> evalAccuracy);
  absl::Status checkpoint(int64_t atStep);
  // The run's totals, once every step is delivered.
  absl::Status finish();

  Session& session_;
  const Dataset& data_;
  const Dataset* eval_;
  const TrainOptions& options_;
  const TrainCallbacks& callbacks_;
  const TrainSchedule schedule_;
  Communicator* const comm_;
  const int world_, rank_;
  const int64_t perStep_;  // examples per optimizer step on this rank
  // The loss of an accumulating plan with a window sum: train_step's loss is the window's mean.
  const bool windowLoss_;

  int64_t step_;      // optimizer steps done (the loop's position)
  int64_t lastStep_;  // where the run ends (earlier when stopped)
  TrainReport report_;
  Session::RunOptions call_;
  std::vector<double> stepMs_;
  int64_t cachedEpoch_ = -1;
  std::vector<int64_t> order_;
  Clock::time_point windowStart_;  // progress: the samples per second since the last line
  int64_t windowSteps_ = 0;
  std::deque<PendingStep> pending_;
  Clock::time_point lastDelivery_;
  std::optional<PendingStep> heldStep_;
  std::vector<int64_t> profileBatch_;  // the last train_step's examples, for the profile
  int64_t profileStep_ = 0;
  // Host synchronisations of the steps that neither evaluate nor checkpoint (after the first).
  int64_t steadySteps_ = 0, steadySyncs_ = 0;
};

}  // namespace amp::rt

#endif  // AMP_RUNTIME_TRAIN_TRAINLOOP_H
