// reduce_sum/mean/max and softmax/log_softmax against f64 computations written here.
#include <cmath>
#include <limits>

#include "RefTestUtil.h"

namespace amp::rt {
namespace {
using namespace reftest;

// Reference reduction of x [2, 3, 4] over dims {0, 2}: output [3].
TEST(RefReduction, SumMeanMaxOverNonAdjacentDims) {
  std::vector<double> x = randomValues(24, -3, 3, 1);
  Tensor X = make(DType::F32, {2, 3, 4}, x);
  AttrMap attrs{{"dims", std::vector<int64_t>{0, 2}}, {"keepdim", false}};
  Tensor sum = runOk("amp.reduce_sum", {&X}, attrs, {DType::F32, {3}});
  Tensor mean = runOk("amp.reduce_mean", {&X}, attrs, {DType::F32, {3}});
  attrs.set("keepdim", true);
  Tensor mx = runOk("amp.reduce_max", {&X}, attrs, {DType::F32, {1, 3, 1}});
  std::vector<double> s = values(sum), m = values(mean), x3 = values(mx);
  for (int j = 0; j < 3; ++j) {
    double ws = 0, abs = 0, wm = -INFINITY;
    for (int i = 0; i < 2; ++i)
      for (int k = 0; k < 4; ++k) {
        const double v = x[(i * 3 + j) * 4 + k];
        ws += v;
        abs += std::fabs(v);
        wm = std::max(wm, v);
      }
    // 8 f32 additions: |err| <= 8 * 2^-24 * sum|x|; the mean adds one division rounding.
    EXPECT_NEAR(s[j], ws, 8 * kU32 * abs);
    EXPECT_NEAR(m[j], ws / 8, 9 * kU32 * abs / 8);
    EXPECT_EQ(x3[j], wm);
  }
}

TEST(RefReduction, SumUsesF32InRowMajorOrder) {
  // Reduced elements of row 0 in row-major order: 2^24, 1, 1, -2^24 -> 0 in sequential f32
  // (each +1 is lost); f64 or pairwise summation would give 2.
  const double big = std::ldexp(1, 24);
  Tensor X = make(DType::F32, {2, 2, 2}, {big, 1, 1, -big, 1, 2, 3, 4});
  Tensor y = runOk("amp.reduce_sum", {&X}, {{"dims", std::vector<int64_t>{1, 2}}}, {DType::F32, {2}});
  EXPECT_EQ(values(y), (std::vector<double>{0, 10}));
}

TEST(RefReduction, LowPrecisionSumIsF32AccumulatedThenRounded) {
  for (DType dt : {DType::F16, DType::BF16}) {
    std::vector<double> x = randomValues(4 * 64, -1, 1, 3, dt);
    Tensor X = make(dt, {4, 64}, x);
    Tensor y = runOk("amp.reduce_sum", {&X}, {{"dims", std::vector<int64_t>{1}}}, {dt, {4}});
    std::vector<double> want(4, 0.0), tol(4, 0.0);
    for (int r = 0; r < 4; ++r) {
      double abs = 0;
      for (int k = 0; k < 64; ++k) {
        want[r] += x[r * 64 + k];
        abs += std::fabs(x[r * 64 + k]);
      }
      tol[r] = 64 * kU32 * abs + ulpOf(dt, want[r]);  // f32 accumulation + final RNE
    }
    expectNearEach(y, want, tol, std::string(dtypeName(dt)));
  }
  // 65504 + 65504 overflows f16 on the final rounding, not in the f32 accumulator: 2 * 65504 - 65504.
  Tensor X = make(DType::F16, {3}, {65504, 65504, -65504});
  EXPECT_EQ(values(runOk("amp.reduce_sum", {&X}, {{"dims", std::vector<int64_t>{0}}}, {DType::F16, {}}))[0], 65504);
}

TEST(RefReduction, MaxPropagatesNaNAndRejectsEmpty) {
  Tensor X = make(DType::F32, {2, 3}, {1, std::nan(""), 3, -1, -2, -3});
  std::vector<double> y = values(runOk("amp.reduce_max", {&X}, {{"dims", std::vector<int64_t>{1}}}, {DType::F32, {2}}));
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_EQ(y[1], -1);
  Tensor E(DType::F32, {2, 0});
  expectError(run("amp.reduce_max", {&E}, {{"dims", std::vector<int64_t>{1}}}, {DType::F32, {2}}), "empty");
  EXPECT_EQ(values(runOk("amp.reduce_sum", {&E}, {{"dims", std::vector<int64_t>{1}}}, {DType::F32, {2}})),
            (std::vector<double>{0, 0}));
}

TEST(RefReduction, DimsMustBeSortedUniqueInRange) {
  Tensor X = make(DType::F32, {2, 3}, std::vector<double>(6, 1.0));
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{1, 0}, {0, 0}, {2}, {-1}})
    expectError(run("amp.reduce_sum", {&X}, {{"dims", dims}}, {DType::F32, {}}), "attribute 'dims'");
  expectError(run("amp.reduce_sum", {&X}, {}, {DType::F32, {}}), "amp.reduce_sum: missing attribute 'dims'");
}

