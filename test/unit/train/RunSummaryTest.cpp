// The run summary's keys and their order (tools read it by key, people read it top to bottom),
// and the job checkpoints' refusals.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/train/RunSummary.h"

namespace amp::rt {
namespace {

std::vector<std::string> keysOf(const JsonValue& object) {
  std::vector<std::string> keys;
  for (const JsonValue::Member& m : object.members()) keys.push_back(m.first);
  return keys;
}

TrainReport twoSteps() {
  TrainReport r;
  r.steps = 2;
  r.losses = {2.5, 1.25};
  r.scales = {65536, 65536};
  r.skipped = {false, false};
  r.finalLoss = 1.875;
  return r;
}

TEST(RunSummary, PlainRunKeysInOrder) {
  TrainingConfig config;
  config.optimizer = OptimizerKind::Sgd;
  JsonValue s = runSummary(twoSteps(), config, {"cpu", 128, true, false});
  EXPECT_EQ(keysOf(s), (std::vector<std::string>{
                           "steps", "skipped_steps", "overflow_steps", "first_overflow_steps", "first_loss",
                           "final_loss", "final_loss_counts", "final_scale", "eval_accuracy", "eval_loss",
                           "step_time_ms", "host_syncs_per_step", "peak_memory_bytes", "persistent_bytes",
                           "workspace_bytes", "peak_memory_counts", "device", "precision", "optimizer",
                           "loss_scaling", "accumulate", "batch", "world_size", "global_batch", "shuffle",
                           "interrupted"}));
  EXPECT_EQ(s.find("first_loss")->asDouble(), 2.5);
  EXPECT_EQ(s.find("final_loss")->asDouble(), 1.875);
  EXPECT_TRUE(s.find("eval_accuracy")->isNull());
  EXPECT_EQ(s.find("device")->asString(), "cpu");
  EXPECT_EQ(s.find("global_batch")->asInt64(), 128);
}

// The plan's split of the memory follows the allocated figures it explains.
TEST(RunSummary, PlannedMemoryKeysInOrder) {
  TrainReport r = twoSteps();
  r.persistentBytes = 64 + 128 + 12;
  TrainReport::PlannedMemory planned;
  planned.classes.bytes[static_cast<int>(BufferClass::Params)] = 64;
  planned.classes.bytes[static_cast<int>(BufferClass::OptimizerMoments)] = 128;
  planned.classes.bytes[static_cast<int>(BufferClass::ScalerAndCounters)] = 12;
  planned.classes.bytes[static_cast<int>(BufferClass::InputsAndLabels)] = 160;
  planned.arenaPeak = {3, 5, "backward", 32, 4, 192, 0, 228, 256};
  r.plannedMemory = planned;
  JsonValue s = runSummary(r, TrainingConfig(), {"cpu", 4, true, false});
  std::vector<std::string> keys = keysOf(s);
  auto at = std::find(keys.begin(), keys.end(), "memory");
  ASSERT_NE(at, keys.end());
  EXPECT_EQ(*(at - 1), "peak_memory_counts");
  EXPECT_EQ(*(at + 1), "device");
  const JsonValue& memory = *s.find("memory");
  EXPECT_EQ(keysOf(memory), (std::vector<std::string>{"persistent", "inputs_and_labels", "constants", "arena_peak",
                                                      "counts"}));
  EXPECT_EQ(keysOf(*memory.find("persistent")),
            (std::vector<std::string>{"params", "weight_copies", "optimizer_moments", "gradient_accumulators",
                                      "scaler_and_counters"}));
  EXPECT_EQ(keysOf(*memory.find("arena_peak")),
            (std::vector<std::string>{"step", "steps", "phase", "activations_saved_for_backward",
                                      "other_forward_values", "gradients_and_backward_values",
                                      "optimizer_and_scaler_values", "live_bytes", "arena_bytes"}));
  int64_t persistent = 0;
  for (const JsonValue::Member& m : memory.find("persistent")->members()) persistent += m.second.asInt64().value_or(-1);
  EXPECT_EQ(persistent, s.find("persistent_bytes")->asInt64());
  EXPECT_EQ(memory.find("inputs_and_labels")->asInt64(), 160);
  const JsonValue& peak = *memory.find("arena_peak");
  EXPECT_EQ(peak.find("step")->asInt64(), 4);  // 1-based, as the memory report prints it
  EXPECT_EQ(peak.find("phase")->asString(), "backward");
  EXPECT_EQ(peak.find("activations_saved_for_backward")->asInt64(), 32);
  EXPECT_EQ(peak.find("live_bytes")->asInt64(), 228);
  EXPECT_EQ(peak.find("arena_bytes")->asInt64(), 256);
  EXPECT_NE(memory.find("counts")->asString().find("planned"), std::string::npos);

  // An entry without temporaries has no peak step or phase.
  r.plannedMemory->arenaPeak = PeakSplit();
  JsonValue empty = runSummary(r, TrainingConfig(), {"cpu", 4, true, false});
  EXPECT_TRUE(empty.find("memory")->find("arena_peak")->find("step")->isNull());
  EXPECT_TRUE(empty.find("memory")->find("arena_peak")->find("phase")->isNull());
}

TEST(RunSummary, ScalerDataParallelAndOverflowKeysInOrder) {
  TrainingConfig config;
  config.precision = Precision::F16;
  config.lossScaling = ScalingKind::Dynamic;
  config.initScale = 65536;
  config.growthFactor = 2;
  config.backoffFactor = 0.5;
  config.growthInterval = 2000;
  config.dataParallel = true;
  config.shardWorldSize = 2;
  TrainReport r = twoSteps();
  r.losses = {std::numeric_limits<double>::infinity(), 1.25};  // a skipped step's loss
  r.accumulate = 4;
  r.worldSize = 2;
  r.trainStepCalls = {4, 2, 2};
  r.replicaChecks = 1;
  r.collectiveSeconds = 0.5;
  r.gradientOverflowSteps = 1;
  r.firstGradientOverflowStep = 1;
  r.firstGradientOverflow.op = "amp.linear";
  JsonValue s = runSummary(r, config, {"reference", 32, false, true});
  std::vector<std::string> keys = keysOf(s);
  const std::vector<std::string> tail = {
      "loss_scaling", "init_scale", "growth_factor", "backoff_factor", "growth_interval", "accumulate", "batch",
      "world_size", "global_batch", "all_reduce_calls", "shard_world_size", "reduce_scatter_calls",
      "all_gather_calls", "replica_checks", "communication_ms_per_step", "shuffle", "interrupted",
      "gradient_overflow_steps", "first_gradient_overflow"};
  ASSERT_GE(keys.size(), tail.size());
  EXPECT_EQ(std::vector<std::string>(keys.end() - static_cast<std::ptrdiff_t>(tail.size()), keys.end()), tail);
  EXPECT_EQ(s.find("first_loss")->asString(), "inf");
  EXPECT_EQ(s.find("global_batch")->asInt64(), 32 * 4 * 2);
  EXPECT_EQ(s.find("shard_world_size")->asString(), "2");
  EXPECT_EQ(s.find("all_reduce_calls")->find("train_step")->asInt64(), 4);
  EXPECT_EQ(s.find("communication_ms_per_step")->asDouble(), 250.0);  // 0.5 s over 2 steps
  EXPECT_EQ(s.find("first_gradient_overflow")->find("op")->asString(), "amp.linear");
}

TEST(JobCheckpoint, RefusesAFileForADirectory) {
  std::string file = ::testing::TempDir() + "/not-a-checkpoint-dir";
  std::filesystem::remove_all(file);
  std::FILE* f = std::fopen(file.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  absl::Status s = createCheckpointDir(file);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cannot create checkpoint directory"), std::string::npos) << s;
}

}  // namespace
}  // namespace amp::rt
