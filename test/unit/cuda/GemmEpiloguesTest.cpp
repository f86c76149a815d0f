// The cuda device's opt-in cuBLASLt training epilogues (runtime/devices/cuda/GemmEpilogues.h),
// checked without a GPU in three ways:
//  - the rewrite on the plans ampc compiles: which steps move into which epilogues;
//  - its dataflow: the rewritten entry runs on the host, every GEMM through the column-major
//    emulator of cuBLASLt's documented epilogues (GemmEmulator.h) and every other step on the
//    reference, against the reference run of the plan's own entry: bit for bit in f32, within
//    summation-order bounds in bf16 (where the epilogue rounds once what the plan rounds twice);
//  - the simulated GPU: every entry prepares, captures and replays with the epilogues, which checks
//    each GEMM's bias, bias-gradient and auxiliary extents against live allocations.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <random>

#include "gtest/gtest.h"
#include "runtime/devices/cuda/CudaExecutor.h"
#include "runtime/devices/cuda/DryRunApi.h"
#include "runtime/devices/cuda/GemmEpilogues.h"
#include "runtime/reference/ReferenceExecutor.h"
#include "runtime/exec/Session.h"
#include "test/unit/cuda/GemmEmulator.h"
#include "test/unit/cuda/TestBundles.h"

namespace amp::rt::cuda {
namespace {

// How many GEMMs of an entry ask for each epilogue.
std::map<std::string, int> epilogues(const EntryPoint& e) {
  std::map<std::string, int> n;
  for (const PlanStep& s : e.steps)
    if (s.attrs.has(kEpilogueAttr)) ++n[*s.attrs.getString(s.op, kEpilogueAttr)];
  return n;
}

// Runs `entry` on the host: GEMM steps with a training epilogue through the emulator, every other
// step on the reference. `values` holds the entry's params, state and feeds by buffer id.
std::vector<Tensor> runOnHost(const Plan& plan, const EntryPoint& entry, std::vector<std::optional<Tensor>> values) {
  std::map<int64_t, std::vector<uint8_t>> masks;
  for (size_t s = 0; s < entry.steps.size(); ++s) {
    const PlanStep& step = entry.steps[s];
    std::vector<const Tensor*> operands;
    for (int32_t id : step.operands) {
      EXPECT_TRUE(values[id].has_value()) << "step " << s << " reads buffer " << id << " before it is written";
      if (!values[id]) return {};
      operands.push_back(&*values[id]);
    }
    auto e = requestedEpilogue(step);
    EXPECT_TRUE(e.ok()) << e.status();
    if (!e.ok()) return {};
    if (*e == GemmEpilogue::None) {
      auto out = evalReferenceStep(plan, step, operands, EvalContext{});
      EXPECT_TRUE(out.ok()) << "step " << s << " " << step.op << ": " << out.status();
      if (!out.ok()) return {};
      for (size_t r = 0; r < step.results.size(); ++r) values[step.results[r]] = std::move((*out)[r]);
      continue;
    }
    auto problem = gemmProblemOf(plan, step);
    EXPECT_TRUE(problem.ok()) << problem.status();
    auto g = planGemm(*problem);
    EXPECT_TRUE(g.ok()) << g.status();
    EXPECT_TRUE(setTrainingEpilogue(*g, *e).ok());
    const auto typed = [&](int32_t id) { return Tensor(plan.buffers[id].dtype, plan.buffers[id].shape); };
    EpilogueIo io;
    std::optional<Tensor> geluInput, biasGrad;
    if (epilogueReadsBias(*e)) io.bias = operands[2];
    if (epilogueAux(*e) == GemmAux::ReluMask) {
      const int64_t owner = *step.attrs.getInt(step.op, kReluMaskAttr);
      const bool writes = *e == GemmEpilogue::ReluAux || *e == GemmEpilogue::ReluAuxBias;
      EXPECT_TRUE(writes || masks.count(owner)) << "step " << s << " reads the ReLU mask of buffer " << owner
                                                << ", which no earlier GEMM wrote";
      if (!writes && !masks.count(owner)) return {};
      io.mask = &masks[owner];
    }
    if (*e == GemmEpilogue::DGelu || *e == GemmEpilogue::DGeluBgrad) geluInput = *operands[2];
    if (*e == GemmEpilogue::GeluAux || *e == GemmEpilogue::GeluAuxBias) geluInput = typed(step.results[1]);
    if (geluInput) io.geluInput = &*geluInput;
    if (epilogueWritesBiasGrad(*e)) {
      biasGrad = typed(step.results.back());
      io.biasGrad = &*biasGrad;
    }
    Tensor d = emulateTrainingGemm(*g, *operands[0], *operands[1], io);
    EXPECT_TRUE(d.reshapeInPlace(plan.buffers[step.results[0]].shape));
    values[step.results[0]] = std::move(d);
    if (*e == GemmEpilogue::GeluAux || *e == GemmEpilogue::GeluAuxBias) values[step.results[1]] = std::move(*geluInput);
    if (biasGrad) values[step.results.back()] = std::move(*biasGrad);
  }
  std::vector<Tensor> results;
  for (int32_t id : entry.results) results.push_back(*values[id]);
  return results;
}

// Random params and state in [-1, 1), feeds likewise; integer buffers (labels, token ids) cycle
// through 0..9, valid for every model here.
std::vector<std::optional<Tensor>> randomBindings(const Plan& plan, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<std::optional<Tensor>> values(plan.buffers.size());
  for (size_t id = 0; id < plan.buffers.size(); ++id) {
    const BufferDesc& b = plan.buffers[id];
    if (b.kind == BufferKind::Temp) continue;
    Tensor t(b.dtype, b.shape);
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (b.dtype == DType::I64) {
        t.as<int64_t>()[i] = i % 10;
      } else if (isFloat(b.dtype)) {
        storeFromF32(b.dtype, t.data(), i, b.name.rfind("amp.", 0) == 0 ? 1.0f : u(rng));
      }
    }
    values[id] = std::move(t);
  }
  return values;
}

// The largest difference between two results, relative to the largest magnitude of the expected.
double relativeError(const Tensor& got, const Tensor& want) {
  double worst = 0.0, scale = 0.0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double w = loadAsF32(want.dtype(), want.data(), i), g = loadAsF32(got.dtype(), got.data(), i);
    scale = std::max(scale, std::fabs(w));
    worst = std::max(worst, std::fabs(g - w));
  }
  return scale > 0.0 ? worst / scale : worst;
}

