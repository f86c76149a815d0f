// The block helpers of runtime/devices/cuda/kernels/RowKernels.cuh and NormKernels.cu and the
// softmax kernels, their own source run on the host through BlockEmulation.h: amp_row_block_max
// (the tree with RowMath.h's tie-break) against the reference's sequential max, amp_row_ordered_sum
// and amp_row_ordered_sum2 (thread 0's sums behind a barrier per 256 terms) against the sequential
// f32 sums the reference's loops make, and amp_softmax_<T> / amp_log_softmax_<T> on contiguous
// (block-shared) and strided (one thread per slice) axes against amp.softmax and amp.log_softmax,
// bit for bit in f32, bf16 and f16.
#include <cmath>
#include <limits>
#include <random>

#include "gtest/gtest.h"
#include "test/unit/cuda/KernelTestSupport.h"
#include "test/unit/cuda/BlockEmulation.h"
#include "runtime/devices/cuda/kernels/HostDevice.h"
#include "runtime/devices/cuda/kernels/DeviceIO.cuh"
#include "runtime/devices/cuda/kernels/RowMath.h"
#include "runtime/devices/cuda/kernels/RowKernels.cuh"
#include "runtime/devices/cuda/kernels/NormMath.h"
#include "runtime/devices/cuda/kernels/NormKernels.cu"

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

TEST(CudaRowKernel, OrderedSumsAreTheSequentialSumsInIndexOrder) {
  std::mt19937 rng(83);
  std::vector<float> chunks(4 * AMP_ROW_BLOCK);
  for (int64_t len : {int64_t{0}, int64_t{1}, int64_t{255}, int64_t{256}, int64_t{257}, int64_t{1000}, int64_t{4099}}) {
    const std::vector<float> a = awkwardTerms(len, rng), b = awkwardTerms(len, rng);
    float wantA = 0.0f, wantB = 0.0f;
    for (int64_t j = 0; j < len; ++j) wantA += a[j], wantB += b[j];
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

}  // namespace
}  // namespace amp::rt
