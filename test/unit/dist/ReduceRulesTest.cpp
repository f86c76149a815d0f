// The element-wise arithmetic the MPI reductions apply (runtime/dist/ReduceRules.h).
#include "runtime/dist/ReduceRules.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "runtime/numerics/Convert.h"

namespace amp::rt {
namespace {

uint32_t bitsOf(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  return b;
}
float fromBits(uint32_t b) {
  float x;
  std::memcpy(&x, &b, 4);
  return x;
}

TEST(DistReduceRules, F16SumAddsInF32AndRoundsOnce) {
  // 2048 + 1 is not an f16 (spacing 2 there): the f32 sum 2049 rounds to even, 2048; 2048 + 3
  // = 2051 rounds up to 2052. 65504 + 16 overflows to +inf (>= 65520 after rounding).
  std::vector<uint16_t> in = {f32ToF16(1.0f), f32ToF16(3.0f), f32ToF16(16.0f), f32ToF16(0.1f)};
  std::vector<uint16_t> inout = {f32ToF16(2048.0f), f32ToF16(2048.0f), f32ToF16(65504.0f), f32ToF16(0.2f)};
  sumF16Into(in.data(), inout.data(), 4);
  EXPECT_EQ(f16ToF32(inout[0]), 2048.0f);
  EXPECT_EQ(f16ToF32(inout[1]), 2052.0f);
  EXPECT_EQ(inout[2], 0x7c00);
  EXPECT_EQ(inout[3], f32ToF16(f16ToF32(f32ToF16(0.1f)) + f16ToF32(f32ToF16(0.2f))));
}

TEST(DistReduceRules, BF16SumAddsInF32AndRoundsOnce) {
  // bf16 has 8 significant bits: 256 + 1 = 257 ties to 256, 256 + 3 = 259 rounds to 260.
  std::vector<uint16_t> in = {f32ToBF16(1.0f), f32ToBF16(3.0f)};
  std::vector<uint16_t> inout = {f32ToBF16(256.0f), f32ToBF16(256.0f)};
  sumBF16Into(in.data(), inout.data(), 2);
  EXPECT_EQ(bf16ToF32(inout[0]), 256.0f);
  EXPECT_EQ(bf16ToF32(inout[1]), 260.0f);
}

TEST(DistReduceRules, F32MaxIsATotalOrder) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nanA = fromBits(0x7fc00001), nanB = fromBits(0xffc00000);
  struct Case {
    float a, b, expected;
  };
  const Case cases[] = {
      {1.0f, 2.0f, 2.0f}, {-inf, -3.0f, -3.0f}, {inf, 1e38f, inf},   {-inf, -inf, -inf},
      {0.0f, -0.0f, 0.0f}, {nanA, inf, nanA},   {-inf, nanA, nanA},  {nanA, nanB, nanB},
  };
  for (const Case& c : cases) {
    // Commutative bit for bit: the order in which MPI pairs the operands cannot matter.
    EXPECT_EQ(bitsOf(maxF32(c.a, c.b)), bitsOf(c.expected)) << c.a << " " << c.b;
    EXPECT_EQ(bitsOf(maxF32(c.b, c.a)), bitsOf(c.expected)) << c.b << " " << c.a;
  }
  std::vector<float> in = {nanA, -0.0f}, inout = {5.0f, 0.0f};
  maxF32Into(in.data(), inout.data(), 2);
  EXPECT_TRUE(std::isnan(inout[0]));
  EXPECT_EQ(bitsOf(inout[1]), 0u);
}

TEST(DistReduceRules, MeanDividesInF32AndRoundsToTheBuffersType) {
  std::vector<float> f32 = {1.0f, 3.0f, -0.0f};
  divideForMean(f32.data(), 3, DType::F32, 3);
  EXPECT_EQ(f32[0], 1.0f / 3.0f);
  EXPECT_EQ(f32[1], 1.0f);
  EXPECT_EQ(bitsOf(f32[2]), 0x80000000u);
  std::vector<uint16_t> f16 = {f32ToF16(1.0f), f32ToF16(65504.0f)};
  divideForMean(f16.data(), 2, DType::F16, 3);
  EXPECT_EQ(f16[0], f32ToF16(1.0f / 3.0f));
  EXPECT_EQ(f16[1], f32ToF16(65504.0f / 3.0f));
  std::vector<uint16_t> bf16 = {f32ToBF16(1.0f)};
  divideForMean(bf16.data(), 1, DType::BF16, 2);
  EXPECT_EQ(bf16[0], f32ToBF16(0.5f));
}

TEST(DistReduceRules, ChecksArguments) {
  float x = 0;
  EXPECT_TRUE(checkAllReduceArgs(&x, 1, DType::F32, ReduceOp::Sum).ok());
  EXPECT_TRUE(checkAllReduceArgs(nullptr, 0, DType::BF16, ReduceOp::Mean).ok());
  EXPECT_EQ(checkAllReduceArgs(&x, 1, DType::I32, ReduceOp::Mean).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace amp::rt
