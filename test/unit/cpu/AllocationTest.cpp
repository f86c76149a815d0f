// The cpu device's run phase allocates nothing: the train_step of the MLP and of the transformer
// LM (compiled by ampc at build time) runs 100 times after warm-up while every malloc in the
// process is counted. The only allocations allowed are made inside oneDNN's calls (its argument
// map in dnnl_primitive_execute), told apart by interposing those calls (OneDnnCalls.h). No step
// may run on the reference fallback.
#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>

#include "gtest/gtest.h"
#include "runtime/devices/cpu/CpuExecutor.h"
#include "runtime/devices/cpu/kernels/Gemm.h"
#include "runtime/schema/CpuFeatures.h"
#include "runtime/exec/Session.h"
#include "runtime/plan/UpdateLayout.h"
#include "runtime/numerics/Convert.h"
#include "runtime/plan/Bundle.h"
#include "test/unit/cpu/OneDnnCalls.h"
#include "runtime/devices/Devices.h"

extern "C" void* __libc_malloc(size_t);
extern "C" void* __libc_calloc(size_t, size_t);
extern "C" void* __libc_realloc(void*, size_t);
extern "C" void* __libc_memalign(size_t, size_t);

static std::atomic<long> gAmpAllocations{0}, gOneDnnAllocations{0};

// Counts one allocation as oneDNN's while one of its interposed calls runs (OneDnnCalls.h).
static void countOne() {
  (amp::test::insideOneDnn() ? gOneDnnAllocations : gAmpAllocations).fetch_add(1, std::memory_order_relaxed);
}

// Interposes the C allocator for the whole process (operator new, oneDNN and libgomp included).
extern "C" void* malloc(size_t n) {
  countOne();
  return __libc_malloc(n);
}
extern "C" void* calloc(size_t n, size_t size) {
  countOne();
  return __libc_calloc(n, size);
}
extern "C" void* realloc(void* p, size_t n) {
  countOne();
  return __libc_realloc(p, n);
}
extern "C" void* aligned_alloc(size_t alignment, size_t n) {
  countOne();
  return __libc_memalign(alignment, n);
}
extern "C" int posix_memalign(void** out, size_t alignment, size_t n) {
  countOne();
  *out = __libc_memalign(alignment, n);
  return *out ? 0 : 12;  // ENOMEM
}

