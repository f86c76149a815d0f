#include "runtime/train/RunSummary.h"

#include <algorithm>

#include "runtime/train/MetricsLog.h"

namespace amp::rt {
namespace {

// The GradScaler configuration the bundle was compiled with (absent without loss scaling).
void addScalerConfig(const TrainingConfig& config, JsonValue& summary) {
  if (config.initScale) summary.set("init_scale", JsonValue::number(*config.initScale));
  if (config.growthFactor) summary.set("growth_factor", JsonValue::number(*config.growthFactor));
  if (config.backoffFactor) summary.set("backoff_factor", JsonValue::number(*config.backoffFactor));
  if (config.growthInterval) summary.set("growth_interval", JsonValue::integer(*config.growthInterval));
}

// Data-parallel jobs: the collectives the plan's entries called, and the ranks' agreement.
void addCollectives(const TrainReport& report, const TrainingConfig& config, JsonValue& summary) {
  auto perEntry = [&](int64_t TrainReport::CollectiveCalls::*kind) {
    JsonValue calls = JsonValue::object();
    calls.set("train_step", JsonValue::integer(report.trainStepCalls.*kind));
    calls.set("accumulate", JsonValue::integer(report.accumulateCalls.*kind));
    return calls;
  };
  summary.set("all_reduce_calls", perEntry(&TrainReport::CollectiveCalls::allReduce));
  if (config.shardWorldSize > 0) {
    summary.set("shard_world_size", JsonValue::string(std::to_string(config.shardWorldSize)));
    summary.set("reduce_scatter_calls", perEntry(&TrainReport::CollectiveCalls::reduceScatter));
    summary.set("all_gather_calls", perEntry(&TrainReport::CollectiveCalls::allGather));
  }
  summary.set("replica_checks", JsonValue::integer(report.replicaChecks));
  // Rank 0's wall time in the plan's collectives per step, waiting for slower ranks included.
  const double steps = static_cast<double>(std::max<size_t>(1, report.losses.size()));
  summary.set("communication_ms_per_step", JsonValue::number(report.collectiveSeconds * 1000 / steps));
}

// --check-numerics: the steps whose gradients overflowed, and where the first one did.
void addGradientOverflows(const TrainReport& report, JsonValue& summary) {
  summary.set("gradient_overflow_steps", JsonValue::integer(report.gradientOverflowSteps));
  if (!report.firstGradientOverflowStep) return;
  const GradientOverflow& g = report.firstGradientOverflow;
  JsonValue first = JsonValue::object();
  first.set("step", JsonValue::integer(*report.firstGradientOverflowStep));
  first.set("op", JsonValue::string(g.op));
  first.set("loc", JsonValue::string(g.loc));
  first.set("dtype", JsonValue::string(g.dtype));
  summary.set("first_gradient_overflow", std::move(first));
}

// What the plan says the memory holds (TrainReport::plannedMemory), next to the allocated totals.
JsonValue plannedMemory(const TrainReport::PlannedMemory& planned) {
  JsonValue memory = JsonValue::object();
  JsonValue persistent = JsonValue::object();
  for (BufferClass c : kPersistentClasses)
    persistent.set(std::string(bufferClassKey(c)), JsonValue::integer(planned.classes[c]));
  memory.set("persistent", std::move(persistent));
  for (BufferClass c : {BufferClass::InputsAndLabels, BufferClass::Constants})
    memory.set(std::string(bufferClassKey(c)), JsonValue::integer(planned.classes[c]));
  const PeakSplit& p = planned.arenaPeak;
  JsonValue peak = JsonValue::object();
  // 1-based, as the memory report prints it ("step 15/24"); null when the entry has no temporaries.
  peak.set("step", p.step >= 0 ? JsonValue::integer(p.step + 1) : JsonValue());
  peak.set("steps", JsonValue::integer(p.steps));
  peak.set("phase", p.phase.empty() ? JsonValue() : JsonValue::string(p.phase));
  peak.set("activations_saved_for_backward", JsonValue::integer(p.savedActivations));
  peak.set("other_forward_values", JsonValue::integer(p.forwardOther));
  peak.set("gradients_and_backward_values", JsonValue::integer(p.backward));
  peak.set("optimizer_and_scaler_values", JsonValue::integer(p.update));
  peak.set("live_bytes", JsonValue::integer(p.live));
  peak.set("arena_bytes", JsonValue::integer(p.arena));
  memory.set("arena_peak", std::move(peak));
  memory.set("counts", JsonValue::string(
      "planned, from the bundle's plan (as ampc --emit=memory-report): persistent is params and state by class and "
      "adds up to persistent_bytes; inputs_and_labels are one call's feeds, constants the bundle's (decoded into "
      "the workspace); arena_peak is train_step's temporaries "
      "at the peak of its planned arena, by the phase that made them. peak_memory_bytes, persistent_bytes and "
      "workspace_bytes are what the device allocated: the workspace is the arena (the cpu device's entries share "
      "one, sized for the largest) plus run-only scratch and constants"));
  return memory;
}

// --profile: train_step's time by category and its slowest steps (EntryProfile).
JsonValue profileJson(const EntryProfile& p) {
  JsonValue out = JsonValue::object();
  out.set("calls", JsonValue::integer(p.calls));
  out.set("call_ms", JsonValue::number(p.callMs));
  JsonValue categories = JsonValue::array();
  for (const auto& c : p.categories) {
    JsonValue row = JsonValue::object();
    row.set("name", JsonValue::string(c.name));
    row.set("ms", JsonValue::number(c.ms));
    row.set("operations", JsonValue::integer(c.operations));
    row.set("gflop", JsonValue::number(c.gflop));
    row.set("gflop_per_s", c.ms > 0 && c.gflop > 0 ? JsonValue::number(c.gflop / (c.ms / 1e3)) : JsonValue());
    row.set("mbytes", JsonValue::number(c.mbytes));
    row.set("gb_per_s", c.ms > 0 && c.mbytes > 0 ? JsonValue::number(c.mbytes / c.ms) : JsonValue());
    categories.push(std::move(row));
  }
  out.set("categories", std::move(categories));
  JsonValue ops = JsonValue::array();
  for (const auto& o : p.ops) {
    JsonValue row = JsonValue::object();
    row.set("op", JsonValue::string(o.op));
    row.set("category", JsonValue::string(o.category));
    row.set("steps", JsonValue::integer(o.steps));
    row.set("ms", JsonValue::number(o.ms));
    row.set("gflop", JsonValue::number(o.gflop));
    row.set("mbytes", JsonValue::number(o.mbytes));
    ops.push(std::move(row));
  }
  out.set("by_op", std::move(ops));
  JsonValue slowest = JsonValue::array();
  for (const auto& step : p.slowest) {
    JsonValue row = JsonValue::object();
    row.set("step", JsonValue::integer(static_cast<int64_t>(step.index)));
    row.set("op", JsonValue::string(step.op));
    row.set("loc", JsonValue::string(step.loc));
    row.set("category", JsonValue::string(step.category));
    row.set("ms", JsonValue::number(step.ms));
    row.set("gflop", JsonValue::number(step.gflop));
    row.set("mbytes", JsonValue::number(step.mbytes));
    slowest.push(std::move(row));
  }
  out.set("slowest_steps", std::move(slowest));
  out.set("copy_gb_per_s", p.copyGbPerS > 0 ? JsonValue::number(p.copyGbPerS) : JsonValue());
  out.set("counts", JsonValue::string(
      "medians over the profiled calls of train_step on the last batch (params and state put back): each "
      "category's ms is the sum of its steps' medians; gflop counts GEMM and convolution multiply-adds as 2 flops; "
      "mbytes counts each step's operands read once and results written once, copy_gb_per_s is a STREAM-like "
      "copy's rate (read + written) on the device's threads (cpu)"));
  return out;
}

}  // namespace

JsonValue runSummary(const TrainReport& report, const TrainingConfig& config, const RunSummaryContext& context) {
  JsonValue summary = JsonValue::object();
  summary.set("steps", JsonValue::integer(report.steps));
  summary.set("skipped_steps", JsonValue::integer(report.skippedSteps));
  summary.set("overflow_steps", JsonValue::integer(report.overflowSteps));
  JsonValue firstOverflows = JsonValue::array();
  for (int64_t s : report.firstOverflowSteps) firstOverflows.push(JsonValue::integer(s));
  summary.set("first_overflow_steps", std::move(firstOverflows));
  summary.set("first_loss", floatValue(report.losses.front()));
  summary.set("final_loss", report.finalLoss ? floatValue(*report.finalLoss) : JsonValue());
  summary.set("final_loss_counts", JsonValue::string("mean of the last 50 steps of this run that were not skipped"));
  summary.set("final_scale", JsonValue::number(report.finalScale));
  summary.set("eval_accuracy", report.evalAccuracy ? JsonValue::number(*report.evalAccuracy) : JsonValue());
  summary.set("eval_loss", report.evalLoss ? floatValue(*report.evalLoss) : JsonValue());
  summary.set("step_time_ms", JsonValue::number(report.stepTimeMsMedian));
  summary.set("host_syncs_per_step",
              report.hostSyncsPerStep ? JsonValue::number(*report.hostSyncsPerStep) : JsonValue());
  summary.set("peak_memory_bytes", JsonValue::integer(report.peakMemoryBytes));
  summary.set("persistent_bytes", JsonValue::integer(report.persistentBytes));
  summary.set("workspace_bytes", JsonValue::integer(report.workspaceBytes));
  summary.set("peak_memory_counts", JsonValue::string(
      "params and state, plus the per-call workspace (arena, scratch, constants) of every prepared entry; the cpu "
      "device's entries share one arena, sized for the largest"));
  if (report.plannedMemory) summary.set("memory", plannedMemory(*report.plannedMemory));
  summary.set("device", JsonValue::string(context.device));
  summary.set("precision", JsonValue::string(std::string(precisionKeyword(config.precision))));
  summary.set("optimizer",
              JsonValue::string(config.optimizer ? std::string(optimizerKindKeyword(*config.optimizer)) : ""));
  summary.set("loss_scaling", JsonValue::string(std::string(scalingKindKeyword(config.lossScaling))));
  addScalerConfig(config, summary);
  summary.set("accumulate", JsonValue::integer(report.accumulate));
  summary.set("batch", JsonValue::integer(context.batch));
  summary.set("world_size", JsonValue::integer(report.worldSize));
  summary.set("global_batch", JsonValue::integer(context.batch * report.accumulate * report.worldSize));
  if (config.dataParallel) addCollectives(report, config, summary);
  summary.set("shuffle", JsonValue::boolean(context.shuffle));
  summary.set("interrupted", JsonValue::boolean(report.interrupted));
  if (context.checkNumerics) addGradientOverflows(report, summary);
  if (report.profile) summary.set("profile", profileJson(*report.profile));
  return summary;
}

}  // namespace amp::rt
