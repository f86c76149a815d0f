#include <gtest/gtest.h>

#include <cmath>

#include "runtime/numerics/Philox.h"

namespace amp::rt {
namespace {

// Known-answer vectors of Random123 (kat_vectors, philox4x32_10).
TEST(NumericsPhilox, Random123KnownAnswers) {
  struct Kat {
    uint32_t ctr[4], key[2], out[4];
  } kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const Kat& k : kats) {
    const std::array<uint32_t, 4> got = philox4x32_10(k.key, k.ctr);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(got[i], k.out[i]) << "word " << i;
  }
}

TEST(NumericsPhilox, UniformFromBits) {
  EXPECT_EQ(uniformFromBits(0), 0.0f);
  EXPECT_EQ(uniformFromBits(0xffffffffu), 1.0f - 0x1p-24f);  // largest result, below 1
  EXPECT_EQ(uniformFromBits(0x80000000u), 0.5f);
  EXPECT_EQ(uniformFromBits(0x000000ffu), 0.0f);  // only the top 24 bits matter
  EXPECT_EQ(uniformFromBits(0x00000100u), 0x1p-24f);
}

TEST(NumericsPhilox, DropoutStreamLayout) {
  // Element i uses word i%4 of the block i/4, counter high words carry the step.
  const uint64_t seed = 0x0123456789abcdefull, step = 0x0000000500000007ull;
  const uint32_t key[2] = {0x89abcdefu, 0x01234567u};
  for (uint64_t index : {0ull, 1ull, 2ull, 3ull, 4ull, 7ull, (1ull << 34) + 6}) {
    const uint64_t block = index / 4;
    const uint32_t ctr[4] = {uint32_t(block), uint32_t(block >> 32), 7u, 5u};
    EXPECT_EQ(dropoutBits(seed, step, index), philox4x32_10(key, ctr)[index % 4]) << index;
  }
  EXPECT_NE(dropoutBits(seed, step, 0), dropoutBits(seed, step + 1, 0));
  EXPECT_NE(dropoutBits(seed, step, 0), dropoutBits(seed + 1, step, 0));
}

TEST(NumericsPhilox, DropoutKeepRate) {
  const int n = 1 << 20;
  for (float p : {0.0f, 0.1f, 0.5f, 0.9f, 1.0f}) {
    int kept = 0;
    for (int i = 0; i < n; ++i) kept += dropoutKeep(1234, 99, uint64_t(i), p);
    const double rate = double(kept) / n;
    if (p == 0.0f) {
      EXPECT_EQ(kept, n);
    }
    if (p == 1.0f) {
      EXPECT_EQ(kept, 0);
    }
    // 1M Bernoulli draws: the standard deviation of the rate is <= 0.0005; allow 6 sigma.
    EXPECT_NEAR(rate, 1.0 - p, 0.003) << "p=" << p;
  }
}

}  // namespace
}  // namespace amp::rt
