// batch_norm and batch_norm_grad against f64 formulas written here (no library computes them).
#include <cmath>

#include "RefTestUtil.h"

namespace amp::rt {
namespace {
using namespace reftest;

constexpr int64_t N = 3, C = 2, H = 2, W = 3, S = H * W, M = N * S;

int64_t at(int64_t n, int64_t c, int64_t i) { return (n * C + c) * S + i; }

struct F64Stats {
  double mean[C], var[C], unbiased[C];
};

F64Stats batchStats(const std::vector<double>& x) {
  F64Stats s{};
  for (int64_t c = 0; c < C; ++c) {
    double sum = 0, sq = 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < S; ++i) sum += x[at(n, c, i)];
    s.mean[c] = sum / M;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < S; ++i) sq += (x[at(n, c, i)] - s.mean[c]) * (x[at(n, c, i)] - s.mean[c]);
    s.var[c] = sq / M;
    s.unbiased[c] = sq / (M - 1);
  }
  return s;
}

std::vector<Tensor> runMulti(std::string_view op, std::vector<const Tensor*> operands, const AttrMap& attrs,
                             std::vector<TensorType> results) {
  EvalContext ctx;
  auto r = evalReferenceOp(op, operands, attrs, results, ctx);
  EXPECT_TRUE(r.ok()) << op << ": " << r.status();
  return r.ok() ? std::move(*r) : std::vector<Tensor>{};
}

// Per-channel operands: scale in [0.5, 2), bias in [-1, 1), running mean/var as a model would hold.
struct Channels {
  std::vector<double> g = randomValues(C, 0.5, 2, 11), b = randomValues(C, -1, 1, 12),
                      rm = randomValues(C, -0.5, 0.5, 13), rv = randomValues(C, 0.5, 2, 14);
  Tensor G = make(DType::F32, {C}, g), B = make(DType::F32, {C}, b), RM = make(DType::F32, {C}, rm),
         RV = make(DType::F32, {C}, rv);
};

TEST(RefBatchNorm, TrainingNormalisesWithBatchStatisticsInF32) {
  Channels ch;
  for (DType dt : {DType::F32, DType::BF16, DType::F16}) {
    // Values offset from zero so the mean matters; already representable in dt.
    std::vector<double> x = randomValues(N * C * S, 1, 5, 21, dt);
    Tensor X = make(dt, {N, C, H, W}, x);
    AttrMap attrs{{"epsilon", 1e-5}, {"momentum", 0.25}, {"training", true}};
    auto out = runMulti("amp.batch_norm", {&X, &ch.G, &ch.B, &ch.RM, &ch.RV}, attrs,
                        {{dt, {N, C, H, W}}, {DType::F32, {C}}, {DType::F32, {C}}});
    ASSERT_EQ(out.size(), 3u);
    EXPECT_EQ(out[0].dtype(), dt);
    F64Stats s = batchStats(x);
    std::vector<double> want, tol;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t i = 0; i < S; ++i) {
          const double v = (x[at(n, c, i)] - s.mean[c]) / std::sqrt(s.var[c] + 1e-5) * ch.g[c] + ch.b[c];
          want.push_back(v);
          // f32 statistics over M = 18 terms of size <= 5 (~M u relative on the centred values,
          // which are O(1) against an O(5) mean), then 4 roundings; |v| <= ~5: 2^-16 absolute
          // covers it with room. A low-precision result adds its own rounding (one ulp).
          tol.push_back(std::ldexp(1.0, -16) + (dt == DType::F32 ? 0 : ulpOf(dt, v)));
        }
    expectNearEach(out[0], want, tol, std::string("batch_norm y ") + std::string(dtypeName(dt)));
    // PyTorch: running = (1 - momentum) * running + momentum * batch, the variance unbiased.
    std::vector<double> wantMean, wantVar, tolC;
    for (int64_t c = 0; c < C; ++c) {
      wantMean.push_back(0.75 * ch.rm[c] + 0.25 * s.mean[c]);
      wantVar.push_back(0.75 * ch.rv[c] + 0.25 * s.unbiased[c]);
      tolC.push_back(std::ldexp(1.0, -18));
    }
    expectNearEach(out[1], wantMean, tolC, "running_mean");
    expectNearEach(out[2], wantVar, tolC, "running_var");
  }
}

