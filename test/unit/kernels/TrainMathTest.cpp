// The arithmetic of the CUDA device's scaler and optimizer kernels
// (runtime/kernels/math/TrainMath.h), compiled here as host C++ with -ffp-contract=off,
// against the reference executor's training ops: every result bit for bit, on random tensors with
// signed zeros, subnormals, huge values and non-finite gradients. The GPU runs the same text
// through NVRTC with --fmad=false; only the f64 pow/cos of the per-step constants come from CUDA's
// math library there (docs/kernels.md).
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/kernels/math/TrainMath.h"
#include "runtime/reference/ReferenceKernels.h"

namespace amp::rt {
namespace {

uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

Tensor scalar(DType t, double v) {
  Tensor s(t, {});
  if (t == DType::F32) s.as<float>()[0] = static_cast<float>(v);
  if (t == DType::I32) s.as<int32_t>()[0] = static_cast<int32_t>(v);
  if (t == DType::I64) s.as<int64_t>()[0] = static_cast<int64_t>(v);
  return s;
}

Tensor randomF32(int64_t n, std::mt19937& rng, float lo, float hi) {
  Tensor t(DType::F32, {n});
  std::uniform_real_distribution<float> u(lo, hi);
  for (int64_t i = 0; i < n; ++i) t.as<float>()[i] = u(rng);
  return t;
}

// Gradients with the values that break careless kernels.
Tensor awkwardGrads(int64_t n, std::mt19937& rng) {
  Tensor g = randomF32(n, rng, -3.0f, 3.0f);
  const float special[] = {0.0f, -0.0f, 1e-40f, -1e-45f, 3e38f, -65504.0f, 1e-20f};
  for (size_t i = 0; i < std::size(special); ++i) g.as<float>()[i * 7] = special[i];
  return g;
}

std::vector<Tensor> reference(std::string_view op, const std::vector<const Tensor*>& in, const AttrMap& attrs,
                              const std::vector<TensorType>& results) {
  auto out = evalReferenceOp(op, in, attrs, results, EvalContext{});
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *out : std::vector<Tensor>{};
}

void expectSameBits(const float* device, const Tensor& ref, const char* what) {
  for (int64_t i = 0; i < ref.numel(); ++i)
    ASSERT_EQ(bitsOf(device[i]), bitsOf(ref.as<float>()[i]))
        << what << "[" << i << "]: " << device[i] << " vs reference " << ref.as<float>()[i];
}

TEST(CudaTrainMath, AdamMatchesTheReferenceBitForBit) {
  std::mt19937 rng(7);
  const int64_t n = 5000;
  for (bool decoupled : {false, true})
    for (double wd : {0.0, 0.01})
      for (int64_t step : {int64_t{1}, int64_t{2}, int64_t{9}, int64_t{1000}, int64_t{123456}})
        for (double beta1 : {0.9, 0.3}) {  // 1 - beta1 below and above ATen's lerp switch
          SCOPED_TRACE(testing::Message() << "decoupled " << decoupled << " wd " << wd << " step " << step
                                          << " beta1 " << beta1);
          Tensor p = randomF32(n, rng, -1.0f, 1.0f), g = awkwardGrads(n, rng);
          Tensor m = randomF32(n, rng, -0.1f, 0.1f), v = randomF32(n, rng, 0.0f, 0.01f);
          const float lr = 1e-3f;
          AttrMap attrs{{"beta1", beta1}, {"beta2", 0.999}, {"eps", 1e-8}, {"weight_decay", wd}, {"decoupled", decoupled}};
          Tensor st = scalar(DType::I64, static_cast<double>(step)), lrT = scalar(DType::F32, lr),
                 found = scalar(DType::F32, 0.0);
          auto ref = reference("amp.adam_update", {&p, &g, &m, &v, &st, &lrT, &found}, attrs,
                               {{DType::F32, {n}}, {DType::F32, {n}}, {DType::F32, {n}}});
          ASSERT_EQ(ref.size(), 3u);
          const AmpAdamStep s = amp_adam_step(lr, step, beta1, 0.999, 1e-8, wd, decoupled);
          std::vector<float> dp(n), dm(n), dv(n);
          for (int64_t i = 0; i < n; ++i) {
            dp[i] = p.as<float>()[i], dm[i] = m.as<float>()[i], dv[i] = v.as<float>()[i];
            amp_adam_element(&dp[i], &dm[i], &dv[i], g.as<float>()[i], s);
          }
          expectSameBits(dp.data(), ref[0], "param");
          expectSameBits(dm.data(), ref[1], "exp_avg");
          expectSameBits(dv.data(), ref[2], "exp_avg_sq");
        }
}

TEST(CudaTrainMath, SgdMatchesTheReferenceBitForBit) {
  std::mt19937 rng(11);
  const int64_t n = 5000;
  for (double momentum : {0.0, 0.9})
    for (bool nesterov : {false, true})
      for (double wd : {0.0, 1e-4}) {
        if (nesterov && momentum == 0.0) continue;
        SCOPED_TRACE(testing::Message() << "momentum " << momentum << " nesterov " << nesterov << " wd " << wd);
        Tensor p = randomF32(n, rng, -1.0f, 1.0f), g = awkwardGrads(n, rng), buf = randomF32(n, rng, -0.5f, 0.5f);
        Tensor lrT = scalar(DType::F32, 0.1), found = scalar(DType::F32, 0.0);
        AttrMap attrs{{"momentum", momentum}, {"nesterov", nesterov}, {"weight_decay", wd}};
        std::vector<const Tensor*> in = {&p, &g, &lrT, &found};
        std::vector<TensorType> types = {{DType::F32, {n}}};
        if (momentum != 0.0) in.push_back(&buf), types.push_back({DType::F32, {n}});
        auto ref = reference("amp.sgd_update", in, attrs, types);
        ASSERT_EQ(ref.size(), types.size());
        const AmpSgdStep s = amp_sgd_step(0.1f, momentum, wd, nesterov);
        std::vector<float> dp(n), db(n);
        for (int64_t i = 0; i < n; ++i) {
          dp[i] = p.as<float>()[i], db[i] = buf.as<float>()[i];
          amp_sgd_element(&dp[i], momentum != 0.0 ? &db[i] : nullptr, g.as<float>()[i], s);
        }
        expectSameBits(dp.data(), ref[0], "param");
        if (momentum != 0.0) expectSameBits(db.data(), ref[1], "momentum_buffer");
      }
}

TEST(CudaTrainMath, UnscaleMatchesUnscaleCheck) {
  std::mt19937 rng(3);
  const int64_t n = 4000;
  for (double scale : {65536.0, 1.0, 3.0, 1e-30}) {
    Tensor g = awkwardGrads(n, rng);
    g.as<float>()[5] = std::numeric_limits<float>::infinity();
    g.as<float>()[9] = std::nanf("");
    Tensor s = scalar(DType::F32, scale);
    auto ref = reference("amp.unscale_check", {&g, &s}, {}, {{DType::F32, {n}}, {DType::F32, {}}});
    ASSERT_EQ(ref.size(), 2u);
    const float inv = amp_inv_scale(static_cast<float>(scale));
    std::vector<float> u(n);
    bool found = false;
    for (int64_t i = 0; i < n; ++i) {
      const float v = g.as<float>()[i];
      if (!std::isfinite(v)) found = true;
      u[i] = amp_unscale(v, inv);
    }
    for (int64_t i = 0; i < n; ++i) {
      if (std::isnan(u[i])) continue;
      ASSERT_EQ(bitsOf(u[i]), bitsOf(ref[0].as<float>()[i])) << "scale " << scale << " [" << i << "]";
    }
    EXPECT_EQ(found ? 1.0f : 0.0f, ref[1].as<float>()[0]);
  }
}

TEST(CudaTrainMath, ClipCoefficientMatchesClipGrads) {
  const float inf = std::numeric_limits<float>::infinity();
  for (float norm : {0.0f, 1e-7f, 0.5f, 0.999999f, 1.0f, 3.7f, 1e30f, inf, std::nanf("")})
    for (double maxNorm : {1.0, 0.25, 5.0}) {
      Tensor g(DType::F32, {4});
      const float values[] = {1.0f, -2.5f, 1e-39f, 3e38f};
      std::memcpy(g.as<float>(), values, sizeof values);
      Tensor nt = scalar(DType::F32, norm);
      auto ref = reference("amp.clip_grads", {&g, &nt}, {{"max_norm", maxNorm}}, {{DType::F32, {4}}});
      ASSERT_EQ(ref.size(), 1u);
      const float coef = amp_clip_coef(norm, maxNorm);
      for (int i = 0; i < 4; ++i) {
        const float clipped = values[i] * coef;
        if (std::isnan(clipped)) {
          EXPECT_TRUE(std::isnan(ref[0].as<float>()[i]));
          continue;
        }
        EXPECT_EQ(bitsOf(clipped), bitsOf(ref[0].as<float>()[i])) << "norm " << norm << " max " << maxNorm << " [" << i << "]";
      }
    }
}

TEST(CudaTrainMath, UpdateScaleMatchesGradScaler) {
  AttrMap attrs{{"growth_factor", 2.0}, {"backoff_factor", 0.5}, {"growth_interval", int64_t{3}}};
  const float big = std::ldexp(1.0f, 127);
  for (float scale : {1024.0f, 1.0f, big, 1e-38f})
    for (int tracker : {0, 1, 2, std::numeric_limits<int>::max()})
      for (float found : {0.0f, 1.0f, std::nanf("")}) {
        Tensor s = scalar(DType::F32, scale), t = scalar(DType::I32, tracker), f(DType::F32, {});
        f.as<float>()[0] = found;
        auto ref = reference("amp.update_scale", {&s, &t, &f}, attrs, {{DType::F32, {}}, {DType::I32, {}}});
        ASSERT_EQ(ref.size(), 2u);
        float ds = scale;
        int dt = tracker;
        amp_update_scale(&ds, &dt, found, 2.0, 0.5, 3);
        EXPECT_EQ(bitsOf(ds), bitsOf(ref[0].as<float>()[0])) << scale << " " << tracker << " " << found;
        EXPECT_EQ(dt, ref[1].as<int32_t>()[0]) << scale << " " << tracker << " " << found;
      }
}

TEST(CudaTrainMath, StepCountersAndScheduleMatch) {
  for (float found : {0.0f, 1.0f}) {
    Tensor st = scalar(DType::I64, 7), sk = scalar(DType::I64, 2), f = scalar(DType::F32, found);
    auto ref = reference("amp.step_counters", {&st, &sk, &f}, {}, {{DType::I64, {}}, {DType::I64, {}}});
    ASSERT_EQ(ref.size(), 2u);
    long long step = 7, skipped = 2;
    amp_step_counters(&step, &skipped, found);
    EXPECT_EQ(step, ref[0].as<int64_t>()[0]);
    EXPECT_EQ(skipped, ref[1].as<int64_t>()[0]);
  }
  for (bool cosine : {false, true})
    for (int64_t warmup : {int64_t{0}, int64_t{5}})
      for (int64_t step : {int64_t{0}, int64_t{1}, int64_t{3}, int64_t{5}, int64_t{6}, int64_t{50}, int64_t{99},
                           int64_t{100}, int64_t{250}}) {
        AttrMap attrs{{"kind", std::string(cosine ? "cosine" : "constant")}, {"base_lr", 0.01},
                      {"warmup_steps", warmup}, {"total_steps", int64_t{100}}, {"min_lr", 0.001}};
        Tensor st = scalar(DType::I64, static_cast<double>(step));
        auto ref = reference("amp.lr_schedule", {&st}, attrs, {{DType::F32, {}}});
        ASSERT_EQ(ref.size(), 1u);
        EXPECT_EQ(bitsOf(amp_lr_schedule(cosine, 0.01, warmup, 100, 0.001, step)), bitsOf(ref[0].as<float>()[0]))
            << (cosine ? "cosine" : "constant") << " warmup " << warmup << " step " << step;
      }
}

}  // namespace
}  // namespace amp::rt

