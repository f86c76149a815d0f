// The rules between one op's attributes that its ODS cannot declare, as the op's verifier in ir/
// checks them on the IR; decodeOpAttrs (runtime/plan/OpAttrs.h) applies them to every plan step,
// so no device checks them again.
#include "absl/strings/str_cat.h"
#include "runtime/plan/OpAttrs.h"

namespace amp::rt {

namespace {

absl::Status check(const LrScheduleAttrs& a) {
  if (a.kind == LrScheduleKind::Cosine && (!(a.minLr >= 0.0 && a.minLr <= a.baseLr) || a.totalSteps <= a.warmupSteps))
    return absl::InvalidArgumentError(absl::StrCat(
        "amp.lr_schedule: a cosine schedule needs 0 <= min_lr <= base_lr and total_steps > warmup_steps, got min_lr = ",
        a.minLr, ", base_lr = ", a.baseLr, ", total_steps = ", a.totalSteps, ", warmup_steps = ", a.warmupSteps));
  return absl::OkStatus();
}

absl::Status check(const SgdUpdateAttrs& a) {
  if (a.nesterov && a.momentum == 0.0)
    return absl::InvalidArgumentError("amp.sgd_update: nesterov requires momentum > 0");
  return absl::OkStatus();
}


}  // namespace

absl::Status checkAttrRelations(const OpAttrs& attrs) {
  if (const auto* a = std::get_if<LrScheduleAttrs>(&attrs)) return check(*a);
  if (const auto* a = std::get_if<SgdUpdateAttrs>(&attrs)) return check(*a);
  return absl::OkStatus();
}

}  // namespace amp::rt
