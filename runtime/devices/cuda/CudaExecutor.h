// The cuda device: the plan's steps as one CUDA Graph per entry, captured on the first call and
// replayed after. Generated kernels (fused regions and lone elementwise ops, compiled by ampc into
// the bundle's cubin/PTX), cuBLASLt GEMMs with bias/relu epilogues, and the multi-tensor
// scaler/optimizer kernels; params and state live in device memory across calls and entries, and
// reach the session's tensors through Executor::downloadPersistent. docs/cuda-device.md.
#ifndef AMP_RUNTIME_DEVICES_CUDA_CUDAEXECUTOR_H
#define AMP_RUNTIME_DEVICES_CUDA_CUDAEXECUTOR_H

#include <memory>
#include <string>
#include <vector>

#include "runtime/devices/cuda/GpuApi.h"
#include "runtime/devices/cuda/GpuCollectives.h"
#include "runtime/exec/Executor.h"

namespace amp::rt {
namespace cuda {

// How the device runs amp.conv2d and its gradients.
enum class ConvAlgorithm {
  // Gathers into column buffers, then one cuBLASLt GEMM each (ConvGemm.h): tensor cores, within
  // summation-order bounds like amp.linear. Grouped convolutions, and weight gradients whose
  // columns exceed convColumnsLimitBytes, run the direct kernels.
  ImplicitGemm,
  // One thread per result element, in the reference's order (kernels/ConvMath.h): its bits, slowly.
  Direct,
};

struct CudaOptions {
  ConvAlgorithm conv = ConvAlgorithm::ImplicitGemm;
  // The most an implicit-GEMM convolution's columns may take. Beyond it the forward and the input
  // gradient run a few images at a time, and a weight gradient runs the direct kernel.
  int64_t convColumnsLimitBytes = int64_t{2} << 30;
  // Faults localised (amp-run --debug-sync, or AMP_CUDA_SYNC_EACH_LAUNCH=1 in the environment):
  // every call runs its operations one by one instead of replaying its graph, and waits after
  // each, so a failing kernel or GEMM is named with its plan step and source location. Slow: for
  // finding a fault, never for timing.
  bool syncEachLaunch = false;
  // Where a data-parallel step's collectives come from (GpuCollectives.h); empty: the default,
  // NCCL for a job of several ranks, plain copies for one.
  CollectivesFactory collectives;
};

// Whether AMP_CUDA_SYNC_EACH_LAUNCH asks for syncEachLaunch ("1", or any value but "" and "0").
bool syncEachLaunchFromEnvironment();

// The cuda device over any GpuApi (the tests pass a recording one).
std::unique_ptr<Executor> makeCudaExecutor(std::unique_ptr<GpuApi> api, CudaOptions options = {});


}  // namespace cuda

// The cuda device on GPU 0, through the NVIDIA driver; a clear error without one.
absl::StatusOr<std::unique_ptr<Executor>> makeCudaExecutor(cuda::CudaOptions options = {});

}  // namespace amp::rt

#endif  // AMP_RUNTIME_DEVICES_CUDA_CUDAEXECUTOR_H
