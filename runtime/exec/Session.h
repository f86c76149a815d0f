// A loaded plan with its persistent buffers (params, state) and the executor of one device,
// ready to run entry points. Entries are prepared on first use and kept.
#ifndef AMP_RUNTIME_EXEC_SESSION_H
#define AMP_RUNTIME_EXEC_SESSION_H

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/exec/Executor.h"
#include "runtime/exec/ScalarLog.h"
#include "runtime/io/NamedTensor.h"
#include "runtime/plan/Plan.h"

namespace amp::rt {

class Session {
 public:
  // Validates the plan's buffers, allocates every persistent buffer and initialises params from
  // their init specs. A plan that needs more than `memoryLimitBytes` (0: the machine's physical
  // memory) is refused before anything is allocated. openSession (runtime/devices/Devices.h) picks
  // the executor by Device.
  static absl::StatusOr<Session> create(Plan plan, std::unique_ptr<Executor> executor,
                                        int64_t memoryLimitBytes = 0);

  const Plan& plan() const { return *plan_; }
  const Executor& executor() const { return *executor_; }

  // Replaces params by name (from a safetensors/npz file's tensors). Every tensor must name a
  // param and match its shape; f32 is required (master weights). Params not given keep their
  // initial values; `loaded` receives the names set.
  absl::Status setParams(const std::vector<NamedTensor>& tensors, std::vector<std::string>* loaded);
  // The same for params and the model's buffers (modelBufferIds: batch norm running statistics;
  // not the optimizer's or the scaler's state): PyTorch's load_state_dict. Each tensor must have
  // its buffer's dtype and shape.
  absl::Status setModelValues(const std::vector<NamedTensor>& tensors, std::vector<std::string>* loaded);
  std::vector<NamedTensorRef> params() const;
  // Params and the model's buffers, in buffer order: what a PyTorch state_dict holds.
  std::vector<NamedTensorRef> modelValues() const;
  // Every param and state buffer (what a checkpoint holds), and its inverse: `restore` needs
  // every one of them, with the exact dtype and shape, and sets all or nothing.
  std::vector<NamedTensorRef> persistent() const;
  absl::Status restore(const std::vector<NamedTensor>& tensors);
  // Brings the session's param and state tensors up to date with a device that keeps its own
  // copies (the cuda device); call before reading them. Free on host devices.
  absl::Status syncPersistent() const {
    DeviceResidency* r = executor_->residency();
    return r ? r->downloadPersistent(absl::MakeConstSpan(persistentPtrs_)) : absl::OkStatus();
  }
  // The same for buffer `id` alone (a scalar of state read every step).
  absl::Status syncPersistent(int32_t id) const {
    DeviceResidency* r = executor_->residency();
    return r ? r->downloadPersistent(absl::MakeConstSpan(persistentPtrs_), id) : absl::OkStatus();
  }
  // Bytes of params and state (allocated once, updated in place).
  int64_t persistentBytes() const;

  // Runs entry `name`. `feeds` binds inputs and labels by name (each must be given; shapes must
  // match; floats convert to the buffer's float type and integers to its integer type).
  // Errors name the entry, the step, the op and its source location.
  // With checkNumerics, the first step that produces a NaN or inf in a float result stops the run
  // with an error naming that op and its location (the producer, not its downstream users).
  struct RunOptions {
    int64_t step = 0;  // the dropout RNG's step counter
    bool checkNumerics = false;
    // With checkNumerics: where a non-finite gradient of a loss-scaled step is recorded (it is
    // not an error: the scaler skips the step); null makes it an error like any other.
    GradientOverflow* gradientOverflow = nullptr;
    Communicator* communicator = nullptr;  // data-parallel training: the job's ranks (null: one)
  };
  absl::StatusOr<std::vector<NamedTensor>> run(std::string_view entry,
                                               const std::map<std::string, Tensor>& feeds,
                                               const RunOptions& options);
  absl::StatusOr<std::vector<NamedTensor>> run(std::string_view entry,
                                               const std::map<std::string, Tensor>& feeds) {
    return run(entry, feeds, RunOptions{});
  }

  // Asynchronous calls (the trainer's steps): enqueue starts entry `entry` like run, without
  // waiting for a device with a stream to finish it, and poll delivers each call's scalar log
  // (runtime/exec/ScalarLog.h) in call order, tagged with `ticket`: every finished call, or with
  // `wait` every call. On host devices, and with checkNumerics, the call runs synchronously and
  // its log waits for the next poll. Until a call is delivered, read params and state only
  // through syncPersistent (which waits for the device). The LoggedCall is valid during the call.
  absl::Status enqueue(std::string_view entry, const std::map<std::string, Tensor>& feeds,
                       const RunOptions& options, int64_t ticket);
  absl::Status poll(std::string_view entry, bool wait, absl::FunctionRef<void(const LoggedCall&)> deliver);

  // Profiles `calls` calls of `entry` on `feeds` (PreparedEntry::profile) and then restores params
  // and state to what they were before, so profiling changes no training result.
  absl::StatusOr<EntryProfile> profile(std::string_view entry, const std::map<std::string, Tensor>& feeds,
                                       const RunOptions& options, int calls);

  // The prepared form of an entry, for callers that run it many times without allocating: bind
  // feeds with feedSlots() and call entry->run(args()).
  absl::StatusOr<PreparedEntry*> prepared(std::string_view entry);
  // RunArgs over this session's persistent buffers and the given feeds (indexed by buffer id).
  RunArgs args(absl::Span<const Tensor* const> feeds, const RunOptions& options) const;
  // Per-call memory of every entry prepared so far: what each holds alone, plus what the executor
  // shares among them (Executor::sharedWorkspaceBytes) once.
  int64_t workspaceBytes() const;

 private:
  Session(std::unique_ptr<Plan> plan, std::unique_ptr<Executor> executor)
      : plan_(std::move(plan)), executor_(std::move(executor)) {}
  absl::Status setValues(const std::vector<NamedTensor>& tensors, std::vector<std::string>* loaded,
                         bool modelBuffers);
  // Sets every state initialised as #amp.init<cast, from = P> to P rounded to its dtype.
  absl::Status refreshCasts();
  // Checks and converts `feeds` for the plan's inputs and labels; `bound` is indexed by buffer id.
  absl::Status bindFeeds(const std::map<std::string, Tensor>& feeds, const RunOptions& options,
                         std::vector<Tensor>& converted, std::vector<const Tensor*>& bound) const;
  // Runs a prepared entry on bound feeds; a failed checked call restores params and state.
  absl::Status runBound(PreparedEntry& entry, absl::Span<const Tensor* const> bound, const RunOptions& options);
  // The scalar logs of one entry's calls: its layout, and the logs of synchronous calls not yet polled.
  struct EntryLog {
    const EntryPoint* entry = nullptr;
    ScalarLogLayout layout;
    std::deque<std::pair<int64_t, std::vector<uint8_t>>> ready;
  };
  EntryLog& logOf(std::string_view entry);
  // Plan and tensors live behind pointers that moving the session keeps: prepared entries hold
  // references to the plan and the addresses of the persistent buffers.
  std::unique_ptr<Plan> plan_;
  std::unique_ptr<Executor> executor_;
  std::vector<Tensor> persistent_;         // indexed like plan_->buffers; empty for per-call buffers
  std::vector<Tensor*> persistentPtrs_;    // non-null for params and state
  std::map<std::string, std::unique_ptr<PreparedEntry>, std::less<>> prepared_;
  std::map<std::string, EntryLog, std::less<>> logs_;
};

}  // namespace amp::rt

#endif  // AMP_RUNTIME_EXEC_SESSION_H
