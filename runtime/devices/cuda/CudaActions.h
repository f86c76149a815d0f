// The cuda device's lowering of plan steps to the operations its graph captures: kernel launches
// (generated kernels, the multi-tensor scaler/optimizer kernels), cuBLASLt GEMMs, copies and fills.
// Everything is decided at prepare time: device addresses, launch grids, argument bytes, GEMM
// algorithms, multi-tensor argument blocks; capturing only replays the list. The builder's
// lowering lives in one file per op family, mirroring kernels/*.cu: CudaActions.cpp (dispatch,
// generated kernels, GEMMs), CudaTrainActions.cpp (loss scaling, clipping, optimizers),
// CudaReduceActions.cpp, CudaNormActions.cpp, CudaShapeActions.cpp, CudaLossActions.cpp and
// CudaConvActions.cpp (convolutions and pooling).
#ifndef AMP_RUNTIME_DEVICES_CUDA_CUDAACTIONS_H
#define AMP_RUNTIME_DEVICES_CUDA_CUDAACTIONS_H

#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/devices/cuda/ConvGemm.h"
#include "runtime/devices/cuda/CudaExecutor.h"
#include "runtime/devices/cuda/CudaReport.h"
#include "runtime/devices/cuda/GpuApi.h"
#include "runtime/devices/cuda/GpuCollectives.h"
#include "runtime/plan/Plan.h"

namespace amp::rt::cuda {

// Device and pinned memory owned by an executor or an entry, released with it.
class DeviceMemory {
 public:
  explicit DeviceMemory(GpuApi& api) : api_(api) {}
  ~DeviceMemory();
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  absl::StatusOr<DevicePtr> device(int64_t bytes);
  absl::StatusOr<uint8_t*> pinned(int64_t bytes);

 private:
  GpuApi& api_;
  std::vector<DevicePtr> device_;
  std::vector<void*> pinned_;
};

// The implicit-GEMM convolutions' column workspace (ConvGemm.h), one per executor: every entry's
// graph runs on the executor's one stream, so no two convolutions use it at once. Allocated by the
// first entry that needs it, for the largest pass of any entry of the plan.
struct ConvColumns {
  std::optional<DevicePtr> ptr;
  int64_t bytes = 0;
};

// One captured operation.
struct Action {
  enum class Kind { Launch, Gemm, Copy, Fill, HostToDevice, DeviceToHost, Collective } kind = Kind::Launch;
  // What --profile adds its time to.
  enum class Category { Gemm, Fused, ScalerOptimizer, Other } category = Category::Other;
  static const char* categoryName(Category c);
  std::string what;  // "step 12 amp.linear: gemm 256 x 128 x 784 BIAS", for reports and errors
  // Where it comes from, for errors that must name it (CudaOptions::syncEachLaunch): the kernel
  // ("amp_softmax_f32", "cuBLASLt GEMM 256 x 128 x 784 BIAS"), the step's number in the plan's
  // entry, its op and source location; planStep -1 for the entry's own copies and log.
  std::string kernel;
  int64_t planStep = -1;
  std::string op, loc;
  // "kernel amp_softmax_f32 (plan step 12 'amp.softmax', model.mlir:7:3)", or `what` where no
  // step is known.
  std::string origin() const;
  // Launch: the kernel, its grid and the bytes of each argument in order.
  KernelFn fn = nullptr;
  int64_t blocks = 0, blocksY = 1;
  int threads = 256;
  std::vector<std::vector<uint8_t>> args;
  // Gemm
  GemmId gemm = -1;
  DevicePtr a = 0, b = 0, bias = 0, d = 0, aux = 0;
  // Copy, Fill, HostToDevice, DeviceToHost
  DevicePtr dst = 0, src = 0;
  int64_t bytes = 0;
  uint32_t value = 0;
  uint8_t* host = nullptr;
  // Collective: the call, through the collectives the executor binds before the first capture.
  std::shared_ptr<const CollectiveCall> collective;
  GpuCollectives* const* collectives = nullptr;

  template <class T>
  void arg(const T& v) {
    std::vector<uint8_t> bytesOf(sizeof(T));
    std::memcpy(bytesOf.data(), &v, sizeof(T));
    args.push_back(std::move(bytesOf));
  }
  static Action hostToDevice(DevicePtr dst, uint8_t* host, int64_t bytes, std::string what);
  static Action deviceToHost(uint8_t* host, DevicePtr src, int64_t bytes, std::string what);
  absl::Status enqueue(GpuApi& api);
};

// Lowers the steps of one entry, appending to `actions`.
class ActionBuilder {
 public:
  // `stepWord`: a device int64 holding the call's training step (dropout's RNG counter), written
  // at the start of every replay.
  ActionBuilder(GpuApi& api, const Plan& plan, const EntryPoint& entry, DeviceMemory& memory,
                std::vector<DevicePtr>& ptr, std::vector<Action>& actions, EntryReport& report, DevicePtr stepWord,
                const CudaOptions& options, DeviceMemory& sharedMemory,
                ConvColumns& columns)
      : api_(api), plan_(plan), entry_(entry), memory_(memory), ptr_(ptr), actions_(actions), report_(report),
        stepWord_(stepWord), options_(options), sharedMemory_(sharedMemory), columns_(columns) {}

