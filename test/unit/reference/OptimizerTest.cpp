// Optimizer updates, counters, LR schedule and clipping: the reference kernels against f64
// transcriptions of PyTorch's formulas (torch.optim.SGD/Adam/AdamW single-tensor code,
// clip_grad_norm_), bitwise checks of the documented f32 order, and the found_inf guard.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "TrainTestUtil.h"

namespace amp::rt::traintest {
namespace {

constexpr double kU = 1.0 / (1 << 24);  // f32 unit roundoff

//===----------------------------------------------------------------------===//
// Helpers running one op
//===----------------------------------------------------------------------===//

struct SgdCfg {
  double momentum = 0.0, weightDecay = 0.0;
  bool nesterov = false;
  AttrMap attrs() const {
    return AttrMap{{"momentum", momentum}, {"nesterov", nesterov}, {"weight_decay", weightDecay}};
  }
};

std::vector<Tensor> sgd(const Tensor& p, const Tensor& g, const Tensor* buf, float lr, float found,
                        const SgdCfg& cfg) {
  Tensor lrT = f32s(lr), foundT = f32s(found);
  std::vector<const Tensor*> ops = {&p, &g, &lrT, &foundT};
  std::vector<TensorType> types = {typeOf(p)};
  if (buf) {
    ops.push_back(buf);
    types.push_back(typeOf(*buf));
  }
  return runOk("amp.sgd_update", ops, cfg.attrs(), types);
}

struct AdamCfg {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weightDecay = 0.0;
  bool decoupled = false;
  AttrMap attrs() const {
    return AttrMap{{"beta1", beta1}, {"beta2", beta2}, {"eps", eps}, {"weight_decay", weightDecay},
                   {"decoupled", decoupled}};
  }
};

std::vector<Tensor> adam(const Tensor& p, const Tensor& g, const Tensor& m, const Tensor& v,
                         int64_t step, float lr, float found, const AdamCfg& cfg) {
  Tensor stepT = i64s(step), lrT = f32s(lr), foundT = f32s(found);
  return runOk("amp.adam_update", {&p, &g, &m, &v, &stepT, &lrT, &foundT}, cfg.attrs(),
               {typeOf(p), typeOf(m), typeOf(v)});
}

//===----------------------------------------------------------------------===//
// SGD
//===----------------------------------------------------------------------===//

// PyTorch's _single_tensor_sgd in f64 (dampening 0, maximize off); the buffer starts as a clone
// of the first d.
struct SgdRef {
  std::vector<double> p, buf;
  bool hasBuf = false;
  void step(const std::vector<float>& g, double lr, const SgdCfg& c) {
    for (size_t i = 0; i < p.size(); ++i) {
      double d = g[i];
      if (c.weightDecay != 0) d += c.weightDecay * p[i];
      if (c.momentum != 0) {
        buf[i] = hasBuf ? c.momentum * buf[i] + d : d;
        d = c.nesterov ? d + c.momentum * buf[i] : buf[i];
      }
      p[i] -= lr * d;
    }
    hasBuf = true;
  }
};

void checkSgdAgainstF64(const SgdCfg& cfg, unsigned seed) {
  const int n = 257, steps = 25;
  const float lr = 0.05f;
  std::vector<float> p0 = randomF32(n, -2.0f, 2.0f, seed);
  Tensor p = f32t({n}, p0), buf(DType::F32, {n});
  SgdRef ref{std::vector<double>(p0.begin(), p0.end()), std::vector<double>(n, 0.0)};
  const bool hasBuf = cfg.momentum != 0;
  for (int s = 0; s < steps; ++s) {
    Tensor g = f32t({n}, randomF32(n, -1.0f, 1.0f, seed * 1000 + s));
    auto out = sgd(p, g, hasBuf ? &buf : nullptr, lr, 0.0f, cfg);
    ASSERT_EQ(out.size(), hasBuf ? 2u : 1u);
    p = out[0];
    if (hasBuf) buf = out[1];
    ref.step(vals(g), static_cast<double>(lr), cfg);
  }
  // Error bound: each step rounds <= 5 times on values of magnitude <= S = max|p| + sum of
  // updates; momentum feeds an error back with gain <= 1/(1-m), and nesterov adds one more such
  // term. So |p32 - p64| <= steps * 5 * (1 + 2/(1-m)) * u * S.
  double S = 0;
  for (double x : ref.p) S = std::max(S, std::fabs(x));
  S += steps * lr * (1.0 + cfg.weightDecay * S) * (cfg.momentum ? 1.0 / (1.0 - cfg.momentum) : 1.0);
  const double gain = cfg.momentum ? 1.0 + 2.0 / (1.0 - cfg.momentum) : 1.0;
  const double tol = steps * 5 * gain * kU * S;
  std::vector<float> got = vals(p);
  double worst = 0;
  for (int i = 0; i < n; ++i) worst = std::max(worst, std::fabs(got[i] - ref.p[i]));
  EXPECT_LE(worst, tol) << "momentum " << cfg.momentum << " nesterov " << cfg.nesterov << " wd "
                        << cfg.weightDecay;
  EXPECT_GT(worst, 0.0);  // the comparison is not vacuous: f32 and f64 do differ
  if (hasBuf) {
    std::vector<float> b = vals(buf);
    for (int i = 0; i < n; ++i) ASSERT_NEAR(b[i], ref.buf[i], tol / lr);
  }
}

TEST(Sgd, PlainMatchesF64) { checkSgdAgainstF64({}, 1); }
TEST(Sgd, WeightDecayMatchesF64) { checkSgdAgainstF64({0.0, 1e-2, false}, 2); }
TEST(Sgd, MomentumMatchesF64) { checkSgdAgainstF64({0.9, 0.0, false}, 3); }
TEST(Sgd, NesterovWeightDecayMatchesF64) { checkSgdAgainstF64({0.9, 5e-4, true}, 4); }

TEST(Sgd, DocumentedF32OrderBitExact) {
  const int n = 64;
  std::vector<float> p = randomF32(n, -3, 3, 5), g = randomF32(n, -1, 1, 6), b = randomF32(n, -1, 1, 7);
  SgdCfg cfg{0.9, 1e-3, true};
  const float lr = 0.01f;
  Tensor bt = f32t({n}, b);
  auto out = sgd(f32t({n}, p), f32t({n}, g), &bt, lr, 0.0f, cfg);
  ASSERT_EQ(out.size(), 2u);
  const float m = 0.9f, wd = static_cast<float>(1e-3);
  for (int i = 0; i < n; ++i) {
    float d = g[i] + wd * p[i];
    float nb = b[i] * m + d;
    d = d + m * nb;
    float np = p[i] - lr * d;
    ASSERT_EQ(bits(out[1].as<float>()[i]), bits(nb)) << i;
    ASSERT_EQ(bits(out[0].as<float>()[i]), bits(np)) << i;
  }
}

TEST(Sgd, FirstStepBufferIsTheGradient) {
  std::vector<float> p = {1.0f, -2.0f, 0.5f}, g = {0.25f, 0.125f, -1.0f};
  Tensor zeros(DType::F32, {3});
  auto out = sgd(f32t({3}, p), f32t({3}, g), &zeros, 0.5f, 0.0f, {0.9, 0.0, false});
  ASSERT_EQ(out.size(), 2u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(out[1].as<float>()[i], g[i]);
    EXPECT_EQ(out[0].as<float>()[i], p[i] - 0.5f * g[i]);
  }
}

TEST(Sgd, HalfGradientIsWidened) {
  Tensor g(DType::F16, {2});
  storeFromF32(DType::F16, g.data(), 0, 0.1f);
  storeFromF32(DType::F16, g.data(), 1, -3.0f);
  auto out = sgd(f32t({2}, {1.0f, 1.0f}), g, nullptr, 0.5f, 0.0f, {});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].as<float>()[0], 1.0f - 0.5f * loadAsF32(DType::F16, g.data(), 0));
  EXPECT_EQ(out[0].as<float>()[1], 2.5f);
}

