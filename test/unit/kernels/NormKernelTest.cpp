// The block helpers of runtime/kernels/cuda/RowKernels.cuh and NormKernels.cu and the
// softmax kernels, their own source run on the host through BlockEmulation.h: amp_row_block_max
// (the tree with RowMath.h's tie-break) against the reference's sequential max, amp_row_ordered_sum
// and amp_row_ordered_sum2 (thread 0's block sums behind a barrier per 256 terms) against the
// blocked pairwise f32 sums the reference makes (SumOrder.h), and amp_softmax_<T> / amp_log_softmax_<T> on contiguous
// (block-shared) and strided (one thread per slice) axes against amp.softmax and amp.log_softmax,
// bit for bit in f32, bf16 and f16, and amp_softmax_grad_<T> (and its f32 kernels of a bf16/f16
// dy) against amp.softmax_grad, in place and not.
#include <cstring>
#include <cmath>
#include <limits>
#include <random>

#include "gtest/gtest.h"
#include "test/unit/kernels/KernelTestSupport.h"
#include "test/unit/common/BlockEmulation.h"
#include "runtime/kernels/math/HostDevice.h"
#include "runtime/kernels/math/SumOrder.h"
#include "runtime/kernels/cuda/DeviceIO.cuh"
#include "runtime/kernels/math/RowMath.h"
#include "runtime/kernels/cuda/RowKernels.cuh"
#include "runtime/kernels/math/NormMath.h"
#include "runtime/kernels/cuda/NormKernels.cu"

namespace amp::rt {
namespace {

using namespace kerneltest;

constexpr float kInf = std::numeric_limits<float>::infinity();

// Rows drawn from a few values, so ties, signed zeros, infinities and NaN meet in one tree.
std::vector<float> pooledRow(int64_t len, int kinds, std::mt19937& rng) {
  const float pool[] = {0.0f, -0.0f, -kInf, kInf, std::nanf(""), 1.0f, -1.0f, 3e38f, 1e-45f};
  std::vector<float> row(static_cast<size_t>(len));
  for (float& v : row) v = pool[rng() % kinds];
  return row;
}

TEST(CudaRowKernel, BlockMaxIsTheReferencesSequentialMaxOnEveryThread) {
  std::mt19937 rng(43);
  std::vector<float> maxes(AMP_ROW_BLOCK);
  std::vector<long long> firstAt(AMP_ROW_BLOCK);
  std::vector<float> got(AMP_ROW_BLOCK);
  for (int64_t len : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{256}, int64_t{300}, int64_t{5000}})
    for (int trial = 0; trial < 60; ++trial) {
      const std::vector<float> row = pooledRow(len, 1 + trial % 9, rng);
      float sequential = -kInf;  // softmaxSlice's m = x > m ? x : m
      for (float v : row) sequential = v > sequential ? v : sequential;
      ASSERT_EQ(emu::launch({1, 1, 1}, {AMP_ROW_BLOCK, 1, 1},
                            [&] {
                              got[threadIdx.x] = amp_row_block_max<0>(row.data(), 0, len, maxes.data(), firstAt.data());
                            },
                            trial % 2 ? emu::Schedule::Reverse : emu::Schedule::Forward),
                "");
      for (int t = 0; t < AMP_ROW_BLOCK; ++t)
        ASSERT_EQ(floatBits(got[t]), floatBits(sequential)) << "len " << len << " trial " << trial << " thread " << t;
    }
}

// Values whose f32 sum depends on the order (large and small magnitudes mixed), so only the
// index order the reference's loops use gives these bits.
std::vector<float> awkwardTerms(int64_t len, std::mt19937& rng) {
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(len));
  for (float& x : v) x = mantissa(rng) * std::ldexp(1.0f, static_cast<int>(rng() % 40) - 20);
  return v;
}

TEST(CudaRowKernel, OrderedSumsAreTheReferencesBlockedPairwiseSums) {
  std::mt19937 rng(83);
  std::vector<float> chunks(4 * AMP_ROW_BLOCK);
  for (int64_t len : {int64_t{0}, int64_t{1}, int64_t{255}, int64_t{256}, int64_t{257}, int64_t{1000}, int64_t{4099}}) {
    const std::vector<float> a = awkwardTerms(len, rng), b = awkwardTerms(len, rng);
    // The reference's sums: amp_blocked_sum, the contract's order (SumOrder.h).
    const float wantA = amp_blocked_sum(len, [&](long long j) { return a[j]; });
    const float wantB = amp_blocked_sum(len, [&](long long j) { return b[j]; });
    float one = std::nanf(""), twoA = std::nanf(""), twoB = std::nanf("");
    ASSERT_EQ(emu::launch({1, 1, 1}, {AMP_ROW_BLOCK, 1, 1},
                          [&] {
                            const float s = amp_row_ordered_sum(len, chunks.data(), [&](long long j) { return a[j]; });
                            __syncthreads();  // as the kernels do before `chunks` is reused
                            float sa, sb;
                            amp_row_ordered_sum2(
                                len, chunks.data(),
                                [&](long long j, float& ta, float& tb) {
                                  ta = a[j];
                                  tb = b[j];
                                },
                                &sa, &sb);
                            if (threadIdx.x == 0) one = s, twoA = sa, twoB = sb;
                          }),
              "");
    EXPECT_EQ(floatBits(one), floatBits(wantA)) << "len " << len;
    EXPECT_EQ(floatBits(twoA), floatBits(wantA)) << "len " << len;
    EXPECT_EQ(floatBits(twoB), floatBits(wantB)) << "len " << len;
  }
}

