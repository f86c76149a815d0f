// What the CUDA device asks of the GPU, as one narrow interface: memory, the bundle's code object,
// stream-ordered work (kernels, copies, fills, cuBLASLt GEMMs), graph capture and replay, and
// completion events. The real implementation (DriverApi.cpp) loads the NVIDIA driver and cuBLASLt
// at run time, so amp-run has no CUDA dependency until --device=cuda; the tests drive the executor
// through a recording implementation, which is how capture order and host synchronisations are
// checked without a GPU. All stream-ordered calls are asynchronous: their errors may surface at
// the next synchronize().
#ifndef AMP_RUNTIME_DEVICES_CUDA_GPUAPI_H
#define AMP_RUNTIME_DEVICES_CUDA_GPUAPI_H

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/devices/cuda/CodeSelect.h"
#include "runtime/devices/cuda/GemmPlan.h"

namespace amp::rt::cuda {

using DevicePtr = uint64_t;  // a device address (CUdeviceptr)
using KernelFn = void*;      // a loaded kernel (CUfunction)
using GemmId = int32_t;      // a prepared cuBLASLt matmul (descriptors and algorithm)
using GraphId = int32_t;     // an instantiated CUDA graph

class GpuApi {
 public:
  virtual ~GpuApi() = default;
  virtual const GpuInfo& info() const = 0;

  // Device memory, 256-byte aligned; page-locked host memory for asynchronous copies.
  virtual absl::StatusOr<DevicePtr> allocate(int64_t bytes) = 0;
  virtual void release(DevicePtr p) = 0;
  virtual absl::StatusOr<void*> allocatePinned(int64_t bytes) = 0;
  virtual void releasePinned(void* p) = 0;

  // Loads the bundle's code object (a cubin, or PTX for the driver to JIT); one per device.
  virtual absl::Status loadModule(const std::vector<uint8_t>& image, bool ptx) = 0;
  virtual absl::StatusOr<KernelFn> function(const std::string& name) = 0;

  // The PTX of the loaded code object (its text: each kernel's `.entry` parameter list), which
  // the recording implementation checks every launch's argument sizes against. The driver needs
  // nothing of it.
  virtual void kernelSignatures(const std::vector<uint8_t>& ptx) { (void)ptx; }

  // Stream-ordered work. `params` is cuLaunchKernel's array of pointers to the argument values,
  // `paramBytes` their sizes. blocksY: a second grid dimension (1 for every kernel but
  // embedding_grad's row chunks).
  virtual absl::Status launch(KernelFn fn, int64_t blocks, int threads, void** params, int64_t blocksY,
                              absl::Span<const size_t> paramBytes) = 0;
  virtual absl::Status copyToDevice(DevicePtr dst, const void* src, int64_t bytes) = 0;
  virtual absl::Status copyToHost(void* dst, DevicePtr src, int64_t bytes) = 0;
  virtual absl::Status copyOnDevice(DevicePtr dst, DevicePtr src, int64_t bytes) = 0;
  virtual absl::Status fill32(DevicePtr dst, uint32_t value, int64_t count) = 0;
  // cuBLASLt: descriptors, layouts and the heuristic's algorithm are decided here, once per shape;
  // gemm() only enqueues. a and b are the step's operands (GemmPlan swaps them for cuBLASLt);
  // `bias` is the bias read or the bias gradient written, `aux` the epilogue's auxiliary matrix
  // (GemmPlan.h), each 0 when the plan's epilogue has none.
  virtual absl::StatusOr<GemmId> prepareGemm(const GemmPlan& plan) = 0;
  virtual absl::Status gemm(GemmId id, DevicePtr a, DevicePtr b, DevicePtr bias, DevicePtr d, DevicePtr aux) = 0;

  // The CUstream that stream-ordered work goes to, for a library that enqueues its own kernels
  // there (NCCL: captured into the step's graph with the rest); null where there is none (the dry
  // run).
  virtual void* nativeStream() { return nullptr; }

  // Everything enqueued between beginCapture and endCapture becomes one graph, replayed as a
  // single launch.
  virtual absl::Status beginCapture() = 0;
  virtual absl::StatusOr<GraphId> endCapture() = 0;
  virtual absl::Status launchGraph(GraphId graph) = 0;

  // Completion: an event per slot of the logging ring (runtime/devices/cuda/LogRing.h).
  virtual absl::Status recordEvent(int slot) = 0;
  virtual bool eventDone(int slot) = 0;
  virtual absl::Status waitEvent(int slot) = 0;  // blocks: counted in hostSyncs
  virtual absl::Status synchronize() = 0;        // blocks: counted in hostSyncs
  virtual int64_t hostSyncs() const = 0;

  // Profiling (--profile): timing events recorded on the stream, outside any capture; elapsedMs
  // reads the device time between two of them once both have completed.
  virtual absl::Status recordTimer(int timer) = 0;
  virtual absl::StatusOr<float> elapsedMs(int from, int to) = 0;
};

// The GPU `ordinal` through the NVIDIA driver (libcuda.so.1) and cuBLASLt, both loaded at run
// time. A machine without the driver or a GPU, or a build without the CUDA toolkit, gets an error
// that says so and what to use instead.
absl::StatusOr<std::unique_ptr<GpuApi>> openDriverApi(int ordinal = 0);

}  // namespace amp::rt::cuda

#endif  // AMP_RUNTIME_DEVICES_CUDA_GPUAPI_H
