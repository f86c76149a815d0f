// matmul, linear, conv2d and pooling against direct f64 loops written here.
#include <cmath>
#include <limits>

#include "RefTestUtil.h"

namespace amp::rt {
namespace {
using namespace reftest;

// f32 accumulation of n products: |err| <= (n + 1) * u * sum|a_k b_k| (the standard gamma_n
// bound with u = 2^-24, +1 for the final product rounding), so each element gets its own tolerance.
struct Ref {
  std::vector<double> value, absSum;
  std::vector<double> tol(int64_t n) const {
    std::vector<double> t;
    for (double s : absSum) t.push_back((n + 1) * kU32 * s + 1e-30);
    return t;
  }
};

// op(A)[m,k] of a stored row-major [M,K] (or [K,M] if transposed) matrix.
double elem(const std::vector<double>& v, int64_t base, int64_t rows, int64_t cols, bool t, int64_t r, int64_t c) {
  return t ? v[base + c * rows + r] : v[base + r * cols + c];
}

Ref matmulRef(const std::vector<double>& a, const std::vector<double>& b, int64_t batch, bool bcastA,
              bool bcastB, int64_t M, int64_t K, int64_t N, bool ta, bool tb) {
  Ref r;
  for (int64_t p = 0; p < batch; ++p)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double s = 0, abs = 0;
        for (int64_t k = 0; k < K; ++k) {
          const double x = elem(a, bcastA ? 0 : p * M * K, M, K, ta, m, k);
          const double y = elem(b, bcastB ? 0 : p * K * N, K, N, tb, k, n);
          s += x * y;
          abs += std::fabs(x * y);
        }
        r.value.push_back(s);
        r.absSum.push_back(abs);
      }
  return r;
}

TEST(RefLinalg, MatmulAllTransposeCombinations) {
  const int64_t M = 3, K = 5, N = 4;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      std::vector<double> a = randomValues(M * K, -2, 2, 1), b = randomValues(K * N, -2, 2, 2);
      Tensor A = make(DType::F32, ta ? Shape{K, M} : Shape{M, K}, a);
      Tensor B = make(DType::F32, tb ? Shape{N, K} : Shape{K, N}, b);
      Tensor y = runOk("amp.matmul", {&A, &B}, {{"transpose_a", ta}, {"transpose_b", tb}}, {DType::F32, {M, N}});
      Ref r = matmulRef(a, b, 1, false, false, M, K, N, ta, tb);
      expectNearEach(y, r.value, r.tol(K), "matmul ta=" + std::to_string(ta) + " tb=" + std::to_string(tb));
    }
}

TEST(RefLinalg, MatmulBatchBroadcast) {
  // a [2, 1, 3, 4] x b [3, 4, 2] -> [2, 3, 3, 2]: a broadcasts over b's batch of 3, b over a's 2.
  std::vector<double> a = randomValues(2 * 3 * 4, -1, 1, 3), b = randomValues(3 * 4 * 2, -1, 1, 4);
  Tensor A = make(DType::F32, {2, 1, 3, 4}, a), B = make(DType::F32, {3, 4, 2}, b);
  Tensor y = runOk("amp.matmul", {&A, &B}, {}, {DType::F32, {2, 3, 3, 2}});
  std::vector<double> got = values(y);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t m = 0; m < 3; ++m)
        for (int64_t n = 0; n < 2; ++n) {
          double s = 0, abs = 0;
          for (int64_t k = 0; k < 4; ++k) {
            const double p = a[(i * 3 + m) * 4 + k] * b[(j * 4 + k) * 2 + n];
            s += p;
            abs += std::fabs(p);
          }
          EXPECT_NEAR(got[((i * 3 + j) * 3 + m) * 2 + n], s, 5 * kU32 * abs);
        }
}