TEST(Sgd, RejectsBadCalls) {
  Tensor p = f32t({2}, {1, 2}), g = f32t({3}, {1, 2, 3}), lr = f32s(0.1f), f = f32s(0), buf = f32t({2}, {0, 0});
  Tensor g2 = f32t({2}, {1, 2});
  EXPECT_FALSE(run("amp.sgd_update", {&p, &g, &lr, &f}, {}, {typeOf(p)}).ok());                 // shape
  EXPECT_FALSE(run("amp.sgd_update", {&p, &g2, &lr, &f}, AttrMap{{"momentum", 0.9}}, {typeOf(p)}).ok());
  EXPECT_FALSE(run("amp.sgd_update", {&p, &g2, &lr, &f, &buf}, {}, {typeOf(p), typeOf(p)}).ok());
  EXPECT_FALSE(run("amp.sgd_update", {&p, &g2, &lr, &f}, AttrMap{{"nesterov", true}}, {typeOf(p)}).ok());
  Tensor ph(DType::F16, {2});
  EXPECT_FALSE(run("amp.sgd_update", {&ph, &g2, &lr, &f}, {}, {typeOf(ph)}).ok());           // f16 master
}

//===----------------------------------------------------------------------===//
// Adam / AdamW
//===----------------------------------------------------------------------===//

