// Counter-based dropout: the mask is re-derived here from Philox4x32-10 with the documented keying.
#include "RefTestUtil.h"
#include "runtime/numerics/Philox.h"

namespace amp::rt {
namespace {
using namespace reftest;

AttrMap dropoutAttrs(double rate, int64_t seed) { return AttrMap{{"rate", rate}, {"seed", seed}}; }

TEST(RefDropout, RateZeroIsTheIdentity) {
  std::vector<double> x = randomValues(1000, -10, 10, 1, DType::F16);
  x[3] = -0.0;
  Tensor X = make(DType::F16, {10, 100}, x);
  Tensor y = runOk("amp.dropout", {&X}, dropoutAttrs(0.0, 42), {DType::F16, {10, 100}}, 7);
  EXPECT_TRUE(y.bitwiseEquals(X));
}

TEST(RefDropout, MaskFollowsDocumentedPhiloxKeying) {
  // key = (seed lo, seed hi), counter = (i/4 lo, i/4 hi, step lo, step hi), lane i % 4;
  // keep iff uniformFromBits(bits) >= f32(rate); kept values are x * f32(1 / (1 - f32(rate))).
  const int64_t seed = 0x123456789abcdefLL, step = (int64_t{5} << 32) + 3;
  const double rate = 0.3;
  const int64_t n = 103;  // not a multiple of 4
  Tensor X = make(DType::F32, {n}, randomValues(n, 0.5, 2, 2));
  Tensor y = runOk("amp.dropout", {&X}, dropoutAttrs(rate, seed), {DType::F32, {n}}, step);
  const float p = float(rate), scale = float(1.0 / (1.0 - double(p)));
  const uint32_t key[2] = {uint32_t(uint64_t(seed)), uint32_t(uint64_t(seed) >> 32)};
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t ctr[4] = {uint32_t(i / 4), 0, uint32_t(step), uint32_t(uint64_t(step) >> 32)};
    const bool keep = uniformFromBits(philox4x32_10(key, ctr)[i % 4]) >= p;
    const float want = keep ? X.as<float>()[i] * scale : 0.0f;
    EXPECT_EQ(y.as<float>()[i], want) << i;
  }
}

TEST(RefDropout, ReproducibleForSameSeedAndStepDifferentOtherwise) {
  Tensor X = make(DType::F32, {4096}, std::vector<double>(4096, 1.0));
  auto mask = [&](int64_t seed, int64_t step) {
    return runOk("amp.dropout", {&X}, dropoutAttrs(0.5, seed), {DType::F32, {4096}}, step);
  };
  Tensor a = mask(1, 10), b = mask(1, 10), c = mask(1, 11), d = mask(2, 10);
  EXPECT_TRUE(a.bitwiseEquals(b));
  EXPECT_FALSE(a.bitwiseEquals(c));
  EXPECT_FALSE(a.bitwiseEquals(d));
  // Independent masks agree on about half the elements at rate 0.5 (not all, not none).
  int same = 0;
  for (int i = 0; i < 4096; ++i) same += a.as<float>()[i] == c.as<float>()[i];
  EXPECT_NEAR(same, 2048, 5 * 32);  // binomial sd = sqrt(4096 / 4) = 32
}

TEST(RefDropout, KeptFractionAndExactScaling) {
  const int64_t n = 100000;
  for (double rate : {0.1, 0.3, 0.75}) {
    Tensor X = make(DType::BF16, {n}, std::vector<double>(n, 1.5));
    Tensor y = runOk("amp.dropout", {&X}, dropoutAttrs(rate, 1234), {DType::BF16, {n}}, 3);
    const double scaled = roundToDType(DType::BF16, 1.5f * float(1.0 / (1.0 - double(float(rate)))));
    int64_t kept = 0;
    for (double v : values(y)) {
      ASSERT_TRUE(v == 0.0 || v == scaled) << v;  // dropped exactly 0, kept exactly x * scale (RNE)
      kept += v != 0.0;
    }
    // Binomial: sd of the kept fraction = sqrt(rate (1 - rate) / n) <= 0.0016; allow 5 sd.
    EXPECT_NEAR(double(kept) / n, 1 - rate, 5 * std::sqrt(rate * (1 - rate) / n)) << "rate " << rate;
  }
}

TEST(RefDropout, RejectsBadRate) {
  Tensor X = make(DType::F32, {4}, {1, 2, 3, 4});
  for (double rate : {1.0, -0.1, 2.0})
    expectError(run("amp.dropout", {&X}, dropoutAttrs(rate, 1), {DType::F32, {4}}), "attribute 'rate'");
  expectError(run("amp.dropout", {&X}, {{"rate", 0.5}}, {DType::F32, {4}}), "missing attribute 'seed'");
}

}  // namespace
}  // namespace amp::rt
