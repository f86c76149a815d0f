// The cpu device's run phase allocates nothing: the train_step of the MLP and of the transformer
// LM (compiled by ampc at build time) runs 100 times after warm-up while every malloc in the
// process is counted. The only allocations allowed are oneDNN's own per-execute bookkeeping (its
// argument map, inside dnnl_primitive_execute), measured here on a bare Gemm::run of each of the
// step's GEMMs. No step may run on the reference fallback.
#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>

#include "gtest/gtest.h"
#include "runtime/devices/cpu/CpuExecutor.h"
#include "runtime/devices/cpu/Gemm.h"
#include "runtime/exec/Session.h"
#include "runtime/numerics/Convert.h"
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

// oneDNN's allocations in one execute of each of the entry's GEMMs (amp.matmul, and amp.linear
// with its bias epilogue): a bare Gemm with the step's desc, warmed up, then counted.
long gemmAllocationsPerCall(const Plan& p, const EntryPoint& entry, int64_t* gemms) {
  long total = 0;
  *gemms = 0;
  for (const PlanStep& s : entry.steps) {
    if (s.op != "amp.matmul" && s.op != "amp.linear") continue;
    const BufferDesc &a = p.buffers[s.operands[0]], &b = p.buffers[s.operands[1]];
    cpu::GemmDesc desc{a.dtype, a.shape, b.shape};
    if (s.op == "amp.matmul") {
      desc.transA = s.attrs.getBool(s.op, "transpose_a", false).value_or(false);
      desc.transB = s.attrs.getBool(s.op, "transpose_b", false).value_or(false);
    } else {
      desc.transB = s.attrs.getBool(s.op, "transpose_w", true).value_or(true);
      desc.bias = s.operands.size() == 3;
    }
    auto gemm = cpu::Gemm::create(desc, cpu::CpuFeatures::host());
    EXPECT_TRUE(gemm.ok()) << gemm.status();
    if (!gemm.ok()) continue;
    const int64_t n = (*gemm)->resultShape().back();
    Tensor ta(desc.dtype, desc.a), tb(desc.dtype, desc.b), tc(desc.dtype, (*gemm)->resultShape()), bias(desc.dtype, {n});
    const void* biasData = desc.bias ? bias.data() : nullptr;
    std::vector<uint8_t> scratch((*gemm)->scratchBytes() + 64);
    void* aligned = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(scratch.data()) + 63) & ~uintptr_t{63});
    (*gemm)->run(ta.data(), tb.data(), biasData, tc.data(), aligned);
    total += countAllocations([&] { (*gemm)->run(ta.data(), tb.data(), biasData, tc.data(), aligned); });
    ++*gemms;
  }
  return total;
}

// 100 train steps of `model`'s bundle after warm-up: every step on a cpu kernel (none on the
// reference fallback), and no allocation but oneDNN's per-execute bookkeeping.
void expectSteadyStateWithoutAllocations(const std::string& model) {
  for (const char* precision : {"f32", "bf16", "f16"}) {
    SCOPED_TRACE(precision);
    std::string path = std::string(AMP_TEST_BUNDLE_DIR) + "/" + model + "_" + precision + ".ampx";
    if (!std::ifstream(path)) GTEST_SKIP() << path << " was not built (the compiler is off in this build)";
    auto plan = readBundle(path);
    ASSERT_TRUE(plan.ok()) << plan.status();
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
    std::string fallback;
    for (const std::string& op : report->referenceOps) fallback += " " + op;
    EXPECT_EQ(report->referenceSteps, 0) << "steps on the reference fallback:" << fallback;
    Session::RunOptions options;
    RunArgs args = session->args(feeds, options);
    for (int warm = 0; warm < 3; ++warm) ASSERT_TRUE((*entry)->run(args).ok());

    int64_t gemms = 0;
    const long perStep = gemmAllocationsPerCall(p, *p.findEntry("train_step"), &gemms);
    long during = 0;
    for (int step = 0; step < 100; ++step) {
      args.step = step;
      during += countAllocations([&] { ASSERT_TRUE((*entry)->run(args).ok()); });
    }
    std::printf("[%s %s] %ld allocations in 100 steps; oneDNN execute: %ld per step over %lld GEMMs\n", model.c_str(),
                precision, during, perStep, static_cast<long long>(gemms));
    EXPECT_EQ(during, 100 * perStep) << "the executor itself allocated in steady state";
  }
}

TEST(CpuAllocations, TrainStepAllocatesNothingAfterWarmUp) { expectSteadyStateWithoutAllocations("mlp"); }

// The transformer LM (embedding, layer norms, causal softmax attention, GELU MLP, cross-entropy and
// all their gradients): its whole train step runs on cpu kernels, allocation-free.
TEST(CpuAllocations, TransformerTrainStepRunsNativelyAndAllocatesNothing) {
  expectSteadyStateWithoutAllocations("transformer_lm");
}

// The optimizer step writes each low-precision weight copy itself (the cast after it is absorbed at
// prepare): after training steps every copy holds exactly its master rounded to the copy's type.
TEST(CpuWeightCopies, TheOptimizerWritesEachCopyAsTheCastOfItsMaster) {
  for (const char* bundle : {"mlp_bf16", "mlp_f16", "mlp_sgd_bf16", "mlp_sgd_f16"}) {
    SCOPED_TRACE(bundle);
    std::string path = std::string(AMP_TEST_BUNDLE_DIR) + "/" + bundle + ".ampx";
    if (!std::ifstream(path)) GTEST_SKIP() << path << " was not built (the compiler is off in this build)";
    auto plan = readBundle(path);
    ASSERT_TRUE(plan.ok()) << plan.status();
    auto session = Session::create(std::move(*plan), Device::Cpu);
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
    auto entry = session->prepared("train_step");
    ASSERT_TRUE(entry.ok());
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
    EXPECT_EQ(cpu::reportOf(**entry)->absorbedCasts, copies) << "a cast after the optimizer step was not absorbed";
  }
}

}  // namespace
}  // namespace amp::rt