// torch.optim.adam._single_tensor_adam (amsgrad off) in f64.
struct AdamRef {
  std::vector<double> p, m, v;
  double maxRatio = 0;  // max |step_size * m / denom| / lr seen, for the error bound
  void step(const std::vector<float>& g, int64_t t, double lr, const AdamCfg& c) {
    const double bc1 = 1 - std::pow(c.beta1, t), bc2 = 1 - std::pow(c.beta2, t);
    for (size_t i = 0; i < p.size(); ++i) {
      double gi = g[i];
      if (c.weightDecay != 0) {
        if (c.decoupled)
          p[i] *= 1 - lr * c.weightDecay;
        else
          gi += c.weightDecay * p[i];
      }
      m[i] = c.beta1 * m[i] + (1 - c.beta1) * gi;
      v[i] = c.beta2 * v[i] + (1 - c.beta2) * gi * gi;
      const double ratio = (m[i] / bc1) / (std::sqrt(v[i]) / std::sqrt(bc2) + c.eps);
      maxRatio = std::max(maxRatio, std::fabs(ratio));
      p[i] -= lr * ratio;
    }
  }
};

void checkAdamAgainstF64(const AdamCfg& cfg, unsigned seed) {
  const int n = 300, steps = 30;
  const float lr = 1e-2f;
  std::vector<float> p0 = randomF32(n, -1.0f, 1.0f, seed);
  Tensor p = f32t({n}, p0), m(DType::F32, {n}), v(DType::F32, {n});
  AdamRef ref{std::vector<double>(p0.begin(), p0.end()), std::vector<double>(n, 0.0),
              std::vector<double>(n, 0.0)};
  for (int s = 1; s <= steps; ++s) {
    Tensor g = f32t({n}, randomF32(n, -1.0f, 1.0f, seed * 1000 + s));
    auto out = adam(p, g, m, v, s, lr, 0.0f, cfg);
    ASSERT_EQ(out.size(), 3u);
    p = out[0];
    m = out[1];
    v = out[2];
    ref.step(vals(g), s, static_cast<double>(lr), cfg);
  }
  // Error bound. Per step: the param add rounds once (u·|p|), the decoupled decay once more;
  // the update lr·ratio carries <= ~12 roundings (lerp 2, v 4, sqrt, two divisions, eps add,
  // step-size product, f32 scalars) plus the propagated error of m and v, whose own relative
  // error stays <= ~4u per step under the (β < 1) contraction. So per step
  // |Δerr| <= 3u·max|p| + 24u·lr·maxRatio, summed over the steps.
  double P = 0;
  for (double x : ref.p) P = std::max(P, std::fabs(x));
  const double tol = steps * (3 * kU * (P + 1) + 24 * kU * lr * ref.maxRatio);
  std::vector<float> got = vals(p), gm = vals(m), gv = vals(v);
  double worst = 0;
  for (int i = 0; i < n; ++i) {
    worst = std::max(worst, std::fabs(got[i] - ref.p[i]));
    ASSERT_NEAR(gm[i], ref.m[i], steps * 4 * kU * 2.0) << i;
    ASSERT_NEAR(gv[i], ref.v[i], steps * 6 * kU * 2.0) << i;
  }
  EXPECT_LE(worst, tol) << "decoupled " << cfg.decoupled << " wd " << cfg.weightDecay;
  EXPECT_GT(worst, 0.0);
}

TEST(Adam, MatchesF64) { checkAdamAgainstF64({}, 21); }
TEST(Adam, L2WeightDecayMatchesF64) { checkAdamAgainstF64({0.9, 0.999, 1e-8, 1e-2, false}, 22); }
TEST(AdamW, DecoupledWeightDecayMatchesF64) { checkAdamAgainstF64({0.9, 0.999, 1e-8, 1e-2, true}, 23); }
TEST(AdamW, OtherBetasMatchF64) { checkAdamAgainstF64({0.8, 0.95, 1e-6, 0.1, true}, 24); }
TEST(Adam, LargeBeta1UsesTheOtherLerpBranch) { checkAdamAgainstF64({0.3, 0.99, 1e-8, 0.0, false}, 25); }

