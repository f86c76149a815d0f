// The ways the cuda device runs a linear layer's or matmul's GEMM (runtime/devices/cuda/GemmVariants.h),
// run on the host as the device runs them: the bias-rows and relu passes are EpilogueKernels.cu's own
// source run through BlockEmulation.h (grids smaller than D, both schedules), every cuBLASLt call
// goes through the column-major emulator (GemmEmulator.h). Each variant, the first choice and every
// fallback, must give the reference's bits, NaN included (a NaN matches any NaN); the two passes
// are also checked on their own against the reference's relu and the bias rows' layout. Compiled
// with -ffp-contract=off.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "gtest/gtest.h"
#include "runtime/devices/cuda/GemmVariants.h"
#include "runtime/numerics/Convert.h"
#include "runtime/reference/ReferenceKernels.h"
#include "test/unit/cuda/GemmEmulator.h"
#include "test/unit/common/BlockEmulation.h"
#include "runtime/kernels/math/HostDevice.h"
#include "runtime/kernels/cuda/DeviceIO.cuh"
#include "runtime/kernels/math/EpilogueMath.h"
#include "runtime/kernels/cuda/EpilogueKernels.cu"

namespace amp::rt::cuda {
namespace {

// Values that make a linear layer's results awkward: NaN, infinities, signed zeros, negatives.
Tensor awkward(DType t, const Shape& s, std::mt19937& rng) {
  Tensor x(t, s);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const float special[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity(), -0.0f, 0.0f};
  for (int64_t i = 0; i < x.numel(); ++i) storeFromF32(t, x.data(), i, i % 11 == 3 ? special[(i / 11) % 5] : u(rng));
  return x;
}

// Elements [offset, offset + count) of t as a tensor of their own, for one call of a per-batch variant.
Tensor slice(const Tensor& t, int64_t offset, int64_t count) {
  Tensor s(t.dtype(), {count});
  const size_t size = dtypeSize(t.dtype());
  std::memcpy(s.data(), static_cast<const uint8_t*>(t.data()) + offset * size, static_cast<size_t>(count) * size);
  return s;
}

// Two blocks of 32 threads, forwards then in reverse on alternate launches.
int launches = 0;
void launchSmall(const std::function<void()>& kernel) {
  ASSERT_EQ(emu::launch({2, 1, 1}, {32, 1, 1}, kernel, launches++ % 2 ? emu::Schedule::Reverse : emu::Schedule::Forward),
            "");
}

// amp_bias_rows_*: D's `rows` rows of `cols` elements each a copy of bias.
void biasRows(const Tensor& bias, Tensor& d, int64_t rows, int64_t cols) {
  launchSmall([&] {
    if (dtypeSize(d.dtype()) == 2)
      amp_bias_rows_b16(bias.data(), d.data(), rows, cols);
    else
      amp_bias_rows_b32(bias.data(), d.data(), rows, cols);
  });
}

// amp_relu_inplace_*: the reference's relu of every element of D.
void reluInPlace(Tensor& d) {
  launchSmall([&] {
    switch (d.dtype()) {
      case DType::BF16: amp_relu_inplace_bf16(d.data(), d.numel()); break;
      case DType::F16: amp_relu_inplace_f16(d.data(), d.numel()); break;
      default: amp_relu_inplace_f32(d.data(), d.numel()); break;
    }
  });
}

// What the device computes with variant v of `planned`: D filled with the bias rows, the call (or
// one call per batch), then the relu pass.
Tensor runVariant(const GemmVariant& v, const GemmPlan& planned, const Tensor& a, const Tensor& b, const Tensor* bias) {
  const DType t = planned.dtype;
  Tensor d(t, planned.resultShape);
  if (v.biasRows) biasRows(*bias, d, d.numel() / planned.m, planned.m);
  const Tensor* callBias = epilogueReadsBias(v.plan.epilogue) ? bias : nullptr;
  if (!v.perBatch) {
    d = emulateGemm(v.plan, a, b, callBias, &d);
  } else {
    for (int64_t i = 0; i < planned.batch; ++i) {
      // cuBLASLt's A is the step's b: strideA steps through b, strideB through a.
      const int64_t offA = i * planned.strideB, offB = i * planned.strideA, offD = i * planned.strideC;
      Tensor part = slice(d, offD, d.numel() - offD);
      Tensor out = emulateGemm(v.plan, slice(a, offA, a.numel() - offA), slice(b, offB, b.numel() - offB), callBias, &part);
      std::memcpy(static_cast<uint8_t*>(d.data()) + offD * dtypeSize(t), out.data(), out.nbytes());
    }
  }
  if (v.relu) reluInPlace(d);
  return d;
}

// Bit for bit, except that any NaN matches any NaN; returns how many NaN the reference holds.
int64_t expectReferenceBits(const Tensor& got, const Tensor& want) {
  EXPECT_EQ(got.numel(), want.numel());
  int64_t nans = 0;
  for (int64_t i = 0; i < want.numel() && i < got.numel(); ++i) {
    const float g = loadAsF32(got.dtype(), got.data(), i), w = loadAsF32(want.dtype(), want.data(), i);
    if (std::isnan(w)) {
      ++nans;
      EXPECT_TRUE(std::isnan(g)) << "element " << i << ": " << g << ", the reference's NaN";
      continue;
    }
    uint32_t gb = 0, wb = 0;
    std::memcpy(&gb, &g, 4);
    std::memcpy(&wb, &w, 4);
    EXPECT_EQ(gb, wb) << "element " << i << ": " << g << " against the reference's " << w;
  }
  return nans;
}

TEST(CudaGemmVariants, EveryVariantOfALinearLayerGivesTheReferencesBitsNaNIncluded) {
  std::mt19937 rng(21);
  for (DType t : {DType::F32, DType::BF16, DType::F16})
    for (bool relu : {false, true})
      for (bool tw : {false, true}) {
        SCOPED_TRACE(testing::Message() << dtypeName(t) << " relu " << relu << " transpose_w " << tw);
        const Shape x{2, 9, 16}, w = tw ? Shape{24, 16} : Shape{16, 24};
        Tensor xt = awkward(t, x, rng), wt = awkward(t, w, rng), bias = awkward(t, {24}, rng);
        auto planned = planGemm(linearProblem(t, x, w, tw, true, relu));
        ASSERT_TRUE(planned.ok()) << planned.status();
        auto ref = evalReferenceOp("amp.linear", {&xt, &wt, &bias},
                                   {{"transpose_w", tw}, {"activation", std::string(relu ? "relu" : "none")}},
                                   {{t, {2, 9, 24}}}, EvalContext{});
        ASSERT_TRUE(ref.ok()) << ref.status();
        const std::vector<GemmVariant> variants = gemmVariants(*planned, false, true);
        ASSERT_EQ(variants.size(), 2u) << "the BIAS epilogue, then DEFAULT onto the bias rows";
        EXPECT_EQ(variants[0].plan.epilogue, GemmEpilogue::Bias) << "a relu never runs in cuBLASLt's epilogue";
        EXPECT_EQ(variants[0].relu, relu);
        EXPECT_TRUE(variants[1].biasRows && variants[1].plan.accumulate);
        EXPECT_EQ(variants[1].plan.epilogue, GemmEpilogue::None);
        for (const GemmVariant& v : variants) {
          SCOPED_TRACE(v.change.empty() ? "first choice" : v.change);
          EXPECT_GT(expectReferenceBits(runVariant(v, *planned, xt, wt, &bias), (*ref)[0]), 0) << "the data make NaN";
        }
      }
}

// Why the relu is a pass of its own: cuBLASLt's RELU_BIAS computes max(x, 0), which makes a NaN 0
// where the reference keeps it, so non-finite results and --check-numerics verdicts would differ.
TEST(CudaGemmVariants, CublasLtsReluEpilogueWouldTurnTheReferencesNaNIntoZero) {
  std::mt19937 rng(22);
  const DType t = DType::BF16;
  const Shape x{8, 16}, w{16, 8};
  Tensor xt = awkward(t, x, rng), wt = awkward(t, w, rng), bias = awkward(t, {8}, rng);
  auto planned = planGemm(linearProblem(t, x, w, false, true, true));
  ASSERT_TRUE(planned.ok());
  ASSERT_EQ(planned->epilogue, GemmEpilogue::ReluBias);
  auto ref = evalReferenceOp("amp.linear", {&xt, &wt, &bias}, {{"transpose_w", false}, {"activation", std::string("relu")}},
                             {{t, {8, 8}}}, EvalContext{});
  ASSERT_TRUE(ref.ok());
  const Tensor fused = emulateGemm(*planned, xt, wt, &bias);
  int64_t zeroed = 0;
  for (int64_t i = 0; i < fused.numel(); ++i)
    zeroed += std::isnan(loadAsF32(t, (*ref)[0].data(), i)) && loadAsF32(t, fused.data(), i) == 0.0f;
  EXPECT_GT(zeroed, 0);
  EXPECT_TRUE(amp_relu_keeps(std::numeric_limits<float>::quiet_NaN()));
  EXPECT_FALSE(amp_relu_keeps(-0.0f)) << "-0 becomes +0, as in the reference";
  EXPECT_FALSE(amp_relu_keeps(-std::numeric_limits<float>::infinity()));
  EXPECT_TRUE(amp_relu_keeps(std::numeric_limits<float>::denorm_min()));
}

// The two passes on their own: the relu kernel is the reference's amp.relu bit for bit (NaN kept,
// -0 and -inf to +0, subnormals kept), and the bias rows are bit copies of the bias, row after row.
TEST(CudaGemmVariants, TheReluAndBiasRowsKernelsAreTheReferencesBits) {
  std::mt19937 rng(23);
  for (DType t : {DType::F32, DType::BF16, DType::F16}) {
    SCOPED_TRACE(testing::Message() << dtypeName(t));
    Tensor d = awkward(t, {7, 45}, rng);  // 315 elements: several turns of a 64-thread grid
    storeFromF32(t, d.data(), 0, -0.0f);
    storeFromF32(t, d.data(), 1, std::numeric_limits<float>::denorm_min() * 8192.0f);  // subnormal in every type
    storeFromF32(t, d.data(), 2, -std::numeric_limits<float>::denorm_min() * 8192.0f);
    auto ref = evalReferenceOp("amp.relu", {&d}, {}, {{t, {7, 45}}}, EvalContext{});
    ASSERT_TRUE(ref.ok()) << ref.status();
    reluInPlace(d);
    EXPECT_GT(expectReferenceBits(d, (*ref)[0]), 0) << "the data hold NaN";
    EXPECT_EQ(std::signbit(loadAsF32(t, d.data(), 0)), false) << "-0 becomes +0";

    const Tensor bias = awkward(t, {13}, rng);
    Tensor rows(t, {6, 13});
    std::memset(rows.data(), 0xa5, rows.nbytes());  // a fill the kernel must overwrite everywhere
    biasRows(bias, rows, 6, 13);
    const size_t es = dtypeSize(t);
    for (int64_t i = 0; i < rows.numel(); ++i)
      EXPECT_EQ(std::memcmp(rows.data() + i * es, bias.data() + (i % 13) * es, es), 0) << "element " << i;
  }
}

TEST(CudaGemmVariants, ABatchedMatmulFallsBackToOneCallPerBatch) {
  std::mt19937 rng(23);
  for (DType t : {DType::F32, DType::F16}) {
    SCOPED_TRACE(dtypeName(t));
    GemmProblem p;
    p.dtype = t;
    p.a = {3, 5, 7};  // transposed per batch: no folding, a strided batch
    p.b = {3, 5, 6};
    p.transA = true;
    auto planned = planGemm(p);
    ASSERT_TRUE(planned.ok());
    ASSERT_EQ(planned->batch, 3);
    Tensor a = awkward(t, p.a, rng), b = awkward(t, p.b, rng);
    auto ref = evalReferenceOp("amp.matmul", {&a, &b}, {{"transpose_a", true}, {"transpose_b", false}},
                               {{t, planned->resultShape}}, EvalContext{});
    ASSERT_TRUE(ref.ok());
    const std::vector<GemmVariant> variants = gemmVariants(*planned, false, true);
    ASSERT_EQ(variants.size(), 2u);
    EXPECT_FALSE(variants[0].perBatch);
    EXPECT_TRUE(variants[1].perBatch);
    EXPECT_EQ(variants[1].plan.batch, 1);
    EXPECT_EQ(variants[1].change, "one call per batch");
    for (const GemmVariant& v : variants) expectReferenceBits(runVariant(v, *planned, a, b, nullptr), (*ref)[0]);
  }
}

TEST(CudaGemmVariants, TrainingEpiloguesAndBundlesWithoutThePassesKeepTheirOneCall) {
  auto planned = planGemm(linearProblem(DType::BF16, {4, 16}, {16, 8}, false, true, true));
  ASSERT_TRUE(planned.ok());
  const std::vector<GemmVariant> training = gemmVariants(*planned, true, true);
  ASSERT_EQ(training.size(), 1u);
  EXPECT_EQ(training[0].plan.epilogue, GemmEpilogue::ReluBias);
  const std::vector<GemmVariant> old = gemmVariants(*planned, false, false);
  ASSERT_EQ(old.size(), 1u) << "a bundle from an older ampc has no relu or bias-rows kernel";
  EXPECT_EQ(old[0].plan.epilogue, GemmEpilogue::ReluBias);
  EXPECT_FALSE(old[0].relu);
}

// The error both GpuApis give for "no algorithm": Unimplemented, which the device falls back on.
TEST(CudaGemmVariants, NoAlgorithmIsUnimplementedAndNamesTheCall) {
  auto planned = planGemm(linearProblem(DType::F16, {4, 16}, {16, 8}, false, true, false));
  ASSERT_TRUE(planned.ok());
  const absl::Status s = noGemmAlgorithm(*planned);
  EXPECT_TRUE(absl::IsUnimplemented(s)) << s;
  EXPECT_NE(s.message().find("f16 GEMM of 8 x 4 x 16 with epilogue BIAS"), std::string::npos) << s;
}

}  // namespace
}  // namespace amp::rt::cuda