using SoftmaxKernel = void (*)(const void*, void*, long long, long long, long long);
const SoftmaxKernel kSoftmax[2][3] = {{amp_softmax_f32, amp_softmax_bf16, amp_softmax_f16},
                                      {amp_log_softmax_f32, amp_log_softmax_bf16, amp_log_softmax_f16}};

TEST(CudaNormKernel, SoftmaxOnContiguousAndStridedAxesMatchesTheReferenceBitForBit) {
  std::mt19937 rng(89);
  std::uniform_real_distribution<float> value(-8.0f, 8.0f);
  const std::vector<std::pair<Shape, int64_t>> cases = {
      {{5, 300}, 1}, {{3, 1}, 1}, {{1000}, 0}, {{0, 7}, 1}, {{4, 9, 3}, 1}, {{2, 7, 300}, 1}, {{6, 5, 2}, 0}};
  for (DType t : {DType::F32, DType::BF16, DType::F16})
    for (const auto& [shape, axis] : cases)
      for (int log = 0; log < 2; ++log) {
        const int64_t n = numElements(shape);
        std::vector<float> v(static_cast<size_t>(n));
        for (float& x : v) x = value(rng);
        if (n > 3) v[1] = kInf, v[2] = std::nanf(""), v[3] = -kInf;
        const Tensor x = fromValues(t, shape, v);
        int64_t outer = 1, inner = 1;
        for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
        for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
        const char* op = log ? "amp.log_softmax" : "amp.softmax";
        SCOPED_TRACE(testing::Message() << op << " " << name(t) << " " << shapeToString(shape) << " axis " << axis);
        const Tensor ref = reference(op, {&x}, AttrMap{{"axis", axis}}, {{t, shape}})[0];
        Tensor y(t, shape);
        const SoftmaxKernel kernel = kSoftmax[log][typeCode(t)];
        ASSERT_EQ(emu::launch({3, 1, 1}, {AMP_NRM_BLOCK, 1, 1},
                              [&] { kernel(x.data(), y.data(), outer, shape[axis], inner); }),
                  "");
        expectSameBits(y, ref, op);
      }
}

using SoftmaxGradKernel = void (*)(const void*, const void*, void*, long long, long long, long long);
struct SoftmaxGradVariant {
  DType t, g;  // y and dx, dy
  SoftmaxGradKernel kernel;
};
const SoftmaxGradVariant kSoftmaxGrad[] = {{DType::F32, DType::F32, amp_softmax_grad_f32},
                                           {DType::BF16, DType::BF16, amp_softmax_grad_bf16},
                                           {DType::F16, DType::F16, amp_softmax_grad_f16},
                                           {DType::F32, DType::BF16, amp_softmax_grad_f32_bf16},
                                           {DType::F32, DType::F16, amp_softmax_grad_f32_f16}};

// y in [0, 1) with exact zeros, as softmax outputs are; dy of magnitudes 2^-10 .. 2^6 (so the f32
// sum depends on its order, and an f16 sum of 1000 stays finite) with signed zeros, and in about a
// quarter of the slices one inf, -inf or NaN (which makes that slice's sum, and so its dx, non-finite).
void softmaxGradValues(int64_t outer, int64_t len, int64_t inner, std::mt19937& rng, std::vector<float>& y,
                       std::vector<float>& dy) {
  std::uniform_real_distribution<float> unit(0.0f, 1.0f), mantissa(-1.0f, 1.0f);
  const size_t n = static_cast<size_t>(outer * len * inner);
  y.resize(n);
  dy.resize(n);
  for (size_t k = 0; k < n; ++k) {
    y[k] = rng() % 16 == 0 ? 0.0f : unit(rng);
    const float magnitude = std::ldexp(1.0f, static_cast<int>(rng() % 17) - 10);
    dy[k] = rng() % 16 == 0 ? (rng() % 2 ? 0.0f : -0.0f) : mantissa(rng) * magnitude;
  }
  const float specials[] = {kInf, -kInf, std::nanf("")};
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i)
      if (rng() % 4 == 0) {
        const int64_t j = static_cast<int64_t>(rng() % len);
        dy[static_cast<size_t>((o * len + j) * inner + i)] = specials[rng() % 3];
      }
}

