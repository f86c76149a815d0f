// The training loop: feeds seeded, shuffled batches to a compiled train_step (and accumulate)
// entry, evaluates accuracy with the eval entry, and checkpoints/resumes all state exactly.
#ifndef AMP_RUNTIME_TRAIN_TRAINER_H
#define AMP_RUNTIME_TRAIN_TRAINER_H

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/exec/Session.h"
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
  bool resume = false;
  bool checkNumerics = false;
};

struct TrainProgress {
  int64_t step = 0, totalSteps = 0, epoch = 0;
  double loss = 0, scale = 1, samplesPerSecond = 0;
  int64_t skippedSteps = 0;
  std::optional<double> evalAccuracy;
};

struct TrainReport {
  int64_t steps = 0;          // optimizer steps done in total (including before a resume)
  int64_t skippedSteps = 0;
  double finalLoss = 0;       // mean training loss over the last min(50, steps) steps of this run
  double finalScale = 1;      // loss scale after the last step (1 without loss scaling)
  std::optional<double> evalAccuracy, evalLoss;
  double stepTimeMsMedian = 0;
  // Bytes the session holds: params and state (persistentBytes) plus the per-call workspaces the
  // device allocated for the entries it ran (workspaceBytes: arenas, scratch, constants).
  int64_t peakMemoryBytes = 0, persistentBytes = 0, workspaceBytes = 0;
  std::vector<double> losses, scales;  // per step of this run
  int64_t firstStep = 0;               // step number of losses[0] - 1
  int64_t accumulate = 1;
};

// Runs training. `eval` may be null (no accuracy). The session's plan must have a "train_step"
// entry (and "accumulate" when compiled with accumulation > 1).
absl::StatusOr<TrainReport> train(Session& session, const Dataset& data, const Dataset* eval,
                                  const TrainOptions& options,
                                  const std::function<void(const TrainProgress&)>& onProgress);

// Accuracy (argmax of the eval entry's second result vs labels) and mean loss over `data`.
struct EvalResult {
  double accuracy = 0, loss = 0;
};
absl::StatusOr<EvalResult> evaluate(Session& session, const Dataset& data);

// Checkpoint = every param and state buffer + {step, seed} metadata, in one safetensors file
// written atomically (DIR/checkpoint.safetensors).
absl::Status saveCheckpoint(const Session& session, const std::string& dir, int64_t step, uint64_t seed);
struct CheckpointInfo {
  int64_t step = 0;
  uint64_t seed = 0;
};
absl::StatusOr<CheckpointInfo> loadCheckpoint(Session& session, const std::string& dir);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_TRAIN_TRAINER_H
