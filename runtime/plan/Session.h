// A loaded plan with its persistent buffers (params, state, constants), ready to run entry points.
#ifndef AMP_RUNTIME_PLAN_SESSION_H
#define AMP_RUNTIME_PLAN_SESSION_H

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/exec/ReferenceKernels.h"
#include "runtime/io/IoCommon.h"
#include "runtime/plan/Plan.h"

namespace amp::rt {

enum class Device { Reference };
std::string_view deviceName(Device d);
absl::StatusOr<Device> parseDevice(std::string_view name);

class Session {
 public:
  // Allocates every persistent buffer and initialises params from their init specs.
  static absl::StatusOr<Session> create(Plan plan, Device device);

  const Plan& plan() const { return plan_; }

  // Replaces params by name (from a safetensors/npz file's tensors). Every tensor must name a
  // param and match its shape; f32 is required (master weights). Params not given keep their
  // initial values; `loaded` receives the names set.
  absl::Status setParams(const std::vector<NamedTensor>& tensors, std::vector<std::string>* loaded);
  std::vector<NamedTensorRef> params() const;
  // Every param and state buffer (what a checkpoint holds), and its inverse: `restore` needs
  // every one of them, with the exact dtype and shape, and sets all or nothing.
  std::vector<NamedTensorRef> persistent() const;
  absl::Status restore(const std::vector<NamedTensor>& tensors);

  // Runs entry `name`. `feeds` binds inputs and labels by name (each must be given; shapes must
  // match; floats convert to the buffer's float type and integers to its integer type).
  // Errors name the entry, the step, the op and its source location.
  // With checkNumerics, the first step that produces a NaN or inf in a float result stops the run
  // with an error naming that op and its location (the producer, not its downstream users).
  struct RunOptions {
    EvalContext ctx;
    bool checkNumerics = false;
  };
  absl::StatusOr<std::vector<NamedTensor>> run(std::string_view entry,
                                               const std::map<std::string, Tensor>& feeds,
                                               const RunOptions& options);
  absl::StatusOr<std::vector<NamedTensor>> run(std::string_view entry,
                                               const std::map<std::string, Tensor>& feeds) {
    return run(entry, feeds, RunOptions{});
  }

 private:
  Session(Plan plan, Device device) : plan_(std::move(plan)), device_(device) {}
  // Sets every state initialised as #amp.init<cast, from = P> to P rounded to its dtype.
  absl::Status refreshCasts();
  Plan plan_;
  Device device_;
  std::vector<Tensor> persistent_;  // indexed like plan_.buffers; empty for per-call buffers
};

}  // namespace amp::rt

#endif  // AMP_RUNTIME_PLAN_SESSION_H
