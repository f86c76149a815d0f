// The CUDA device's mapping of amp.matmul / amp.linear onto cuBLASLt (runtime/devices/cuda/GemmPlan.h),
// checked without a GPU: a host emulator of cuBLASLt's column-major semantics (GemmEmulator.h: op(A),
// op(B), leading dimensions, strided batches, the bias epilogue per row of D, relu) runs the planned call
// on the step's row-major buffers, and the result must be the reference executor's bit for bit
// (both accumulate in f32 in k order; this file is compiled with -ffp-contract=off).
#include <random>

#include "gtest/gtest.h"
#include "runtime/devices/cuda/GemmPlan.h"
#include "runtime/reference/ReferenceKernels.h"
#include "runtime/numerics/Convert.h"
#include "test/unit/cuda/GemmEmulator.h"

namespace amp::rt::cuda {
namespace {

Tensor random(DType t, const Shape& s, std::mt19937& rng) {
  Tensor x(t, s);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int64_t i = 0; i < x.numel(); ++i) storeFromF32(t, x.data(), i, u(rng));
  return x;
}

void expectBitIdentical(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.shape(), want.shape());
  ASSERT_EQ(got.dtype(), want.dtype());
  for (int64_t i = 0; i < want.numel(); ++i)
    ASSERT_EQ(loadAsF32(got.dtype(), got.data(), i), loadAsF32(want.dtype(), want.data(), i)) << "element " << i;
}

struct MatmulCase {
  Shape a, b;
  bool ta, tb;
};

TEST(CudaGemmPlan, MatmulsMatchTheReference) {
  std::mt19937 rng(5);
  const MatmulCase cases[] = {
      {{7, 5}, {5, 3}, false, false},   {{5, 7}, {5, 3}, true, false},     {{7, 5}, {3, 5}, false, true},
      {{5, 7}, {3, 5}, true, true},     {{4, 7, 5}, {4, 5, 3}, false, false}, {{4, 7, 5}, {5, 3}, false, false},
      {{4, 5, 7}, {5, 3}, true, false}, {{7, 5}, {2, 3, 5, 6}, false, false}, {{2, 3, 5, 7}, {2, 3, 6, 5}, true, true},
      {{1, 9, 4}, {4, 2}, false, false}, {{128, 10}, {256, 10}, false, true}, {{128, 256}, {128, 10}, true, false},
  };
  for (DType t : {DType::F32, DType::BF16, DType::F16})
    for (const MatmulCase& c : cases) {
      SCOPED_TRACE(testing::Message() << dtypeName(t) << " " << shapeToString(c.a) << (c.ta ? "^T" : "") << " x "
                                      << shapeToString(c.b) << (c.tb ? "^T" : ""));
      Tensor a = random(t, c.a, rng), b = random(t, c.b, rng);
      GemmProblem p;
      p.dtype = t;
      p.a = c.a;
      p.b = c.b;
      p.transA = c.ta;
      p.transB = c.tb;
      auto g = planGemm(p);
      ASSERT_TRUE(g.ok()) << g.status();
      auto ref = evalReferenceOp("amp.matmul", {&a, &b}, {{"transpose_a", c.ta}, {"transpose_b", c.tb}},
                                 {{t, g->resultShape}}, EvalContext{});
      ASSERT_TRUE(ref.ok()) << ref.status();
      expectBitIdentical(emulateGemm(*g, a, b, nullptr), (*ref)[0]);
    }
}

