// The cuda device's prepare and capture on hostile bundles, without a GPU: readBundle, then a
// session on the cuda device over the simulated GPU (DryRunApi), prepare of every entry (per-step
// validation, code object and kernel lookup, the cuBLASLt GEMM mapping, the implicit-GEMM
// convolution lowering, the gradient pipeline, memory layout), then two calls of each entry with
// zero inputs: the first captures the graph, the second replays it. The simulated GPU checks what a
// real one would trust blindly (each address range a copy, fill or GEMM touches, each launch's
// parameter sizes against the PTX), and it performs the copies and fills on host memory, so ASan
// sees any write the checks let through. Mutations: the structure-aware plan mutator
// (fuzz/PlanMutator.h). Seeds: bundles ampc compiles for cuda:sm_90 and cuda:sm_80.
#include <map>

#include "fuzz/FuzzCommon.h"
#include "fuzz/PlanMutator.h"
#include "runtime/devices/cuda/CudaExecutor.h"
#include "runtime/devices/cuda/DryRunApi.h"
#include "runtime/exec/Session.h"
#include "runtime/plan/Bundle.h"

namespace {

using namespace amp::rt;

// As bundle-plan: the seeds need a few MiB; a plan above this is refused before anything else.
constexpr int64_t kPlanMemoryLimit = int64_t{16} << 20;
// The simulated GPU's memory: the executor's own buffers (columns, cuBLASLt workspace, logs)
// beyond it are a GPU out-of-memory error, a path worth reaching, not the fuzzer's RSS limit.
constexpr int64_t kGpuMemory = int64_t{256} << 20;

// One of three device configurations, chosen by the input's last byte so that a crash reproduces:
// the default implicit-GEMM convolutions, the same under a 4 KiB columns limit (chunked passes and
// weight gradients falling back to the direct kernel), and the direct kernels only. The seeds
// include a bundle compiled with `ampc --gemm-epilogues=cublaslt` (amp.gemm_epilogue steps).
cuda::CudaOptions optionsFor(const uint8_t* data, size_t size) {
  cuda::CudaOptions options;
  switch (size == 0 ? 0 : data[size - 1] % 3) {
    case 1: options.convColumnsLimitBytes = 4096; break;
    case 2: options.conv = cuda::ConvAlgorithm::Direct; break;
    default: break;
  }
  return options;
}

void checkCudaBundle(const std::string& path, const cuda::CudaOptions& options) {
  auto plan = readBundle(path);
  if (!plan.ok()) return;
  cuda::GpuInfo gpu = cuda::DryRunApi::h200();
  gpu.memoryBytes = kGpuMemory;
  auto session = Session::create(*plan, cuda::makeCudaExecutor(std::make_unique<cuda::DryRunApi>(gpu), options),
                                 kPlanMemoryLimit);
  if (!session.ok()) return;
  std::map<std::string, Tensor> feeds;
  for (const BufferDesc& b : session->plan().buffers)
    if (b.kind == BufferKind::Input || b.kind == BufferKind::Label) feeds.emplace(b.name, Tensor(b.dtype, b.shape));
  for (const EntryPoint& e : session->plan().entries) {
    if (!session->prepared(e.name).ok()) continue;
    if (session->run(e.name, feeds).ok()) (void)session->run(e.name, feeds);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static amp::fuzz::MemFile file;
  checkCudaBundle(file.set(data, size), optionsFor(data, size));
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t maxSize, unsigned int seed) {
  return amp::fuzz::mutateBundlePlan(data, size, maxSize, seed);
}
