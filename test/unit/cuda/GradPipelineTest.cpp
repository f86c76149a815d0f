// The cuda device's gradient-pipeline rewrite (runtime/devices/cuda/GradPipeline.h) on the plans
// ampc compiles: which steps it absorbs, what the fused steps read and write, when it declines,
// and that the rewritten entry's memory (planned again) is a layout the checker proves: no
// gradient's storage is reused before the optimizer reads it.
#include <unistd.h>

#include <map>
#include <set>

#include "gtest/gtest.h"
#include "runtime/devices/cuda/GradPipeline.h"
#include "runtime/plan/MemoryLayout.h"
#include "runtime/plan/MemoryPlan.h"
#include "test/unit/cuda/TestBundles.h"

namespace amp::rt::cuda {
namespace {

const PlanStep* only(const EntryPoint& e, const std::string& op) {
  const PlanStep* found = nullptr;
  for (const PlanStep& s : e.steps)
    if (s.op == op) {
      if (found) return nullptr;
      found = &s;
    }
  return found;
}

TEST(GradPipeline, ClippedF16SgdRunsAsAStatisticsPassAndTheOptimizer) {
  LOAD_OR_SKIP(plan, "mlp_sgd_clip_f16_sm_80");
  const EntryPoint& entry = *plan->findEntry("train_step");
  auto fused = fuseGradPipeline(*plan, entry);
  ASSERT_TRUE(fused.has_value());
  const EntryPoint& f = fused->entry;
  std::map<std::string, int> before = opCounts(entry), after = opCounts(f);
  EXPECT_EQ(after["amp.unscale_check"], 0);
  EXPECT_EQ(after["amp.global_norm"], 0);
  EXPECT_EQ(after["amp.clip_grads"], 0);
  EXPECT_EQ(after[kGradStatsOp], 1);
  // Six gradients widened from f16, six masters narrowed to their f16 copies: none of it runs.
  EXPECT_EQ(before["amp.cast"] - after["amp.cast"], 12);
  EXPECT_EQ(after["amp.sgd_update"], 6);
  EXPECT_EQ(f.steps.size(), entry.steps.size() - 3 - 12 + 1);
  EXPECT_EQ(fused->planStep.size(), f.steps.size());
  for (size_t s = 0; s < f.steps.size(); ++s)
    if (f.steps[s].op != kGradStatsOp) EXPECT_EQ(f.steps[s].op, entry.steps[fused->planStep[s]].op) << s;

  const PlanStep* check = only(entry, "amp.unscale_check");
  const PlanStep* norm = only(entry, "amp.global_norm");
  const PlanStep* stats = only(f, kGradStatsOp);
  ASSERT_TRUE(check && norm && stats);
  // found_inf and the norm are the plan's own buffers: the log and the optimizer read them.
  ASSERT_EQ(stats->results.size(), 2u);
  EXPECT_EQ(stats->results[0], check->results.back());
  EXPECT_EQ(stats->results[1], norm->results[0]);
  EXPECT_EQ(stats->operands.back(), check->operands.back()) << "the loss scale";
  auto widened = stats->attrs.getInts(stats->op, "widened");
  ASSERT_TRUE(widened.ok());
  EXPECT_EQ(*widened, std::vector<int64_t>(6, 1));
  std::set<int32_t> copies;
  for (const PlanStep& s : f.steps) {
    if (s.op != "amp.sgd_update") continue;
    EXPECT_EQ(plan->buffers[s.operands[1]].dtype, DType::F16) << "reads the stored gradient";
    EXPECT_EQ(s.operands.size(), 5u + 2u) << "param, grad, lr, found, momentum, then scale and norm";
    EXPECT_EQ(s.operands[5], check->operands.back());
    EXPECT_EQ(s.operands[6], norm->results[0]);
    EXPECT_TRUE(s.attrs.getBool(s.op, kWidenedAttr).value_or(false));
    EXPECT_EQ(s.attrs.getDouble(s.op, kMaxNormAttr).value_or(0), 1.0);
    ASSERT_EQ(s.results.size(), 3u) << "param, momentum, and the f16 copy";
    EXPECT_EQ(plan->buffers[s.results[2]].dtype, DType::F16);
    copies.insert(s.results[2]);
  }
  EXPECT_EQ(copies.size(), 6u);
  // The copies are the results of the plan's casts of the updated masters.
  for (const PlanStep& s : entry.steps)
    if (s.op == "amp.cast" && copies.count(s.results[0])) copies.erase(s.results[0]);
  EXPECT_TRUE(copies.empty());
}

TEST(GradPipeline, TheReplannedMemoryIsOneTheLayoutCheckerProves) {
  for (const char* name : {"mlp_sgd_clip_f16_sm_80", "mlp_f16_sm_90", "mlp_bf16_sm_90", "transformer_lm_bf16_sm_90"}) {
    SCOPED_TRACE(name);
    LOAD_OR_SKIP(plan, name);
    const EntryPoint& train = *plan->findEntry("train_step");
    auto fused = fuseGradPipeline(*plan, train);
    ASSERT_TRUE(fused.has_value());
    // The bundle's layout is for the plan's entry: in it, storage the gradients leave at
    // unscale_check is reused before the fused optimizer would read them.
    ASSERT_TRUE(train.memory.has_value());
    EXPECT_FALSE(adoptMemoryLayout(*plan, fused->entry, *train.memory).ok());
    const MemoryPlan memory = planMemory(*plan, fused->entry, constantsOutsideArena(*plan, fused->entry));
    auto proven = adoptMemoryLayout(*plan, fused->entry, layoutOf(memory, fused->entry));
    EXPECT_TRUE(proven.ok()) << proven.status();
    // A stored gradient lives until the optimizer reads it: no buffer written in between shares
    // its bytes (the checker's rule, asserted here directly for the gradients).
    const EntryPoint& f = fused->entry;
    size_t statsAt = 0;
    while (f.steps[statsAt].op != kGradStatsOp) ++statsAt;
    for (int32_t g : f.steps[statsAt].operands) {
      if (memory.offset[g] < 0) continue;
      const int64_t lo = memory.offset[g], hi = lo + plan->buffers[g].byteSize();
      size_t lastRead = statsAt;
      for (size_t s = statsAt; s < f.steps.size(); ++s)
        for (int32_t o : f.steps[s].operands)
          if (o == g) lastRead = s;
      EXPECT_GT(lastRead, statsAt) << "an optimizer update reads gradient " << plan->buffers[g].name;
      for (size_t s = statsAt; s < lastRead; ++s)
        for (int32_t r : f.steps[s].results) {
          if (memory.offset[r] < 0) continue;
          const int64_t rlo = memory.offset[r], rhi = rlo + plan->buffers[r].byteSize();
          EXPECT_TRUE(rhi <= lo || rlo >= hi) << plan->buffers[r].name << " overwrites " << plan->buffers[g].name;
        }
    }
  }
}

TEST(GradPipeline, UpdatesOfOneKernelBecomeAdjacent) {
  LOAD_OR_SKIP(plan, "transformer_lm_bf16_sm_90");
  auto fused = fuseGradPipeline(*plan, *plan->findEntry("train_step"));
  ASSERT_TRUE(fused.has_value());
  // Runs of updates sharing a kernel (stored gradient type, copy or not).
  std::vector<std::pair<DType, size_t>> runs;
  for (const PlanStep& s : fused->entry.steps) {
    if (s.op != "amp.adam_update") continue;
    const std::pair<DType, size_t> key{plan->buffers[s.operands[1]].dtype, s.results.size()};
    if (runs.empty() || runs.back() != key) runs.push_back(key);
  }
  EXPECT_EQ(runs.size(), 2u) << "f32 gradients without copies, then bf16 ones with";
}

TEST(GradPipeline, DeclinesWhereTheCallerOrAnotherStepReadsAnIntermediate) {
  LOAD_OR_SKIP(plan, "mlp_sgd_clip_f16_sm_80");
  // The grads entry returns the unscaled gradients.
  EXPECT_FALSE(fuseGradPipeline(*plan, *plan->findEntry("grads")).has_value());
  EXPECT_FALSE(fuseGradPipeline(*plan, *plan->findEntry("eval")).has_value()) << "no pipeline at all";
  const EntryPoint& train = *plan->findEntry("train_step");
  const PlanStep* check = only(train, "amp.unscale_check");
  const PlanStep* clip = only(train, "amp.clip_grads");
  ASSERT_TRUE(check && clip);
  {
    EntryPoint e = train;  // a clipped gradient is also a result
    e.results.push_back(clip->results[0]);
    e.resultNames.push_back("clipped");
    EXPECT_FALSE(fuseGradPipeline(*plan, e).has_value());
  }
  {
    EntryPoint e = train;  // an unscaled gradient feeds something besides the pipeline
    PlanStep extra;
    extra.op = "amp.reduce_sum";
    extra.code = opCodeOf(extra.op);
    extra.operands = {check->results[0]};
    extra.results = {check->results.back()};
    e.steps.push_back(extra);
    EXPECT_FALSE(fuseGradPipeline(*plan, e).has_value());
  }
  {
    EntryPoint e = train;  // two pipelines in one entry
    std::vector<PlanStep> steps;
    for (const PlanStep& s : e.steps) {
      steps.push_back(s);
      if (&s - &e.steps[0] == check - &train.steps[0]) steps.push_back(s);
    }
    e.steps = steps;
    EXPECT_FALSE(fuseGradPipeline(*plan, e).has_value());
  }
}

}  // namespace
}  // namespace amp::rt::cuda
