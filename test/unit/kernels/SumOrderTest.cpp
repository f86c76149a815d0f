// The contract's summation order (runtime/kernels/math/SumOrder.h): its three forms give the same
// bits as the order written out level by level, a sum of up to 256 terms is the plain in-order
// sum, and the order's error stays within its bound (docs/numerics.md, "Summation order") where
// one sequential chain's does not.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/kernels/math/SumOrder.h"

namespace {

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// The order as docs/numerics.md states it: in-order block sums from +0, then adjacent pairs level
// by level, an odd last one carried up.
float levelByLevel(const std::vector<float>& x) {
  std::vector<float> level;
  for (size_t b = 0; b < x.size(); b += AMP_SUM_BLOCK) {
    float s = 0.0f;
    for (size_t j = b; j < x.size() && j < b + AMP_SUM_BLOCK; ++j) s += x[j];
    level.push_back(s);
  }
  if (level.empty()) return 0.0f;
  while (level.size() > 1) {
    std::vector<float> next;
    for (size_t i = 0; i + 1 < level.size(); i += 2) next.push_back(level[i] + level[i + 1]);
    if (level.size() % 2) next.push_back(level.back());
    level = next;
  }
  return level[0];
}

// Magnitudes over 2^-20 .. 2^20 and both signs, so every different order gives different bits.
std::vector<float> awkward(int64_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> m(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = m(rng) * std::ldexp(1.0f, static_cast<int>(rng() % 40) - 20);
  return v;
}

TEST(SumOrder, EveryFormIsTheLevelByLevelTree) {
  std::mt19937 rng(7);
  std::vector<int64_t> lengths = {0, 1, 2, 255, 256, 257, 511, 512, 513, 1024, 4099, 65536 + 300};
  for (int blocks = 1; blocks <= 70; ++blocks) lengths.push_back(blocks * AMP_SUM_BLOCK - (blocks % 3) * 17);
  for (int64_t n : lengths) {
    const std::vector<float> x = awkward(n, rng);
    const float want = levelByLevel(x);
    EXPECT_EQ(bits(amp_blocked_sum(n, [&](long long j) { return x[j]; })), bits(want)) << "n " << n;
    AmpBlockedSum<float> streamed;
    streamed.reset(0.0f);
    for (float v : x) streamed.add(v);
    EXPECT_EQ(bits(streamed.result()), bits(want)) << "n " << n;
    EXPECT_EQ(bits(streamed.result()), bits(streamed.result())) << "result() leaves the sum as it was";
  }
}

TEST(SumOrder, UpToOneBlockItIsTheInOrderSumFromPlusZero) {
  std::mt19937 rng(11);
  for (int64_t n : {0, 1, 5, 100, 255, 256}) {
    const std::vector<float> x = awkward(n, rng);
    float sequential = 0.0f;
    for (float v : x) sequential += v;
    EXPECT_EQ(bits(amp_blocked_sum(n, [&](long long j) { return x[j]; })), bits(sequential)) << "n " << n;
  }
  // -0 terms: the sum starts from +0, as every in-order sum of the contract did.
  EXPECT_EQ(bits(amp_blocked_sum(600, [](long long) { return -0.0f; })), bits(0.0f));
  EXPECT_TRUE(std::isnan(amp_blocked_sum(600, [](long long j) { return j == 599 ? NAN : 1.0f; })));
  EXPECT_EQ(amp_blocked_sum(600, [](long long j) { return j == 3 ? INFINITY : 1.0f; }), INFINITY);
}

// |computed - exact| <= gamma_k * sum |x_i|, k = (block - 1) + ceil(log2(blocks)): the bound the
// docs state. Positive terms of a million, as a batch norm channel's squares: the blocked order
// stays within a couple of ulps of the f64 sum; one chain is tens of ulps off.
TEST(SumOrder, ErrorStaysWithinTheDocumentedBound) {
  std::mt19937 rng(13);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int64_t n : {int64_t{65536}, int64_t{1} << 20}) {
    std::vector<float> x(static_cast<size_t>(n));
    double exact = 0.0, absSum = 0.0;
    for (float& v : x) {
      v = std::fabs(normal(rng));
      exact += v;
      absSum += v;
    }
    const float blocked = amp_blocked_sum(n, [&](long long j) { return x[j]; });
    float chain = 0.0f;
    for (float v : x) chain += v;
    const double u = std::ldexp(1.0, -24);
    const int64_t blocks = (n + AMP_SUM_BLOCK - 1) / AMP_SUM_BLOCK;
    const double k = (AMP_SUM_BLOCK - 1) + std::ceil(std::log2(double(blocks)));
    EXPECT_LE(std::fabs(blocked - exact), k * u / (1 - k * u) * absSum) << "n " << n;
    const double ulp = std::ldexp(1.0, std::ilogb(exact) - 23);
    EXPECT_LE(std::fabs(blocked - exact), 4 * ulp) << "n " << n;
    EXPECT_GT(std::fabs(chain - exact), 8 * ulp) << "n " << n << ": one chain was expected to be worse";
  }
}

}  // namespace
