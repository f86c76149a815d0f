// Generated fused kernels: the C++ flavour of the emitter, compiled by the system compiler as
// ampc does, loaded from the plan's code object by the cpu device, must give exactly the bits
// the reference executor computes by running the region op by op. Also: a corrupted code object
// is refused before it is loaded, and a step the kernel could not index is refused at prepare.
#include <cstring>
#include <random>

#include "codegen/Toolchain.h"
#include "codegen/emit/KernelEmitter.h"
#include "gtest/gtest.h"
#include "runtime/devices/cpu/CpuExecutor.h"
#include "runtime/schema/CpuFeatures.h"
#include "runtime/exec/Session.h"
#include "runtime/io/Sha256.h"
#include "runtime/numerics/Convert.h"
#include "runtime/devices/Devices.h"
#include "test/unit/common/FusedPlan.h"

namespace amp::rt {
namespace {

// Emits and compiles the plan's kernels for this CPU's ISA level, as ampc does.
void attachCode(Plan& plan) {
  std::string source, error;
  ASSERT_TRUE(codegen::emitCpuSource(plan, source, error)) << error;
  const std::string isa = CpuFeatures::host().isaLevel() == "x86-64-v4" ? "x86-64-v4" : "x86-64-v3";
  CodeObject code;
  code.isa = isa;
  ASSERT_TRUE(codegen::compileSharedObject("c++", source, isa, code.bytes, error)) << error;
  code.sha256 = sha256Hex(code.bytes.data(), code.bytes.size());
  plan.code.push_back(std::move(code));
}

std::map<std::string, Tensor> randomFeeds(const Plan& plan, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::map<std::string, Tensor> feeds;
  for (const BufferDesc& b : plan.buffers) {
    if (b.kind != BufferKind::Input) continue;
    Tensor t(b.dtype, b.shape);
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (b.dtype == DType::Bool) t.as<uint8_t>()[i] = rng() % 2;
      else storeFromF32(b.dtype, t.data(), i, normal(rng));
    }
    if (isFloat(b.dtype) && t.numel() >= 8) {  // specials
      storeFromF32(b.dtype, t.data(), 1, NAN);
      storeFromF32(b.dtype, t.data(), 3, -0.0f);
      storeFromF32(b.dtype, t.data(), 5, -INFINITY);
      storeFromF32(b.dtype, t.data(), 7, 1e-40f);
    }
    feeds.emplace(b.name, std::move(t));
  }
  return feeds;
}

void expectFusedParity(const FusedCase& c) {
  if (CpuFeatures::host().isaLevel() == "x86-64") GTEST_SKIP() << "no x86-64-v3 on this CPU";
  Plan plan = fusedPlan(c);
  attachCode(plan);
  auto feeds = randomFeeds(plan, 3);
  auto ref = openSession(plan, Device::Reference);
  auto cpu = openSession(plan, Device::Cpu);
  ASSERT_TRUE(ref.ok() && cpu.ok());
  auto want = ref->run("eval", feeds);
  auto got = cpu->run("eval", feeds);
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_TRUE(got.ok()) << got.status();
  auto prepared = cpu->prepared("eval");
  ASSERT_TRUE(prepared.ok());
  EXPECT_EQ((**prepared).report().referenceSteps, 0) << "the fused step was interpreted, not compiled";
  for (size_t r = 0; r < want->size(); ++r) {
    const Tensor &w = (*want)[r].tensor, &g = (*got)[r].tensor;
    ASSERT_EQ(w.nbytes(), g.nbytes());
    const size_t es = dtypeSize(w.dtype());
    for (int64_t k = 0; k < w.numel(); ++k)
      if (std::memcmp(w.data() + k * es, g.data() + k * es, es) != 0) {
        ADD_FAILURE() << "result " << r << " element " << k << ": reference " << loadAsF32(w.dtype(), w.data(), k)
                      << ", fused kernel " << loadAsF32(g.dtype(), g.data(), k);
        break;
      }
  }
}

TEST(FusedKernels, BiasReluCastChainMatchesTheReference) {
  // The MLP's forward pattern: bf16 GEMM output -> f32 -> + bias -> relu -> bf16.
  expectFusedParity({{{DType::BF16, {128, 256}}, {DType::F32, {256}}},
                     {128, 256},
                     {{"amp.cast", {0}, DType::F32}, {"amp.add", {2, 1}, DType::F32}, {"amp.relu", {3}, DType::F32},
                      {"amp.cast", {4}, DType::BF16}},
                     {3, 5}});
}

TEST(FusedKernels, ReluGradientWithScalarsMatchesTheReference) {
  AttrMap gt{{"predicate", std::string("gt")}};
  expectFusedParity({{{DType::F32, {64, 300}}, {DType::F32, {}}, {DType::F32, {64, 300}}},
                     {64, 300},
                     {{"amp.compare", {0, 1}, DType::Bool, gt}, {"amp.select", {3, 2, 1}, DType::F32},
                      {"amp.cast", {4}, DType::F16}},
                     {4, 5}});
}

// The backward of a relu layer: the mask and the bias gradient (its column sums) in one pass, the
// kernel running by columns so each sum keeps the reference's row order. 300 columns cross the
// kernel's 256-column blocks; rank 3 sums over two leading dims.
TEST(FusedKernels, ReluGradientAndBiasGradientInOnePass) {
  AttrMap gt{{"predicate", std::string("gt")}};
  for (DType t : {DType::BF16, DType::F32, DType::F16}) {
    SCOPED_TRACE(std::string(dtypeName(t)));
    expectFusedParity({{{t, {128, 300}}, {t, {}}, {t, {128, 300}}},
                       {128, 300},
                       {{"amp.compare", {0, 1}, DType::Bool, gt},
                        {"amp.select", {3, 2, 1}, t},
                        {"amp.reduce_sum", {4}, t, {{"dims", std::vector<int64_t>{0}}, {"keepdim", false}}, {300}}},
                       {4, 5}});
  }
  expectFusedParity({{{DType::F32, {4, 32, 70}}, {DType::F32, {70}}},
                     {4, 32, 70},
                     {{"amp.add", {0, 1}, DType::F32},
                      {"amp.reduce_sum", {2}, DType::F32, {{"dims", std::vector<int64_t>{0, 1}}, {"keepdim", false}}, {70}}},
                     {3}});
  // Over 256 rows: the sums take the contract's blocked pairwise order (4 full blocks and a
  // partial one; 1,200 rows over two dims), as the reference's reduce_sum.
  for (const Shape& space : {Shape{1100, 40}, Shape{4, 300, 70}}) {
    SCOPED_TRACE(shapeToString(space));
    std::vector<int64_t> dims(space.size() - 1);
    for (size_t d = 0; d < dims.size(); ++d) dims[d] = static_cast<int64_t>(d);
    expectFusedParity({{{DType::F32, space}, {DType::F32, {space.back()}}},
                       space,
                       {{"amp.add", {0, 1}, DType::F32},
                        {"amp.reduce_sum", {2}, DType::F32, {{"dims", dims}, {"keepdim", false}}, {space.back()}}},
                       {3}});
  }
}

TEST(FusedKernels, EveryUnaryAndBinaryOpInEveryPrecision) {
  for (DType t : {DType::F32, DType::BF16, DType::F16}) {
    SCOPED_TRACE(std::string(dtypeName(t)));
    std::vector<BodyOp> body;
    int32_t last = 0;
    for (const char* op : {"amp.neg", "amp.abs", "amp.exp", "amp.log", "amp.sqrt", "amp.rsqrt", "amp.reciprocal",
                           "amp.tanh", "amp.erf", "amp.sigmoid", "amp.relu", "amp.silu", "amp.gelu"}) {
      body.push_back({op, {0}, t});  // each applied to the input, so the chain stays finite-ish
      last = static_cast<int32_t>(2 + body.size() - 1);
    }
    body.push_back({"amp.gelu", {0}, t, {{"approximate", std::string("tanh")}}});
    for (const char* op : {"amp.add", "amp.sub", "amp.mul", "amp.div", "amp.maximum", "amp.minimum", "amp.pow"})
      body.push_back({op, {0, 1}, t});
    std::vector<int32_t> yields;
    for (size_t k = 0; k < body.size(); ++k) yields.push_back(static_cast<int32_t>(2 + k));
    (void)last;
    expectFusedParity({{{t, {33, 70}}, {t, {70}}}, {33, 70}, body, yields});
  }
}

TEST(FusedKernels, EmitterRefusesInputsItCannotIndex) {
  FusedCase c{{{DType::F32, {64, 1}}, {DType::F32, {64, 30}}}, {64, 30}, {{"amp.add", {0, 1}, DType::F32}}, {2}};
  Plan plan = fusedPlan(c);
  std::string source, error;
  EXPECT_FALSE(codegen::emitCpuSource(plan, source, error));
  EXPECT_NE(error.find("does not broadcast by leading dims"), std::string::npos) << error;
}

TEST(FusedKernels, CorruptedCodeObjectIsRefusedBeforeLoading) {
  if (CpuFeatures::host().isaLevel() == "x86-64") GTEST_SKIP() << "no x86-64-v3 on this CPU";
  Plan plan = fusedPlan({{{DType::F32, {8, 16}}, {DType::F32, {16}}}, {8, 16}, {{"amp.add", {0, 1}, DType::F32}}, {2}});
  attachCode(plan);
  plan.code[0].bytes[plan.code[0].bytes.size() / 2] ^= 0x40;
  auto cpu = openSession(plan, Device::Cpu);
  ASSERT_TRUE(cpu.ok());
  auto out = cpu->run("eval", randomFeeds(plan, 1));
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("fails its SHA-256 check"), std::string::npos) << out.status();
}

TEST(FusedKernels, EditedShapesAreRefusedAtPrepare) {
  if (CpuFeatures::host().isaLevel() == "x86-64") GTEST_SKIP() << "no x86-64-v3 on this CPU";
  Plan plan = fusedPlan({{{DType::F32, {8, 16}}, {DType::F32, {16}}}, {8, 16}, {{"amp.add", {0, 1}, DType::F32}}, {2}});
  attachCode(plan);
  plan.entries[0].steps[0].attrs.set("row_length", int64_t{5});  // does not divide 128
  auto cpu = openSession(plan, Device::Cpu);
  ASSERT_TRUE(cpu.ok());
  auto out = cpu->run("eval", randomFeeds(plan, 1));
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("row_length 5 does not divide"), std::string::npos) << out.status();
}

}  // namespace
}  // namespace amp::rt
