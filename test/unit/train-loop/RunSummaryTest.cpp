// The run summary's keys and their order (tools read it by key, people read it top to bottom),
// and the job checkpoints' refusals.
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
  config.optimizer = "sgd";
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

TEST(RunSummary, ScalerDataParallelAndOverflowKeysInOrder) {
  TrainingConfig config;
  config.precision = "f16";
  config.lossScaling = "dynamic";
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