TEST(GemmEpilogues, TheMlpsReluLayersUseTheMaskEpiloguesAndTheLastBiasGradientBgradA) {
  LOAD_OR_SKIP(plan, "mlp_f32_sm_90");
  const EntryPoint& entry = *plan->findEntry("grads");
  auto rewritten = fuseGemmEpilogues(*plan, entry);
  ASSERT_TRUE(rewritten.has_value());
  std::map<std::string, int> want = {{"RELU_AUX_BIAS", 2}, {"DRELU_BGRAD", 2}, {"BGRADA", 1}};
  EXPECT_EQ(epilogues(rewritten->entry), want);
  // The two relu backward kernels and the output layer's bias-gradient reduce_sum are gone.
  EXPECT_EQ(entry.steps.size() - rewritten->entry.steps.size(), 3u);
  EXPECT_EQ(opCounts(rewritten->entry)["amp.reduce_sum"], 0);
  EXPECT_EQ(rewritten->planStep.size(), rewritten->entry.steps.size());
  // Inference has no backward: nothing to rewrite.
  EXPECT_FALSE(fuseGemmEpilogues(*plan, *plan->findEntry("eval")).has_value());
}

TEST(GemmEpilogues, TheTransformersGeluRunsInItsGemmsForwardAndBackward) {
  LOAD_OR_SKIP(plan, "transformer_lm_bf16_sm_90");
  const EntryPoint& grads = *plan->findEntry("grads");
  auto rewritten = fuseGemmEpilogues(*plan, grads);
  ASSERT_TRUE(rewritten.has_value());
  std::map<std::string, int> want = {{"GELU_AUX_BIAS", 1}, {"DGELU_BGRAD", 1}};
  EXPECT_EQ(epilogues(rewritten->entry), want);
  std::map<std::string, int> before = opCounts(grads), after = opCounts(rewritten->entry);
  EXPECT_EQ(after["amp.gelu"], 0);
  EXPECT_EQ(after["amp.gelu_grad"], 0);
  EXPECT_EQ(before["amp.reduce_sum"] - after["amp.reduce_sum"], 1) << "the feed-forward bias gradient";
  // Evaluation keeps no GELU input: GELU_BIAS alone.
  auto eval = fuseGemmEpilogues(*plan, *plan->findEntry("eval"));
  ASSERT_TRUE(eval.has_value());
  std::map<std::string, int> evalWant = {{"GELU_BIAS", 1}};
  EXPECT_EQ(epilogues(eval->entry), evalWant);
}

