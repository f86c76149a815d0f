// amp.gemm_epilogue on the cuda device, checked without a GPU on the bundles ampc compiles with
// `--gemm-epilogues=cublaslt` (test/unit/cuda/CMakeLists.txt), against those compiled without:
//  - which GEMMs amp-select-gemm-epilogues gave which epilogue, and which steps are gone;
//  - the reference runs each amp.gemm_epilogue as the ops it replaces: the epilogue bundle's
//    results on the reference are the plain bundle's, bit for bit, in every precision;
//  - the dataflow cuBLASLt sees: every amp.gemm_epilogue through the column-major emulator of
//    cuBLASLt's documented epilogues (GemmEmulator.h; the ReLU mask as bits in the i1 tensor's
//    storage), every other step on the reference: bit for bit in f32, within summation-order
//    bounds in bf16 (where the epilogue rounds once what the plain ops round twice);
//  - the simulated GPU: every entry prepares, captures and replays, which checks each GEMM's bias,
//    bias-gradient and auxiliary extents against live allocations; a step whose kind does not fit
//    its operands is refused by name.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <random>

#include "gtest/gtest.h"
#include "runtime/devices/cuda/CudaExecutor.h"
#include "runtime/devices/cuda/DryRunApi.h"
#include "runtime/devices/cuda/GemmStep.h"
#include "runtime/reference/ReferenceExecutor.h"
#include "runtime/exec/Session.h"
#include "test/unit/cuda/GemmEmulator.h"
#include "test/unit/cuda/TestBundles.h"

