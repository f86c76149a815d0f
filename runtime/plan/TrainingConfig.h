// The recipe a bundle was compiled with, as bundle metadata: the plan builder encodes it, and every reader
// (the bundle reader, amp-run, the trainer, plan validation, the memory report, the cuda device)
// decodes it here, once, into typed fields. No reader matches metadata strings of its own.
#ifndef AMP_RUNTIME_PLAN_TRAININGCONFIG_H
#define AMP_RUNTIME_PLAN_TRAININGCONFIG_H

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/schema/OpEnums.h"

namespace amp::rt {

using Metadata = std::vector<std::pair<std::string, std::string>>;

struct TrainingConfig {
  // Largest accumulation window a bundle may ask for; counts read from a bundle are bounded
  // before anything divides or sizes by them.
  static constexpr int64_t kMaxAccumulate = int64_t{1} << 20;
  static constexpr int64_t kMaxWorldSize = 65536;

  std::string model;                         // the model function's name ("model")
  std::string target;                        // cpu | cuda:sm_NN | reference ("target")
  Precision precision = Precision::F32;      // the low-precision dtype autocast chose ("precision")
  std::optional<OptimizerKind> optimizer;    // absent without --train ("optimizer")
  ScalingKind lossScaling = ScalingKind::None;  // ("loss_scaling")
  int64_t accumulate = 1;                    // micro-batches per optimizer step ("accumulate")
  bool dataParallel = false;                 // compiled with --data-parallel ("data_parallel")
  std::optional<Precision> reducePrecision;  // its gradient all-reduce precision ("reduce_precision")
  int64_t shardWorldSize = 0;                // ZeRO-1 ranks; 0: state not sharded ("shard_world_size")
  // The optimizer's and scaler's settings, as exact decimal values ("lr", "init_scale",
  // "growth_factor", "backoff_factor", "growth_interval").
  std::optional<double> lr, initScale, growthFactor, backoffFactor;
  std::optional<int64_t> growthInterval;
  std::string cudaToolkit;           // the NVRTC that compiled the cuda code ("cuda_toolkit")

  // The recipe's keys (precision and the training keys: everything but model, target and
  // cuda_toolkit), in a fixed order; values round-trip exactly (%.17g). The plan builder writes
  // them from the module's recipe attributes; `training` adds the keys of a training bundle.
  Metadata encodeRecipe(bool training) const;

  // Decodes and validates every key it knows; a key it does not know is ignored. A bad value is
  // an error naming the key and the value.
  static absl::StatusOr<TrainingConfig> decode(const Metadata& metadata);
};

}  // namespace amp::rt

#endif  // AMP_RUNTIME_PLAN_TRAININGCONFIG_H