// The grads entry's results on the host from random bindings: the plan's own entry (`want`) and
// its rewrite (`got`), with the results' names.
struct GradsPair {
  std::vector<Tensor> want, got;
  std::vector<std::string> names;
};
GradsPair gradsWithAndWithoutEpilogues(const Plan& plan, uint32_t seed) {
  const EntryPoint& entry = *plan.findEntry("grads");
  auto rewritten = fuseGemmEpilogues(plan, entry);
  EXPECT_TRUE(rewritten.has_value());
  if (!rewritten) return {};
  const auto values = randomBindings(plan, seed);
  GradsPair p{runOnHost(plan, entry, values), runOnHost(plan, rewritten->entry, values), entry.resultNames};
  EXPECT_EQ(p.got.size(), p.want.size());
  EXPECT_FALSE(p.want.empty());
  return p;
}

TEST(GemmEpilogues, InF32TheRewrittenGradientsAreTheReferencesBits) {
  LOAD_OR_SKIP(plan, "mlp_f32_sm_90");
  GradsPair p = gradsWithAndWithoutEpilogues(*plan, 3);
  for (size_t r = 0; r < p.want.size() && r < p.got.size(); ++r)
    EXPECT_TRUE(p.got[r].bitwiseEquals(p.want[r])) << p.names[r] << ": relative error " << relativeError(p.got[r], p.want[r]);
}

TEST(GemmEpilogues, InBf16TheRewrittenGradientsAreWithinSummationOrderBounds) {
  for (const char* name : {"mlp_bf16_sm_90", "transformer_lm_bf16_sm_90"}) {
    SCOPED_TRACE(name);
    LOAD_OR_SKIP(plan, name);
    GradsPair p = gradsWithAndWithoutEpilogues(*plan, 11);
    // One bf16 rounding (2^-8 relative) per changed step, carried through the backward: the
    // largest seen is 0.0077 of the result's largest magnitude; a miswired aux gives over 0.25.
    for (size_t r = 0; r < p.want.size() && r < p.got.size(); ++r)
      EXPECT_LT(relativeError(p.got[r], p.want[r]), 0.02) << p.names[r];
  }
}

