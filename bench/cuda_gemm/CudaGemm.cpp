// amp-bench-cuda-gemm: TFLOP/s of the cuda device's own GEMM path (cuBLASLt through
// runtime/devices/cuda/GpuApi.h, the algorithm its heuristic picks, the device's workspace) at
// N x N x N in bf16 and f16 with f32 accumulation, for bench/cuda_step.py and
// scripts/gpu-check.sh to put next to PyTorch's matmul measured in the same run. JSON lines.
// Without a GPU it says why and exits 77 (skipped).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "runtime/devices/cuda/GpuApi.h"
#include "runtime/devices/cuda/GemmPlan.h"

using namespace amp::rt;
using namespace amp::rt::cuda;

int main(int argc, char** argv) {
  int64_t n = 4096;
  int reps = 50;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--size=", 0) == 0) n = std::atoll(a.c_str() + 7);
    if (a.rfind("--reps=", 0) == 0) reps = std::atoi(a.c_str() + 7);
  }
  auto api = openDriverApi(0);
  if (!api.ok()) {
    std::fprintf(stderr, "amp-bench-cuda-gemm: %s\n", std::string(api.status().message()).c_str());
    return 77;
  }
  GpuApi& gpu = **api;
  std::printf("{\"kind\":\"env\",\"gpu\":\"%s\",\"sm\":%d%d,\"driver\":%d}\n", gpu.info().name.c_str(), gpu.info().ccMajor,
              gpu.info().ccMinor, gpu.info().driverVersion);
  for (DType t : {DType::BF16, DType::F16}) {
    GemmProblem p;
    p.dtype = t;
    p.a = {n, n};
    p.b = {n, n};
    auto plan = planGemm(p);
    auto id = plan.ok() ? gpu.prepareGemm(*plan) : absl::StatusOr<GemmId>(plan.status());
    auto a = gpu.allocate(2 * n * n), b = gpu.allocate(2 * n * n), d = gpu.allocate(2 * n * n);
    if (!id.ok() || !a.ok() || !b.ok() || !d.ok()) {
      std::fprintf(stderr, "amp-bench-cuda-gemm: %s\n", std::string((!id.ok() ? id.status() : a.status()).message()).c_str());
      return 1;
    }
    // Small finite values (0x3c00 is 1 in f16, 0x3f80 in bf16, halved by the exponent bit flip):
    // zeros would flatter the tensor cores' power draw.
    (void)gpu.fill32(*a, t == DType::F16 ? 0x38003400u : 0x3f003e80u, n * n / 2);
    (void)gpu.fill32(*b, t == DType::F16 ? 0x34003800u : 0x3e803f00u, n * n / 2);
    for (int w = 0; w < 5; ++w) (void)gpu.gemm(*id, *a, *b, 0, *d, 0);
    if (auto s = gpu.synchronize(); !s.ok()) {
      std::fprintf(stderr, "amp-bench-cuda-gemm: %s\n", std::string(s.message()).c_str());
      return 1;
    }
    const auto start = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) (void)gpu.gemm(*id, *a, *b, 0, *d, 0);
    if (auto s = gpu.synchronize(); !s.ok()) return 1;
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / reps;
    std::printf("{\"kind\":\"gemm\",\"impl\":\"ampc\",\"dtype\":\"%s\",\"n\":%lld,\"ms\":%.4f,\"tflops\":%.1f}\n",
                t == DType::BF16 ? "bf16" : "f16", static_cast<long long>(n), seconds * 1e3,
                2.0 * n * n * n / seconds / 1e12);
    gpu.release(*a);
    gpu.release(*b);
    gpu.release(*d);
  }
  return 0;
}
