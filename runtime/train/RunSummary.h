// The summary of a training run (amp-run --summary=FILE.json, and the "summary:" it prints): the
// run's report with the recipe the bundle was compiled with, as one JSON object whose keys keep
// a fixed order. docs/cli.md describes the fields.
#ifndef AMP_RUNTIME_TRAIN_RUNSUMMARY_H
#define AMP_RUNTIME_TRAIN_RUNSUMMARY_H

#include <cstdint>
#include <string>

#include "runtime/io/Json.h"
#include "runtime/plan/TrainingConfig.h"
#include "runtime/train/Trainer.h"

namespace amp::rt {

// What the summary says that neither the report nor the recipe holds.
struct RunSummaryContext {
  std::string device;          // the device's name: "cpu", "reference", "cuda"
  int64_t batch = 0;           // examples per micro-step on one rank (the model's input batch)
  bool shuffle = true;         // as asked for (a resumed run keeps its checkpoint's order)
  bool checkNumerics = false;  // adds the gradient overflows --check-numerics found
};

JsonValue runSummary(const TrainReport& report, const TrainingConfig& config, const RunSummaryContext& context);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_TRAIN_RUNSUMMARY_H