TEST(Adam, DocumentedF32OrderBitExact) {
  const int n = 64;
  std::vector<float> p = randomF32(n, -3, 3, 31), g = randomF32(n, -1, 1, 32),
                     m = randomF32(n, -0.5, 0.5, 33), v = randomF32(n, 0, 0.5, 34);
  for (bool decoupled : {false, true}) {
    for (double beta1 : {0.9, 0.2}) {
      AdamCfg cfg{beta1, 0.999, 1e-8, 0.05, decoupled};
      const float lr = 3e-3f;
      const int64_t step = 7;
      auto out = adam(f32t({n}, p), f32t({n}, g), f32t({n}, m), f32t({n}, v), step, lr, 0.0f, cfg);
      ASSERT_EQ(out.size(), 3u);
      const double lrd = lr;
      const double bc1 = 1 - std::pow(beta1, 7.0), bc2 = 1 - std::pow(0.999, 7.0);
      const float negStep = static_cast<float>(-(lrd / bc1)), bc2s = static_cast<float>(std::pow(bc2, 0.5));
      const float w = static_cast<float>(1 - beta1);
      for (int i = 0; i < n; ++i) {
        float pi = p[i], gi = g[i];
        if (decoupled)
          pi = pi * static_cast<float>(1 - lrd * 0.05);
        else
          gi = gi + static_cast<float>(0.05) * pi;
        const float diff = gi - m[i];
        const float mi = std::fabs(w) < 0.5f ? m[i] + w * diff : gi - diff * (1.0f - w);
        const float vi = v[i] * static_cast<float>(0.999) + static_cast<float>(1 - 0.999) * gi * gi;
        const float denom = std::sqrt(vi) / bc2s + static_cast<float>(1e-8);
        const float np = pi + negStep * mi / denom;
        ASSERT_EQ(bits(out[1].as<float>()[i]), bits(mi)) << i;
        ASSERT_EQ(bits(out[2].as<float>()[i]), bits(vi)) << i;
        ASSERT_EQ(bits(out[0].as<float>()[i]), bits(np)) << i;
      }
    }
  }
}

TEST(Adam, FirstStepIsSignTimesLr) {
  // Bias correction with step 1: m̂ = g, v̂ = g², so p' = p - lr * g / (|g| + eps) ≈ p - lr*sign(g).
  auto out = adam(f32t({2}, {1.0f, 1.0f}), f32t({2}, {0.5f, -2.0f}), Tensor(DType::F32, {2}),
                  Tensor(DType::F32, {2}), 1, 0.1f, 0.0f, {});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_NEAR(out[0].as<float>()[0], 0.9f, 1e-6);
  EXPECT_NEAR(out[0].as<float>()[1], 1.1f, 1e-6);
}

TEST(Adam, RejectsStepZeroOnAnAppliedStepButNotOnASkippedOne) {
  Tensor p = f32t({1}, {1}), g = f32t({1}, {1}), m(DType::F32, {1}), v(DType::F32, {1});
  Tensor step = i64s(0), lr = f32s(0.1f), clean = f32s(0), inf = f32s(1);
  EXPECT_FALSE(run("amp.adam_update", {&p, &g, &m, &v, &step, &lr, &clean}, {},
                   {typeOf(p), typeOf(m), typeOf(v)}).ok());
  EXPECT_TRUE(run("amp.adam_update", {&p, &g, &m, &v, &step, &lr, &inf}, {},
                  {typeOf(p), typeOf(m), typeOf(v)}).ok());
  AttrMap bad{{"beta1", 1.0}};
  Tensor one = i64s(1);
  EXPECT_FALSE(run("amp.adam_update", {&p, &g, &m, &v, &one, &lr, &clean}, bad,
                   {typeOf(p), typeOf(m), typeOf(v)}).ok());
}

//===----------------------------------------------------------------------===//
// bf16 moments (--optimizer-state=bf16)
//===----------------------------------------------------------------------===//

Tensor toBf16(const Tensor& t) {
  Tensor out(DType::BF16, t.shape());
  convertBuffer(DType::F32, t.data(), DType::BF16, out.data(), t.numel());
  return out;
}
Tensor toF32(const Tensor& t) {
  Tensor out(DType::F32, t.shape());
  convertBuffer(t.dtype(), t.data(), DType::F32, out.data(), t.numel());
  return out;
}

