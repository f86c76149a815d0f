// The cpu device's run phase allocates nothing: the MLP's train_step (compiled by ampc at build
// time) runs 100 times after warm-up while every malloc in the process is counted. The only
// allocations allowed are oneDNN's own per-execute bookkeeping (its argument map, inside
// dnnl_primitive_execute), measured here on a bare Gemm::run and multiplied by the step's GEMMs.
#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <random>

#include "gtest/gtest.h"
#include "runtime/devices/cpu/CpuExecutor.h"
#include "runtime/devices/cpu/Gemm.h"
#include "runtime/exec/Session.h"
#include "runtime/plan/Bundle.h"

extern "C" void* __libc_malloc(size_t);
extern "C" void* __libc_calloc(size_t, size_t);
extern "C" void* __libc_realloc(void*, size_t);
extern "C" void* __libc_memalign(size_t, size_t);

static std::atomic<long> gAllocations{0};

// Interposes the C allocator for the whole process (operator new, oneDNN and libgomp included).
extern "C" void* malloc(size_t n) {
  gAllocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_malloc(n);
}
extern "C" void* calloc(size_t n, size_t size) {
  gAllocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_calloc(n, size);
}
extern "C" void* realloc(void* p, size_t n) {
  gAllocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_realloc(p, n);
}
extern "C" void* aligned_alloc(size_t alignment, size_t n) {
  gAllocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_memalign(alignment, n);
}
extern "C" int posix_memalign(void** out, size_t alignment, size_t n) {
  gAllocations.fetch_add(1, std::memory_order_relaxed);
  *out = __libc_memalign(alignment, n);
  return *out ? 0 : 12;  // ENOMEM
}

namespace amp::rt {
namespace {

long countAllocations(const std::function<void()>& body) {
  long before = gAllocations.load();
  body();
  return gAllocations.load() - before;
}

TEST(CpuAllocations, TrainStepAllocatesNothingAfterWarmUp) {
  for (const char* precision : {"f32", "bf16", "f16"}) {
    SCOPED_TRACE(precision);
    std::string path = std::string(AMP_TEST_BUNDLE_DIR) + "/mlp_" + precision + ".ampx";
    if (!std::ifstream(path)) GTEST_SKIP() << path << " was not built (the compiler is off in this build)";
    auto plan = readBundle(path);
    ASSERT_TRUE(plan.ok()) << plan.status();
    int64_t matmuls = 0;
    for (const PlanStep& s : plan->findEntry("train_step")->steps) matmuls += s.op == "amp.matmul";
    auto session = Session::create(std::move(*plan), Device::Cpu);
    ASSERT_TRUE(session.ok()) << session.status();
    const Plan& p = session->plan();
    std::vector<Tensor> storage(p.buffers.size());
    std::vector<const Tensor*> feeds(p.buffers.size(), nullptr);
    std::mt19937 rng(7);
    for (size_t i = 0; i < p.buffers.size(); ++i) {
      const BufferDesc& b = p.buffers[i];
      if (b.kind != BufferKind::Input && b.kind != BufferKind::Label) continue;
      storage[i] = Tensor(b.dtype, b.shape);
      for (int64_t k = 0; k < b.numel(); ++k) {
        if (b.dtype == DType::I64) storage[i].as<int64_t>()[k] = rng() % 10;
        else storage[i].as<float>()[k] = static_cast<float>(rng() % 256) / 255.0f;
      }
      feeds[i] = &storage[i];
    }
    auto entry = session->prepared("train_step");
    ASSERT_TRUE(entry.ok()) << entry.status();
    const cpu::EntryReport* report = cpu::reportOf(**entry);
    ASSERT_NE(report, nullptr);
    EXPECT_EQ(report->referenceSteps, 0);
    Session::RunOptions options;
    RunArgs args = session->args(feeds, options);
    for (int warm = 0; warm < 3; ++warm) ASSERT_TRUE((*entry)->run(args).ok());

    // oneDNN's bookkeeping per execute, measured on a bare GEMM of the same kind.
    cpu::GemmDesc desc{p.buffers[0].dtype == DType::F32 && std::string(precision) == "f32" ? DType::F32 : DType::BF16,
                       {128, 256}, {256, 256}};
    if (std::string(precision) == "f16") desc.dtype = DType::F16;
    auto gemm = cpu::Gemm::create(desc, cpu::CpuFeatures::host());
    ASSERT_TRUE(gemm.ok());
    Tensor a(desc.dtype, desc.a), b(desc.dtype, desc.b), c(desc.dtype, {128, 256});
    std::vector<uint8_t> scratch((*gemm)->scratchBytes() + 64);
    void* aligned = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(scratch.data()) + 63) & ~uintptr_t{63});
    (*gemm)->run(a.data(), b.data(), c.data(), aligned);
    const long perGemm = countAllocations([&] { (*gemm)->run(a.data(), b.data(), c.data(), aligned); });

    long during = 0;
    for (int step = 0; step < 100; ++step) {
      args.step = step;
      during += countAllocations([&] { ASSERT_TRUE((*entry)->run(args).ok()); });
    }
    std::printf("[%s] %ld allocations in 100 steps; oneDNN execute: %ld per GEMM x %lld GEMMs per step\n", precision,
                during, perGemm, static_cast<long long>(matmuls));
    EXPECT_EQ(during, 100 * perGemm * matmuls) << "the executor itself allocated in steady state";
  }
}

}  // namespace
}  // namespace amp::rt