TEST(RefLinalg, MatmulAccumulatesInF32InIncreasingK) {
  // 2^24 + 1 + 1 - 2^24: in f32 in increasing k, (2^24 + 1) rounds to 2^24, then +1 again rounds,
  // so the documented order gives 0; f64 gives 2. A reordered or wider sum would not give 0.
  Tensor A = make(DType::F32, {1, 4}, {std::ldexp(1, 24), 1, 1, -std::ldexp(1, 24)});
  Tensor B = make(DType::F32, {4, 1}, {1, 1, 1, 1});
  EXPECT_EQ(values(runOk("amp.matmul", {&A, &B}, {}, {DType::F32, {1, 1}}))[0], 0.0);
}

TEST(RefLinalg, MatmulLowPrecisionWithinOneUlpPlusF32Bound) {
  const int64_t M = 4, K = 16, N = 3;
  for (DType dt : {DType::F16, DType::BF16}) {
    std::vector<double> a = randomValues(M * K, -2, 2, 8, dt), b = randomValues(K * N, -2, 2, 9, dt);
    Tensor A = make(dt, {M, K}, a), B = make(dt, {K, N}, b);
    Tensor y = runOk("amp.matmul", {&A, &B}, {}, {dt, {M, N}});
    ASSERT_EQ(y.dtype(), dt);
    // Result = RNE(f32 sum): error <= 1/2 ulp of the result type + the f32 accumulation bound;
    // we allow a full ulp (a near-tie can round to either neighbour of the f64 value).
    Ref r = matmulRef(a, b, 1, false, false, M, K, N, false, false);
    std::vector<double> tol = r.tol(K);
    for (size_t i = 0; i < tol.size(); ++i) tol[i] += ulpOf(dt, r.value[i]);
    expectNearEach(y, r.value, tol, std::string(dtypeName(dt)));
  }
  Tensor A = make(DType::F16, {1, 2}, {300, 1}), B = make(DType::F16, {2, 1}, {300, 1});
  EXPECT_EQ(values(runOk("amp.matmul", {&A, &B}, {}, {DType::F16, {1, 1}}))[0],
            std::numeric_limits<double>::infinity());  // 90001 overflows f16; f32 accumulation did not
}

// linear against matmul + add: in f32 the two spellings are bit-identical (both compute
// fl(fl-sum + b)); with transpose_w the weight is read as [out, in]; a batched input keeps its dims.
TEST(RefLinalg, LinearIsMatmulPlusBiasInF32) {
  const int64_t B = 2, T = 3, K = 5, N = 4;
  std::vector<double> x = randomValues(B * T * K, -2, 2, 40), w = randomValues(K * N, -2, 2, 41),
                      b = randomValues(N, -1, 1, 42);
  Tensor X = make(DType::F32, {B, T, K}, x), W = make(DType::F32, {K, N}, w), Bias = make(DType::F32, {N}, b);
  Tensor mm = runOk("amp.matmul", {&X, &W}, {}, {DType::F32, {B, T, N}});
  Tensor want = runOk("amp.add", {&mm, &Bias}, {}, {DType::F32, {B, T, N}});
  Tensor got = runOk("amp.linear", {&X, &W, &Bias}, {{"transpose_w", false}}, {DType::F32, {B, T, N}});
  EXPECT_TRUE(got.bitwiseEquals(want));
  // The same weight stored [out, in] with the default transpose_w = true.
  std::vector<double> wt(K * N);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n = 0; n < N; ++n) wt[n * K + k] = w[k * N + n];
  Tensor Wt = make(DType::F32, {N, K}, wt);
  EXPECT_TRUE(runOk("amp.linear", {&X, &Wt, &Bias}, {}, {DType::F32, {B, T, N}}).bitwiseEquals(want));
  EXPECT_TRUE(runOk("amp.linear", {&X, &Wt, &Bias}, {{"transpose_w", true}}, {DType::F32, {B, T, N}}).bitwiseEquals(want));
  // Without a bias: exactly the matmul.
  EXPECT_TRUE(runOk("amp.linear", {&X, &Wt}, {}, {DType::F32, {B, T, N}}).bitwiseEquals(mm));
}

