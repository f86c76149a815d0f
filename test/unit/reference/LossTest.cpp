// cross_entropy (PyTorch semantics incl. ignore_index and label_smoothing) and mse_loss.
#include <cmath>

#include "RefTestUtil.h"

namespace amp::rt {
namespace {
using namespace reftest;

// PyTorch's documented formula, in f64: mean over non-ignored samples of
// (1 - eps) * (-logp[i, y_i]) + eps * mean_c(-logp[i, c]).
double crossEntropyRef(const std::vector<double>& x, const std::vector<int64_t>& y, int64_t C, int64_t ignore,
                       double eps) {
  double total = 0;
  int64_t count = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    if (y[i] == ignore) continue;
    double m = -INFINITY, s = 0;
    for (int64_t c = 0; c < C; ++c) m = std::max(m, x[i * C + c]);
    for (int64_t c = 0; c < C; ++c) s += std::exp(x[i * C + c] - m);
    const double lse = m + std::log(s);
    double smooth = 0;
    for (int64_t c = 0; c < C; ++c) smooth += (lse - x[i * C + c]) / C;
    total += (1 - eps) * (lse - x[i * C + y[i]]) + eps * smooth;
    ++count;
  }
  return total / count;
}

TEST(RefLoss, CrossEntropyOfUniformLogitsIsLogC) {
  for (int64_t C : {2, 10, 1000}) {
    Tensor X = make(DType::F32, {3, C}, std::vector<double>(3 * C, 0.25));
    Tensor y = makeI64({3}, {0, C - 1, C / 2});
    const double got = values(runOk("amp.cross_entropy", {&X, &y}, {}, {DType::F32, {}}))[0];
    EXPECT_NEAR(got, std::log(double(C)), 4 * kU32 * std::log(double(C))) << "C = " << C;
  }
}

TEST(RefLoss, CrossEntropyMatchesPyTorchFormula) {
  const int64_t N = 6, C = 5;
  std::vector<double> x = randomValues(N * C, -4, 4, 1);
  Tensor X = make(DType::F32, {N, C}, x);
  for (double eps : {0.0, 0.1, 1.0}) {
    Tensor Y = makeI64({N}, {0, 4, 3, 2, 7, 1});  // 7 is the ignore_index here
    AttrMap attrs{{"ignore_index", int64_t{7}}, {"label_smoothing", eps}};
    const double got = values(runOk("amp.cross_entropy", {&X, &Y}, attrs, {DType::F32, {}}))[0];
    const double want = crossEntropyRef(x, {0, 4, 3, 2, 7, 1}, C, 7, eps);
    // Per-sample log-softmax terms are O(10) with a few f32 roundings each: 32 u * 10 is ample.
    EXPECT_NEAR(got, want, 32 * kU32 * 10) << "eps = " << eps;
  }
  // Default ignore_index is -100 and i32 labels work.
  std::vector<int32_t> l32 = {0, 4, -100, 2, 3, 1};
  Tensor Y32 = makeI32({N}, l32);
  const double got = values(runOk("amp.cross_entropy", {&X, &Y32}, {}, {DType::F32, {}}))[0];
  EXPECT_NEAR(got, crossEntropyRef(x, {0, 4, -100, 2, 3, 1}, C, -100, 0.0), 32 * kU32 * 10);
}

TEST(RefLoss, CrossEntropyAllIgnoredIsNaN) {
  Tensor X = make(DType::F32, {2, 3}, std::vector<double>(6, 1.0));
  Tensor Y = makeI64({2}, {-100, -100});
  EXPECT_TRUE(std::isnan(values(runOk("amp.cross_entropy", {&X, &Y}, {}, {DType::F32, {}}))[0]));
}

TEST(RefLoss, CrossEntropyBf16LogitsGiveBf16Scalar) {
  std::vector<double> x = randomValues(4 * 6, -3, 3, 2, DType::BF16);
  Tensor X = make(DType::BF16, {4, 6}, x);
  Tensor Y = makeI64({4}, {5, 0, 3, 3});
  Tensor loss = runOk("amp.cross_entropy", {&X, &Y}, {}, {DType::BF16, {}});
  const double want = crossEntropyRef(x, {5, 0, 3, 3}, 6, -100, 0.0);
  EXPECT_NEAR(values(loss)[0], want, ulpOf(DType::BF16, want) + 32 * kU32 * 10);
}

TEST(RefLoss, CrossEntropyRejectsBadLabelsAndShapes) {
  Tensor X = make(DType::F32, {2, 3}, std::vector<double>(6, 1.0));
  Tensor bad = makeI64({2}, {1, 3});
  expectError(run("amp.cross_entropy", {&X, &bad}, {}, {DType::F32, {}}),
              "label 3 at position [1] is out of range [0, 3)");
  Tensor neg = makeI32({2}, {-1, 0});
  expectError(run("amp.cross_entropy", {&X, &neg}, {}, {DType::F32, {}}), "label -1 at position [0]");
  Tensor shortY = makeI64({1}, {0});
  expectError(run("amp.cross_entropy", {&X, &shortY}, {}, {DType::F32, {}}), "one entry per row");
  Tensor fy = make(DType::F32, {2}, {0, 1});
  expectError(run("amp.cross_entropy", {&X, &fy}, {}, {DType::F32, {}}), "i32 or i64");
  Tensor ok = makeI64({2}, {0, 1});
  expectError(run("amp.cross_entropy", {&X, &ok}, {{"label_smoothing", 1.5}}, {DType::F32, {}}), "label_smoothing");
  expectError(run("amp.cross_entropy", {&X, &ok}, {}, {DType::F32, {1}}), "does not match the computed type");
}

TEST(RefLoss, MseLossIsMeanSquaredError) {
  std::vector<double> p = randomValues(24, -2, 2, 3), t = randomValues(24, -2, 2, 4);
  Tensor P = make(DType::F32, {2, 3, 4}, p), T = make(DType::F32, {2, 3, 4}, t);
  double want = 0;
  for (int i = 0; i < 24; ++i) want += (p[i] - t[i]) * (p[i] - t[i]) / 24;
  // Difference, square, 24-term sum and division, each one f32 rounding: (24 + 3) u relative.
  EXPECT_NEAR(values(runOk("amp.mse_loss", {&P, &T}, {}, {DType::F32, {}}))[0], want, 27 * kU32 * want);
  Tensor T2 = make(DType::F32, {24}, t);
  expectError(run("amp.mse_loss", {&P, &T2}, {}, {DType::F32, {}}), "must have the same shape");
}

}  // namespace
}  // namespace amp::rt
