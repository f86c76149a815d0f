// A GpuApi that runs no kernel: it hands out host memory as "device" memory, performs copies and
// fills (also when a graph replays them, so data paths around the kernels are real), records every call,
// and checks what a GPU would trust blindly: each kernel exists in the bundle's code object, each
// launch passes the parameter sizes its PTX declares (kernelSignatures), each device address a call passes lies inside an allocation of the size it needs, graphs are captured
// once and replayed, and what a GPU refuses during capture is refused. Pointers inside structs
// passed by value are followed through the layouts the code object records. `amp-run --device=cuda --dry-run` prepares and "runs" a bundle through it on
// any machine, printing the operations the GPU would execute; the tests use it to check capture
// order and host synchronisations per step.
#ifndef AMP_RUNTIME_DEVICES_CUDA_DRYRUNAPI_H
#define AMP_RUNTIME_DEVICES_CUDA_DRYRUNAPI_H

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "runtime/devices/cuda/GpuApi.h"

namespace amp::rt::cuda {

class DryRunApi final : public GpuApi {
 public:
  // `gpu` is the GPU to pretend to be (an H200 by default).
  explicit DryRunApi(GpuInfo gpu = h200());
  ~DryRunApi() override;
  static GpuInfo h200();

  const GpuInfo& info() const override { return gpu_; }
  absl::StatusOr<DevicePtr> allocate(int64_t bytes) override;
  void release(DevicePtr p) override;
  absl::StatusOr<void*> allocatePinned(int64_t bytes) override;
  void releasePinned(void* p) override;
  absl::Status loadModule(const std::vector<uint8_t>& image, bool ptx) override;
  absl::StatusOr<KernelFn> function(const std::string& name) override;
  // Parses each `.entry`'s parameter sizes; launches of those kernels must pass exactly them, and
  // every 64-bit scalar parameter holding an address in the range the allocations span must point
  // into a live allocation (or just past its end), so a stale or miswired pointer is caught.
  // Also reads the layouts of the structs kernels take by value, which the code object records
  // (kernels/ParamLayouts.cu): every non-null pointer inside such a parameter must address a live
  // device allocation with room for one pointee.
  void kernelSignatures(const std::vector<uint8_t>& ptx) override;
  absl::Status launch(KernelFn fn, int64_t blocks, int threads, void** params, int64_t blocksY,
                      absl::Span<const size_t> paramBytes) override;
  absl::Status copyToDevice(DevicePtr dst, const void* src, int64_t bytes) override;
  absl::Status copyToHost(void* dst, DevicePtr src, int64_t bytes) override;
  absl::Status copyOnDevice(DevicePtr dst, DevicePtr src, int64_t bytes) override;
  absl::Status fill32(DevicePtr dst, uint32_t value, int64_t count) override;
  absl::StatusOr<GemmId> prepareGemm(const GemmPlan& plan) override;
  absl::Status gemm(GemmId id, DevicePtr a, DevicePtr b, DevicePtr bias, DevicePtr d, DevicePtr aux) override;
  absl::Status beginCapture() override;
  absl::StatusOr<GraphId> endCapture() override;
  absl::Status launchGraph(GraphId graph) override;
  absl::Status recordEvent(int slot) override;
  bool eventDone(int slot) override;
  absl::Status waitEvent(int slot) override;
  absl::Status synchronize() override;
  int64_t hostSyncs() const override { return syncs_; }
  // Timers are recorded, never timed: every interval is 0 ms.
  absl::Status recordTimer(int timer) override;
  absl::StatusOr<float> elapsedMs(int from, int to) override;

  // Every call in order, one line each ("launch amp_mt_adam_f32_none 1x256", "graph 0", "sync").
  const std::vector<std::string>& calls() const { return calls_; }
  void clearCalls() { calls_.clear(); }

  // A kernel fault: after a launch of `kernel` runs (at once outside capture, at each replay of a
  // graph that captured it), the next synchronize or waitEvent fails as a GPU's would, with no
  // kernel named ("the GPU's work failed: CUDA_ERROR_ILLEGAL_ADDRESS"); empty: no fault.
  void failAfterLaunch(std::string kernel) { faultKernel_ = std::move(kernel); }
  // An algorithm cuBLASLt's heuristic does not find: prepareGemm refuses each plan `unavailable`
  // holds for with DriverApi's error (noGemmAlgorithm).
  void algorithmUnavailable(std::function<bool(const GemmPlan&)> unavailable) { unavailable_ = std::move(unavailable); }
  int64_t graphsCaptured() const { return static_cast<int64_t>(graphs_.size()); }
  int64_t graphLaunches() const { return graphLaunches_; }
  // Device memory allocated and not released, in bytes.
  int64_t deviceBytesInUse() const { return deviceBytes_; }
  // Kernels whose launches are checked against their PTX parameter lists.
  size_t signaturesKnown() const { return signatures_.size(); }
  // By-value struct layouts the code object recorded.
  size_t structLayoutsKnown() const { return layouts_.size(); }
  // A struct passed by value, from the code object's record: each pointer field is a
  // rows x columns array of pointers to `pointee` bytes each.
  struct StructLayout {
    struct Field {
      std::string name;
      int64_t offset = 0, rows = 1, columns = 1, pointee = 1;
    };
    std::string name;
    std::vector<Field> fields;
  };
  // The recorded struct of `bytes` bytes; null when none is.
  const StructLayout* structLayoutOfSize(size_t bytes) const {
    auto it = layouts_.find(bytes);
    return it == layouts_.end() ? nullptr : &it->second;
  }
  // cuBLASLt's workspace, as the driver allocates it when the device opens: 32 MiB on Hopper, 4
  // MiB before it. The dry run reserves it with the code object, in deviceBytesInUse.
  int64_t workspaceBytes() const { return gpu_.ccMajor >= 9 ? int64_t{32} << 20 : int64_t{4} << 20; }