TEST(RefLinalg, LinearAddsTheBiasBeforeTheOneRounding) {
  // bf16: x·w = 1 + 2^-8 (exact in f32, a tie in bf16), b = 2^-9 (a bf16 value). Rounding once:
  // 1 + 2^-8 + 2^-9 rounds up to 1 + 2^-7. Rounding twice (matmul then add in bf16): 1 + 2^-8
  // ties to even 1, and 1 + 2^-9 rounds to 1 again.
  Tensor X = make(DType::BF16, {1, 2}, {1, 1}), W = make(DType::BF16, {1, 2}, {1, std::ldexp(1, -8)});
  Tensor Bias = make(DType::BF16, {1}, {std::ldexp(1, -9)});
  EXPECT_EQ(values(runOk("amp.linear", {&X, &W, &Bias}, {}, {DType::BF16, {1, 1}}))[0], 1 + std::ldexp(1, -7));
  Tensor Wio = make(DType::BF16, {2, 1}, {1, std::ldexp(1, -8)});
  Tensor mm = runOk("amp.matmul", {&X, &Wio}, {}, {DType::BF16, {1, 1}});
  EXPECT_EQ(values(runOk("amp.add", {&mm, &Bias}, {}, {DType::BF16, {1, 1}}))[0], 1.0);
  // f16 the same way: 1 + 2^-11 is a tie, b = 2^-12.
  Tensor Xh = make(DType::F16, {1, 2}, {1, 1}), Wh = make(DType::F16, {1, 2}, {1, std::ldexp(1, -11)});
  Tensor Bh = make(DType::F16, {1}, {std::ldexp(1, -12)});
  EXPECT_EQ(values(runOk("amp.linear", {&Xh, &Wh, &Bh}, {}, {DType::F16, {1, 1}}))[0], 1 + std::ldexp(1, -10));
}

// activation = "relu" is the layer followed by amp.relu, bit for bit, in every float type: NaN
// results stay NaN, negative ones and -0 become +0.
TEST(RefLinalg, LinearReluIsLinearThenRelu) {
  for (DType t : {DType::F32, DType::BF16, DType::F16}) {
    SCOPED_TRACE(std::string(dtypeName(t)));
    std::vector<double> x = randomValues(4 * 6, -2, 2, 50), w = randomValues(6 * 5, -2, 2, 51);
    x[0] = std::numeric_limits<double>::quiet_NaN();  // row 0: NaN results
    x[6] = std::numeric_limits<double>::infinity();   // row 1: +-inf
    for (int k = 0; k < 6; ++k) x[18 + k] = 0;         // row 3: zeros (and -0 with a negative bias of -0)
    Tensor X = make(t, {4, 6}, x), W = make(t, {6, 5}, w), B = make(t, {5}, {0.5, -0.5, -0.0, 1, -1});
    Tensor layer = runOk("amp.linear", {&X, &W, &B}, {{"transpose_w", false}}, {t, {4, 5}});
    Tensor want = runOk("amp.relu", {&layer}, {}, {t, {4, 5}});
    Tensor got = runOk("amp.linear", {&X, &W, &B}, {{"transpose_w", false}, {"activation", std::string("relu")}},
                       {t, {4, 5}});
    EXPECT_TRUE(got.bitwiseEquals(want));
  }
  Tensor X = make(DType::F32, {1, 2}, {1, 1}), W = make(DType::F32, {2, 1}, {1, 1});
  expectError(run("amp.linear", {&X, &W}, {{"transpose_w", false}, {"activation", std::string("gelu")}},
                  {DType::F32, {1, 1}}),
              "amp.linear: attribute 'activation' is 'gelu', not a LinearActivation keyword");
}

