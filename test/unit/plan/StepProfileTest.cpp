// --profile on the host devices (runtime/exec/StepProfile.h): each step's category, the GEMM and
// convolution FLOPs counted from the plan's shapes (2 flops a multiply-add, every conv form counted
// as the forward convolution's products), and the summary's medians, sums and slowest steps.
#include "runtime/exec/StepProfile.h"

#include "gtest/gtest.h"

namespace amp::rt {
namespace {

int32_t buffer(Plan& plan, Shape shape) {
  plan.buffers.push_back({"%" + std::to_string(plan.buffers.size()), DType::F32, std::move(shape), BufferKind::Temp,
                          std::nullopt});
  return static_cast<int32_t>(plan.buffers.size() - 1);
}

PlanStep step(std::string op, std::vector<int32_t> operands, std::vector<int32_t> results, std::string phase = "forward",
              StepKind kind = StepKind::Op) {
  PlanStep s;
  s.op = std::move(op);
  s.code = opCodeOf(s.op);
  s.operands = std::move(operands);
  s.results = std::move(results);
  s.phase = std::move(phase);
  s.kind = kind;
  return s;
}

TEST(StepProfileTest, ConvolutionFlopsAreTheForwardProductsInEveryForm) {
  Plan plan;
  const int32_t x = buffer(plan, {2, 4, 5, 5}), w = buffer(plan, {6, 2, 3, 3}), y = buffer(plan, {2, 6, 3, 3});
  // groups = 2: each of the 2*6*3*3 outputs sums C/groups * KH * KW = 18 products.
  const double expected = 2.0 * (2 * 6 * 3 * 3) * (2 * 3 * 3);
  EXPECT_EQ(stepFlops(plan, step("amp.conv2d", {x, w}, {y})), expected);
  EXPECT_EQ(stepFlops(plan, step("amp.conv2d_grad_input", {y, w}, {x})), expected);
  EXPECT_EQ(stepFlops(plan, step("amp.conv2d_grad_weight", {x, y}, {w})), expected);
}

TEST(StepProfileTest, GemmFlopsUseTheInnerDimension) {
  Plan plan;
  const int32_t a = buffer(plan, {3, 8, 5}), b = buffer(plan, {8, 7}), c = buffer(plan, {3, 5, 7});
  PlanStep matmul = step("amp.matmul", {a, b}, {c});
  matmul.attrs.set("transpose_a", true);  // lhs [.., K = 8, M = 5]
  EXPECT_EQ(stepFlops(plan, matmul), 2.0 * (3 * 5 * 7) * 8);
  const int32_t in = buffer(plan, {4, 10}), weight = buffer(plan, {6, 10}), out = buffer(plan, {4, 6});
  EXPECT_EQ(stepFlops(plan, step("amp.linear", {in, weight}, {out})), 2.0 * 24 * 10);
  EXPECT_EQ(stepFlops(plan, step("amp.add", {in, in}, {in})), 0.0);
}

TEST(StepProfileTest, Categories) {
  Plan plan;
  const int32_t t = buffer(plan, {2, 3, 4, 4});
  EXPECT_EQ(profileCategory(step("amp.matmul", {t, t}, {t})), "GEMM");
  EXPECT_EQ(profileCategory(step("amp.conv2d_grad_weight", {t, t}, {t}, "backward")), "conv");
  EXPECT_EQ(profileCategory(step("amp.batch_norm_grad", {t}, {t}, "backward")), "norm");
  EXPECT_EQ(profileCategory(step("amp.cast", {t}, {t})), "conversion");
  EXPECT_EQ(profileCategory(step("amp.cast", {t}, {t}, "update")), "optimizer/scaler");
  EXPECT_EQ(profileCategory(step("amp.adam_update", {t}, {t}, "update", StepKind::MultiTensor)), "optimizer/scaler");
  EXPECT_EQ(profileCategory(step("amp.transpose", {t}, {t})), "layout");
  EXPECT_EQ(profileCategory(step("amp.fused", {t}, {t}, "forward", StepKind::Fused)), "elementwise/fused");
  EXPECT_EQ(profileCategory(step("amp.add", {t, t}, {t})), "elementwise/fused");
  EXPECT_EQ(profileCategory(step("amp.max_pool2d", {t}, {t}, "forward", StepKind::Library)), "other");
}

TEST(StepProfileTest, SummaryTakesMediansSumsCategoriesAndOrdersTheSlowest) {
  Plan plan;
  const int32_t a = buffer(plan, {4, 10}), w = buffer(plan, {6, 10}), y = buffer(plan, {4, 6}), r = buffer(plan, {24});
  EntryPoint entry;
  entry.steps = {step("amp.linear", {a, w}, {y}), step("amp.relu", {y}, {y}), step("amp.reshape", {y}, {r}),
                 step("amp.linear", {a, w}, {y})};
  entry.steps[0].loc = "m.mlir:3:1";
  StepProfiler profiler(plan, entry);
  profiler.addCall({1.0, 0.5, 0.0, 4.0}, 6.0);
  profiler.addCall({3.0, 0.1, 0.0, 2.0}, 5.5);
  profiler.addCall({2.0, 0.3, 0.0, 9.0}, 12.0);
  const EntryProfile p = profiler.summary(2);
  EXPECT_EQ(p.calls, 3);
  EXPECT_EQ(p.callMs, 6.0);
  ASSERT_EQ(p.categories[0].name, "GEMM");
  EXPECT_EQ(p.categories[0].ms, 2.0 + 4.0);  // medians, summed
  EXPECT_EQ(p.categories[0].operations, 2);
  EXPECT_DOUBLE_EQ(p.categories[0].gflop, 2 * 480 / 1e9);
  int64_t operations = 0;
  for (const auto& c : p.categories) operations += c.operations;
  EXPECT_EQ(operations, 3);  // the reshape is a view: no work, not counted
  ASSERT_EQ(p.slowest.size(), 2u);
  EXPECT_EQ(p.slowest[0].index, 3u);
  EXPECT_EQ(p.slowest[0].ms, 4.0);
  EXPECT_EQ(p.slowest[1].index, 0u);
  EXPECT_EQ(p.slowest[1].loc, "m.mlir:3:1");
  ASSERT_EQ(p.ops.size(), 2u);  // by op name, slowest first
  EXPECT_EQ(p.ops[0].op, "amp.linear");
  EXPECT_EQ(p.ops[0].steps, 2);
  EXPECT_EQ(p.ops[0].ms, 6.0);
  EXPECT_EQ(p.ops[1].op, "amp.relu");
  EXPECT_EQ(p.ops[1].category, "elementwise/fused");
  // relu reads and writes y in place: 24 floats read, 24 written.
  const double reluBytes = 2 * 24 * 4;
  for (const auto& c : p.categories)
    if (c.name == "elementwise/fused") EXPECT_DOUBLE_EQ(c.mbytes, reluBytes / 1e6);
}

TEST(StepProfileTest, BytesReadEachDistinctOperandOnceAndWriteEachResult) {
  Plan plan;
  const int32_t x = buffer(plan, {1000}), s = buffer(plan, {}), y = buffer(plan, {1000});
  plan.buffers[y].dtype = DType::BF16;
  EXPECT_EQ(stepBytes(plan, step("amp.mul", {x, x}, {y})), 4000.0 + 2000.0);  // x twice: read once
  EXPECT_EQ(stepBytes(plan, step("amp.mul", {x, s}, {y})), 4000.0 + 4.0 + 2000.0);
  EXPECT_EQ(stepBytes(plan, step("amp.relu", {x}, {x})), 8000.0);  // in place: read and written
}

}  // namespace
}  // namespace amp::rt