namespace amp::rt::cuda {
namespace {

// How many amp.gemm_epilogue steps of an entry have each kind.
std::map<std::string, int> epilogues(const EntryPoint& e) {
  std::map<std::string, int> n;
  for (const PlanStep& s : e.steps)
    if (s.code == OpCode::GemmEpilogue) ++n[*s.attrs.getString(s.op, "kind")];
  return n;
}

// Runs `entry` on the host: amp.gemm_epilogue steps through the emulator when `emulate`, every
// other step (and, without `emulate`, those too) on the reference. `values` holds the entry's
// params, state and feeds by buffer id.
std::vector<Tensor> runOnHost(const Plan& plan, const EntryPoint& entry, std::vector<std::optional<Tensor>> values,
                              bool emulate) {
  for (size_t s = 0; s < entry.steps.size(); ++s) {
    const PlanStep& step = entry.steps[s];
    std::vector<const Tensor*> operands;
    for (int32_t id : step.operands) {
      EXPECT_TRUE(values[id].has_value()) << "step " << s << " reads buffer " << id << " before it is written";
      if (!values[id]) return {};
      operands.push_back(&*values[id]);
    }
    if (!emulate || step.code != OpCode::GemmEpilogue) {
      auto out = evalReferenceStep(plan, step, operands, EvalContext{});
      EXPECT_TRUE(out.ok()) << "step " << s << " " << step.op << ": " << out.status();
      if (!out.ok()) return {};
      for (size_t r = 0; r < step.results.size(); ++r) values[step.results[r]] = std::move((*out)[r]);
      continue;
    }
    auto decoded = decodeGemmStep(plan, step);
    EXPECT_TRUE(decoded.ok()) << decoded.status();
    if (!decoded.ok()) return {};
    const GemmEpilogue e = decoded->epilogue;
    auto g = planGemm(decoded->problem);
    EXPECT_TRUE(g.ok()) << g.status();
    EXPECT_TRUE(setTrainingEpilogue(*g, e).ok());
    const auto typed = [&](int32_t id) { return Tensor(plan.buffers[id].dtype, plan.buffers[id].shape); };
    EpilogueIo io;
    std::optional<Tensor> aux, biasGrad;
    std::vector<uint8_t> mask;
    if (decoded->bias >= 0) io.bias = operands[decoded->bias];
    if (decoded->auxOperand >= 0) aux = *operands[decoded->auxOperand];
    if (decoded->auxResult >= 0) aux = typed(step.results[decoded->auxResult]);
    if (epilogueAux(e) == GemmAux::ReluMask) {
      // cuBLASLt's bit mask lives in the i1 tensor's storage, which must hold it.
      EXPECT_LE(auxBytes(*g), static_cast<int64_t>(aux->nbytes())) << "step " << s;
      if (auxBytes(*g) > static_cast<int64_t>(aux->nbytes())) return {};
      mask.assign(aux->data(), aux->data() + auxBytes(*g));
      io.mask = &mask;
    } else if (aux) {
      io.geluInput = &*aux;
    }
    if (decoded->biasGrad >= 0) {
      biasGrad = typed(step.results[decoded->biasGrad]);
      io.biasGrad = &*biasGrad;
    }
    Tensor d = emulateTrainingGemm(*g, *operands[0], *operands[1], io);
    EXPECT_TRUE(d.reshapeInPlace(plan.buffers[step.results[0]].shape));
    values[step.results[0]] = std::move(d);
    if (decoded->auxResult >= 0) {
      if (io.mask) std::copy(mask.begin(), mask.end(), aux->data());
      values[step.results[decoded->auxResult]] = std::move(*aux);
    }
    if (biasGrad) values[step.results[decoded->biasGrad]] = std::move(*biasGrad);
  }
  std::vector<Tensor> results;
  for (int32_t id : entry.results) results.push_back(*values[id]);
  return results;
}

// Random params and state in [-1, 1), feeds likewise; integer buffers (labels, token ids) cycle
// through 0..9, valid for every model here. Drawn per buffer name, so two bundles of one model
// (with and without the epilogues) get the same values.
std::vector<std::optional<Tensor>> randomBindings(const Plan& plan, uint32_t seed) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<std::optional<Tensor>> values(plan.buffers.size());
  for (size_t id = 0; id < plan.buffers.size(); ++id) {
    const BufferDesc& b = plan.buffers[id];
    if (b.kind == BufferKind::Temp) continue;
    std::seed_seq names(b.name.begin(), b.name.end());
    std::mt19937 rng(names);
    rng.discard(seed);
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

TEST(GemmEpilogues, TheMlpsReluLayersUseTheMaskEpiloguesAndTheLastBiasGradientBgradB) {
  LOAD_OR_SKIP(fused, "mlp_epilogues_f32_sm_90");
  LOAD_OR_SKIP(plain, "mlp_f32_sm_90");
  const EntryPoint& grads = *fused->findEntry("grads");
  std::map<std::string, int> want = {{"relu_aux_bias", 2}, {"drelu_bgrad", 2}, {"bgrad_b", 1}};
  EXPECT_EQ(epilogues(grads), want);
  // The two relu backward kernels, their +0 and the output layer's bias-gradient reduce_sum are gone.
  EXPECT_EQ(plain->findEntry("grads")->steps.size() - grads.steps.size(), 4u);
  EXPECT_EQ(opCounts(grads)["amp.reduce_sum"], 0);
  EXPECT_EQ(opCounts(grads)["amp.fused"], 0);
  EXPECT_EQ(epilogues(*fused->findEntry("train_step")), want);
  // Inference has no backward: no mask to keep, nothing selected.
  EXPECT_TRUE(epilogues(*fused->findEntry("eval")).empty());
  // Without the flag, nothing is.
  for (const EntryPoint& e : plain->entries) EXPECT_TRUE(epilogues(e).empty()) << e.name;
}

TEST(GemmEpilogues, TheTransformersGeluRunsInItsGemmsForwardAndBackward) {
  LOAD_OR_SKIP(fused, "transformer_lm_epilogues_bf16_sm_90");
  LOAD_OR_SKIP(plain, "transformer_lm_bf16_sm_90");
  const EntryPoint& grads = *fused->findEntry("grads");
  std::map<std::string, int> want = {{"gelu_aux_bias", 1}, {"dgelu_bgrad", 1}};
  EXPECT_EQ(epilogues(grads), want);
  std::map<std::string, int> before = opCounts(*plain->findEntry("grads")), after = opCounts(grads);
  EXPECT_EQ(after["amp.gelu"], 0);
  EXPECT_EQ(after["amp.gelu_grad"], 0);
  EXPECT_EQ(before["amp.reduce_sum"] - after["amp.reduce_sum"], 1) << "the feed-forward bias gradient";
  // Evaluation keeps no GELU input: GELU_BIAS alone.
  std::map<std::string, int> evalWant = {{"gelu_bias", 1}};
  EXPECT_EQ(epilogues(*fused->findEntry("eval")), evalWant);
}

// An entry's results on the host from random bindings (by buffer name), for two plans of one model.
std::vector<Tensor> gradsOnHost(const Plan& plan, uint32_t seed, bool emulate) {
  const EntryPoint& entry = *plan.findEntry("grads");
  std::vector<Tensor> out = runOnHost(plan, entry, randomBindings(plan, seed), emulate);
  EXPECT_EQ(out.size(), entry.results.size());
  return out;
}

TEST(GemmEpilogues, OnTheReferenceEachEpilogueIsTheBitsOfTheOpsItReplaces) {
  for (const auto& [fusedName, plainName] : {std::pair<const char*, const char*>{"mlp_epilogues_f32_sm_90", "mlp_f32_sm_90"},
                                             {"mlp_epilogues_bf16_sm_90", "mlp_bf16_sm_90"},
                                             {"mlp_epilogues_f16_sm_90", "mlp_f16_sm_90"},
                                             {"transformer_lm_epilogues_bf16_sm_90", "transformer_lm_bf16_sm_90"}}) {
    SCOPED_TRACE(fusedName);
    LOAD_OR_SKIP(fused, fusedName);
    LOAD_OR_SKIP(plain, plainName);
    const std::vector<Tensor> got = gradsOnHost(*fused, 5, false), want = gradsOnHost(*plain, 5, false);
    ASSERT_EQ(got.size(), want.size());
    ASSERT_FALSE(want.empty());
    for (size_t r = 0; r < want.size(); ++r)
      EXPECT_TRUE(got[r].bitwiseEquals(want[r])) << plain->findEntry("grads")->resultNames[r];
  }
}

TEST(GemmEpilogues, InF32CuBlasLtsEpiloguesGiveTheReferencesBits) {
  LOAD_OR_SKIP(fused, "mlp_epilogues_f32_sm_90");
  LOAD_OR_SKIP(plain, "mlp_f32_sm_90");
  const std::vector<Tensor> got = gradsOnHost(*fused, 3, true), want = gradsOnHost(*plain, 3, false);
  ASSERT_EQ(got.size(), want.size());
  ASSERT_FALSE(want.empty());
  for (size_t r = 0; r < want.size(); ++r)
    EXPECT_TRUE(got[r].bitwiseEquals(want[r])) << plain->findEntry("grads")->resultNames[r] << ": relative error "
                                               << relativeError(got[r], want[r]);
}

TEST(GemmEpilogues, InBf16CuBlasLtsEpiloguesAreWithinSummationOrderBounds) {
  for (const auto& [fusedName, plainName] : {std::pair<const char*, const char*>{"mlp_epilogues_bf16_sm_90", "mlp_bf16_sm_90"},
                                             {"transformer_lm_epilogues_bf16_sm_90", "transformer_lm_bf16_sm_90"}}) {
    SCOPED_TRACE(fusedName);
    LOAD_OR_SKIP(fused, fusedName);
    LOAD_OR_SKIP(plain, plainName);
    const std::vector<Tensor> got = gradsOnHost(*fused, 11, true), want = gradsOnHost(*plain, 11, false);
    ASSERT_EQ(got.size(), want.size());
    ASSERT_FALSE(want.empty());
    // One bf16 rounding (2^-8 relative) per changed step, carried through the backward: the
    // largest seen is 0.0077 of the result's largest magnitude; a miswired aux gives over 0.25.
    double worst = 0.0;
    for (size_t r = 0; r < want.size(); ++r) {
      const double e = relativeError(got[r], want[r]);
      worst = std::max(worst, e);
      EXPECT_LT(e, 0.02) << plain->findEntry("grads")->resultNames[r];
    }
    EXPECT_GT(worst, 0.0) << "bf16 epilogues round once where the plain ops round twice: some bits must differ";
  }
}

TEST(GemmEpilogues, EveryEntryCapturesAndReplaysOnTheSimulatedGpu) {
  for (const char* name : {"mlp_epilogues_f32_sm_90", "mlp_epilogues_bf16_sm_90", "mlp_epilogues_f16_sm_90",
                           "transformer_lm_epilogues_bf16_sm_90", "amp_recipe_mlp_epilogues_f16_sm_90"}) {
    SCOPED_TRACE(name);
    LOAD_OR_SKIP(plan, name);
    EXPECT_FALSE(epilogues(*plan->findEntry("train_step")).empty());
    auto api = std::make_unique<DryRunApi>();
    DryRunApi* dry = api.get();
    auto session = Session::create(std::move(*plan), makeCudaExecutor(std::move(api)));
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

// A bundle may carry amp.gemm_epilogue steps whose kind does not fit them (hostile, or edited): the
// device refuses them by name before anything runs, never runs one with a missing pointer.
TEST(GemmEpilogues, AKindThatDoesNotFitItsStepIsRefused) {
  LOAD_OR_SKIP(plan, "mlp_epilogues_f32_sm_90");
  const std::pair<const char*, const char*> edits[] = {
      {"relu_aux_bias", "drelu"},        // a bias where the mask should be, one result too many
      {"relu_aux_bias", "gelu_aux_bias"},  // the i1 mask where the GELU input (f32) should be
      {"relu_aux_bias", "gelu_bias"},    // one result too many
      {"drelu_bgrad", "bgrad_b"},        // the mask operand left over
      {"drelu_bgrad", "dgelu_bgrad"},    // an i1 mask read as the GELU input
      {"bgrad_b", "bgrad_a"},            // the bias gradient [10] is not lhs's column count (256)
      {"bgrad_b", "no_such_kind"}};
  for (const auto& [from, to] : edits) {
    SCOPED_TRACE(std::string(from) + " -> " + to);
    Plan edited = *plan;
    EntryPoint& entry = *std::find_if(edited.entries.begin(), edited.entries.end(),
                                      [](const EntryPoint& e) { return e.name == "train_step"; });
    auto step = std::find_if(entry.steps.begin(), entry.steps.end(), [&](const PlanStep& s) {
      return s.code == OpCode::GemmEpilogue && *s.attrs.getString(s.op, "kind") == from;
    });
    ASSERT_NE(step, entry.steps.end());
    step->attrs.set("kind", std::string(to));
    auto session = Session::create(std::move(edited), makeCudaExecutor(std::make_unique<DryRunApi>()));
    if (std::string(to) == "no_such_kind") {  // not a kind at all: the plan's decoder refuses it
      ASSERT_FALSE(session.ok());
      EXPECT_NE(session.status().message().find("amp.gemm_epilogue: attribute 'kind' is 'no_such_kind', not a "
                                                "GemmEpilogueKind keyword"),
                std::string::npos)
          << session.status();
      continue;
    }
    ASSERT_TRUE(session.ok()) << session.status();
    auto prepared = session->prepared("train_step");
    ASSERT_FALSE(prepared.ok());
    EXPECT_NE(prepared.status().message().find("amp.gemm_epilogue"), std::string::npos) << prepared.status();
  }
}

// The layout rules the compiler selects by and the device applies (runtime/schema/CublasLtEpilogue.h).
TEST(GemmEpilogues, CuBlasLtsAuxiliaryLayoutRules) {
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
  EXPECT_EQ(reluMaskBytes(g.auxLd, g.n), auxBytes(g)) << "the compiler's size of the mask is the device's";
  g.batch = 2;
  EXPECT_FALSE(setTrainingEpilogue(g, GemmEpilogue::DReluBgrad).ok()) << "batched";
  // A [B, S, K] input against a shared weight folds into one GEMM; a batched weight gradient does not.
  const ColumnMajorGemm folded = columnMajorGemm({8, 32, 64}, {256, 64}, false, true);
  EXPECT_TRUE(folded.error.empty());
  EXPECT_EQ(folded.batch, 1);
  EXPECT_EQ(folded.n, 256);
  EXPECT_EQ(folded.m, 256);
  const ColumnMajorGemm batched = columnMajorGemm({8, 32, 64}, {8, 32, 16}, true, false);
  EXPECT_EQ(batched.batch, 8);
  EXPECT_FALSE(trainingEpilogueAux(batched, EpilogueAux::None).error.empty());
  // The planner the device runs agrees with the rule.
  GemmProblem p;
  p.a = {8, 32, 64};
  p.b = {256, 64};
  p.transB = true;
  auto planned = planGemm(p);
  ASSERT_TRUE(planned.ok());
  EXPECT_EQ(planned->batch, folded.batch);
  EXPECT_EQ(planned->n, folded.n);
  EXPECT_EQ(planned->m, folded.m);
}

}  // namespace
}  // namespace amp::rt::cuda