// The update reads bf16 moments widened exactly and computes as with f32 moments: the param is the
// f32-state update's on the widened moments, bit for bit, and each stored moment is one of the two
// bf16 neighbours of the f32 moment that update computed (the one below or the one above).
TEST(AdamBf16State, ParamIsTheF32UpdateAndMomentsItsBf16Neighbours) {
  const int n = 4096;
  Tensor p = f32t({n}, randomF32(n, -3, 3, 41)), g = f32t({n}, randomF32(n, -1, 1, 42));
  Tensor m = toBf16(f32t({n}, randomF32(n, -0.5, 0.5, 43))), v = toBf16(f32t({n}, randomF32(n, 0, 0.5, 44)));
  for (bool decoupled : {false, true}) {
    AdamCfg cfg{0.9, 0.999, 1e-8, 0.05, decoupled};
    AttrMap attrs = cfg.attrs();
    attrs.set("rounding_seed", int64_t{9});
    Tensor stepT = i64s(5), lrT = f32s(2e-3f), clean = f32s(0);
    auto got = runOk("amp.adam_update", {&p, &g, &m, &v, &stepT, &lrT, &clean}, attrs,
                     {typeOf(p), typeOf(m), typeOf(v)});
    auto wide = adam(p, g, toF32(m), toF32(v), 5, 2e-3f, 0.0f, cfg);
    ASSERT_EQ(got.size(), 3u);
    ASSERT_EQ(got[1].dtype(), DType::BF16);
    int roundedUp = 0;
    for (int i = 0; i < n; ++i) {
      ASSERT_EQ(bits(got[0].as<float>()[i]), bits(wide[0].as<float>()[i])) << i;
      for (int k : {1, 2}) {
        const uint32_t f = bits(wide[k].as<float>()[i]);
        const uint16_t b = got[k].as<uint16_t>()[i];
        ASSERT_TRUE(b == (f >> 16) || b == (f >> 16) + 1) << "moment " << k << " element " << i;
        roundedUp += b != (f >> 16);
      }
    }
    EXPECT_GT(roundedUp, n / 4);  // random, not truncation
    EXPECT_LT(roundedUp, 2 * n - n / 4);
    // The same seed and step give the same bits; another seed others.
    auto again = runOk("amp.adam_update", {&p, &g, &m, &v, &stepT, &lrT, &clean}, attrs,
                       {typeOf(p), typeOf(m), typeOf(v)});
    EXPECT_EQ(std::memcmp(again[1].data(), got[1].data(), got[1].nbytes()), 0);
    attrs.set("rounding_seed", int64_t{10});
    auto other = runOk("amp.adam_update", {&p, &g, &m, &v, &stepT, &lrT, &clean}, attrs,
                       {typeOf(p), typeOf(m), typeOf(v)});
    EXPECT_NE(std::memcmp(other[1].data(), got[1].data(), got[1].nbytes()), 0);
  }
}

// Why the rounding is stochastic: with beta2 = 0.999 and zero gradients, v' = 0.999·v is within
// half a bf16 ulp of v, so round-to-nearest would keep v = 1 forever. Stochastically rounded, the
// mean of 65,536 elements after one step is 0.999 within 4 standard deviations (each element is
// 1 or 0.99609375).
TEST(AdamBf16State, SecondMomentDecaysOnAverage) {
  const int n = 65536;
  Tensor p(DType::F32, {n}), g(DType::F32, {n});
  Tensor m = toBf16(f32t({n}, std::vector<float>(n, 0.0f))), v = toBf16(f32t({n}, std::vector<float>(n, 1.0f)));
  AttrMap attrs = AdamCfg{}.attrs();
  attrs.set("rounding_seed", int64_t{3});
  Tensor stepT = i64s(2), lrT = f32s(1e-3f), clean = f32s(0);
  auto out = runOk("amp.adam_update", {&p, &g, &m, &v, &stepT, &lrT, &clean}, attrs, {typeOf(p), typeOf(m), typeOf(v)});
  const Tensor vOut = toF32(out[2]);
  double sum = 0.0;
  for (int i = 0; i < n; ++i) sum += vOut.as<float>()[i];
  const double mean = sum / n, x = static_cast<double>(0.999f), lo = 0.99609375;
  const double q = (x - lo) / (1.0 - lo), sigma = (1.0 - lo) * std::sqrt(q * (1 - q) / n);
  EXPECT_NEAR(mean, x, 4 * sigma);
  EXPECT_LT(mean, 0.9995);  // round-to-nearest would give exactly 1
}

TEST(AdamBf16State, SkippedStepKeepsTheMomentsAndMixedMomentTypesAreRefused) {
  Tensor p = f32t({3}, {1, 2, 3}), g = f32t({3}, {1, 1, 1});
  Tensor m = toBf16(f32t({3}, {0.1f, -0.2f, 0.3f})), v = toBf16(f32t({3}, {0.01f, 0.02f, 0.03f}));
  Tensor stepT = i64s(4), lrT = f32s(0.1f), inf = f32s(1), clean = f32s(0);
  auto out = runOk("amp.adam_update", {&p, &g, &m, &v, &stepT, &lrT, &inf}, {}, {typeOf(p), typeOf(m), typeOf(v)});
  EXPECT_EQ(std::memcmp(out[1].data(), m.data(), m.nbytes()), 0);
  EXPECT_EQ(std::memcmp(out[2].data(), v.data(), v.nbytes()), 0);
  Tensor vf = toF32(v);
  auto mixed = run("amp.adam_update", {&p, &g, &m, &vf, &stepT, &lrT, &clean}, {}, {typeOf(p), typeOf(m), typeOf(vf)});
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(std::string(mixed.status().message()).find("exp_avg_sq (operand 3) must be f32 or bf16 like the other moment"),
            std::string::npos)
      << mixed.status();
}

