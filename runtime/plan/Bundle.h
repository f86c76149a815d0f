// A bundle (.ampx) is one safetensors file: its tensors are the plan's constants (and optionally
// initial parameters); its "__metadata__" carries the format tag, the format version and the plan
// as JSON. Any safetensors tool can list a bundle's contents.
#ifndef AMP_RUNTIME_PLAN_BUNDLE_H
#define AMP_RUNTIME_PLAN_BUNDLE_H

#include <functional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/io/NamedTensor.h"
#include "runtime/io/Json.h"
#include "runtime/plan/Plan.h"

namespace amp::rt {

// JSON form of a plan. Tensor-valued attributes (amp.constant's value) are written as references
// {"tensor": NAME} and their data goes to `tensors`.
JsonValue planToJson(const Plan& plan, std::vector<NamedTensorRef>* tensors);
// The same document as JSON text, written without building the tree (writeJson's format; indent
// as there): what bundles and `ampc --emit=plan` store.
std::string planJsonText(const Plan& plan, std::vector<NamedTensorRef>* tensors, int indent = -1);
// The same text passed to `piece` a piece at a time (about 1 MiB each), never held whole.
void writePlanInPieces(const Plan& plan, std::vector<NamedTensorRef>* tensors,
                       const std::function<void(std::string_view)>& piece, int indent = -1);
// Inverse; tensor references are resolved against `tensors`. Every structural problem (unknown
// op kind tag, buffer id out of range, dtype spelling, version mismatch) is an error naming
// `source` and the entry/step concerned.
absl::StatusOr<Plan> planFromJson(const JsonValue& json, const std::vector<NamedTensor>& tensors,
                                  const std::string& source);

absl::Status writeBundle(const std::string& path, const Plan& plan);
absl::StatusOr<Plan> readBundle(const std::string& path);
// One read, one authentication: reads the whole file at `path` into `bytes` through one open
// file (a FIFO or device is refused, never waited on) and parses the plan from those bytes, so a
// caller that authenticates them (applyNativeCodePolicy) checks exactly what it runs, whatever
// happens to the path meanwhile. Peak memory is the file's size on top of the plan's tensors.
absl::StatusOr<Plan> readBundle(const std::string& path, std::string* bytes);
// Parses a bundle already in memory; `path` names it in messages.
absl::StatusOr<Plan> parseBundle(std::string_view bytes, const std::string& path);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_PLAN_BUNDLE_H