  // A GPU that lags behind the host, whose clock is the host's queries: an event completes once
  // `queries` calls of eventDone (on any event) have answered since it was recorded, or once
  // waitEvent or synchronize waits for it (`queries` < 0: only then, a GPU that never catches
  // up). A copy into page-locked memory lands when an event recorded after it completes, so a
  // host that reads a slot before its event reads what was there before. 0 (the default): every
  // event is done at its first query.
  void lagEvents(int queries) { eventLag_ = queries; }

 private:
  // Host memory standing in for device or pinned memory (device memory counts against the GPU's).
  absl::StatusOr<DevicePtr> hostAllocate(int64_t bytes);
  // Whether [p, p + bytes) lies inside one live allocation.
  bool inside(DevicePtr p, int64_t bytes) const;
  absl::Status record(std::string call);
  absl::Status checkRange(const std::string& what, DevicePtr p, int64_t bytes) const;
  // Whether [p, p + bytes) lies inside one live device (not page-locked) allocation.
  bool insideDevice(DevicePtr p, int64_t bytes) const;
  // Whether host memory [p, p + bytes) is page-locked: an allocatePinned block.
  bool pinned(const void* p, int64_t bytes) const;
  // What the GPU refuses while a stream captures (a pageable copy, an allocation, a free).
  absl::Status refusedInCapture(const std::string& call) const;
  // The pointers inside by-value struct parameter `k` of kernel `name`.
  absl::Status checkStructPointers(const std::string& name, size_t k, const void* value, size_t bytes) const;
  void completeEvent(int slot);
  void readStructLayouts(const std::string& ptx);
  // A copy or fill on device memory: done now, or at each replay of the graph being captured.
  struct MemoryOp {
    bool fill = false;
    DevicePtr dst = 0, src = 0;
    int64_t bytes = 0;
    uint32_t value = 0;
  };
  void memoryOp(const MemoryOp& op);
  static void perform(const MemoryOp& op);

  GpuInfo gpu_;
  std::map<DevicePtr, int64_t> allocations_;  // start -> bytes
  std::set<DevicePtr> deviceAllocations_;     // those standing for device memory
  int64_t deviceBytes_ = 0;
  std::string image_;                         // the loaded code object
  bool ptx_ = false;
  bool loaded_ = false;
  std::map<std::string, int> functions_;      // name -> index into names_
  std::vector<std::string> names_;
  std::map<std::string, std::vector<size_t>> signatures_;  // kernel -> parameter bytes, from the PTX
  std::map<std::string, std::vector<char>> scalar64_;      // kernel -> which parameters are one .u64/.b64/.s64
  std::map<std::string, std::vector<char>> byValue_;       // kernel -> which parameters are .b8 arrays (structs)
  std::map<size_t, StructLayout> layouts_;  // by the struct's size, unique among them
  std::vector<GemmPlan> gemms_;
  bool capturing_ = false;
  std::vector<std::string> capture_;
  std::vector<std::vector<std::string>> graphs_;
  std::vector<MemoryOp> captureMemory_;
  std::vector<std::vector<MemoryOp>> graphMemory_;
  int64_t graphLaunches_ = 0, syncs_ = 0;
  absl::Status captureError_;  // a free during capture, reported by endCapture
  bool workspaceReserved_ = false;
  // Lagging events: per slot the query count and the stream position it was recorded at; copies
  // into page-locked memory waiting for one.
  int eventLag_ = 0;
  int64_t queries_ = 0;
  struct PendingEvent {
    int64_t recordedAtQuery = 0;
    int64_t position = 0;
  };
  std::map<int, PendingEvent> pendingEvents_;
  struct PendingCopy {
    int64_t position = 0;
    void* dst = nullptr;
    std::vector<uint8_t> bytes;  // what the stream read from the device at its turn
  };
  std::vector<PendingCopy> pendingCopies_;
  int64_t streamPosition_ = 0;
  std::vector<char> timers_;  // recorded timers
  std::vector<std::string> calls_;
  // The simulated faults: failAfterLaunch's kernel, and the fault waiting for the next wait.
  std::string faultKernel_, pendingFault_;
  void ranKernel(const std::string& name);
  absl::Status reportFault();
  std::function<bool(const GemmPlan&)> unavailable_;
};

}  // namespace amp::rt::cuda

#endif  // AMP_RUNTIME_DEVICES_CUDA_DRYRUNAPI_H