namespace amp::rt {
namespace {

// Stochastic rounding to bf16 (bf16 Adam moments): over all 2^16 random values an f32 rounds up
// exactly (its bits below bf16) times, so the mean of the results is the f32 itself, exactly.
TEST(StochasticRounding, EveryRandomValueTogetherGivesTheValueItself) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<uint32_t> any;
  std::vector<float> values = {1.0f, 0.999f, -0.999f, 1e-30f, -3.5e38f, 6.1e-5f, 1.0f + 0x1p-20f,
                               std::numeric_limits<float>::denorm_min()};
  for (int i = 0; i < 200; ++i) {
    float x;
    const uint32_t u = any(rng) & 0xfeffffffu;  // finite: exponent field below all-ones
    std::memcpy(&x, &u, 4);
    values.push_back(x);
  }
  for (float x : values) {
    const uint32_t u = bitsOf(x), low = u & 0xffffu, down = u >> 16;
    uint32_t ups = 0;
    for (uint32_t r = 0; r < 65536; ++r) {
      const uint32_t got = amp_sr_bf16(u, r);
      ASSERT_TRUE(got == down || got == down + 1) << x << " r=" << r;
      ups += got == down + 1;
    }
    EXPECT_EQ(ups, low) << x;  // P(up) = low / 2^16: E[result] = x
  }
}

TEST(StochasticRounding, RepresentableValuesAndSpecials) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint32_t u = h << 16;
    const bool nan = (u & 0x7fffffffu) > 0x7f800000u;
    for (uint32_t r : {0u, 1u, 0x8000u, 0xffffu}) {
      const uint32_t got = amp_sr_bf16(u, r);
      if (nan) EXPECT_TRUE((got & 0x7fffu) > 0x7f80u && (got & 0x40u) && (got >> 15) == (h >> 15)) << h;
      else EXPECT_EQ(got, h) << h;  // every bf16 value (infinities, zeros, subnormals) is kept exactly
    }
  }
  // NaN whose payload lies only below bf16's mantissa stays NaN (not inf); r's upper bits are ignored.
  EXPECT_EQ(amp_sr_bf16(0x7f800001u, 0xffffu), 0x7fc0u);
  EXPECT_EQ(amp_sr_bf16(0xff800001u, 0u), 0xffc0u);
  EXPECT_EQ(amp_sr_bf16(bitsOf(1.0f + 0x1p-9f), 0xffff0000u), bitsOf(1.0f) >> 16);
  // Past bf16's largest finite value only a carry reaches inf.
  EXPECT_EQ(amp_sr_bf16(0x7f7fffffu, 0u), 0x7f7fu);
  EXPECT_EQ(amp_sr_bf16(0x7f7fffffu, 1u), 0x7f80u);
}

}  // namespace
}  // namespace amp::rt