  // Lowers step `s` (and, for a run of optimizer updates, the updates that follow it). Returns how
  // many steps it consumed, 0 when the device has no kernel for the step's op, or an error for a
  // step it recognises but cannot run as given.
  absl::StatusOr<size_t> lower(size_t s);
  void copy(DevicePtr dst, DevicePtr src, int64_t bytes, std::string what);
  // Where the executor keeps the job's collectives (bound on the first call, before capture).
  void bindCollectives(GpuCollectives* const* slot) { collectives_ = slot; }

 private:
  absl::StatusOr<size_t> lowerStep(size_t s);
  absl::Status generated(size_t s);
  absl::Status gemm(size_t s);
  // A cuBLASLt call of step s, reported as "step N op: <kind>cuBLASLt <type> m x n x k[ in B batches]<detail>".
  void pushGemm(size_t s, GemmId id, const GemmPlan& plan, const std::string& kind, const std::string& detail, DevicePtr a,
                DevicePtr b, DevicePtr bias, DevicePtr d, DevicePtr aux = 0);
  // A GEMM of amp.linear / amp.matmul as the first of its GemmVariants that cuBLASLt has an
  // algorithm for, with the passes that variant adds; a fallback says so once on stderr and in its
  // action. a, b, bias, d: the step's pointers.
  absl::Status gemmWithFallbacks(size_t s, const GemmPlan& planned, bool trainingEpilogue, DevicePtr a, DevicePtr b,
                                 DevicePtr bias, DevicePtr d, DevicePtr aux);
  // One launch of a library kernel over D of `plan` (EpilogueKernels.cu): the bias rows, or the relu.
  absl::Status epiloguePass(size_t s, const std::string& name, const GemmPlan& plan, DevicePtr bias, DevicePtr d);
  // amp.all_reduce, amp.reduce_scatter, amp.all_gather, amp.rank_chunk (CudaCollectiveActions.cpp).
  absl::Status collective(size_t s);
  absl::Status allReduce(size_t s);
  absl::Status chunkCollective(size_t s);
  absl::Status rankChunk(size_t s);
  void pushCollective(size_t s, std::shared_ptr<const CollectiveCall> call, std::string what);
  absl::Status unscaleCheck(size_t s);
  absl::Status globalNorm(size_t s);
  absl::Status gradStats(size_t s);
  absl::Status combineNorm(size_t s, DevicePtr partials, const std::vector<int32_t>& slotRange, DevicePtr out);
  absl::Status clipGrads(size_t s);
  absl::Status scalarKernel(size_t s);
  absl::Status crossEntropy(size_t s);
  absl::Status mseLoss(size_t s);
  absl::Status convOp(size_t s);
  // The implicit-GEMM lowering of convolution step s (ConvGemm.h); declined (not an error) when the
  // lowering refuses it or the bundle's code has no gather kernels.
  absl::StatusOr<bool> convAsGemm(size_t s, const ConvProblem& conv, std::string* declined);
  // The executor's columns workspace (ConvColumns) of at least `needed` bytes, allocated here on
  // first use.
  absl::StatusOr<DevicePtr> convColumns(int64_t needed);
  absl::Status poolOp(size_t s);
  Action elementKernel(const std::string& name, size_t s, int64_t elements, KernelFn fn);
  absl::Status reduce(size_t s);
  absl::Status shapeKernels(size_t s);
  absl::Status normOp(size_t s);
  absl::Status softmaxGrad(size_t s);
  absl::Status batchNorm(size_t s);
  absl::StatusOr<size_t> updates(size_t s);
  absl::StatusOr<KernelFn> kernel(const std::string& name);
  Action launch(const std::string& name, size_t s);
  // A fresh device allocation of `bytes`, counted as scratch.
  absl::StatusOr<DevicePtr> scratch(int64_t bytes);

  GpuApi& api_;
  const Plan& plan_;
  const EntryPoint& entry_;
  DeviceMemory& memory_;
  std::vector<DevicePtr>& ptr_;
  std::vector<Action>& actions_;
  EntryReport& report_;
  DevicePtr stepWord_;
  const CudaOptions& options_;
  DeviceMemory& sharedMemory_;  // the executor's: what outlives this entry
  ConvColumns& columns_;
  GpuCollectives* const* collectives_ = nullptr;
  std::map<std::string, KernelFn> kernels_;
};

}  // namespace amp::rt::cuda

#endif  // AMP_RUNTIME_DEVICES_CUDA_CUDAACTIONS_H
