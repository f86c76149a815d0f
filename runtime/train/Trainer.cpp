#include "runtime/train/Trainer.h"

#include "absl/strings/str_cat.h"
#include "runtime/train/BatchFeeds.h"
#include "runtime/train/TrainLoop.h"

namespace amp::rt {

absl::StatusOr<TrainReport> train(Session& session, const Dataset& data, const Dataset* eval,
                                  const TrainOptions& options, const TrainCallbacks& callbacks) {
  const Plan& plan = session.plan();
  if (!plan.findEntry("train_step"))
    return absl::InvalidArgumentError("the bundle has no train_step entry: compile it with ampc --train");
  auto b = findBatchBindings(plan);
  if (!b.ok()) return b.status();
  // Counts read from a bundle are validated (TrainingConfig::decode) before anything divides by
  // them or sizes by them.
  auto config = plan.trainingConfig();
  if (!config.ok()) return config.status();
  const int64_t accumulate = config->accumulate;
  if (accumulate > 1 && !plan.findEntry("accumulate"))
    return absl::InvalidArgumentError("the bundle accumulates gradients but has no accumulate entry");
  if (b->batch < 1)
    return absl::InvalidArgumentError(absl::StrCat("the model's input '", b->input->name, "' has batch size ", b->batch,
                                                   "; training needs at least one example per batch"));
  Communicator* comm = options.communicator;
  const int world = comm ? comm->worldSize() : 1, rank = comm ? comm->rank() : 0;
  if (world > 1 && !config->dataParallel)
    return absl::InvalidArgumentError(absl::StrCat(
        "this job has ", world, " ranks, but the bundle was not compiled with --data-parallel: each rank would "
        "train a replica of its own; recompile with ampc --train --data-parallel"));
  if (const int64_t shards = config->shardWorldSize; shards > 0 && shards != world)
    return absl::InvalidArgumentError(absl::StrCat(
        "the bundle shards the optimizer state over ", shards, " ranks (ampc --shard-optimizer --world-size=", shards,
        "), but this job has ", world, "; run it with mpirun -np ", shards, " or recompile"));
  int64_t perStep = b->batch * accumulate;  // both bounded: a buffer holds < 2^36 bytes
  const int64_t shardSize = (data.size() + world - 1) / world;
  int64_t stepsPerEpoch = shardSize / perStep;
  if (stepsPerEpoch == 0)
    return absl::InvalidArgumentError(absl::StrCat(
        data.name, ": ", world > 1 ? absl::StrCat(shardSize, " examples per rank (", data.size(), " over ", world, " ranks)")
                                   : absl::StrCat(data.size(), " examples"),
        " are fewer than one step (", perStep, " = batch ", b->batch, " x accumulate ", accumulate, ")"));

  if (!options.checkpointDir.empty())
    if (auto s = createCheckpointDir(options.checkpointDir); !s.ok()) return s;
  CheckpointInfo start{0, options.seed, options.shuffle, world};
  if (options.resume) {
    if (options.checkpointDir.empty()) return absl::InvalidArgumentError("--resume needs --checkpoint=DIR");
    auto info = loadJobCheckpoint(session, options.checkpointDir, options.checkpointAuth, rank, world);
    if (!info.ok()) return info.status();
    start = *info;  // the data order continues as it was started
  }
  int64_t toRun = options.steps;
  if (toRun <= 0 && __builtin_mul_overflow(options.epochs, stepsPerEpoch, &toRun)) toRun = kMaxCheckpointStep + 1;
  if (toRun <= 0) return absl::InvalidArgumentError("nothing to do: give --steps=N or --epochs=N");
  if (toRun > kMaxCheckpointStep - start.step)
    return absl::InvalidArgumentError(absl::StrCat("step ", start.step, " + ", toRun,
                                                   " steps to run exceeds the step counter's range (2^62)"));
  return TrainLoop(session, data, eval, options, callbacks, {*b, accumulate, stepsPerEpoch, start, start.step + toRun})
      .run();
}

}  // namespace amp::rt