TEST(RefLinalg, LinearRejectsBadShapes) {
  Tensor X = make(DType::F32, {2, 3}, randomValues(6, -1, 1, 1)), W = make(DType::F32, {4, 3}, randomValues(12, -1, 1, 2));
  Tensor b4 = make(DType::F32, {4}, {0, 0, 0, 0}), b3 = make(DType::F32, {3}, {0, 0, 0});
  Tensor v = make(DType::F32, {3}, {1, 2, 3}), Wh = make(DType::F16, {4, 3}, randomValues(12, -1, 1, 2));
  EXPECT_TRUE(run("amp.linear", {&X, &W, &b4}, {}, {DType::F32, {2, 4}}).ok());
  auto err = [](const absl::StatusOr<Tensor>& r) { return r.ok() ? std::string() : std::string(r.status().message()); };
  EXPECT_NE(err(run("amp.linear", {&X, &W}, {{"transpose_w", false}}, {DType::F32, {2, 3}})).find("features"), std::string::npos);
  EXPECT_NE(err(run("amp.linear", {&X, &W, &b3}, {}, {DType::F32, {2, 4}})).find("bias must have shape [4]"), std::string::npos);
  EXPECT_NE(err(run("amp.linear", {&v, &W}, {}, {DType::F32, {4}})).find("rank >= 2"), std::string::npos);
  EXPECT_NE(err(run("amp.linear", {&X, &Wh}, {}, {DType::F32, {2, 4}})).find("same element type"), std::string::npos);
  EXPECT_NE(err(run("amp.linear", {&X, &W}, {{"transpose_w", int64_t{1}}}, {DType::F32, {2, 4}})).find("bool"), std::string::npos);
}

struct ConvCfg {
  int64_t N, C, H, W, O, KH, KW, sh, sw, ph, pw, dh, dw, groups;
  bool bias;
};

void checkConv(const ConvCfg& g, DType dt, unsigned seed) {
  const int64_t CG = g.C / g.groups, OG = g.O / g.groups;
  const int64_t OH = (g.H + 2 * g.ph - g.dh * (g.KH - 1) - 1) / g.sh + 1;
  const int64_t OW = (g.W + 2 * g.pw - g.dw * (g.KW - 1) - 1) / g.sw + 1;
  std::vector<double> x = randomValues(g.N * g.C * g.H * g.W, -1, 1, seed, dt);
  std::vector<double> w = randomValues(g.O * CG * g.KH * g.KW, -1, 1, seed + 1, dt);
  std::vector<double> bv = randomValues(g.O, -1, 1, seed + 2, dt);
  Tensor X = make(dt, {g.N, g.C, g.H, g.W}, x), Wt = make(dt, {g.O, CG, g.KH, g.KW}, w), B = make(dt, {g.O}, bv);
  std::vector<const Tensor*> ops = {&X, &Wt};
  if (g.bias) ops.push_back(&B);
  AttrMap attrs{{"stride", std::vector<int64_t>{g.sh, g.sw}}, {"padding", std::vector<int64_t>{g.ph, g.pw}},
                {"dilation", std::vector<int64_t>{g.dh, g.dw}}, {"groups", g.groups}};
  Tensor y = runOk("amp.conv2d", ops, attrs, {dt, {g.N, g.O, OH, OW}});
  // Direct definition: y[n,o,i,j] = b[o] + sum_{c,p,q} xpad[n, grp*CG + c, i*sh + p*dh, j*sw + q*dw] * w[o,c,p,q].
  std::vector<double> want, tol;
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t o = 0; o < g.O; ++o)
      for (int64_t i = 0; i < OH; ++i)
        for (int64_t j = 0; j < OW; ++j) {
          double s = g.bias ? bv[o] : 0, abs = g.bias ? std::fabs(bv[o]) : 0;
          for (int64_t c = 0; c < CG; ++c)
            for (int64_t p = 0; p < g.KH; ++p)
              for (int64_t q = 0; q < g.KW; ++q) {
                const int64_t r = i * g.sh + p * g.dh - g.ph, col = j * g.sw + q * g.dw - g.pw;
                if (r < 0 || r >= g.H || col < 0 || col >= g.W) continue;
                const double prod = x[((n * g.C + (o / OG) * CG + c) * g.H + r) * g.W + col] *
                                    w[((o * CG + c) * g.KH + p) * g.KW + q];
                s += prod;
                abs += std::fabs(prod);
              }
          want.push_back(s);
          tol.push_back((CG * g.KH * g.KW + 2) * kU32 * abs + 1e-30);
        }
  if (dt == DType::F32) expectNearEach(y, want, tol, "conv2d f32");
  else {  // + one ulp of the result type for the final RNE (see MatmulLowPrecisionWithinOneUlpPlusF32Bound)
    for (size_t i = 0; i < tol.size(); ++i) tol[i] += ulpOf(dt, want[i]);
    expectNearEach(y, want, tol, "conv2d low precision");
  }
}