TEST(GemmEpilogues, EveryEntryCapturesAndReplaysOnTheSimulatedGpu) {
  for (const char* name : {"mlp_f32_sm_90", "mlp_bf16_sm_90", "mlp_f16_sm_90", "transformer_lm_bf16_sm_90",
                           "amp_recipe_mlp_f16_sm_90"}) {
    SCOPED_TRACE(name);
    LOAD_OR_SKIP(plan, name);
    CudaOptions options;
    options.epilogues = GemmEpilogueMode::Cublaslt;
    auto api = std::make_unique<DryRunApi>();
    DryRunApi* dry = api.get();
    auto session = Session::create(std::move(*plan), makeCudaExecutor(std::move(api), options));
    ASSERT_TRUE(session.ok()) << session.status();
    std::map<std::string, Tensor> feeds;
    for (const BufferDesc& b : session->plan().buffers)
      if (b.kind == BufferKind::Input || b.kind == BufferKind::Label) feeds.emplace(b.name, Tensor(b.dtype, b.shape));
    for (const EntryPoint& e : session->plan().entries) {
      auto prepared = session->prepared(e.name);
      ASSERT_TRUE(prepared.ok()) << e.name << ": " << prepared.status();
      ASSERT_TRUE(session->run(e.name, feeds).ok()) << e.name;
      dry->clearCalls();
      ASSERT_TRUE(session->run(e.name, feeds).ok()) << e.name;
      auto starting = [&](const std::string& prefix) {
        return std::count_if(dry->calls().begin(), dry->calls().end(),
                             [&](const std::string& c) { return c.rfind(prefix, 0) == 0; });
      };
      EXPECT_EQ(starting("graph "), 1) << e.name << ": one replay";
      EXPECT_EQ(starting("gemm"), 0) << e.name << ": every GEMM inside the graph";
    }
  }
}

// A bundle may carry the rewrite's attributes itself (hostile, or edited): an epilogue that does
// not fit its step is refused by name before anything runs, never run with a missing pointer.
TEST(GemmEpilogues, AnEpilogueThatDoesNotFitItsStepIsRefused) {
  LOAD_OR_SKIP(plan, "mlp_bf16_sm_90");
  const std::pair<const char*, const char*> edits[] = {
      {"amp.matmul", "BIAS"}, {"amp.matmul", "DRELU_BGRAD"}, {"amp.matmul", "DGELU"},
      {"amp.linear", "RELU_BIAS"}, {"amp.linear", "GELU_AUX_BIAS"}, {"amp.linear", "BGRADA"},
      {"amp.matmul", "NO_SUCH_EPILOGUE"}};
  for (const auto& [op, epilogue] : edits) {
    SCOPED_TRACE(std::string(op) + " " + epilogue);
    Plan edited = *plan;
    EntryPoint& entry = *std::find_if(edited.entries.begin(), edited.entries.end(),
                                      [](const EntryPoint& e) { return e.name == "train_step"; });
    auto step = std::find_if(entry.steps.begin(), entry.steps.end(), [&](const PlanStep& s) { return s.op == op; });
    ASSERT_NE(step, entry.steps.end());
    step->attrs.set(kEpilogueAttr, std::string(epilogue));
    step->attrs.set(kReluMaskAttr, int64_t{0});
    auto session = Session::create(std::move(edited), makeCudaExecutor(std::make_unique<DryRunApi>()));
    ASSERT_TRUE(session.ok()) << session.status();
    auto prepared = session->prepared("train_step");
    ASSERT_FALSE(prepared.ok());
    EXPECT_FALSE(prepared.status().message().empty());
  }
}

TEST(GemmEpilogues, AGeluInputWhoseRowsCuBlasLtCannotAlignIsLeftToTheKernels) {
  GemmPlan g;
  g.dtype = DType::BF16;
  g.m = 20;
  g.n = 4;
  g.k = 8;
  g.ldc = 20;
  EXPECT_FALSE(setTrainingEpilogue(g, GemmEpilogue::GeluAuxBias).ok()) << "aux ld 20 is not a multiple of 8";
  g.m = g.ldc = 24;
  ASSERT_TRUE(setTrainingEpilogue(g, GemmEpilogue::GeluAuxBias).ok());
  EXPECT_EQ(g.auxLd, 24);
  EXPECT_EQ(auxBytes(g), 24 * 4 * 2);
  ASSERT_TRUE(setTrainingEpilogue(g, GemmEpilogue::ReluAuxBias).ok());
  EXPECT_EQ(g.auxLd, 128) << "a ReLU mask's rows round up to 128 bits";
  EXPECT_EQ(auxBytes(g), 16 * 4);
  g.batch = 2;
  EXPECT_FALSE(setTrainingEpilogue(g, GemmEpilogue::DReluBgrad).ok()) << "batched";
}

}  // namespace
}  // namespace amp::rt::cuda
