// The per-step metrics file (amp-run --metrics=FILE.jsonl): one JSON object per line, one line per
// optimizer step and per evaluation, flushed as it is written so a killed run keeps every
// finished step. docs/cli.md lists the fields.
#ifndef AMP_RUNTIME_TRAIN_METRICSLOG_H
#define AMP_RUNTIME_TRAIN_METRICSLOG_H

#include <cstdio>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/io/Json.h"
#include "runtime/train/Trainer.h"

namespace amp::rt {

class MetricsLog {
 public:
  // `append`: a resumed run continues the file; otherwise it starts empty.
  static absl::StatusOr<MetricsLog> open(const std::string& path, bool append);
  absl::Status write(const StepRecord& r);
  absl::Status write(const EvalRecord& r);

 private:
  struct Closer {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  absl::Status writeLine(const JsonValue& record);
  std::string path_;
  std::unique_ptr<std::FILE, Closer> file_;
};

// A JSON value for a float that may be non-finite: a number, or the string "nan", "inf" or
// "-inf" (JSON has no such numbers; a skipped step's loss often is one).
JsonValue floatValue(double v);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_TRAIN_METRICSLOG_H
