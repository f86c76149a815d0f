// Training: feeds seeded, shuffled batches to a compiled train_step (and accumulate) entry,
// evaluates accuracy with the eval entry (runtime/train/Evaluate.h), and checkpoints/resumes all
// state exactly (runtime/train/Checkpoint.h). train() checks a run against its plan, data and job;
// runtime/train/TrainLoop.h runs its steps.
#ifndef AMP_RUNTIME_TRAIN_TRAINER_H
#define AMP_RUNTIME_TRAIN_TRAINER_H

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/dist/Communicator.h"
#include "runtime/exec/Session.h"
#include "runtime/plan/MemoryBreakdown.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/train/Dataset.h"

namespace amp::rt {

struct TrainOptions {
  int64_t epochs = 0;           // used when steps == 0
  int64_t steps = 0;            // optimizer steps to run in this call (after a resume: more steps)
  uint64_t seed = 0;            // data order; a resumed run keeps the checkpoint's seed
  int64_t logEvery = 50;        // progress callback period, in optimizer steps
  int64_t evalEvery = 0;        // 0: evaluate after every epoch and at the end
  std::string checkpointDir;    // empty: no checkpoints
  int64_t checkpointEvery = 0;  // 0: only at the end
  CheckpointAuth checkpointAuth;  // the key checkpoints are tagged with; which ones --resume accepts
  bool resume = false;
  bool checkNumerics = false;
  bool shuffle = true;          // false: every epoch in file order (a resumed run keeps the checkpoint's)
  // After training, profile this many calls of train_step on its last batch (Session::profile:
  // params and state are put back, so no result changes); 0: no profile.
  int profileCalls = 0;
  // Set (e.g. by a SIGINT/SIGTERM handler) to stop after the current step: training saves a
  // checkpoint of the last finished step (when checkpointing) and returns with `interrupted`.
  const std::atomic<bool>* stopRequested = nullptr;
  // Data-parallel training (docs/data-parallel.md): this process is one rank of the job; null or
  // a job of one rank trains alone. Each rank trains on its shard of every epoch (rankShard),
  // evaluation, progress and checkpoint writes happen on rank 0, and at every checkpoint all
  // ranks check that their params and state are bitwise equal.
  Communicator* communicator = nullptr;
};

// One optimizer step, as the metrics file records it. Scalars the plan does not compute are absent.
struct StepRecord {
  int64_t step = 0, epoch = 0;        // step: 1-based optimizer step number
  double loss = 0;                    // the f32 loss (mean over the micro-batches), also on a skipped step
  bool foundInf = false;              // non-finite gradients: the step changed no param or moment
  std::optional<double> scale;        // the loss scale this step ran with (f32, exact)
  std::optional<double> nextScale;    // ... and after its update
  std::optional<int64_t> growthTracker;  // after the update
  std::optional<double> gradNorm;     // unscaled global gradient norm (plans that clip)
  std::optional<double> lr;           // the learning rate the step applied
  double stepTimeMs = 0;
};
struct EvalRecord {
  int64_t step = 0, epoch = 0;
  double accuracy = 0, loss = 0;
};

struct TrainProgress {
  int64_t step = 0, totalSteps = 0, epoch = 0;
  double loss = 0, scale = 1, samplesPerSecond = 0;
  int64_t skippedSteps = 0;
  std::optional<double> evalAccuracy;
};

struct TrainReport {
  int64_t steps = 0;          // optimizer steps done in total (including before a resume)
  int64_t skippedSteps = 0;   // in total (the plan's counter)
  // Mean training loss over the last (up to 50) steps of this run that were not skipped; none
  // when every step overflowed.
  std::optional<double> finalLoss;
  int64_t overflowSteps = 0;                // steps of this run with non-finite gradients
  std::vector<int64_t> firstOverflowSteps;  // their step numbers, the first few
  double finalScale = 1;      // loss scale after the last step (1 without loss scaling)
  std::optional<double> evalAccuracy, evalLoss;
  double stepTimeMsMedian = 0;
  // Devices that run calls asynchronously (cuda): the host synchronisations per steady-state step,
  // counted over this run's steps after its first that neither evaluate nor checkpoint (where the
  // trainer waits by design). Empty on host devices, and when no step qualified.
  std::optional<double> hostSyncsPerStep;
  std::optional<EntryProfile> profile;  // TrainOptions::profileCalls
  // Bytes the session holds: params and state (persistentBytes) plus the per-call workspaces the
  // device allocated for the entries it ran (workspaceBytes: arenas, scratch, constants; the cpu
  // device's entries share one arena).
  int64_t peakMemoryBytes = 0, persistentBytes = 0, workspaceBytes = 0;
  // The same memory as the plan accounts for it (runtime/plan/MemoryBreakdown.h): bytes by buffer
  // class, whose params-and-state part is persistentBytes, and train_step's temporaries at its
  // arena's peak by the phase that made them. Planned figures, set by every run that finishes.
  struct PlannedMemory {
    ClassBytes classes;
    PeakSplit arenaPeak;
  };
  std::optional<PlannedMemory> plannedMemory;
  std::vector<double> losses, scales;  // per step of this run
  std::vector<bool> skipped;           // per step of this run
  int64_t firstStep = 0;               // step number of losses[0] - 1
  int64_t accumulate = 1;
  bool interrupted = false;  // stopped early by stopRequested
  // checkNumerics: steps of this run whose gradients overflowed under loss scaling (the scaler
  // skipped them), and the first op that produced a non-finite gradient.
  // Data-parallel: the job's size, and the collective calls the plan's entries made in this run
  // (the trainer's own agreement calls are not counted).
  int worldSize = 1;
  struct CollectiveCalls {
    int64_t allReduce = 0, reduceScatter = 0, allGather = 0;
  };
  CollectiveCalls trainStepCalls, accumulateCalls;
  int64_t replicaChecks = 0;    // checkpoints at which every rank's params and state hashed equal
  double collectiveSeconds = 0;  // wall time in the plan's collectives (waiting for other ranks included)
  int64_t gradientOverflowSteps = 0;
  std::optional<int64_t> firstGradientOverflowStep;
  GradientOverflow firstGradientOverflow;
};

// Runs training. `eval` may be null (no accuracy). The session's plan must have a "train_step"
// entry (and "accumulate" when compiled with accumulation > 1).
struct TrainCallbacks {
  std::function<void(const TrainProgress&)> onProgress;  // every logEvery steps, evals, the end
  std::function<absl::Status(const StepRecord&)> onStep;  // every optimizer step
  std::function<absl::Status(const EvalRecord&)> onEval;  // every evaluation
};
absl::StatusOr<TrainReport> train(Session& session, const Dataset& data, const Dataset* eval,
                                  const TrainOptions& options, const TrainCallbacks& callbacks);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_TRAIN_TRAINER_H
