#include "runtime/train/MetricsLog.h"

#include <cerrno>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace amp::rt {

JsonValue floatValue(double v) {
  if (std::isnan(v)) return JsonValue::string("nan");
  if (std::isinf(v)) return JsonValue::string(v > 0 ? "inf" : "-inf");
  return JsonValue::number(v);
}

absl::StatusOr<MetricsLog> MetricsLog::open(const std::string& path, bool append) {
  MetricsLog log;
  log.path_ = path;
  log.file_.reset(std::fopen(path.c_str(), append ? "a" : "w"));
  if (!log.file_)
    return absl::InvalidArgumentError(absl::StrCat(path, ": cannot open the metrics file: ", std::strerror(errno)));
  return log;
}

absl::Status MetricsLog::writeLine(const JsonValue& record) {
  std::string line = writeJson(record) + "\n";
  if (std::fwrite(line.data(), 1, line.size(), file_.get()) != line.size() || std::fflush(file_.get()) != 0)
    return absl::InternalError(absl::StrCat(path_, ": cannot write the metrics file: ", std::strerror(errno)));
  return absl::OkStatus();
}

absl::Status MetricsLog::write(const StepRecord& r) {
  JsonValue o = JsonValue::object();
  o.set("kind", JsonValue::string("step"));
  o.set("step", JsonValue::integer(r.step));
  o.set("epoch", JsonValue::integer(r.epoch + 1));
  o.set("loss", floatValue(r.loss));
  o.set("found_inf", JsonValue::boolean(r.foundInf));
  o.set("skipped", JsonValue::boolean(r.foundInf));
  if (r.scale) o.set("scale", floatValue(*r.scale));
  if (r.nextScale) o.set("next_scale", floatValue(*r.nextScale));
  if (r.growthTracker) o.set("growth_tracker", JsonValue::integer(*r.growthTracker));
  if (r.gradNorm) o.set("grad_norm", floatValue(*r.gradNorm));
  if (r.lr) o.set("lr", floatValue(*r.lr));
  o.set("step_time_ms", JsonValue::number(r.stepTimeMs));
  return writeLine(o);
}

absl::Status MetricsLog::write(const EvalRecord& r) {
  JsonValue o = JsonValue::object();
  o.set("kind", JsonValue::string("eval"));
  o.set("step", JsonValue::integer(r.step));
  o.set("epoch", JsonValue::integer(r.epoch + 1));
  o.set("accuracy", JsonValue::number(r.accuracy));
  o.set("loss", floatValue(r.loss));
  return writeLine(o);
}

}  // namespace amp::rt