// Two rows worked by hand: y = (0.25, 0.75), dy = (1, 2): s = 0.25 + 1.5 = 1.75, dx = (0.25 * -0.75,
// 0.75 * 0.25); and in bf16 y = (0.5, 0.5), dy = (1, 1 + 2^-7): s = 0.5 + (0.5 + 2^-8) rounds to
// 1 (a tie, to even), so dx = (0.5 * 0, 0.5 * 2^-7) = (0, 2^-8), not the f32 sum's (-2^-9, 2^-9).
TEST(CudaNormKernel, SoftmaxGradOfTwoRowsWorkedByHand) {
  const Tensor y32 = fromValues(DType::F32, {1, 2}, {0.25f, 0.75f});
  const Tensor dy32 = fromValues(DType::F32, {1, 2}, {1.0f, 2.0f});
  Tensor dx32(DType::F32, {1, 2});
  ASSERT_EQ(emu::launch({1, 1, 1}, {AMP_NRM_BLOCK, 1, 1},
                        [&] { amp_softmax_grad_f32(y32.data(), dy32.data(), dx32.data(), 1, 2, 1); }),
            "");
  EXPECT_EQ(dx32.as<float>()[0], -0.1875f);
  EXPECT_EQ(dx32.as<float>()[1], 0.1875f);
  const float wide = 1.0f + std::ldexp(1.0f, -7);
  const Tensor y16 = fromValues(DType::BF16, {2, 1}, {0.5f, 0.5f});
  const Tensor dy16 = fromValues(DType::BF16, {2, 1}, {1.0f, wide});
  Tensor dx16(DType::BF16, {2, 1});
  ASSERT_EQ(emu::launch({1, 1, 1}, {AMP_NRM_BLOCK, 1, 1},
                        [&] { amp_softmax_grad_bf16(y16.data(), dy16.data(), dx16.data(), 1, 2, 1); }),
            "");  // axis 0 of [2, 1]: one strided slice
  EXPECT_EQ(loadAsF32(DType::BF16, dx16.data(), 0), 0.0f);
  EXPECT_EQ(loadAsF32(DType::BF16, dx16.data(), 1), std::ldexp(1.0f, -8));
}

// Every variant on rows (inner 1: a block per slice, 5 slices over 3 blocks) and strided axes (a
// thread per slice; 4 tiles of 256 slices, or 4 blocks of 3, over 3 blocks), written to a fresh dx
// and over y itself (the memory planner's in-place pair), in both schedules: one bit pattern, the
// reference's. Not in place, y is left as it was.
TEST(CudaNormKernel, SoftmaxGradInAndOutOfPlaceMatchesTheReferenceBitForBit) {
  std::mt19937 rng(97);
  int checked = 0;
  int64_t finiteNonZero = 0, total = 0;  // the reference's results that no NaN or zero makes match trivially
  for (int64_t len : {int64_t{1}, int64_t{2}, int64_t{7}, int64_t{255}, int64_t{256}, int64_t{257}, int64_t{1000}}) {
    const std::vector<std::pair<Shape, int64_t>> cases = {
        {{5, len}, 1}, {{4, len, 3}, 1}, {{2, len, 300}, 1}, {{len, 5}, 0}};
    for (const auto& [shape, axis] : cases)
      for (const SoftmaxGradVariant& v : kSoftmaxGrad) {
        int64_t outer = 1, inner = 1;
        for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
        for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
        std::vector<float> yValues, dyValues;
        softmaxGradValues(outer, len, inner, rng, yValues, dyValues);
        const Tensor y = fromValues(v.t, shape, yValues), dy = fromValues(v.g, shape, dyValues);
        SCOPED_TRACE(testing::Message() << "amp.softmax_grad " << name(v.t) << "/" << name(v.g) << " "
                                        << shapeToString(shape) << " axis " << axis);
        const Tensor ref = reference("amp.softmax_grad", {&y, &dy}, AttrMap{{"axis", axis}}, {{v.t, shape}})[0];
        for (int64_t k = 0; k < ref.numel(); ++k) {
          const float r = loadAsF32(v.t, ref.data(), k);
          finiteNonZero += std::isfinite(r) && r != 0.0f;
          total += 1;
        }
        for (emu::Schedule schedule : {emu::Schedule::Forward, emu::Schedule::Reverse})
          for (bool inPlace : {false, true}) {
            SCOPED_TRACE(testing::Message() << (schedule == emu::Schedule::Forward ? "forward" : "reverse")
                                            << (inPlace ? ", in place" : ""));
            Tensor yCopy = y, dx = fromValues(v.t, shape, std::vector<float>(yValues.size(), 12345.0f));
            Tensor& out = inPlace ? yCopy : dx;
            ASSERT_EQ(emu::launch({3, 1, 1}, {AMP_NRM_BLOCK, 1, 1},
                                  [&] { v.kernel(yCopy.data(), dy.data(), out.data(), outer, len, inner); }, schedule),
                      "");
            expectSameBits(out, ref, "dx");
            if (!inPlace) {
              ASSERT_EQ(std::memcmp(yCopy.data(), y.data(), y.nbytes()), 0) << "y was written";
            }
            ++checked;
          }
      }
  }
  EXPECT_EQ(checked, 7 * 4 * 5 * 4);
  EXPECT_GT(finiteNonZero, total / 2) << "of " << total;
}

}  // namespace
}  // namespace amp::rt
