// Evaluation: the eval entry over a whole dataset, scored by accuracy and mean loss.
#ifndef AMP_RUNTIME_TRAIN_EVALUATE_H
#define AMP_RUNTIME_TRAIN_EVALUATE_H

#include "absl/status/statusor.h"
#include "runtime/exec/Session.h"
#include "runtime/train/Dataset.h"

namespace amp::rt {

// Accuracy (argmax of the eval entry's second result vs labels) and mean loss over `data`.
struct EvalResult {
  double accuracy = 0, loss = 0;
};
absl::StatusOr<EvalResult> evaluate(Session& session, const Dataset& data);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_TRAIN_EVALUATE_H