//===----------------------------------------------------------------------===//
// The found_inf guard over a whole step
//===----------------------------------------------------------------------===//

// Values whose bits a careless "p - 0*d" or "p*1" would still change or normalise.
std::vector<float> trickyValues(int n, unsigned seed) {
  std::vector<float> v = randomF32(n, -1, 1, seed);
  v[0] = -0.0f;
  v[1] = fromBits(0x7fc0beefu);  // NaN with a payload
  v[2] = fromBits(0x00000003u);  // subnormal
  v[3] = -INFINITY;
  return v;
}

TEST(Guard, InjectedInfLeavesEveryStateBitwiseUnchangedExceptCountersAndScale) {
  const int n = 40;
  for (const char* opt : {"sgd", "adam", "adamw"}) {
    Tensor p = f32t({n}, trickyValues(n, 1)), m = f32t({n}, trickyValues(n, 2)),
           v = f32t({n}, trickyValues(n, 3)), buf = f32t({n}, trickyValues(n, 4));
    std::vector<float> gv = randomF32(n, -1, 1, 5);
    gv[17] = INFINITY;  // the injected overflow
    Tensor g = f32t({n}, gv);
    Tensor scale = f32s(65536.0f), tracker = i32s(1234), step = i64s(41), skipped = i64s(3);

    // unscale_check -> step_counters -> lr_schedule -> update -> update_scale, as @train_step runs.
    auto uc = runOk("amp.unscale_check", {&g, &scale}, {}, {typeOf(g), kF32Scalar});
    ASSERT_EQ(uc.size(), 2u);
    const Tensor& found = uc[1];
    EXPECT_EQ(found.as<float>()[0], 1.0f);
    auto sc = runOk("amp.step_counters", {&step, &skipped, &found}, {}, {kI64Scalar, kI64Scalar});
    ASSERT_EQ(sc.size(), 2u);
    auto lr = runOk("amp.lr_schedule", {&sc[0]},
                    AttrMap{{"kind", std::string("cosine")}, {"base_lr", 0.1}, {"warmup_steps", int64_t{5}},
                            {"total_steps", int64_t{100}}},
                    {kF32Scalar});
    ASSERT_EQ(lr.size(), 1u);
    std::vector<Tensor> upd;
    if (std::string(opt) == "sgd") {
      Tensor lrIn = lr[0], f = found;
      upd = runOk("amp.sgd_update", {&p, &uc[0], &lrIn, &f, &buf},
                  AttrMap{{"momentum", 0.9}, {"nesterov", true}, {"weight_decay", 0.1}},
                  {typeOf(p), typeOf(buf)});
      ASSERT_EQ(upd.size(), 2u);
      EXPECT_TRUE(upd[0].bitwiseEquals(p));
      EXPECT_TRUE(upd[1].bitwiseEquals(buf));
    } else {
      AdamCfg cfg{0.9, 0.999, 1e-8, 0.1, std::string(opt) == "adamw"};
      Tensor lrIn = lr[0], f = found;
      upd = runOk("amp.adam_update", {&p, &uc[0], &m, &v, &sc[0], &lrIn, &f}, cfg.attrs(),
                  {typeOf(p), typeOf(m), typeOf(v)});
      ASSERT_EQ(upd.size(), 3u);
      EXPECT_TRUE(upd[0].bitwiseEquals(p)) << opt;
      EXPECT_TRUE(upd[1].bitwiseEquals(m)) << opt;
      EXPECT_TRUE(upd[2].bitwiseEquals(v)) << opt;
    }
    auto us = runOk("amp.update_scale", {&scale, &tracker, &found},
                    AttrMap{{"growth_factor", 2.0}, {"backoff_factor", 0.5}, {"growth_interval", int64_t{2000}}},
                    {kF32Scalar, kI32Scalar});
    ASSERT_EQ(us.size(), 2u);
    EXPECT_EQ(sc[0].as<int64_t>()[0], 41);  // step (and so the schedule index) unchanged
    EXPECT_EQ(sc[1].as<int64_t>()[0], 4);   // skipped + 1
    EXPECT_EQ(us[0].as<float>()[0], 32768.0f);
    EXPECT_EQ(us[1].as<int32_t>()[0], 0);
  }
}

TEST(Guard, CleanStepChangesState) {
  // The same pipeline without the inf does update (so the guard test is not vacuous).
  Tensor p = f32t({2}, {1.0f, 2.0f}), g = f32t({2}, {0.5f, 0.5f}), m(DType::F32, {2}), v(DType::F32, {2});
  auto out = adam(p, g, m, v, 1, 0.1f, 0.0f, {});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_FALSE(out[0].bitwiseEquals(p));
  EXPECT_FALSE(out[1].bitwiseEquals(m));
  EXPECT_FALSE(out[2].bitwiseEquals(v));
}

