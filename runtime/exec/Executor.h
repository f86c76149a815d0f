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
// operation. The cuda device: "GEMM", "fused" (generated kernels), "scaler/optimizer", "other"
// (library kernels, copies, fills). The host devices (cpu, reference) time every step
// (runtime/exec/StepProfile.h) and add the GEMM and convolution FLOPs and the slowest steps.
struct EntryProfile {
  struct Category {
    std::string name;
    double ms = 0;           // per call: the median over the profiled calls
    int64_t operations = 0;  // per call
    double gflop = 0;        // per call: GEMM and convolution arithmetic (2 flops a multiply-add); 0 where not counted
    double mbytes = 0;       // per call, host devices: each step's operands read once and results written once (stepBytes)
  };
  struct Step {
    size_t index = 0;      // in the entry
    std::string op, loc;   // "amp.conv2d", its source location
    std::string category;  // one of `categories`
    double ms = 0;         // median over the profiled calls
    double gflop = 0;
    double mbytes = 0;     // stepBytes / 1e6
  };
  // Steps of one op name ("amp.layer_norm", "amp.fused"), summed: where a category's time goes.
  struct Op {
    std::string op, category;
    int64_t steps = 0;
    double ms = 0, gflop = 0, mbytes = 0;  // per call, summed over its steps
  };
  std::vector<Category> categories;
  std::vector<Op> ops;        // every op name that ran, slowest first (host devices)
  std::vector<Step> slowest;  // the slowest steps, slowest first (host devices)
  double callMs = 0;  // one call as it normally runs (the cuda device: its graph), median
  int calls = 0;
  // The cpu device: a STREAM-like copy's GB/s (bytes read + written) with the device's threads,
  // the floor each step's bytes are measured against; 0 where not measured.
  double copyGbPerS = 0;
};

// Calls that start on a device stream and return without waiting (the cuda device).
class AsyncEntry {
 public:
  virtual ~AsyncEntry() = default;
  // enqueue starts a call. Its scalar log (runtime/exec/ScalarLog.h, in scalarLogLayout's layout)
  // is delivered later by poll, in call order, tagged with `ticket`; resultData is not set by an
  // enqueued call. poll delivers every finished call without blocking, or with `wait` every call
  // still in flight. An error of an enqueued call surfaces at a later poll.
  using LogSink = absl::FunctionRef<void(int64_t ticket, absl::Span<const uint8_t> log)>;
  virtual absl::Status enqueue(const RunArgs& args, int64_t ticket) = 0;
  virtual absl::Status poll(bool wait, LogSink deliver) = 0;
};

// Timing of an entry's operations (--profile).
class EntryProfiler {
 public:
  virtual ~EntryProfiler() = default;
  // Runs `calls` profiled calls and times their operations. They change params and state like
  // any call; Session::profile puts the session's values back.
  virtual absl::StatusOr<EntryProfile> profile(const RunArgs& args, int calls) = 0;
};

// Params and state resident in the device's own memory (the cuda device), kept in step with the
// session's tensors.
class DeviceResidency {
 public:
  virtual ~DeviceResidency() = default;
  // Copies the device's newer values into the session's tensors; the session calls it before
  // anything reads them (checkpoints, logs of state, gathers). `only` >= 0 copies that buffer
  // alone (a logged scalar).
  virtual absl::Status downloadPersistent(absl::Span<Tensor* const> persistent, int32_t only = -1) = 0;
  // The session replaced persistent values (params loaded, a checkpoint restored, a profile
  // undone), having first synced them: the device uploads them before its next run.
  virtual void persistentChanged() = 0;
  // Times the host has waited for the device so far (stream synchronisations and event waits).
  virtual int64_t hostSyncs() const = 0;
};

// A count a device keeps about an entry, by the name reports print ("generated kernels": 12).
struct ReportCount {
  std::string name;
  int64_t value = 0;
};

// What prepare decided for one entry, for reports, the dry run and tests. Every device fills the
// common part; what only one device knows goes in `counts`, under names that device declares
// (runtime/devices/cuda/CudaReport.h, runtime/devices/cpu/CpuReport.h), so a device adds a count
// without touching this struct or anyone who prints it.
struct EntryReport {
  int64_t steps = 0;
  // This entry's own needs, also where its device shares the arena (cpu: what it needs of it).
  int64_t arenaBytes = 0, scratchBytes = 0;
  int64_t referenceSteps = 0;             // steps run on the oracle's kernels (the reference: all)
  std::vector<std::string> referenceOps;  // their ops
  std::vector<ReportCount> counts;        // in the order the device declared them
  std::string code;                  // the code object chosen ("sm_90 cubin"); empty where none
  std::vector<std::string> actions;  // one line per operation the device captured, in order

  // Adds `n` to count `name`, declaring it (last in order) if new; n = 0 declares it.
  void add(std::string_view name, int64_t n = 1);
  // Count `name`, 0 where the device keeps none.
  int64_t count(std::string_view name) const;
  // "12 generated kernels, 3 cuBLASLt GEMMs, ...": every count in order.
  std::string countsText() const;
};

class PreparedEntry {
 public:
  virtual ~PreparedEntry() = default;
  // Runs every step. Persistent updates are all-or-nothing: when run returns an error, no param
  // or state buffer has changed.
  virtual absl::Status run(const RunArgs& args) = 0;
  // Result r of the last successful run, with the plan's dtype and shape for that buffer.
  // Valid until the next run of any entry of the same executor (on the cpu device the entries
  // share one arena): read it right after the run, as Session does.
  virtual const void* resultData(size_t r) const = 0;
  // Bytes of per-call memory this entry holds alone, as allocated: its arena on devices that give
  // each entry one (reference, cuda), private step scratch, decoded constants. Memory its
  // executor shares among entries is Executor::sharedWorkspaceBytes.
  virtual int64_t workspaceBytes() const = 0;
  // What prepare decided.
  virtual const EntryReport& report() const = 0;

  // Capabilities this entry's device declares; null where it has none (host devices: reference,
  // cpu). The session runs calls synchronously behind the same interface where there is no
  // AsyncEntry (Session::enqueue).
  virtual AsyncEntry* async() { return nullptr; }
  virtual EntryProfiler* profiler() { return nullptr; }
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
  // Where params and state live between calls: null for a device that updates the session's own
  // tensors in place (reference, cpu); a device holding copies in its own memory (cuda) declares it.
  virtual DeviceResidency* residency() { return nullptr; }
  virtual const DeviceResidency* residency() const { return nullptr; }
  // Per-call memory shared by every entry prepared so far, counted once (the cpu device: one
  // arena sized for the largest entry, since entries run one at a time and an arena holds nothing
  // between calls); 0 where each entry holds its own.
  virtual int64_t sharedWorkspaceBytes() const { return 0; }
};

}  // namespace amp::rt

#endif  // AMP_RUNTIME_EXEC_EXECUTOR_H
