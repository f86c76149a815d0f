#include "runtime/train/Trainer.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <filesystem>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "runtime/io/Safetensors.h"
#include "runtime/numerics/Convert.h"
#include "runtime/train/ShardedState.h"

namespace amp::rt {
namespace {

struct Bindings {
  const BufferDesc* input = nullptr;
  const BufferDesc* label = nullptr;
  int64_t batch = 0;
};

absl::StatusOr<Bindings> findBindings(const Plan& plan) {
  Bindings b;
  for (const BufferDesc& d : plan.buffers) {
    if (d.kind == BufferKind::Input) {
      if (b.input) return absl::InvalidArgumentError("training from a dataset needs a model with exactly one input");
      b.input = &d;
    } else if (d.kind == BufferKind::Label) {
      if (b.label) return absl::InvalidArgumentError("training from a dataset needs a model with exactly one label");
      b.label = &d;
    }
  }
  if (!b.input || !b.label || b.input->shape.empty())
    return absl::InvalidArgumentError("training from a dataset needs one input [B, ...] and one label");
  b.batch = b.input->shape[0];
  return b;
}

absl::StatusOr<std::map<std::string, Tensor>> makeFeeds(const Bindings& b, const Dataset& data,
                                                        const std::vector<int64_t>& idx) {
  std::map<std::string, Tensor> feeds;
  auto x = gatherBatch(data.inputs, idx, b.input->dtype, b.input->shape, data.name + " input");
  if (!x.ok()) return x.status();
  auto y = gatherBatch(data.labels, idx, b.label->dtype, b.label->shape, data.name + " label");
  if (!y.ok()) return y.status();
  feeds[b.input->name] = std::move(*x);
  feeds[b.label->name] = std::move(*y);
  return feeds;
}

double scalarOf(const Tensor& t) {
  if (isFloat(t.dtype())) return loadAsF32(t.dtype(), t.data(), 0);
  if (t.dtype() == DType::I64) return static_cast<double>(t.as<int64_t>()[0]);
  if (t.dtype() == DType::I32) return t.as<int32_t>()[0];
  return 0;
}

std::optional<double> persistentScalarIfAny(const Session& s, const std::string& name) {
  std::optional<int32_t> id = s.plan().findBuffer(name);
  if (!id || !s.syncPersistent(*id).ok()) return std::nullopt;
  for (const NamedTensorRef& r : s.persistent())
    if (r.name == name && r.tensor->numel() == 1) return scalarOf(*r.tensor);
  return std::nullopt;
}

// Host waits so far on a device with its own memory; host devices never wait.
int64_t hostSyncs(const Session& session) {
  const DeviceResidency* r = session.executor().residency();
  return r ? r->hostSyncs() : 0;
}

}  // namespace

absl::StatusOr<EvalResult> evaluate(Session& session, const Dataset& data) {
  auto b = findBindings(session.plan());
  if (!b.ok()) return b.status();
  int64_t n = data.size(), batch = b->batch;
  if (n == 0) return absl::InvalidArgumentError(absl::StrCat(data.name, ": no examples to evaluate"));
  int64_t correct = 0, counted = 0, fullBatches = 0;
  double lossSum = 0;
  for (int64_t start = 0; start < n; start += batch) {
    std::vector<int64_t> idx;
    int64_t real = std::min(batch, n - start);
    for (int64_t i = 0; i < batch; ++i) idx.push_back(start + (i < real ? i : 0));  // pad, count only real
    auto feeds = makeFeeds(*b, data, idx);
    if (!feeds.ok()) return feeds.status();
    auto outs = session.run("eval", *feeds);
    if (!outs.ok()) return outs.status();
    if (outs->size() < 2)
      return absl::InvalidArgumentError("the eval entry returns no logits (a second result) to score");
    const Tensor& logits = (*outs)[1].tensor;
    const Tensor& labels = feeds->at(b->label->name);
    int64_t perExample = labels.numel() / batch;
    int64_t classes = labels.numel() ? logits.numel() / labels.numel() : 0;
    if (classes < 1 || classes * labels.numel() != logits.numel())
      return absl::InvalidArgumentError("the eval entry's logits do not have one row per label");
    for (int64_t row = 0; row < real * perExample; ++row) {
      int64_t best = 0;
      float bestValue = loadAsF32(logits.dtype(), logits.data(), row * classes);
      for (int64_t c = 1; c < classes; ++c) {
        float v = loadAsF32(logits.dtype(), logits.data(), row * classes + c);
        if (v > bestValue) bestValue = v, best = c;
      }
      int64_t label = labels.dtype() == DType::I64 ? labels.as<int64_t>()[row] : labels.as<int32_t>()[row];
      correct += best == label;
      ++counted;
    }
    if (real == batch) {
      lossSum += scalarOf((*outs)[0].tensor);
      ++fullBatches;
    }
  }
  EvalResult r;
  r.accuracy = static_cast<double>(correct) / static_cast<double>(counted);
  r.loss = fullBatches ? lossSum / fullBatches : 0;
  return r;
}

namespace {

// Every rank's hash of its params and state, compared: replicas that diverged (a collective that
// was skipped, a non-deterministic kernel) are an error, not a silent checkpoint of rank 0's copy.
absl::Status checkReplicasAgree(const std::vector<NamedTensorRef>& whole, Communicator& comm, int64_t step) {
  std::string mine = checkpointHash(whole);
  std::string all(mine.size() * static_cast<size_t>(comm.worldSize()), '\0');
  if (auto s = comm.allGather(mine.data(), static_cast<int64_t>(mine.size()), all.data()); !s.ok()) return s;
  for (int r = 0; r < comm.worldSize(); ++r) {
    std::string theirs = all.substr(static_cast<size_t>(r) * mine.size(), mine.size());
    if (theirs != all.substr(0, mine.size()))
      return absl::DataLossError(absl::StrCat(
          "step ", step, ": the params and state of rank ", r, " (sha256 ", theirs.substr(0, 16),
          "...) differ from rank 0's (", all.substr(0, 16), "...): the data-parallel replicas diverged"));
  }
  return absl::OkStatus();
}

TrainReport::CollectiveCalls callsOf(const Communicator* comm) {
  if (!comm) return {};
  return {comm->allReduceCalls(), comm->reduceScatterCalls(), comm->allGatherCalls()};
}

// A stop requested on any rank (a signal reaches the ranks at different moments) stops all of
// them after the same step, so no rank waits for a collective the others will not join.
absl::StatusOr<bool> agreeToStop(Communicator* comm, bool local) {
  if (!comm || comm->worldSize() == 1) return local;
  int32_t flag = local ? 1 : 0;
  if (auto s = comm->allReduce(&flag, 1, DType::I32, ReduceOp::Max); !s.ok()) return s;
  return flag != 0;
}

constexpr size_t kFinalLossWindow = 50;
constexpr size_t kOverflowStepsListed = 10;

}  // namespace

absl::StatusOr<TrainReport> train(Session& session, const Dataset& data, const Dataset* eval,
                                  const TrainOptions& options, const TrainCallbacks& callbacks) {
  const Plan& plan = session.plan();
  if (!plan.findEntry("train_step"))
    return absl::InvalidArgumentError("the bundle has no train_step entry: compile it with ampc --train");
  auto b = findBindings(plan);
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

  // An unusable checkpoint directory is found before any step runs, not after the work is done.
  if (!options.checkpointDir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(options.checkpointDir, ec);
    if (ec || !std::filesystem::is_directory(options.checkpointDir))
      return absl::InvalidArgumentError(absl::StrCat(options.checkpointDir, ": cannot create checkpoint directory: ",
                                                     ec ? ec.message() : "not a directory"));
  }
  TrainReport report;
  report.accumulate = accumulate;
  report.worldSize = world;
  CheckpointInfo position{0, options.seed, options.shuffle, world};
  if (options.resume) {
    if (options.checkpointDir.empty()) return absl::InvalidArgumentError("--resume needs --checkpoint=DIR");
    auto info = loadCheckpoint(session, options.checkpointDir, rank);
    if (!info.ok()) return info.status();
    if (info->worldSize != world)
      return absl::InvalidArgumentError(absl::StrCat(
          options.checkpointDir, ": the checkpoint was written by a job of ", info->worldSize, " rank(s), this job has ",
          world, "; resume with the same number of ranks (mpirun -np ", info->worldSize,
          "): each rank's share of the data order depends on it"));
    position = *info;  // the data order continues as it was started
  }
  const bool rankZero = rank == 0;
  // Rank 0 writes; every rank first checks that the replicas agree.
  auto checkpoint = [&](int64_t atStep) -> absl::Status {
    auto whole = wholeState(session, comm);  // a collective: sharded state gathered on every rank
    if (!whole.ok()) return whole.status();
    if (comm && world > 1) {
      if (auto s = checkReplicasAgree(whole->tensors, *comm, atStep); !s.ok()) return s;
      ++report.replicaChecks;
    }
    if (!rankZero) return absl::OkStatus();
    return saveCheckpoint(plan, whole->tensors, options.checkpointDir,
                          {atStep, position.seed, position.shuffle, world});
  };
  const bool windowLoss = accumulate > 1 && plan.findBuffer("amp.loss_sum");
  int64_t step = position.step;
  int64_t toRun = options.steps;
  if (toRun <= 0 && __builtin_mul_overflow(options.epochs, stepsPerEpoch, &toRun)) toRun = kMaxCheckpointStep + 1;
  if (toRun <= 0) return absl::InvalidArgumentError("nothing to do: give --steps=N or --epochs=N");
  if (toRun > kMaxCheckpointStep - step)
    return absl::InvalidArgumentError(absl::StrCat("step ", step, " + ", toRun,
                                                   " steps to run exceeds the step counter's range (2^62)"));
  int64_t lastStep = step + toRun;
  report.firstStep = step;

  Session::RunOptions run;
  run.checkNumerics = options.checkNumerics;
  run.communicator = comm;
  std::vector<double> stepMs;
  int64_t cachedEpoch = -1;
  std::vector<int64_t> order;
  using Clock = std::chrono::steady_clock;
  auto windowStart = Clock::now();
  int64_t windowSteps = 0;

  // Steps are enqueued and their records completed from the scalar logs the device delivers
  // (Session::enqueue/poll): on a device with a stream the host runs ahead and reads each step's
  // loss, scale and found_inf a step or more late, without waiting. Evaluations, checkpoints and
  // the end wait for every step in flight first; host devices deliver each step at once.
  struct PendingStep {
    StepRecord record;
    Clock::time_point launched;
    double lossSum = 0;
    int64_t logs = 0;  // micro-step logs delivered (complete at `accumulate`)
    std::optional<double> skippedAfter;
    GradientOverflow overflow;
  };
  std::deque<PendingStep> pending;
  Clock::time_point lastDelivery = Clock::now();
  auto deliver = [&](const LoggedCall& call, bool trainStep) {
    if (pending.empty()) return;
    const int64_t index = call.ticket() / accumulate - (pending.front().record.step - 1);
    if (index < 0 || index >= static_cast<int64_t>(pending.size())) return;
    PendingStep& p = pending[static_cast<size_t>(index)];
    std::optional<double> loss = call.result("loss");
    if (!loss) loss = call.firstResult();
    if (loss) p.lossSum += windowLoss ? (trainStep ? *loss * accumulate : 0.0) : *loss;
    ++p.logs;
    if (!trainStep) return;
    p.record.scale = call.stateBefore("amp.loss_scale");
    p.record.nextScale = call.stateAfter("amp.loss_scale");
    if (auto t = call.stateAfter("amp.growth_tracker")) p.record.growthTracker = static_cast<int64_t>(*t);
    p.record.foundInf = call.result("found_inf").value_or(0) != 0;
    p.record.gradNorm = call.result("grad_norm");
    p.record.lr = call.result("lr");
    p.skippedAfter = call.stateAfter("amp.skipped_steps");
  };
  auto isLogPoint = [&](int64_t s) { return s % std::max<int64_t>(1, options.logEvery) == 0 || s == lastStep; };
  auto progress = [&](const PendingStep& done, std::optional<double> evalAccuracy) {
    if (!callbacks.onProgress) return;
    double secs = std::chrono::duration<double>(Clock::now() - windowStart).count();
    TrainProgress p;
    p.step = done.record.step;
    p.totalSteps = lastStep;
    p.epoch = done.record.epoch;
    p.loss = done.record.loss;
    p.scale = done.record.nextScale.value_or(1.0);
    p.skippedSteps = static_cast<int64_t>(done.skippedAfter.value_or(static_cast<double>(report.overflowSteps)));
    p.samplesPerSecond = secs > 0 ? static_cast<double>(windowSteps * perStep * world) / secs : 0;  // all ranks
    p.evalAccuracy = evalAccuracy;
    callbacks.onProgress(p);
    windowStart = Clock::now();
    windowSteps = 0;
  };
  // Delivered logs, then every step whose logs are all in, oldest first. `held`: the step whose
  // progress waits for its evaluation and checkpoint (kept as the last completed one).
  std::optional<PendingStep> heldStep;
  auto collect = [&](bool wait, int64_t held) -> absl::Status {
    for (const char* name : {"accumulate", "train_step"}) {
      const bool trainStep = std::string_view(name) == "train_step";
      if (auto s = session.poll(name, wait, [&](const LoggedCall& c) { deliver(c, trainStep); }); !s.ok())
        return absl::Status(s.code(), absl::StrCat("training step ", pending.empty() ? step : pending.front().record.step,
                                                   " or later: ", s.message()));
    }
    while (!pending.empty() && pending.front().logs == accumulate) {
      PendingStep& done = pending.front();
      const Clock::time_point now = Clock::now();
      // A step's time: from its launch, or from the previous step's completion when the device
      // was still busy with that one (steps overlap on a device with a stream).
      done.record.stepTimeMs =
          std::chrono::duration<double, std::milli>(now - std::max(done.launched, lastDelivery)).count();
      lastDelivery = now;
      done.record.loss = done.lossSum / accumulate;
      StepRecord& record = done.record;
      if (done.overflow.seen) {
        if (!report.firstGradientOverflowStep)
          report.firstGradientOverflowStep = record.step, report.firstGradientOverflow = done.overflow;
        ++report.gradientOverflowSteps;
      }
      stepMs.push_back(record.stepTimeMs);
      report.losses.push_back(record.loss);
      report.scales.push_back(record.nextScale.value_or(1.0));
      report.skipped.push_back(record.foundInf);
      if (record.foundInf) {
        ++report.overflowSteps;
        if (report.firstOverflowSteps.size() < kOverflowStepsListed) report.firstOverflowSteps.push_back(record.step);
      }
      if (callbacks.onStep)
        if (auto s = callbacks.onStep(record); !s.ok()) return s;
      ++windowSteps;
      if (record.step == held) {
        heldStep = std::move(done);
      } else if (isLogPoint(record.step)) {
        progress(done, std::nullopt);
      }
      pending.pop_front();
    }
    if (wait && !pending.empty())
      return absl::InternalError(absl::StrCat("training step ", pending.front().record.step,
                                              ": the device delivered no log for it"));
    return absl::OkStatus();
  };

  const int64_t runStart = step;
  std::vector<int64_t> profileBatch;  // the last train_step's examples, for the profile
  int64_t profileStep = 0;
  int64_t steadySteps = 0, steadySyncs = 0;
  for (; step < lastStep; ++step) {
    const int64_t syncsBefore = hostSyncs(session);
    auto stop = agreeToStop(comm, options.stopRequested && options.stopRequested->load());
    if (!stop.ok()) return stop.status();
    if (*stop) {
      // Stop cleanly between steps: the state is that of a finished step, so it is saved as one.
      if (auto s = collect(true, -1); !s.ok()) return s;
      lastStep = step;
      report.interrupted = true;
      if (!options.checkpointDir.empty())
        if (auto s = checkpoint(step); !s.ok()) return s;
      break;
    }
    int64_t epoch = step / stepsPerEpoch, offset = (step % stepsPerEpoch) * perStep;
    if (epoch != cachedEpoch) {
      order = position.shuffle ? epochOrder(data.size(), position.seed, epoch) : std::vector<int64_t>();
      if (!position.shuffle)
        for (int64_t i = 0; i < data.size(); ++i) order.push_back(i);
      order = rankShard(order, rank, world);
      cachedEpoch = epoch;
    }
    pending.emplace_back();
    PendingStep& launching = pending.back();  // a deque keeps references across emplace_back
    launching.record.step = step + 1;
    launching.record.epoch = epoch;
    launching.launched = Clock::now();
    run.gradientOverflow = options.checkNumerics ? &launching.overflow : nullptr;
    for (int64_t k = 0; k < accumulate; ++k) {
      std::vector<int64_t> idx(order.begin() + offset + k * b->batch, order.begin() + offset + (k + 1) * b->batch);
      auto feeds = makeFeeds(*b, data, idx);
      if (!feeds.ok()) return feeds.status();
      run.step = step * accumulate + k;
      const bool last = k + 1 == accumulate;
      if (last && options.profileCalls > 0) profileBatch = idx, profileStep = run.step;
      const TrainReport::CollectiveCalls before = callsOf(comm);
      const double secondsBefore = comm ? comm->collectiveSeconds() : 0;
      auto result = session.enqueue(last ? "train_step" : "accumulate", *feeds, run, run.step);
      if (comm) report.collectiveSeconds += comm->collectiveSeconds() - secondsBefore;
      const TrainReport::CollectiveCalls after = callsOf(comm);
      TrainReport::CollectiveCalls& calls = last ? report.trainStepCalls : report.accumulateCalls;
      calls.allReduce += after.allReduce - before.allReduce;
      calls.reduceScatter += after.reduceScatter - before.reduceScatter;
      calls.allGather += after.allGather - before.allGather;
      if (!result.ok()) return absl::Status(result.code(), absl::StrCat("step ", step + 1, ": ", result.message()));
    }

    bool endOfEpoch = (step + 1) % stepsPerEpoch == 0;
    bool doEval = eval && rankZero && ((options.evalEvery > 0 && (step + 1) % options.evalEvery == 0) ||
                           (options.evalEvery == 0 && endOfEpoch) || step + 1 == lastStep);
    bool doCheckpoint = !options.checkpointDir.empty() &&
                        ((options.checkpointEvery > 0 && (step + 1) % options.checkpointEvery == 0) || step + 1 == lastStep);
    const bool syncPoint = doEval || doCheckpoint || step + 1 == lastStep;
    if (auto s = collect(syncPoint, syncPoint ? step + 1 : -1); !s.ok()) return s;
    if (!syncPoint && step > runStart) {
      ++steadySteps;
      steadySyncs += hostSyncs(session) - syncsBefore;
    }
    if (!syncPoint) continue;
    std::optional<double> evalAccuracy;
    if (doEval) {
      auto r = evaluate(session, *eval);
      if (!r.ok()) return r.status();
      report.evalAccuracy = r->accuracy;
      report.evalLoss = r->loss;
      evalAccuracy = r->accuracy;
      if (callbacks.onEval)
        if (auto s = callbacks.onEval({step + 1, epoch, r->accuracy, r->loss}); !s.ok()) return s;
    }
    if (doCheckpoint)
      if (auto s = checkpoint(step + 1); !s.ok()) return s;
    if (heldStep && (isLogPoint(step + 1) || doEval)) progress(*heldStep, evalAccuracy);
    heldStep.reset();
  }
  if (auto s = collect(true, -1); !s.ok()) return s;
  report.steps = lastStep;
  if (report.losses.empty()) return absl::CancelledError(absl::StrCat("stopped before the first step (", step, ")"));
  // Measured, not estimated: the persistent buffers and the workspaces the device allocated for
  // every entry it prepared (train_step, accumulate, eval).
  report.persistentBytes = session.persistentBytes();
  report.workspaceBytes = session.workspaceBytes();
  report.peakMemoryBytes = report.persistentBytes + report.workspaceBytes;
  // Plans without a skipped-steps counter: the steps of this run that overflowed.
  report.skippedSteps = static_cast<int64_t>(
      persistentScalarIfAny(session, "amp.skipped_steps").value_or(static_cast<double>(report.overflowSteps)));
  // A skipped step's loss is often inf/NaN and says nothing about the model: it is left out.
  double sum = 0;
  size_t counted = 0;
  for (size_t i = report.losses.size(); i-- > 0 && counted < kFinalLossWindow;)
    if (!report.skipped[i]) sum += report.losses[i], ++counted;
  if (counted) report.finalLoss = sum / static_cast<double>(counted);
  report.finalScale = persistentScalarIfAny(session, "amp.loss_scale").value_or(1.0);
  std::vector<double> sorted = stepMs;
  std::sort(sorted.begin(), sorted.end());
  report.stepTimeMsMedian = sorted[sorted.size() / 2];
  if (options.profileCalls > 0 && !profileBatch.empty()) {
    auto profileFeeds = makeFeeds(*b, data, profileBatch);
    if (!profileFeeds.ok()) return profileFeeds.status();
    Session::RunOptions profileRun;
    profileRun.step = profileStep;
    auto profile = session.profile("train_step", *profileFeeds, profileRun, options.profileCalls);
    if (!profile.ok()) return profile.status();
    report.profile = std::move(*profile);
  }
  auto trainEntry = session.prepared("train_step");
  if (steadySteps > 0 && trainEntry.ok() && (*trainEntry)->async() != nullptr)
    report.hostSyncsPerStep = static_cast<double>(steadySyncs) / static_cast<double>(steadySteps);
  return report;
}

}  // namespace amp::rt