TEST(RefBatchNorm, InferenceUsesRunningStatisticsAndKeepsThem) {
  Channels ch;
  std::vector<double> x = randomValues(4 * C, -3, 3, 31);
  Tensor X = make(DType::F32, {4, C}, x);  // the [N, C] form
  AttrMap attrs{{"epsilon", 1e-3}, {"momentum", 0.1}};
  auto out = runMulti("amp.batch_norm", {&X, &ch.G, &ch.B, &ch.RM, &ch.RV}, attrs,
                      {{DType::F32, {4, C}}, {DType::F32, {C}}, {DType::F32, {C}}});
  ASSERT_EQ(out.size(), 3u);
  std::vector<double> want, tol;
  for (int64_t n = 0; n < 4; ++n)
    for (int64_t c = 0; c < C; ++c) {
      want.push_back((x[n * C + c] - ch.rm[c]) / std::sqrt(ch.rv[c] + 1e-3) * ch.g[c] + ch.b[c]);
      tol.push_back(std::ldexp(1.0, -19));  // 5 roundings of O(4) values
    }
  expectNearEach(out[0], want, tol, "batch_norm inference y");
  EXPECT_EQ(values(out[1]), ch.rm);  // unchanged, bit for bit
  EXPECT_EQ(values(out[2]), ch.rv);
}

TEST(RefBatchNorm, GradientMatchesF64Formulas) {
  Channels ch;
  std::vector<double> x = randomValues(N * C * S, -2, 3, 41), dy = randomValues(N * C * S, -1, 1, 42);
  Tensor X = make(DType::F32, {N, C, H, W}, x), DY = make(DType::F32, {N, C, H, W}, dy);
  for (bool training : {true, false}) {
    AttrMap attrs{{"epsilon", 1e-5}, {"training", training}};
    auto out = runMulti("amp.batch_norm_grad", {&X, &DY, &ch.G, &ch.RM, &ch.RV}, attrs,
                        {{DType::F32, {N, C, H, W}}, {DType::F32, {C}}, {DType::F32, {C}}});
    ASSERT_EQ(out.size(), 3u);
    F64Stats s = batchStats(x);
    std::vector<double> dx(x.size()), dscale, dbias, tolX(x.size(), std::ldexp(1.0, -16)), tolC;
    for (int64_t c = 0; c < C; ++c) {
      const double mean = training ? s.mean[c] : ch.rm[c];
      const double invstd = 1 / std::sqrt((training ? s.var[c] : ch.rv[c]) + 1e-5);
      double sg = 0, sgx = 0;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t i = 0; i < S; ++i) {
          sg += dy[at(n, c, i)];
          sgx += dy[at(n, c, i)] * (x[at(n, c, i)] - mean) * invstd;
        }
      dbias.push_back(sg);
      dscale.push_back(sgx);
      tolC.push_back(std::ldexp(1.0, -17));
      for (int64_t n = 0; n < N; ++n)
        for (int64_t i = 0; i < S; ++i) {
          const int64_t k = at(n, c, i);
          const double xhat = (x[k] - mean) * invstd;
          dx[k] = training ? ch.g[c] * invstd * (dy[k] - sg / M - xhat * sgx / M) : ch.g[c] * invstd * dy[k];
        }
    }
    const std::string mode = training ? " training" : " inference";
    expectNearEach(out[0], dx, tolX, "dx" + mode);
    expectNearEach(out[1], dscale, tolC, "dscale" + mode);
    expectNearEach(out[2], dbias, tolC, "dbias" + mode);
  }
}

TEST(RefBatchNorm, RefusesMalformedCalls) {
  Channels ch;
  Tensor X = make(DType::F32, {C}, std::vector<double>(C, 1.0));  // rank 1: no batch dim
  AttrMap attrs{{"epsilon", 1e-5}, {"momentum", 0.1}, {"training", true}};
  std::vector<TensorType> r3{{DType::F32, {C}}, {DType::F32, {C}}, {DType::F32, {C}}};
  EvalContext ctx;
  expectError(evalReferenceOp("amp.batch_norm", {&X, &ch.G, &ch.B, &ch.RM, &ch.RV}, attrs, r3, ctx),
              "input must be [N, C, ...] (rank >= 2)");
  Tensor X2 = make(DType::F32, {2, C}, {1, 2, 3, 4});
  Tensor G16 = make(DType::F16, {C}, {1, 1});
  std::vector<TensorType> r2{{DType::F32, {2, C}}, {DType::F32, {C}}, {DType::F32, {C}}};
  expectError(evalReferenceOp("amp.batch_norm", {&X2, &G16, &ch.B, &ch.RM, &ch.RV}, attrs, r2, ctx),
              "operand 1 must be f32[2]");
  Tensor X1 = make(DType::F32, {1, C}, {1, 2});
  std::vector<TensorType> r1{{DType::F32, {1, C}}, {DType::F32, {C}}, {DType::F32, {C}}};
  expectError(evalReferenceOp("amp.batch_norm", {&X1, &ch.G, &ch.B, &ch.RM, &ch.RV}, attrs, r1, ctx),
              "more than one value per channel");
  expectError(evalReferenceOp("amp.batch_norm", {&X2, &ch.G, &ch.B, &ch.RM, &ch.RV},
                              {{"epsilon", 1e-5}, {"momentum", 1.5}}, r2, ctx),
              "'momentum' must be in [0, 1]");
}

}  // namespace
}  // namespace amp::rt
