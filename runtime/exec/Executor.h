// The interface every device implements. A device prepares each entry point of a plan once
// (resolving steps to kernels, decoding attributes, planning and allocating its workspace) and
// then runs it many times. Run phases of fast devices do no heap allocation and no string or map
// lookup; the reference device keeps its op-by-op interpreter behind the same interface.
#ifndef AMP_RUNTIME_EXEC_EXECUTOR_H
#define AMP_RUNTIME_EXEC_EXECUTOR_H

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/Tensor.h"
#include "runtime/exec/NumericsCheck.h"
#include "runtime/plan/Plan.h"

namespace amp::rt {

class Communicator;

enum class Device { Reference, Cpu, Cuda };
std::string_view deviceName(Device d);
absl::StatusOr<Device> parseDevice(std::string_view name);

// What one call of an entry sees. Both spans are indexed by buffer id and sized like the plan's
// buffers. `persistent[i]` is non-null for every param and state buffer: the session owns them,
// their storage never moves, and an entry's updates are written into them. `feeds[i]` is
// non-null for every input and label, already of the buffer's dtype and shape.
struct RunArgs {
  absl::Span<Tensor* const> persistent;
  absl::Span<const Tensor* const> feeds;
  int64_t step = 0;            // training step: the high half of the dropout RNG counter
  bool checkNumerics = false;  // stop at the first step producing NaN/inf, naming it
  // With checkNumerics: a non-finite gradient of a loss-scaled step is recorded here instead of
  // stopping the run (runtime/exec/NumericsCheck.h).
  GradientOverflow* gradientOverflow = nullptr;
  // The data-parallel job the entry's amp.all_reduce steps run in; null: one rank.
  Communicator* communicator = nullptr;
};

// Where one call of an entry spends its device time (PreparedEntry::profile), by category of
// operation: "GEMM", "fused" (generated kernels), "scaler/optimizer", "other" (library kernels,
// copies, fills).
struct EntryProfile {
  struct Category {
    std::string name;
    double ms = 0;           // per call: the median over the profiled calls
    int64_t operations = 0;  // per call
  };
  std::vector<Category> categories;
  double callMs = 0;  // one call as it normally runs (the cuda device: its graph), median
  int calls = 0;
};

class PreparedEntry {
 public:
  virtual ~PreparedEntry() = default;
  // Runs every step. Persistent updates are all-or-nothing: when run returns an error, no param
  // or state buffer has changed.
  virtual absl::Status run(const RunArgs& args) = 0;
  // Result r of the last successful run, with the plan's dtype and shape for that buffer.
  // Valid until the next run.
  virtual const void* resultData(size_t r) const = 0;
  // Bytes of per-call memory this entry holds (its arena), as allocated.
  virtual int64_t workspaceBytes() const = 0;

  // Asynchronous calls, on a device with a stream (cuda); host devices keep the defaults and the
  // session runs them synchronously behind the same interface (Session::enqueue).
  // enqueue starts a call and returns without waiting for the device. The call's scalar log
  // (runtime/exec/ScalarLog.h, in scalarLogLayout's layout) is delivered later by poll, in call
  // order, tagged with `ticket`; resultData is not set by an enqueued call. poll delivers every
  // finished call without blocking, or with `wait` every call still in flight. An error of an
  // enqueued call surfaces at a later poll.
  virtual bool asynchronous() const { return false; }
  using LogSink = absl::FunctionRef<void(int64_t ticket, absl::Span<const uint8_t> log)>;
  virtual absl::Status enqueue(const RunArgs& args, int64_t ticket) {
    (void)args;
    (void)ticket;
    return absl::UnimplementedError("this device runs calls synchronously");
  }
  virtual absl::Status poll(bool wait, LogSink deliver) {
    (void)wait;
    (void)deliver;
    return absl::OkStatus();
  }
  // Runs `calls` profiled calls and times their operations. They change params and state like
  // any call; Session::profile puts the session's values back.
  virtual absl::StatusOr<EntryProfile> profile(const RunArgs& args, int calls) {
    (void)args;
    (void)calls;
    return absl::UnimplementedError("this device has no profiler (--profile is for --device=cuda)");
  }
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual Device device() const = 0;
  // One line for logs: the device, its ISA and libraries ("cpu: avx512_bf16 amx_bf16, 2 threads").
  virtual std::string description() const = 0;
  // Validates the entry against the plan (buffer ids, operand counts, dtypes and shapes for each
  // step's kind) and prepares it. A malformed plan gets an error naming the entry, the step, its
  // op and location; nothing runs before prepare has accepted the whole entry.
  virtual absl::StatusOr<std::unique_ptr<PreparedEntry>> prepare(const Plan& plan,
                                                                 const EntryPoint& entry) = 0;
  // A device that keeps params and state in its own memory (cuda) copies its newer values into
  // the session's tensors here; the session calls it before anything reads them (checkpoints,
  // logs of state, gathers). `only` >= 0 copies that buffer alone (a logged scalar). Host devices
  // update those tensors in place and have nothing to do.
  virtual absl::Status downloadPersistent(absl::Span<Tensor* const> persistent, int32_t only = -1) {
    (void)persistent;
    (void)only;
    return absl::OkStatus();
  }
  // The session replaced persistent values (params loaded, a checkpoint restored, a profile
  // undone), having first synced them: a device holding its own copies uploads them before its
  // next run, and its own values are no longer the newer ones.
  virtual void persistentChanged() {}
  // Times the host has waited for the device so far (a device with a stream: stream
  // synchronisations and event waits; host devices never wait for anything).
  virtual int64_t hostSyncs() const { return 0; }
};

}  // namespace amp::rt

#endif  // AMP_RUNTIME_EXEC_EXECUTOR_H