TEST(StepCounters, CleanAdvancesStepOverflowAdvancesSkipped) {
  Tensor step = i64s(5), skipped = i64s(2);
  for (float f : {0.0f, -0.0f, 1.0f, 2.0f, NAN}) {
    Tensor found = f32s(f);
    auto out = runOk("amp.step_counters", {&step, &skipped, &found}, {}, {kI64Scalar, kI64Scalar});
    ASSERT_EQ(out.size(), 2u);
    const bool clean = f == 0.0f;
    EXPECT_EQ(out[0].as<int64_t>()[0], clean ? 6 : 5) << f;
    EXPECT_EQ(out[1].as<int64_t>()[0], clean ? 2 : 3) << f;
  }
}

//===----------------------------------------------------------------------===//
// LR schedule
//===----------------------------------------------------------------------===//

float lrAt(int64_t t, const AttrMap& a) {
  Tensor step = i64s(t);
  auto out = runOk("amp.lr_schedule", {&step}, a, {kF32Scalar});
  return out.empty() ? NAN : out[0].as<float>()[0];
}

TEST(LrSchedule, WarmupThenCosine) {
  AttrMap a{{"kind", std::string("cosine")}, {"base_lr", 1e-3}, {"warmup_steps", int64_t{100}},
            {"total_steps", int64_t{1000}}, {"min_lr", 1e-5}};
  EXPECT_EQ(lrAt(1, a), static_cast<float>(1e-3 * 1 / 100));
  EXPECT_EQ(lrAt(0, a), lrAt(1, a));  // before the first applied step: the first step's value
  EXPECT_EQ(lrAt(50, a), static_cast<float>(1e-3 * 50 / 100));
  EXPECT_EQ(lrAt(100, a), static_cast<float>(1e-3));  // end of warmup: base
  EXPECT_EQ(lrAt(101, a), static_cast<float>(1e-5 + 0.5 * (1e-3 - 1e-5) * (1 + std::cos(M_PI / 900))));
  EXPECT_NEAR(lrAt(550, a), (1e-3 + 1e-5) / 2, 1e-10);  // half way: the mean of base and min
  EXPECT_EQ(lrAt(1000, a), static_cast<float>(1e-5));  // end: min_lr
  EXPECT_EQ(lrAt(5000, a), static_cast<float>(1e-5));  // and after
  // Monotone non-increasing after warmup.
  float prev = lrAt(100, a);
  for (int64_t t = 101; t <= 1000; t += 7) {
    float cur = lrAt(t, a);
    EXPECT_LE(cur, prev) << t;
    prev = cur;
  }
}

TEST(LrSchedule, ConstantWithAndWithoutWarmup) {
  EXPECT_EQ(lrAt(1, AttrMap{{"kind", std::string("constant")}, {"base_lr", 0.1}}), 0.1f);
  EXPECT_EQ(lrAt(123456, AttrMap{{"kind", std::string("constant")}, {"base_lr", 0.1}}), 0.1f);
  AttrMap w{{"kind", std::string("constant")}, {"base_lr", 0.1}, {"warmup_steps", int64_t{4}}};
  EXPECT_EQ(lrAt(1, w), static_cast<float>(0.1 / 4));
  EXPECT_EQ(lrAt(3, w), static_cast<float>(0.1 * 3 / 4));
  EXPECT_EQ(lrAt(4, w), 0.1f);
  EXPECT_EQ(lrAt(5, w), 0.1f);
}

TEST(LrSchedule, CosineWithoutWarmup) {
  AttrMap a{{"kind", std::string("cosine")}, {"base_lr", 2.0}, {"total_steps", int64_t{4}}};
  EXPECT_EQ(lrAt(1, a), static_cast<float>(0.5 * 2.0 * (1 + std::cos(M_PI / 4))));
  EXPECT_EQ(lrAt(2, a), static_cast<float>(0.5 * 2.0 * (1 + std::cos(M_PI / 2))));
  EXPECT_EQ(lrAt(4, a), 0.0f);
}

TEST(LrSchedule, RejectsBadAttributes) {
  Tensor step = i64s(1);
  EXPECT_FALSE(run("amp.lr_schedule", {&step}, AttrMap{{"kind", std::string("linear")}, {"base_lr", 0.1}},
                   {kF32Scalar}).ok());
  EXPECT_FALSE(run("amp.lr_schedule", {&step},
                   AttrMap{{"kind", std::string("cosine")}, {"base_lr", 0.1}, {"warmup_steps", int64_t{10}},
                           {"total_steps", int64_t{10}}},
                   {kF32Scalar}).ok());
  Tensor f = f32s(1);
  EXPECT_FALSE(run("amp.lr_schedule", {&f}, AttrMap{{"kind", std::string("constant")}, {"base_lr", 0.1}},
                   {kF32Scalar}).ok());
}

