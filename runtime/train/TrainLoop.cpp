#include "runtime/train/TrainLoop.h"

#include <algorithm>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "runtime/schema/StateNames.h"
#include "runtime/train/Evaluate.h"
#include "runtime/train/RankAgreement.h"
#include "runtime/train/Scalars.h"
#include "runtime/train/StepLog.h"

namespace amp::rt {
namespace {

// Host waits so far on a device with its own memory; host devices never wait.
int64_t hostSyncs(const Session& session) {
  const DeviceResidency* r = session.executor().residency();
  return r ? r->hostSyncs() : 0;
}

TrainReport::CollectiveCalls callsOf(const Communicator* comm) {
  if (!comm) return {};
  return {comm->allReduceCalls(), comm->reduceScatterCalls(), comm->allGatherCalls()};
}

constexpr size_t kFinalLossWindow = 50;
constexpr size_t kOverflowStepsListed = 10;

}  // namespace

TrainLoop::TrainLoop(Session& session, const Dataset& data, const Dataset* eval, const TrainOptions& options,
                     const TrainCallbacks& callbacks, const TrainSchedule& schedule)
    : session_(session),
      data_(data),
      eval_(eval),
      options_(options),
      callbacks_(callbacks),
      schedule_(schedule),
      comm_(options.communicator),
      world_(comm_ ? comm_->worldSize() : 1),
      rank_(comm_ ? comm_->rank() : 0),
      perStep_(schedule.batches.batch * schedule.accumulate),
      windowLoss_(hasWindowLoss(session.plan(), schedule.accumulate)),
      step_(schedule.start.step),
      lastStep_(schedule.lastStep),
      windowStart_(Clock::now()),
      lastDelivery_(Clock::now()) {
  report_.accumulate = schedule.accumulate;
  report_.worldSize = world_;
  report_.firstStep = schedule.start.step;
  call_.checkNumerics = options.checkNumerics;
  call_.communicator = comm_;
}

absl::StatusOr<TrainReport> TrainLoop::run() {
  const int64_t runStart = step_;
  const bool rankZero = rank_ == 0;
  for (; step_ < lastStep_; ++step_) {
    const int64_t syncsBefore = hostSyncs(session_);
    auto stop = agreeToStop(comm_, options_.stopRequested && options_.stopRequested->load());
    if (!stop.ok()) return stop.status();
    if (*stop) {
      // Stop cleanly between steps: the state is that of a finished step, so it is saved as one.
      if (auto s = collect(true, -1); !s.ok()) return s;
      lastStep_ = step_;
      report_.interrupted = true;
      if (!options_.checkpointDir.empty())
        if (auto s = checkpoint(step_); !s.ok()) return s;
      break;
    }
    const int64_t epoch = step_ / schedule_.stepsPerEpoch;
    if (auto s = launch(epoch); !s.ok()) return s;

    bool endOfEpoch = (step_ + 1) % schedule_.stepsPerEpoch == 0;
    bool doEval = eval_ && rankZero && ((options_.evalEvery > 0 && (step_ + 1) % options_.evalEvery == 0) ||
                                        (options_.evalEvery == 0 && endOfEpoch) || step_ + 1 == lastStep_);
    bool doCheckpoint = !options_.checkpointDir.empty() &&
                        ((options_.checkpointEvery > 0 && (step_ + 1) % options_.checkpointEvery == 0) ||
                         step_ + 1 == lastStep_);
    const bool syncPoint = doEval || doCheckpoint || step_ + 1 == lastStep_;
    if (auto s = collect(syncPoint, syncPoint ? step_ + 1 : -1); !s.ok()) return s;
    if (!syncPoint && step_ > runStart) {
      ++steadySteps_;
      steadySyncs_ += hostSyncs(session_) - syncsBefore;
    }
    if (!syncPoint) continue;
    std::optional<double> evalAccuracy;
    if (doEval) {
      auto r = evaluate(session_, *eval_);
      if (!r.ok()) return r.status();
      report_.evalAccuracy = r->accuracy;
      report_.evalLoss = r->loss;
      evalAccuracy = r->accuracy;
      if (callbacks_.onEval)
        if (auto s = callbacks_.onEval({step_ + 1, epoch, r->accuracy, r->loss}); !s.ok()) return s;
    }
    if (doCheckpoint)
      if (auto s = checkpoint(step_ + 1); !s.ok()) return s;
    if (heldStep_ && (isLogPoint(step_ + 1) || doEval)) progress(*heldStep_, evalAccuracy);
    heldStep_.reset();
  }
  if (auto s = collect(true, -1); !s.ok()) return s;
  if (auto s = finish(); !s.ok()) return s;
  return std::move(report_);
}

const std::vector<int64_t>& TrainLoop::rankOrder(int64_t epoch) {
  if (epoch == cachedEpoch_) return order_;
  const CheckpointInfo& start = schedule_.start;
  order_ = start.shuffle ? epochOrder(data_.size(), start.seed, epoch) : std::vector<int64_t>();
  if (!start.shuffle)
    for (int64_t i = 0; i < data_.size(); ++i) order_.push_back(i);
  order_ = rankShard(order_, rank_, world_);
  cachedEpoch_ = epoch;
  return order_;
}

absl::Status TrainLoop::launch(int64_t epoch) {
  const std::vector<int64_t>& order = rankOrder(epoch);
  const int64_t offset = (step_ % schedule_.stepsPerEpoch) * perStep_, batch = schedule_.batches.batch;
  const int64_t accumulate = schedule_.accumulate;
  pending_.emplace_back();
  PendingStep& launching = pending_.back();  // a deque keeps references across emplace_back
  launching.record.step = step_ + 1;
  launching.record.epoch = epoch;
  launching.launched = Clock::now();
  call_.gradientOverflow = options_.checkNumerics ? &launching.overflow : nullptr;
  for (int64_t k = 0; k < accumulate; ++k) {
    std::vector<int64_t> idx(order.begin() + offset + k * batch, order.begin() + offset + (k + 1) * batch);
    auto feeds = feedBatch(schedule_.batches, data_, idx);
    if (!feeds.ok()) return feeds.status();
    call_.step = step_ * accumulate + k;
    const bool last = k + 1 == accumulate;
    if (last && options_.profileCalls > 0) profileBatch_ = idx, profileStep_ = call_.step;
    const TrainReport::CollectiveCalls before = callsOf(comm_);
    const double secondsBefore = comm_ ? comm_->collectiveSeconds() : 0;
    auto result = session_.enqueue(last ? "train_step" : "accumulate", *feeds, call_, call_.step);
    if (comm_) report_.collectiveSeconds += comm_->collectiveSeconds() - secondsBefore;
    const TrainReport::CollectiveCalls after = callsOf(comm_);
    TrainReport::CollectiveCalls& calls = last ? report_.trainStepCalls : report_.accumulateCalls;
    calls.allReduce += after.allReduce - before.allReduce;
    calls.reduceScatter += after.reduceScatter - before.reduceScatter;
    calls.allGather += after.allGather - before.allGather;
    if (!result.ok()) return absl::Status(result.code(), absl::StrCat("step ", step_ + 1, ": ", result.message()));
  }
  return absl::OkStatus();
}

void TrainLoop::deliver(const LoggedCall& call, bool trainStep) {
  if (pending_.empty()) return;
  const int64_t accumulate = schedule_.accumulate;
  const int64_t index = call.ticket() / accumulate - (pending_.front().record.step - 1);
  if (index < 0 || index >= static_cast<int64_t>(pending_.size())) return;
  PendingStep& p = pending_[static_cast<size_t>(index)];
  std::optional<double> loss = loggedLoss(call);
  if (loss) p.lossSum += windowLoss_ ? (trainStep ? *loss * accumulate : 0.0) : *loss;
  ++p.logs;
  if (trainStep) recordTrainStep(call, p.record, &p.skippedAfter);
}

absl::Status TrainLoop::collect(bool wait, int64_t held) {
  for (const char* name : {"accumulate", "train_step"}) {
    const bool trainStep = std::string_view(name) == "train_step";
    if (auto s = session_.poll(name, wait, [&](const LoggedCall& c) { deliver(c, trainStep); }); !s.ok())
      return absl::Status(s.code(), absl::StrCat("training step ",
                                                 pending_.empty() ? step_ : pending_.front().record.step,
                                                 " or later: ", s.message()));
  }
  while (!pending_.empty() && pending_.front().logs == schedule_.accumulate) {
    PendingStep& done = pending_.front();
    const Clock::time_point now = Clock::now();
    // A step's time: from its launch, or from the previous step's completion when the device
    // was still busy with that one (steps overlap on a device with a stream).
    done.record.stepTimeMs =
        std::chrono::duration<double, std::milli>(now - std::max(done.launched, lastDelivery_)).count();
    lastDelivery_ = now;
    done.record.loss = done.lossSum / schedule_.accumulate;
    StepRecord& record = done.record;
    if (done.overflow.seen) {
      if (!report_.firstGradientOverflowStep)
        report_.firstGradientOverflowStep = record.step, report_.firstGradientOverflow = done.overflow;
      ++report_.gradientOverflowSteps;
    }
    stepMs_.push_back(record.stepTimeMs);
    report_.losses.push_back(record.loss);
    report_.scales.push_back(record.nextScale.value_or(1.0));
    report_.skipped.push_back(record.foundInf);
    if (record.foundInf) {
      ++report_.overflowSteps;
      if (report_.firstOverflowSteps.size() < kOverflowStepsListed) report_.firstOverflowSteps.push_back(record.step);
    }
    if (callbacks_.onStep)
      if (auto s = callbacks_.onStep(record); !s.ok()) return s;
    ++windowSteps_;
    if (record.step == held) {
      heldStep_ = std::move(done);
    } else if (isLogPoint(record.step)) {
      progress(done, std::nullopt);
    }
    pending_.pop_front();
  }
  if (wait && !pending_.empty())
    return absl::InternalError(
        absl::StrCat("training step ", pending_.front().record.step, ": the device delivered no log for it"));
  return absl::OkStatus();
}

bool TrainLoop::isLogPoint(int64_t step) const {
  return step % std::max<int64_t>(1, options_.logEvery) == 0 || step == lastStep_;
}

void TrainLoop::progress(const PendingStep& done, std::optional<double> evalAccuracy) {
  if (!callbacks_.onProgress) return;
  double secs = std::chrono::duration<double>(Clock::now() - windowStart_).count();
  TrainProgress p;
  p.step = done.record.step;
  p.totalSteps = lastStep_;
  p.epoch = done.record.epoch;
  p.loss = done.record.loss;
  p.scale = done.record.nextScale.value_or(1.0);
  p.skippedSteps = static_cast<int64_t>(done.skippedAfter.value_or(static_cast<double>(report_.overflowSteps)));
  p.samplesPerSecond = secs > 0 ? static_cast<double>(windowSteps_ * perStep_ * world_) / secs : 0;  // all ranks
  p.evalAccuracy = evalAccuracy;
  callbacks_.onProgress(p);
  windowStart_ = Clock::now();
  windowSteps_ = 0;
}

absl::Status TrainLoop::checkpoint(int64_t atStep) {
  const CheckpointInfo& start = schedule_.start;
  if (auto s = saveJobCheckpoint(session_, comm_, options_.checkpointDir, {atStep, start.seed, start.shuffle, world_},
                                   options_.checkpointAuth);
      !s.ok())
    return s;
  if (comm_ && world_ > 1) ++report_.replicaChecks;
  return absl::OkStatus();
}

absl::Status TrainLoop::finish() {
  report_.steps = lastStep_;
  if (report_.losses.empty())
    return absl::CancelledError(absl::StrCat("stopped before the first step (", step_, ")"));
  // Measured, not estimated: the persistent buffers and the workspaces the device allocated for
  // every entry it prepared (train_step, accumulate, eval; Session::workspaceBytes).
  report_.persistentBytes = session_.persistentBytes();
  report_.workspaceBytes = session_.workspaceBytes();
  report_.peakMemoryBytes = report_.persistentBytes + report_.workspaceBytes;
  // ... and what the plan says they hold, for --summary's split of the peak.
  report_.plannedMemory = {bytesByClass(session_.plan()), peakSplit(session_.plan(), "train_step")};
  // Plans without a skipped-steps counter: the steps of this run that overflowed.
  report_.skippedSteps = static_cast<int64_t>(
      persistentScalarIfAny(session_, schema::kSkippedStepsState).value_or(static_cast<double>(report_.overflowSteps)));
  // A skipped step's loss is often inf/NaN and says nothing about the model: it is left out.
  double sum = 0;
  size_t counted = 0;
  for (size_t i = report_.losses.size(); i-- > 0 && counted < kFinalLossWindow;)
    if (!report_.skipped[i]) sum += report_.losses[i], ++counted;
  if (counted) report_.finalLoss = sum / static_cast<double>(counted);
  report_.finalScale = persistentScalarIfAny(session_, schema::kLossScaleState).value_or(1.0);
  std::vector<double> sorted = stepMs_;
  std::sort(sorted.begin(), sorted.end());
  report_.stepTimeMsMedian = sorted[sorted.size() / 2];
  if (options_.profileCalls > 0 && !profileBatch_.empty()) {
    auto profileFeeds = feedBatch(schedule_.batches, data_, profileBatch_);
    if (!profileFeeds.ok()) return profileFeeds.status();
    Session::RunOptions profileRun;
    profileRun.step = profileStep_;
    auto profile = session_.profile("train_step", *profileFeeds, profileRun, options_.profileCalls);
    if (!profile.ok()) return profile.status();
    report_.profile = std::move(*profile);
  }
  auto trainEntry = session_.prepared("train_step");
  if (steadySteps_ > 0 && trainEntry.ok() && (*trainEntry)->async() != nullptr)
    report_.hostSyncsPerStep = static_cast<double>(steadySyncs_) / static_cast<double>(steadySteps_);
  return absl::OkStatus();
}

}  // namespace amp::rt
