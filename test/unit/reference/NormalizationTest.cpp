// layer_norm and rms_norm against f64 formulas written here.
#include <cmath>

#include "RefTestUtil.h"

namespace amp::rt {
namespace {
using namespace reftest;

TEST(RefNormalization, LayerNormZeroMeanUnitVariance) {
  std::vector<double> x = randomValues(4 * 3 * 8, -4, 9, 1);
  Tensor X = make(DType::F32, {4, 3, 8}, x);
  AttrMap attrs{{"normalized_ndim", int64_t{2}}, {"eps", 1e-12}, {"has_weight", false}, {"has_bias", false}};
  std::vector<double> y = values(runOk("amp.layer_norm", {&X}, attrs, {DType::F32, {4, 3, 8}}));
  for (int g = 0; g < 4; ++g) {
    double mean = 0, var = 0;
    for (int j = 0; j < 24; ++j) mean += y[g * 24 + j] / 24;
    for (int j = 0; j < 24; ++j) var += (y[g * 24 + j] - mean) * (y[g * 24 + j] - mean) / 24;
    EXPECT_NEAR(mean, 0.0, 1e-6);  // outputs are O(1) with ~1e-7 relative error each
    EXPECT_NEAR(var, 1.0, 1e-5);   // biased variance, as PyTorch
  }
}

TEST(RefNormalization, LayerNormAffineMatchesF64) {
  const int64_t G = 5, D = 16;
  for (DType dt : {DType::F32, DType::BF16}) {
    std::vector<double> x = randomValues(G * D, -3, 3, 2, dt), w = randomValues(D, 0.5, 2, 3, dt),
                        b = randomValues(D, -1, 1, 4, dt);
    Tensor X = make(dt, {G, D}, x), W = make(dt, {D}, w), B = make(dt, {D}, b);
    AttrMap attrs{{"normalized_ndim", int64_t{1}}, {"eps", 1e-5}, {"has_weight", true}, {"has_bias", true}};
    Tensor y = runOk("amp.layer_norm", {&X, &W, &B}, attrs, {dt, {G, D}});
    std::vector<double> want, tol;
    for (int64_t g = 0; g < G; ++g) {
      double mean = 0, var = 0;
      for (int64_t j = 0; j < D; ++j) mean += x[g * D + j] / D;
      for (int64_t j = 0; j < D; ++j) var += (x[g * D + j] - mean) * (x[g * D + j] - mean) / D;
      for (int64_t j = 0; j < D; ++j) {
        const double v = (x[g * D + j] - mean) / std::sqrt(var + 1e-5) * w[j] + b[j];
        want.push_back(v);
        // Statistics in f32 over D=16 terms (~D u relative), then 3 roundings per element; the
        // normalized value is <= ~3 and w <= 2, so the f32 error is below 64 u * 8.
        tol.push_back(64 * kU32 * 8 + (dt == DType::F32 ? 0 : ulpOf(dt, v)));
      }
    }
    expectNearEach(y, want, tol, std::string("layer_norm ") + std::string(dtypeName(dt)));
  }
}

TEST(RefNormalization, LayerNormOperandsFollowHasFlags) {
  Tensor X = make(DType::F32, {2, 4}, randomValues(8, -1, 1, 5));
  Tensor B = make(DType::F32, {4}, {1, 2, 3, 4});
  AttrMap biasOnly{{"normalized_ndim", int64_t{1}}, {"eps", 1e-5}, {"has_weight", false}, {"has_bias", true}};
  Tensor plain = runOk("amp.layer_norm", {&X}, {{"normalized_ndim", int64_t{1}}, {"eps", 1e-5}}, {DType::F32, {2, 4}});
  Tensor withB = runOk("amp.layer_norm", {&X, &B}, biasOnly, {DType::F32, {2, 4}});
  std::vector<double> p = values(plain), q = values(withB);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(q[i], double(float(p[i]) + float(1 + i % 4)));  // bias is operand 1 here
  expectError(run("amp.layer_norm", {&X}, biasOnly, {DType::F32, {2, 4}}), "expected 2 operand(s), got 1");
  Tensor badB = make(DType::F32, {8}, std::vector<double>(8, 0.0));
  expectError(run("amp.layer_norm", {&X, &badB}, biasOnly, {DType::F32, {2, 4}}), "bias must have shape [4]");
  AttrMap badNdim{{"normalized_ndim", int64_t{3}}, {"eps", 1e-5}};
  expectError(run("amp.layer_norm", {&X}, badNdim, {DType::F32, {2, 4}}), "'normalized_ndim'");
  // An absent eps is the ODS default (1e-5), as in the IR.
  auto defaulted = run("amp.layer_norm", {&X}, {{"normalized_ndim", int64_t{1}}}, {DType::F32, {2, 4}});
  auto explicitEps = run("amp.layer_norm", {&X}, {{"normalized_ndim", int64_t{1}}, {"eps", 1e-5}}, {DType::F32, {2, 4}});
  ASSERT_TRUE(defaulted.ok()) << defaulted.status();
  ASSERT_TRUE(explicitEps.ok()) << explicitEps.status();
  EXPECT_EQ(values(*defaulted), values(*explicitEps));
  expectError(run("amp.layer_norm", {&X}, {{"normalized_ndim", int64_t{1}}, {"eps", std::string("x")}},
                  {DType::F32, {2, 4}}),
              "'eps'");
}

TEST(RefNormalization, RmsNormMatchesF64) {
  const int64_t G = 3, D = 2, E = 6;  // normalized_ndim = 2 over [D, E]
  std::vector<double> x = randomValues(G * D * E, -3, 3, 6), w = randomValues(D * E, 0.5, 2, 7);
  Tensor X = make(DType::F32, {G, D, E}, x), W = make(DType::F32, {D, E}, w);
  AttrMap attrs{{"normalized_ndim", int64_t{2}}, {"eps", 1e-6}, {"has_weight", true}};
  Tensor y = runOk("amp.rms_norm", {&X, &W}, attrs, {DType::F32, {G, D, E}});
  Tensor yNoW = runOk("amp.rms_norm", {&X}, {{"normalized_ndim", int64_t{2}}, {"eps", 1e-6}}, {DType::F32, {G, D, E}});
  std::vector<double> want, wantNoW, tol;
  const int64_t n = D * E;
  for (int64_t g = 0; g < G; ++g) {
    double ms = 0;
    for (int64_t j = 0; j < n; ++j) ms += x[g * n + j] * x[g * n + j] / n;
    for (int64_t j = 0; j < n; ++j) {
      const double v = x[g * n + j] / std::sqrt(ms + 1e-6);
      wantNoW.push_back(v);
      want.push_back(v * w[j]);
      tol.push_back((n + 4) * kU32 * std::fabs(v * w[j]) + 4 * kU32 * 4);
    }
  }
  expectNearEach(y, want, tol, "rms_norm");
  expectNearEach(yNoW, wantNoW, tol, "rms_norm without weight");
  Tensor badW = make(DType::F32, {E}, std::vector<double>(E, 1.0));
  expectError(run("amp.rms_norm", {&X, &badW}, attrs, {DType::F32, {G, D, E}}), "weight must have shape [2, 6]");
}

}  // namespace
}  // namespace amp::rt