TEST(CudaGemmPlan, LinearsWithBiasAndReluEpiloguesMatchTheReference) {
  std::mt19937 rng(9);
  for (DType t : {DType::F32, DType::BF16})
    for (bool tw : {false, true})
      for (bool relu : {false, true})
        for (const Shape& x : {Shape{16, 12}, Shape{2, 3, 12}}) {
          SCOPED_TRACE(testing::Message() << dtypeName(t) << " tw " << tw << " relu " << relu << " x " << shapeToString(x));
          const Shape w = tw ? Shape{6, 12} : Shape{12, 6};
          Tensor xt = random(t, x, rng), wt = random(t, w, rng), bias = random(t, {6}, rng);
          auto g = planGemm(linearProblem(t, x, w, tw, true, relu));
          ASSERT_TRUE(g.ok()) << g.status();
          EXPECT_EQ(g->epilogue, relu ? GemmEpilogue::ReluBias : GemmEpilogue::Bias);
          EXPECT_EQ(g->m, 6) << "the bias runs along cuBLASLt's rows";
          Shape out(x.begin(), x.end() - 1);
          out.push_back(6);
          auto ref = evalReferenceOp("amp.linear", {&xt, &wt, &bias},
                                     {{"transpose_w", tw}, {"activation", std::string(relu ? "relu" : "none")}},
                                     {{t, out}}, EvalContext{});
          ASSERT_TRUE(ref.ok()) << ref.status();
          Tensor got = emulateGemm(*g, xt, wt, &bias);
          ASSERT_EQ(got.numel(), (*ref)[0].numel());
          for (int64_t i = 0; i < got.numel(); ++i)
            ASSERT_EQ(loadAsF32(t, got.data(), i), loadAsF32(t, (*ref)[0].data(), i)) << "element " << i;
        }
}

TEST(CudaGemmPlan, SharedWeightsFoldTheBatchIntoOneGemm) {
  GemmProblem p;
  p.dtype = DType::BF16;
  p.a = {8, 128, 64};
  p.b = {64, 32};
  auto g = planGemm(p);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->batch, 1);
  EXPECT_EQ(g->n, 8 * 128);
  EXPECT_EQ(g->resultShape, (Shape{8, 128, 32}));
  p.transA = true;  // a transposed per batch cannot fold: a strided batch sharing b
  p.a = {8, 64, 128};
  auto s = planGemm(p);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->batch, 8);
  EXPECT_EQ(s->strideA, 0);
}

TEST(CudaGemmPlan, RefusesWhatOneCublasLtCallCannotDo) {
  GemmProblem p;
  p.a = {2, 1, 4, 5};
  p.b = {1, 3, 5, 6};
  auto mixed = planGemm(p);
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.status().message().find("not one strided batch"), std::string::npos) << mixed.status();
  p.a = {4, 5};
  p.b = {6, 7};
  EXPECT_FALSE(planGemm(p).ok());
  p.dtype = DType::I32;
  p.b = {5, 7};
  EXPECT_FALSE(planGemm(p).ok());
  p.dtype = DType::F32;
  p.a = {int64_t{1} << 32, 5};
  auto huge = planGemm(p);
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("2^31 - 1"), std::string::npos);
}

// The heuristic is told each pointer's alignment (cuBLASLt assumes 256 bytes unless told), and a
// plan used for several calls takes the smallest of each.
TEST(CudaGemmPlan, AlignmentsAreThoseOfEveryCallsPointers) {
  EXPECT_EQ(addressAlignment(0), 256) << "no pointer: no constraint";
  EXPECT_EQ(addressAlignment(0x7f0000001000), 256) << "capped at cuBLASLt's default";
  EXPECT_EQ(addressAlignment(0x7f0000001040), 64) << "an arena offset";
  EXPECT_EQ(addressAlignment(0x7f0000001006), 2);
  GemmProblem p;
  p.dtype = DType::BF16;
  p.a = {8, 16};
  p.b = {16, 4};
  auto g = planGemm(p);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->alignment.a, 256);
  // The step's a is cuBLASLt's B and its b cuBLASLt's A.
  alignForCall(*g, 0x10040, 0x10100, 0, 0x10080, 0);
  EXPECT_EQ(g->alignment.a, 256);
  EXPECT_EQ(g->alignment.b, 64);
  EXPECT_EQ(g->alignment.d, 128);
  EXPECT_EQ(g->alignment.bias, 256);
  alignForCall(*g, 0x10100, 0x10010, 0x10002, 0x10100, 0x10020);
  EXPECT_EQ(g->alignment.a, 16);
  EXPECT_EQ(g->alignment.b, 64) << "the smaller of the two calls";
  EXPECT_EQ(g->alignment.d, 128);
  EXPECT_EQ(g->alignment.bias, 2);
  EXPECT_EQ(g->alignment.aux, 32);
}

}  // namespace
}  // namespace amp::rt::cuda