std::vector<double> softmaxRef(const std::vector<double>& x, int64_t outer, int64_t len, int64_t inner, bool log) {
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double m = -INFINITY, s = 0;
      for (int64_t j = 0; j < len; ++j) m = std::max(m, x[(o * len + j) * inner + i]);
      for (int64_t j = 0; j < len; ++j) s += std::exp(x[(o * len + j) * inner + i] - m);
      for (int64_t j = 0; j < len; ++j) {
        const double v = x[(o * len + j) * inner + i] - m;
        y[(o * len + j) * inner + i] = log ? v - std::log(s) : std::exp(v) / s;
      }
    }
  return y;
}

TEST(RefReduction, SoftmaxMatchesF64AndRowsSumToOne) {
  std::vector<double> x = randomValues(5 * 10, -8, 8, 4);
  Tensor X = make(DType::F32, {5, 10}, x);
  Tensor y = runOk("amp.softmax", {&X}, {{"axis", int64_t{1}}}, {DType::F32, {5, 10}});
  // Each output: one exp rounding, a 10-term f32 sum and one division: relative error <= ~13 u.
  std::vector<double> want = softmaxRef(x, 5, 10, 1, false), tol;
  for (double w : want) tol.push_back(16 * kU32 * w);
  expectNearEach(y, want, tol, "softmax");
  std::vector<double> got = values(y);
  for (int r = 0; r < 5; ++r) {
    double s = 0;
    for (int j = 0; j < 10; ++j) s += got[r * 10 + j];
    EXPECT_NEAR(s, 1.0, 16 * kU32);
  }
}

TEST(RefReduction, SoftmaxOverLeadingAxisAndLargeInputsAreStable) {
  std::vector<double> x = randomValues(3 * 4 * 2, -2, 2, 5);
  x[0] = 1000;  // exp(1000) would overflow without the max subtraction
  x[8] = 1001;
  Tensor X = make(DType::F32, {3, 4, 2}, x);
  Tensor y = runOk("amp.softmax", {&X}, {{"axis", int64_t{0}}}, {DType::F32, {3, 4, 2}});
  std::vector<double> want = softmaxRef(x, 1, 3, 8, false), tol;
  for (double w : want) tol.push_back(16 * kU32 * w + 1e-38);
  expectNearEach(y, want, tol, "softmax axis 0");
  EXPECT_NEAR(values(y)[8], 1 / (1 + std::exp(-1.0)), 4 * kU32);
}

TEST(RefReduction, LogSoftmaxIsLogOfSoftmax) {
  for (DType dt : {DType::F32, DType::BF16}) {
    std::vector<double> x = randomValues(4 * 7, -5, 5, 6, dt);
    Tensor X = make(dt, {4, 7}, x);
    Tensor ls = runOk("amp.log_softmax", {&X}, {{"axis", int64_t{1}}}, {dt, {4, 7}});
    Tensor sm = runOk("amp.softmax", {&X}, {{"axis", int64_t{1}}}, {dt, {4, 7}});
    std::vector<double> want = softmaxRef(x, 4, 7, 1, true), l = values(ls), s = values(sm);
    for (size_t i = 0; i < l.size(); ++i) {
      // f32: |x - m| <= 10 and log(sum) <= 3, each rounded once: a few ulps of 10.
      const double tol = dt == DType::F32 ? 8 * kU32 * 16 : ulpOf(dt, want[i]) + 8 * kU32 * 16;
      EXPECT_NEAR(l[i], want[i], tol) << dtypeName(dt) << " " << i;
      // log(softmax) agrees with log_softmax up to the rounding of softmax to the result type.
      const double relS = dt == DType::F32 ? 16 * kU32 : std::ldexp(1, -7);
      EXPECT_NEAR(std::log(s[i]), l[i], relS + tol) << i;
    }
  }
  Tensor X = make(DType::F32, {2, 2}, {0, 0, 0, 0});
  expectError(run("amp.log_softmax", {&X}, {{"axis", int64_t{2}}}, {DType::F32, {2, 2}}), "attribute 'axis'");
}

}  // namespace
}  // namespace amp::rt