namespace amp::rt {
namespace {

// Allocations of the process during `body`, ampc's and oneDNN's apart.
struct Allocations {
  long amp = 0, oneDnn = 0;
  int64_t oneDnnCalls = 0;
};

Allocations countAllocations(const std::function<void()>& body) {
  const long amp0 = gAmpAllocations.load(), dnnl0 = gOneDnnAllocations.load();
  const int64_t calls0 = test::oneDnnCalls();
  body();
  return {gAmpAllocations.load() - amp0, gOneDnnAllocations.load() - dnnl0, test::oneDnnCalls() - calls0};
}

// 100 train steps of `model`'s bundle after warm-up: every step on a cpu kernel (none on the
// reference fallback), and no allocation outside oneDNN's calls (its per-execute bookkeeping
// depends on the kernel it dispatched to, so on the CPU; ampc's must be zero everywhere).
void expectSteadyStateWithoutAllocations(const std::string& model) {
  // The guarantee is the native kernels': below x86-64-v3 a bundle's fused regions have no code
  // object to run and go op by op through the reference kernels, which allocate their results.
  if (CpuFeatures::host().isaLevel() == "x86-64")
    GTEST_SKIP() << "below x86-64-v3 (AMP_CPU_FEATURES or this CPU) fused regions run on the reference fallback";
  for (const char* precision : {"f32", "bf16", "f16"}) {
    SCOPED_TRACE(precision);
    std::string path = std::string(AMP_TEST_BUNDLE_DIR) + "/" + model + "_" + precision + ".ampx";
    if (!std::ifstream(path)) GTEST_SKIP() << path << " was not built (the compiler is off in this build)";
    auto plan = readBundle(path);
    ASSERT_TRUE(plan.ok()) << plan.status();
    auto session = openSession(std::move(*plan), Device::Cpu);
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
    const EntryReport* report = &(**entry).report();
    ASSERT_NE(report, nullptr);
    std::string fallback;
    for (const std::string& op : report->referenceOps) fallback += " " + op;
    EXPECT_EQ(report->referenceSteps, 0) << "steps on the reference fallback:" << fallback;
    Session::RunOptions options;
    RunArgs args = session->args(feeds, options);
    for (int warm = 0; warm < 3; ++warm) ASSERT_TRUE((*entry)->run(args).ok());

    Allocations during;
    for (int step = 0; step < 100; ++step) {
      args.step = step;
      const Allocations one = countAllocations([&] { ASSERT_TRUE((*entry)->run(args).ok()); });
      during.amp += one.amp;
      during.oneDnn += one.oneDnn;
      during.oneDnnCalls += one.oneDnnCalls;
    }
    std::printf("[%s %s] 100 steps: ampc %ld allocations; oneDNN %ld in %lld calls\n", model.c_str(), precision,
                during.amp, during.oneDnn, static_cast<long long>(during.oneDnnCalls));
    EXPECT_EQ(during.amp, 0) << "the executor itself allocated in steady state";
    // The GEMMs went through the counted oneDNN entry points (the interposition took).
    EXPECT_GT(during.oneDnnCalls, 0);
  }
}

TEST(CpuAllocations, TrainStepAllocatesNothingAfterWarmUp) { expectSteadyStateWithoutAllocations("mlp"); }

// The transformer LM (embedding, layer norms, causal softmax attention, GELU MLP, cross-entropy and
// all their gradients): its whole train step runs on cpu kernels, allocation-free.
TEST(CpuAllocations, TransformerTrainStepRunsNativelyAndAllocatesNothing) {
  expectSteadyStateWithoutAllocations("transformer_lm");
}

// With --weight-copies=stored the optimizer step writes each low-precision weight copy itself
// (ampc's amp-fuse-grad-pipeline gave the update the copy as a result in place of the cast after
// it): after training steps every copy holds exactly its master rounded to the copy's type.
TEST(CpuWeightCopies, TheOptimizerWritesEachCopyAsTheCastOfItsMaster) {
  for (const char* bundle : {"mlp_stored_bf16", "mlp_stored_f16", "mlp_sgd_bf16", "mlp_sgd_f16"}) {
    SCOPED_TRACE(bundle);
    std::string path = std::string(AMP_TEST_BUNDLE_DIR) + "/" + bundle + ".ampx";
    if (!std::ifstream(path)) GTEST_SKIP() << path << " was not built (the compiler is off in this build)";
    auto plan = readBundle(path);
    ASSERT_TRUE(plan.ok()) << plan.status();
    auto session = openSession(std::move(*plan), Device::Cpu);
    ASSERT_TRUE(session.ok()) << session.status();
    std::map<std::string, Tensor> feeds;
    std::mt19937 rng(3);
    for (const BufferDesc& b : session->plan().buffers) {
      if (b.kind != BufferKind::Input && b.kind != BufferKind::Label) continue;
      Tensor t(b.dtype, b.shape);
      for (int64_t k = 0; k < b.numel(); ++k) {
        if (b.dtype == DType::I64) t.as<int64_t>()[k] = rng() % 10;
        else t.as<float>()[k] = static_cast<float>(rng() % 256) / 255.0f;
      }
      feeds.emplace(b.name, std::move(t));
    }
    for (int step = 0; step < 3; ++step) ASSERT_TRUE(session->run("train_step", feeds).ok());
    const EntryPoint* train = session->plan().findEntry("train_step");
    ASSERT_NE(train, nullptr);
    int written = 0;
    for (const PlanStep& step : train->steps) {
      if (step.op != "amp.adam_update" && step.op != "amp.sgd_update") continue;
      auto layout = decodeUpdate(step);
      ASSERT_TRUE(layout.ok()) << layout.status();
      written += layout->weightCopy.has_value();
    }
    std::map<std::string, const Tensor*> byName;
    for (const NamedTensorRef& t : session->persistent()) byName[t.name] = t.tensor;
    int copies = 0;
    for (const auto& [name, copy] : byName) {
      const size_t dot = name.rfind('.');
      if (dot == std::string::npos || (name.substr(dot) != ".bf16" && name.substr(dot) != ".f16")) continue;
      auto master = byName.find(name.substr(0, dot));
      if (master == byName.end()) continue;
      ++copies;
      Tensor want(copy->dtype(), copy->shape());
      convertBuffer(DType::F32, master->second->data(), copy->dtype(), want.data(), copy->numel());
      EXPECT_TRUE(copy->bitwiseEquals(want)) << name << " is not its master rounded";
    }
    EXPECT_EQ(copies, 6);
    EXPECT_EQ(written, copies) << "a weight copy is still a cast after the optimizer step";
  }
}

// A cpu target's default (--weight-copies=auto) recasts: no copy is state, and each weight's
// backward GEMM reads a cast of its own, made after the forward's.
TEST(CpuWeightCopies, CpuTargetsRecastByDefault) {
  for (const char* bundle : {"mlp_bf16", "mlp_f16"}) {
    SCOPED_TRACE(bundle);
    std::string path = std::string(AMP_TEST_BUNDLE_DIR) + "/" + bundle + ".ampx";
    if (!std::ifstream(path)) GTEST_SKIP() << path << " was not built (the compiler is off in this build)";
    auto plan = readBundle(path);
    ASSERT_TRUE(plan.ok()) << plan.status();
    std::map<int32_t, int> castsOfMaster;
    for (const BufferDesc& b : plan->buffers)
      EXPECT_FALSE(b.kind == BufferKind::State && b.init && b.init->kind == "cast") << b.name << " is a stored copy";
    const EntryPoint* train = plan->findEntry("train_step");
    ASSERT_NE(train, nullptr);
    for (const PlanStep& step : train->steps)
      if (step.op == "amp.cast" && plan->buffers[step.operands[0]].kind == BufferKind::Param)
        ++castsOfMaster[step.operands[0]];
    // Three weights and three biases cast for the forward; fc2 and fc3 again for their dX GEMMs.
    int total = 0;
    for (const auto& [id, n] : castsOfMaster) total += n;
    EXPECT_EQ(castsOfMaster.size(), 6u);
    EXPECT_EQ(total, 8);
  }
}

}  // namespace
}  // namespace amp::rt