TEST(RefLinalg, Conv2dStridePaddingDilationGroupsBias) {
  checkConv({2, 4, 7, 6, 6, 3, 2, 2, 1, 1, 2, 2, 1, 2, true}, DType::F32, 10);
  checkConv({1, 3, 5, 5, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, false}, DType::F32, 20);
  checkConv({1, 4, 6, 6, 4, 1, 1, 2, 2, 0, 0, 1, 1, 4, true}, DType::F32, 30);  // depthwise 1x1
  checkConv({2, 4, 7, 6, 6, 3, 2, 2, 1, 1, 2, 2, 1, 2, true}, DType::BF16, 40);
  checkConv({1, 2, 6, 5, 4, 2, 3, 1, 2, 1, 0, 1, 1, 2, true}, DType::F16, 50);
}

TEST(RefLinalg, Conv2dValidatesShapesAndAttributes) {
  Tensor X = make(DType::F32, {1, 4, 5, 5}, std::vector<double>(100, 1.0));
  Tensor W = make(DType::F32, {6, 2, 3, 3}, std::vector<double>(108, 1.0));
  Tensor B = make(DType::F32, {5}, std::vector<double>(5, 1.0));
  AttrMap ok{{"stride", std::vector<int64_t>{1, 1}}, {"padding", std::vector<int64_t>{0, 0}},
             {"dilation", std::vector<int64_t>{1, 1}}, {"groups", int64_t{2}}};
  EXPECT_TRUE(run("amp.conv2d", {&X, &W}, ok, {DType::F32, {1, 6, 3, 3}}).ok());
  expectError(run("amp.conv2d", {&X, &W, &B}, ok, {DType::F32, {1, 6, 3, 3}}), "bias must have shape [6]");
  AttrMap g3 = ok;
  g3.set("groups", int64_t{3});
  expectError(run("amp.conv2d", {&X, &W}, g3, {DType::F32, {1, 6, 3, 3}}), "groups = 3");
  // An absent default-valued attribute is its ODS default (stride [1, 1]), as in the IR; a
  // present one of the wrong kind is refused by the decoder, naming it.
  AttrMap noStride = AttrMap{{"padding", std::vector<int64_t>{0, 0}}, {"dilation", std::vector<int64_t>{1, 1}},
                             {"groups", int64_t{2}}};
  auto defaulted = run("amp.conv2d", {&X, &W}, noStride, {DType::F32, {1, 6, 3, 3}});
  auto explicitStride = run("amp.conv2d", {&X, &W}, ok, {DType::F32, {1, 6, 3, 3}});
  ASSERT_TRUE(defaulted.ok()) << defaulted.status();
  ASSERT_TRUE(explicitStride.ok()) << explicitStride.status();
  EXPECT_EQ(values(*defaulted), values(*explicitStride));
  AttrMap scalarStride = ok;
  scalarStride.set("stride", int64_t{1});
  expectError(run("amp.conv2d", {&X, &W}, scalarStride, {DType::F32, {1, 6, 3, 3}}), "'stride'");
  AttrMap zeroStride = ok;
  zeroStride.set("stride", std::vector<int64_t>{0, 1});
  expectError(run("amp.conv2d", {&X, &W}, zeroStride, {DType::F32, {1, 6, 3, 3}}), "'stride'");
  AttrMap bigDil = ok;
  bigDil.set("dilation", std::vector<int64_t>{3, 3});
  expectError(run("amp.conv2d", {&X, &W}, bigDil, {DType::F32, {1, 6, 1, 1}}), "does not fit");
  expectError(run("amp.conv2d", {&X, &W}, ok, {DType::F32, {1, 6, 4, 4}}), "does not match the computed type");
}

