// Examples of a dataset fed to the model: its one input [B, ...] and one label buffer take a
// batch of B examples, gathered in a given order (training and evaluation feed alike).
#ifndef AMP_RUNTIME_TRAIN_BATCHFEEDS_H
#define AMP_RUNTIME_TRAIN_BATCHFEEDS_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/plan/Plan.h"
#include "runtime/train/Dataset.h"

namespace amp::rt {

struct BatchBindings {
  const BufferDesc* input = nullptr;
  const BufferDesc* label = nullptr;
  int64_t batch = 0;  // the input's first dimension
};

// The plan's input and label buffers; an error unless there is exactly one of each.
absl::StatusOr<BatchBindings> findBatchBindings(const Plan& plan);

// Feeds for one call: examples `indices` of `data` as the input and the label.
absl::StatusOr<std::map<std::string, Tensor>> feedBatch(const BatchBindings& bindings, const Dataset& data,
                                                        const std::vector<int64_t>& indices);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_TRAIN_BATCHFEEDS_H
