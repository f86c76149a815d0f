// Parameter initialisers: exact for constants, statistically right and reproducible for random kinds.
#include <cmath>

#include "gtest/gtest.h"
#include "runtime/plan/Init.h"

namespace amp::rt {
namespace {

struct Moments {
  double mean = 0, var = 0, maxAbs = 0;
};
Moments moments(const Tensor& t) {
  Moments m;
  const float* v = t.as<float>();
  for (int64_t i = 0; i < t.numel(); ++i) m.mean += v[i];
  m.mean /= t.numel();
  for (int64_t i = 0; i < t.numel(); ++i) {
    m.var += (v[i] - m.mean) * (v[i] - m.mean);
    m.maxAbs = std::max(m.maxAbs, std::fabs(static_cast<double>(v[i])));
  }
  m.var /= t.numel();
  return m;
}

TEST(Init, Fans) {
  EXPECT_EQ(computeFans({784, 256}), (std::pair<int64_t, int64_t>{784, 256}));
  EXPECT_EQ(computeFans({16, 3, 3, 3}), (std::pair<int64_t, int64_t>{27, 144}));
  EXPECT_EQ(computeFans({10}), (std::pair<int64_t, int64_t>{10, 10}));
}

TEST(Init, DeterministicConstants) {
  auto z = initializeParam({"zeros", 1, 0}, {3, 2});
  auto o = initializeParam({"ones", 1, 0}, {3, 2});
  auto c = initializeParam({"constant", 0.25, 0}, {5});
  ASSERT_TRUE(z.ok() && o.ok() && c.ok());
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(z->as<float>()[i], 0.0f);
    EXPECT_EQ(o->as<float>()[i], 1.0f);
  }
  for (int i = 0; i < 5; ++i) EXPECT_EQ(c->as<float>()[i], 0.25f);
}

TEST(Init, KaimingUniformBoundAndVariance) {
  auto t = initializeParam({"kaiming_uniform", 1, 3}, {784, 256});
  ASSERT_TRUE(t.ok());
  double bound = std::sqrt(6.0 / 784);
  Moments m = moments(*t);
  EXPECT_LE(m.maxAbs, bound);
  EXPECT_GT(m.maxAbs, 0.99 * bound);
  EXPECT_NEAR(m.mean, 0.0, 0.002);
  EXPECT_NEAR(m.var, bound * bound / 3.0, 0.02 * bound * bound / 3.0);  // U(-b,b) variance b^2/3
}

TEST(Init, NormalAndXavierStatistics) {
  auto n = initializeParam({"normal", 0.02, 5}, {512, 512});
  ASSERT_TRUE(n.ok());
  Moments m = moments(*n);
  EXPECT_NEAR(m.mean, 0.0, 0.0002);
  EXPECT_NEAR(std::sqrt(m.var), 0.02, 0.0003);
  auto x = initializeParam({"xavier_normal", 2.0, 5}, {300, 100});
  ASSERT_TRUE(x.ok());
  EXPECT_NEAR(std::sqrt(moments(*x).var), 2.0 * std::sqrt(2.0 / 400), 0.01 * std::sqrt(2.0 / 400) * 2);
}

TEST(Init, SameSeedSameTensorDifferentSeedDifferent) {
  auto a = initializeParam({"kaiming_normal", 1, 11}, {64, 32});
  auto b = initializeParam({"kaiming_normal", 1, 11}, {64, 32});
  auto c = initializeParam({"kaiming_normal", 1, 12}, {64, 32});
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_TRUE(a->bitwiseEquals(*b));
  EXPECT_FALSE(a->bitwiseEquals(*c));
}

TEST(Init, UnknownKindIsAnError) {
  auto t = initializeParam({"orthogonal", 1, 0}, {4, 4});
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("orthogonal"), std::string::npos);
}

}  // namespace
}  // namespace amp::rt