void checkPool(bool isMax, int64_t H, int64_t W, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph,
               int64_t pw, unsigned seed) {
  const int64_t N = 2, C = 3;
  const int64_t OH = (H + 2 * ph - kh) / sh + 1, OW = (W + 2 * pw - kw) / sw + 1;
  std::vector<double> x = randomValues(N * C * H * W, -5, 5, seed);
  Tensor X = make(DType::F32, {N, C, H, W}, x);
  AttrMap attrs{{"kernel", std::vector<int64_t>{kh, kw}}, {"stride", std::vector<int64_t>{sh, sw}},
                {"padding", std::vector<int64_t>{ph, pw}}};
  Tensor y = runOk(isMax ? "amp.max_pool2d" : "amp.avg_pool2d", {&X}, attrs, {DType::F32, {N, C, OH, OW}});
  std::vector<double> got = values(y);
  ASSERT_EQ(got.size(), size_t(N * C * OH * OW));
  for (int64_t nc = 0; nc < N * C; ++nc)
    for (int64_t i = 0; i < OH; ++i)
      for (int64_t j = 0; j < OW; ++j) {
        double m = -std::numeric_limits<double>::infinity(), s = 0, abs = 0;
        for (int64_t p = 0; p < kh; ++p)
          for (int64_t q = 0; q < kw; ++q) {
            const int64_t r = i * sh + p - ph, c = j * sw + q - pw;
            const double v = (r < 0 || r >= H || c < 0 || c >= W) ? (isMax ? -INFINITY : 0.0)
                                                                  : x[(nc * H + r) * W + c];
            m = std::max(m, v);
            s += v;
            abs += std::fabs(v);
          }
        const double g = got[(nc * OH + i) * OW + j];
        if (isMax) {
          EXPECT_EQ(g, m);  // max never rounds
        } else {
          EXPECT_NEAR(g, s / double(kh * kw), (kh * kw + 1) * kU32 * abs / double(kh * kw) + 1e-30);
        }
      }
}

TEST(RefLinalg, MaxPool2dMatchesDirectLoops) {
  checkPool(true, 6, 7, 2, 2, 2, 2, 0, 0, 1);
  checkPool(true, 5, 5, 3, 3, 2, 1, 1, 1, 2);
  checkPool(true, 6, 4, 3, 2, 1, 2, 1, 1, 3);
}

TEST(RefLinalg, AvgPool2dCountsPaddingAsPyTorch) {
  checkPool(false, 6, 7, 2, 2, 2, 2, 0, 0, 4);
  checkPool(false, 5, 5, 3, 3, 2, 1, 1, 1, 5);
  // Corner window of a 2x2 ones input, kernel 3, padding 1: 4 real elements / 9.
  Tensor X = make(DType::F32, {1, 1, 2, 2}, {1, 1, 1, 1});
  AttrMap attrs{{"kernel", std::vector<int64_t>{3, 3}}, {"stride", std::vector<int64_t>{1, 1}},
                {"padding", std::vector<int64_t>{1, 1}}};
  std::vector<double> y = values(runOk("amp.avg_pool2d", {&X}, attrs, {DType::F32, {1, 1, 2, 2}}));
  EXPECT_EQ(y[0], double(4.0f / 9.0f));
}

TEST(RefLinalg, PoolValidation) {
  Tensor X = make(DType::F32, {1, 1, 4, 4}, std::vector<double>(16, 0.0));
  AttrMap attrs{{"kernel", std::vector<int64_t>{2, 2}}, {"stride", std::vector<int64_t>{1, 1}},
                {"padding", std::vector<int64_t>{2, 0}}};
  expectError(run("amp.max_pool2d", {&X}, attrs, {DType::F32, {1, 1, 7, 3}}), "at most half the kernel");
  Tensor X3 = make(DType::F32, {1, 4, 4}, std::vector<double>(16, 0.0));
  attrs.set("padding", std::vector<int64_t>{0, 0});
  expectError(run("amp.avg_pool2d", {&X3}, attrs, {DType::F32, {1, 1, 3, 3}}), "must have rank 4");
}

}  // namespace
}  // namespace amp::rt
