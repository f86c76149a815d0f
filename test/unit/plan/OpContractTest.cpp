// The op contract generated from the ODS (runtime/plan/OpAttrs.h, OpSchema.inc): decodeSteps gives
// every step its typed attributes, step kind and checked arity, and refuses what the op's ODS
// refuses, naming the step.
#include <string>

#include "gtest/gtest.h"
#include "runtime/plan/PlanValidation.h"

namespace amp::rt {
namespace {

PlanStep updateScaleStep(double growth, double backoff, int64_t interval) {
  PlanStep s;
  s.op = "amp.update_scale";
  s.operands = {0, 1, 2};
  s.results = {3, 4};
  s.attrs = {{"growth_factor", growth}, {"backoff_factor", backoff}, {"growth_interval", interval}};
  s.loc = "model.mlir:7:3";
  return s;
}

Plan planOf(PlanStep step) {
  Plan p;
  EntryPoint e;
  e.name = "train_step";
  e.steps.push_back(std::move(step));
  p.entries.push_back(std::move(e));
  return p;
}

TEST(OpContract, DecodesTypedAttributesKindAndCode) {
  Plan p = planOf(updateScaleStep(2.0, 0.5, 2000));
  ASSERT_TRUE(decodeSteps(p).ok());
  const PlanStep& s = p.entries[0].steps[0];
  EXPECT_EQ(s.code, OpCode::UpdateScale);
  EXPECT_EQ(s.kind, StepKind::MultiTensor);
  const UpdateScaleAttrs& a = s.attrsOf<UpdateScaleAttrs>();
  EXPECT_EQ(a.growthFactor, 2.0);
  EXPECT_EQ(a.backoffFactor, 0.5);
  EXPECT_EQ(a.growthInterval, 2000);
}

// The intervals are the ODS's Amp_BoundedAttr (ir/AmpTrainOps.td), the same the IR verifier checks.
TEST(OpContract, RefusesAttributesOutsideTheirOdsInterval) {
  struct Case {
    double growth, backoff;
    int64_t interval;
    std::string message;
  };
  for (const Case& c : {Case{1.0, 0.5, 2000, "'growth_factor' must be in (1.0, inf), got 1"},
                        Case{INFINITY, 0.5, 2000, "'growth_factor' must be in (1.0, inf), got inf"},
                        Case{NAN, 0.5, 2000, "'growth_factor' must be in (1.0, inf), got nan"},
                        Case{2.0, 1.0, 2000, "'backoff_factor' must be in (0.0, 1.0), got 1"},
                        Case{2.0, 0.5, 0, "'growth_interval' must be in [1, 2147483647], got 0"},
                        Case{2.0, 0.5, int64_t{1} << 31, "'growth_interval' must be in [1, 2147483647], got 2147483648"}}) {
    Plan p = planOf(updateScaleStep(c.growth, c.backoff, c.interval));
    absl::Status status = decodeSteps(p);
    ASSERT_FALSE(status.ok()) << c.message;
    EXPECT_NE(status.message().find("model.mlir:7:3: entry 'train_step' step 0: amp.update_scale: attribute " +
                                    c.message),
              std::string::npos)
        << status.message();
  }
}

TEST(OpContract, RefusesMissingAndIllTypedAttributes) {
  PlanStep missing = updateScaleStep(2.0, 0.5, 10);
  missing.attrs = {{"growth_factor", 2.0}, {"backoff_factor", 0.5}};
  Plan p = planOf(missing);
  absl::Status status = decodeSteps(p);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("missing attribute 'growth_interval'"), std::string::npos) << status.message();

  PlanStep typed = updateScaleStep(2.0, 0.5, 10);
  typed.attrs.set("growth_interval", std::string("ten"));
  p = planOf(typed);
  status = decodeSteps(p);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("growth_interval"), std::string::npos) << status.message();
}

TEST(OpContract, DefaultsAndEnumKeywordsComeFromTheOds) {
  PlanStep s;
  s.op = "amp.lr_schedule";
  s.operands = {0};
  s.results = {1};
  s.attrs = {{"kind", std::string("cosine")}, {"base_lr", 0.1}, {"total_steps", int64_t{100}}};
  Plan p = planOf(s);
  ASSERT_TRUE(decodeSteps(p).ok());
  const LrScheduleAttrs& a = p.entries[0].steps[0].attrsOf<LrScheduleAttrs>();
  EXPECT_EQ(a.kind, LrScheduleKind::Cosine);
  EXPECT_EQ(a.warmupSteps, 0);  // DefaultValuedAttr<..., "0">
  EXPECT_EQ(a.minLr, 0.0);

  s.attrs.set("kind", std::string("linear"));
  p = planOf(s);
  absl::Status status = decodeSteps(p);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("attribute 'kind' is 'linear', not a LrScheduleKind keyword"), std::string::npos)
      << status.message();

  // A rule between attributes, as the op's verifier states it (runtime/plan/OpAttrRelations.cpp).
  s.attrs.set("kind", std::string("cosine"));
  s.attrs.set("warmup_steps", int64_t{100});
  p = planOf(s);
  status = decodeSteps(p);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("total_steps > warmup_steps"), std::string::npos) << status.message();
}

TEST(OpContract, RefusesAnArityTheOdsDoesNotAllow) {
  PlanStep s = updateScaleStep(2.0, 0.5, 10);
  s.operands = {0, 1};
  Plan p = planOf(s);
  absl::Status status = decodeSteps(p);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("amp.update_scale takes 3 operands, not 2"), std::string::npos) << status.message();

  PlanStep clip;  // variadic gradients: at least the norm
  clip.op = "amp.clip_grads";
  clip.attrs = {{"max_norm", 1.0}};
  clip.results = {1};
  p = planOf(clip);
  status = decodeSteps(p);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("amp.clip_grads takes at least 1 operands, not 0"), std::string::npos)
      << status.message();
}

TEST(OpContract, StepKindsAreTheOdsTraits) {
  EXPECT_EQ(stepKindOf(OpCode::Matmul), StepKind::Library);
  EXPECT_EQ(stepKindOf(OpCode::AdamUpdate), StepKind::MultiTensor);
  EXPECT_EQ(stepKindOf(OpCode::Fused), StepKind::Fused);
  EXPECT_EQ(stepKindOf(OpCode::Reshape), StepKind::Alias);
  EXPECT_EQ(stepKindOf(OpCode::Add), StepKind::Op);
  EXPECT_EQ(stepKindOf("amp.frobnicate"), StepKind::Op);
}

}  // namespace
}  // namespace amp::rt
