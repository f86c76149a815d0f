#include "runtime/train/StepLog.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "runtime/schema/StateNames.h"

namespace amp::rt {

std::optional<double> loggedLoss(const LoggedCall& call) {
  std::optional<double> loss = call.result("loss");
  return loss ? loss : call.firstResult();
}

void recordTrainStep(const LoggedCall& call, StepRecord& record, std::optional<double>* skippedAfter) {
  record.scale = call.stateBefore(schema::kLossScaleState);
  record.nextScale = call.stateAfter(schema::kLossScaleState);
  if (auto t = call.stateAfter(schema::kGrowthTrackerState)) record.growthTracker = static_cast<int64_t>(*t);
  record.foundInf = call.result("found_inf").value_or(0) != 0;
  record.gradNorm = call.result("grad_norm");
  record.lr = call.result("lr");
  if (skippedAfter) *skippedAfter = call.stateAfter(schema::kSkippedStepsState);
}

bool hasWindowLoss(const Plan& plan, int64_t accumulate) {
  return accumulate > 1 && plan.findBuffer(schema::kLossSumState).has_value();
}

absl::StatusOr<StepRecord> runOptimizerStep(Session& session, const std::vector<std::map<std::string, Tensor>>& microFeeds,
                                            int64_t stepsDone, const Session::RunOptions& options) {
  const Plan& plan = session.plan();
  auto config = plan.trainingConfig();
  if (!config.ok()) return config.status();
  const int64_t accumulate = config->accumulate;
  if (!plan.findEntry("train_step"))
    return absl::InvalidArgumentError("the bundle has no train_step entry: compile it with training on");
  if (static_cast<int64_t>(microFeeds.size()) != accumulate)
    return absl::InvalidArgumentError(absl::StrCat("an optimizer step of this bundle takes ", accumulate,
                                                   " micro-batches (accumulate), got ", microFeeds.size()));
  const bool windowLoss = hasWindowLoss(plan, accumulate);
  const auto start = std::chrono::steady_clock::now();
  StepRecord record;
  record.step = stepsDone + 1;
  double lossSum = 0;
  Session::RunOptions call = options;
  for (int64_t k = 0; k < accumulate; ++k) {
    const bool last = k + 1 == accumulate;
    const char* entry = last ? "train_step" : "accumulate";
    call.step = stepsDone * accumulate + k;
    if (auto s = session.enqueue(entry, microFeeds[static_cast<size_t>(k)], call, call.step); !s.ok()) return s;
    bool delivered = false;
    auto s = session.poll(entry, /*wait=*/true, [&](const LoggedCall& logged) {
      delivered = true;
      const std::optional<double> loss = loggedLoss(logged);
      if (loss) lossSum += windowLoss ? (last ? *loss * accumulate : 0.0) : *loss;
      if (last) recordTrainStep(logged, record);
    });
    if (!s.ok()) return s;
    if (!delivered) return absl::InternalError(absl::StrCat(entry, ": the device delivered no log for the call"));
  }
  record.loss = lossSum / static_cast<double>(accumulate);
  record.stepTimeMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return record;
}

}  // namespace amp::rt