//===----------------------------------------------------------------------===//
// global_norm and clip_grads
//===----------------------------------------------------------------------===//

float globalNorm(std::vector<const Tensor*> gs) {
  auto out = runOk("amp.global_norm", gs, {}, {kF32Scalar});
  return out.empty() ? NAN : out[0].as<float>()[0];
}

TEST(GlobalNorm, SmallExactCases) {
  Tensor a = f32t({2}, {3, 4}), b = f32t({1}, {3}), c = f32t({1}, {-4}), e(DType::F32, {0});
  EXPECT_EQ(globalNorm({&a}), 5.0f);
  EXPECT_EQ(globalNorm({&b, &c}), 5.0f);  // norms 3 and 4, then the norm of those
  EXPECT_EQ(globalNorm({&b, &e, &c}), 5.0f);  // an empty tensor contributes 0
  Tensor n = f32t({2}, {1, NAN}), i = f32t({1}, {INFINITY});
  EXPECT_TRUE(std::isnan(globalNorm({&a, &n})));
  EXPECT_TRUE(std::isinf(globalNorm({&a, &i})));
}

TEST(GlobalNorm, LargeMatchesF64) {
  std::vector<Tensor> gs;
  double sumSq = 0;
  int64_t total = 0;
  for (int t = 0; t < 5; ++t) {
    std::vector<float> v = randomF32(10000 + 997 * t, -1, 1, 40 + t);
    double s = 0;
    for (float x : v) s += static_cast<double>(x) * x;
    sumSq += s;
    total += static_cast<int64_t>(v.size());
    gs.push_back(f32t({static_cast<int64_t>(v.size())}, v));
  }
  std::vector<const Tensor*> ops;
  for (const Tensor& g : gs) ops.push_back(&g);
  // Sequential f32 sums: relative error of a sum of n positive terms <= (n+1)·u, halved by sqrt.
  const double want = std::sqrt(sumSq);
  EXPECT_NEAR(globalNorm(ops), want, want * (total + 10) * kU);
}

TEST(ClipGrads, CoefficientAsPyTorch) {
  std::vector<float> g = randomF32(16, -1, 1, 50);
  Tensor gt = f32t({16}, g);
  for (float norm : {2.0f, 1.0f, 0.999999f, 0.5f, 1e-8f, 1e30f}) {
    Tensor nt = f32s(norm);
    auto out = runOk("amp.clip_grads", {&gt, &nt}, AttrMap{{"max_norm", 1.0}}, {typeOf(gt)});
    ASSERT_EQ(out.size(), 1u);
    // max_norm / (norm + 1e-6) as PyTorch evaluates it: reciprocal, then times max_norm.
    float coef = (1.0f / (norm + static_cast<float>(1e-6))) * 1.0f;
    if (coef > 1.0f) coef = 1.0f;
    for (int i = 0; i < 16; ++i) ASSERT_EQ(bits(out[0].as<float>()[i]), bits(g[i] * coef)) << norm;
    if (norm <= 0.5f) {
      EXPECT_TRUE(out[0].bitwiseEquals(gt));  // coef clamped to 1: unchanged
    }
  }
  Tensor nan = f32s(NAN);
  auto out = runOk("amp.clip_grads", {&gt, &nan}, AttrMap{{"max_norm", 1.0}}, {typeOf(gt)});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(std::isnan(out[0].as<float>()[0]));  // clamp propagates NaN
}

TEST(ClipGrads, ClippedGlobalNormIsMaxNorm) {
  Tensor a = f32t({100}, randomF32(100, -3, 3, 60)), b = f32t({7, 3}, randomF32(21, -3, 3, 61));
  const float norm = globalNorm({&a, &b});
  ASSERT_GT(norm, 2.0f);
  Tensor nt = f32s(norm);
  auto out = runOk("amp.clip_grads", {&a, &b, &nt}, AttrMap{{"max_norm", 2.0}}, {typeOf(a), typeOf(b)});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_NEAR(globalNorm({&out[0], &out[1]}), 2.0f, 2.0f * 1e-5f);
  Tensor zero = f32s(0);
  EXPECT_FALSE(run("amp.clip_grads", {&a, &nt}, AttrMap{{"max_norm", 0.0}}, {typeOf(a)}).ok());
  EXPECT_FALSE(run("amp.clip_grads", {&a, &zero}, AttrMap{}, {typeOf(a)}).ok());
}

}  // namespace
}  // namespace amp::rt::traintest
