// GradScaler parity: amp.unscale_check and amp.update_scale against PyTorch's
// GradScaler test vectors and against an independent transcription of PyTorch's
// _amp_update_scale_ over a scripted 10,000-step run with injected non-finite gradients.
#include <cmath>
#include <cstdint>
#include <limits>

#include "TrainTestUtil.h"

namespace amp::rt::traintest {
namespace {

AttrMap scalerAttrs(double growth, double backoff, int64_t interval) {
  return AttrMap{{"growth_factor", growth}, {"backoff_factor", backoff}, {"growth_interval", interval}};
}

struct ScaleState {
  float scale;
  int32_t tracker;
};

ScaleState update(ScaleState s, float foundInf, const AttrMap& attrs) {
  Tensor scale = f32s(s.scale), tracker = i32s(s.tracker), found = f32s(foundInf);
  auto out = runOk("amp.update_scale", {&scale, &tracker, &found}, attrs, {kF32Scalar, kI32Scalar});
  if (out.size() != 2) return {NAN, -1};
  return {out[0].as<float>()[0], out[1].as<int32_t>()[0]};
}

// The oracle: a direct transcription of aten/src/ATen/native/cuda/AmpKernels.cu
// _amp_update_scale_cuda_kernel (float* scale, int* tracker, const float* found_inf,
// double growth, double backoff, int interval), written independently of the kernel under test.
void torchUpdateScale(float* current_scale, int* growth_tracker, const float* found_inf,
                      double growth_factor, double backoff_factor, int growth_interval) {
  if (*found_inf) {
    *current_scale = (*current_scale) * backoff_factor;
    *growth_tracker = 0;
  } else {
    auto successful = (*growth_tracker) + 1;
    if (successful == growth_interval) {
      auto new_scale = static_cast<float>((*current_scale) * growth_factor);
      if (std::isfinite(new_scale)) *current_scale = new_scale;
      *growth_tracker = 0;
    } else {
      *growth_tracker = successful;
    }
  }
}

//===----------------------------------------------------------------------===//
// update_scale: the upstream vectors
//===----------------------------------------------------------------------===//

TEST(UpdateScale, UpstreamVectorGrowthBackoff) {
  // growth 2.0, backoff 0.25, interval 2, scale 4.0, tracker 0:
  // clean -> (tracker 1, scale 4); clean -> (0, 8); inf -> (0, 2).
  AttrMap a = scalerAttrs(2.0, 0.25, 2);
  ScaleState s{4.0f, 0};
  s = update(s, 0.0f, a);
  EXPECT_EQ(s.scale, 4.0f);
  EXPECT_EQ(s.tracker, 1);
  s = update(s, 0.0f, a);
  EXPECT_EQ(s.scale, 8.0f);
  EXPECT_EQ(s.tracker, 0);
  s = update(s, 1.0f, a);
  EXPECT_EQ(s.scale, 2.0f);
  EXPECT_EQ(s.tracker, 0);
}

TEST(UpdateScale, GrowthSkippedWhenItWouldOverflow) {
  AttrMap a = scalerAttrs(2.0, 0.5, 1);
  const float big = std::ldexp(1.0f, 127);
  ScaleState s = update({big, 0}, 0.0f, a);
  EXPECT_EQ(s.scale, big);  // candidate 2^128 = inf: kept at 2^127
  EXPECT_EQ(s.tracker, 0);  // the tracker resets anyway
  // The largest finite scale grows to nothing either; a smaller one still grows.
  const float maxf = std::numeric_limits<float>::max();
  EXPECT_EQ(update({maxf, 0}, 0.0f, a).scale, maxf);
  EXPECT_EQ(update({std::ldexp(1.0f, 126), 0}, 0.0f, a).scale, big);
}

TEST(UpdateScale, FoundInfTwoIsLikeOneAndNaNCounts) {
  AttrMap a = scalerAttrs(2.0, 0.5, 3);
  for (float found : {1.0f, 2.0f, 0.5f, -1.0f, NAN, INFINITY}) {
    ScaleState s = update({1024.0f, 2}, found, a);
    EXPECT_EQ(s.scale, 512.0f) << found;
    EXPECT_EQ(s.tracker, 0) << found;
  }
  ScaleState s = update({1024.0f, 2}, -0.0f, a);  // -0 == 0: a clean step (it grows here)
  EXPECT_EQ(s.scale, 2048.0f);
  EXPECT_EQ(s.tracker, 0);
}

TEST(UpdateScale, DefaultsGrowAfter2000CleanStepsAndNoLowerClamp) {
  AttrMap a = scalerAttrs(2.0, 0.5, 2000);
  ScaleState s{65536.0f, 0};
  for (int i = 0; i < 1999; ++i) s = update(s, 0.0f, a);
  EXPECT_EQ(s.scale, 65536.0f);
  EXPECT_EQ(s.tracker, 1999);
  s = update(s, 0.0f, a);
  EXPECT_EQ(s.scale, 131072.0f);
  EXPECT_EQ(s.tracker, 0);
  // 100 overflows in a row: 2^17 * 2^-100 = 2^-83, far below 1 (no clamp).
  for (int i = 0; i < 100; ++i) s = update(s, 1.0f, a);
  EXPECT_EQ(s.scale, std::ldexp(1.0f, -83));
  EXPECT_EQ(s.tracker, 0);
  // Eventually it underflows to 0 and stays there, as PyTorch's would.
  for (int i = 0; i < 100; ++i) s = update(s, 1.0f, a);
  EXPECT_EQ(s.scale, 0.0f);
}

TEST(UpdateScale, ProductsAreRoundedFromF64) {
  // scale * 1.1 in f64 then rounded once differs from f32(scale) * f32(1.1) for some scales.
  AttrMap a = scalerAttrs(1.1, 0.3, 1);
  int differ = 0;
  for (int i = 0; i < 1000; ++i) {
    const float scale = 1.0f + static_cast<float>(i) * 0.37f;
    const float want = static_cast<float>(static_cast<double>(scale) * 1.1);
    const float single = scale * 1.1f;
    differ += want != single;
    EXPECT_EQ(update({scale, 0}, 0.0f, a).scale, want);
    EXPECT_EQ(update({scale, 0}, 1.0f, a).scale, static_cast<float>(static_cast<double>(scale) * 0.3));
  }
  EXPECT_GT(differ, 0);  // the test can tell the two roundings apart
}

TEST(UpdateScale, IntervalOneGrowsEveryCleanStep) {
  AttrMap a = scalerAttrs(2.0, 0.5, 1);
  ScaleState s{1.0f, 0};
  for (int i = 1; i <= 10; ++i) {
    s = update(s, 0.0f, a);
    EXPECT_EQ(s.scale, std::ldexp(1.0f, i));
    EXPECT_EQ(s.tracker, 0);
  }
}

TEST(UpdateScale, RejectsBadOperandsAndAttributes) {
  Tensor scale = f32s(1.0f), tracker = i32s(0), found = f32s(0.0f), tracker64 = i64s(0);
  EXPECT_FALSE(run("amp.update_scale", {&scale, &tracker64, &found}, scalerAttrs(2, 0.5, 2),
                   {kF32Scalar, kI32Scalar}).ok());
  EXPECT_FALSE(run("amp.update_scale", {&scale, &tracker, &found}, scalerAttrs(1.0, 0.5, 2),
                   {kF32Scalar, kI32Scalar}).ok());
  EXPECT_FALSE(run("amp.update_scale", {&scale, &tracker, &found}, scalerAttrs(2.0, 1.0, 2),
                   {kF32Scalar, kI32Scalar}).ok());
  EXPECT_FALSE(run("amp.update_scale", {&scale, &tracker, &found}, scalerAttrs(2.0, 0.5, 0),
                   {kF32Scalar, kI32Scalar}).ok());
  EXPECT_FALSE(run("amp.update_scale", {&scale, &tracker, &found}, AttrMap{},
                   {kF32Scalar, kI32Scalar}).ok());
  EXPECT_FALSE(run("amp.update_scale", {&scale, &tracker, &found}, scalerAttrs(2.0, 0.5, 2),
                   {kF32Scalar}).ok());
}

//===----------------------------------------------------------------------===//
// unscale_check
//===----------------------------------------------------------------------===//

TEST(UnscaleCheck, UnscalesWithF64Reciprocal) {
  std::vector<float> g = randomF32(64, -100.0f, 100.0f, 1);
  Tensor gt = f32t({8, 8}, g);
  for (float s : {65536.0f, 3.0f, 0.1f, 7.0e-5f, 1.0e30f, 12345.678f}) {
    Tensor scale = f32s(s);
    auto out = runOk("amp.unscale_check", {&gt, &scale}, {}, {typeOf(gt), kF32Scalar});
    ASSERT_EQ(out.size(), 2u);
    const float inv = static_cast<float>(1.0 / static_cast<double>(s));
    for (size_t i = 0; i < g.size(); ++i) ASSERT_EQ(bits(out[0].as<float>()[i]), bits(g[i] * inv)) << s;
    EXPECT_EQ(out[1].as<float>()[0], 0.0f);
  }
}

TEST(UnscaleCheck, InvScaleOneIsCheckOnlyAndBitExact) {
  // NaN payloads and -0 survive; infs and NaNs are flagged.
  std::vector<float> g = {1.5f, -0.0f, fromBits(0x7fc01234u), INFINITY, -3.0f, fromBits(0x00000001u)};
  Tensor gt = f32t({6}, g), one = f32s(1.0f);
  for (bool withScale : {true, false}) {
    std::vector<const Tensor*> ops = {&gt};
    if (withScale) ops.push_back(&one);
    auto out = runOk("amp.unscale_check", ops, {}, {typeOf(gt), kF32Scalar});
    ASSERT_EQ(out.size(), 2u);
    EXPECT_TRUE(out[0].bitwiseEquals(gt));
    EXPECT_EQ(out[1].as<float>()[0], 1.0f);
  }
  // A finite list with inv_scale 1 is not flagged.
  Tensor fin = f32t({2}, {1.0f, -2.0f});
  auto out = runOk("amp.unscale_check", {&fin}, {}, {typeOf(fin), kF32Scalar});
  EXPECT_EQ(out[1].as<float>()[0], 0.0f);
  EXPECT_TRUE(out[0].bitwiseEquals(fin));
}

TEST(UnscaleCheck, OneNaNInTwoHundredTensors) {
  std::vector<Tensor> grads;
  for (int i = 0; i < 200; ++i) grads.push_back(f32t({33}, randomF32(33, -1.0f, 1.0f, 100 + i)));
  Tensor scale = f32s(1024.0f);
  for (int where : {0, 137, 199}) {
    std::vector<Tensor> gs = grads;
    gs[where].as<float>()[where % 33] = NAN;
    std::vector<const Tensor*> ops;
    std::vector<TensorType> types;
    for (const Tensor& g : gs) {
      ops.push_back(&g);
      types.push_back(typeOf(g));
    }
    types.push_back(kF32Scalar);
    ops.push_back(&scale);
    auto out = runOk("amp.unscale_check", ops, {}, types);
    ASSERT_EQ(out.size(), 201u);
    EXPECT_EQ(out[200].as<float>()[0], 1.0f) << where;
    // Other tensors are still unscaled.
    EXPECT_EQ(out[(where + 1) % 200].as<float>()[0], grads[(where + 1) % 200].as<float>()[0] / 1024.0f);
  }
  std::vector<const Tensor*> ops;
  std::vector<TensorType> types;
  for (const Tensor& g : grads) {
    ops.push_back(&g);
    types.push_back(typeOf(g));
  }
  types.push_back(kF32Scalar);
  ops.push_back(&scale);
  EXPECT_EQ(runOk("amp.unscale_check", ops, {}, types)[200].as<float>()[0], 0.0f);
}

TEST(UnscaleCheck, HalfGradientsComputeInF32AndRoundBack) {
  Tensor g(DType::F16, {3});
  for (int i = 0; i < 3; ++i) storeFromF32(DType::F16, g.data(), i, 1000.0f * (i + 1));
  Tensor scale = f32s(3.0f);
  auto out = runOk("amp.unscale_check", {&g, &scale}, {}, {typeOf(g), kF32Scalar});
  ASSERT_EQ(out.size(), 2u);
  const float inv = static_cast<float>(1.0 / 3.0);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(loadAsF32(DType::F16, out[0].data(), i), roundToDType(DType::F16, 1000.0f * (i + 1) * inv));
  storeFromF32(DType::F16, g.data(), 1, 1.0e6f);  // overflows f16: inf
  EXPECT_EQ(runOk("amp.unscale_check", {&g, &scale}, {}, {typeOf(g), kF32Scalar})[1].as<float>()[0], 1.0f);
}

TEST(UnscaleCheck, RejectsBadCalls) {
  Tensor g = f32t({2}, {1, 2}), scale = f32s(2), vec = f32t({1}, {2}), ids = i64s(1);
  EXPECT_FALSE(run("amp.unscale_check", {&g, &vec}, {}, {typeOf(g), kF32Scalar}).ok());
  EXPECT_FALSE(run("amp.unscale_check", {&ids}, {}, {typeOf(ids), kF32Scalar}).ok());
  EXPECT_FALSE(run("amp.unscale_check", {&g, &scale, &scale}, {}, {typeOf(g), kF32Scalar}).ok());
  EXPECT_FALSE(run("amp.unscale_check", {&g}, {}, {kF32Scalar}).ok());
  // Result type that does not match the gradient.
  EXPECT_FALSE(run("amp.unscale_check", {&g, &scale}, {}, {TensorType{DType::F16, {2}}, kF32Scalar}).ok());
}

//===----------------------------------------------------------------------===//
// The scripted 10,000-step run
//===----------------------------------------------------------------------===//

// One configuration of the scripted run. Each step builds f16 gradients as the backward pass
// would produce them: g_true (small, f32) times the current scale, rounded to f16 (so a large
// scale overflows naturally), plus scripted injections of inf/NaN. found_inf comes from
// amp.unscale_check; with two "optimizers" their flags are summed as GradScaler.update does.
struct RunStats {
  int steps = 0, injected = 0, overflowSteps = 0, growths = 0, backoffs = 0, mismatches = 0;
};

RunStats scriptedRun(double growth, double backoff, int interval, float initScale, unsigned seed,
                     int steps, bool twoOptimizers, int injectPer10k = 15, int amplitudeExp0 = -10) {
  AttrMap attrs = scalerAttrs(growth, backoff, interval);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> mag(-1.0f, 1.0f);
  std::uniform_int_distribution<int> pick(0, 9999);
  RunStats st;
  float scale = initScale, oracleScale = initScale;
  int32_t tracker = 0;
  int oracleTracker = 0;
  const int n = 16;
  for (int step = 0; step < steps; ++step) {
    // Gradient magnitudes drift so that overflow happens at different scales over the run.
    const float amplitude = std::ldexp(1.0f, amplitudeExp0 + (step / 700) % 12);
    Tensor g1(DType::F16, {n}), g2(DType::F16, {n});
    for (int i = 0; i < n; ++i) {
      storeFromF32(DType::F16, g1.data(), i, mag(gen) * amplitude * scale);
      storeFromF32(DType::F16, g2.data(), i, mag(gen) * amplitude * 0.25f * scale);
    }
    // Scripted injections: rare random ones, a burst every 3001 steps, one at a fixed step.
    const int r = pick(gen);
    bool inject = r < injectPer10k || (step % 3001 >= 3000 - 3) || step == 4242;
    if (inject) {
      ++st.injected;
      Tensor& victim = (r % 2) ? g2 : g1;
      storeFromF32(DType::F16, victim.data(), r % n, (r % 3) ? INFINITY : NAN);
    }
    Tensor scaleT = f32s(scale);
    float found = 0.0f;
    if (twoOptimizers) {
      auto a = runOk("amp.unscale_check", {&g1, &scaleT}, {}, {typeOf(g1), kF32Scalar});
      auto b = runOk("amp.unscale_check", {&g2, &scaleT}, {}, {typeOf(g2), kF32Scalar});
      if (a.size() != 2 || b.size() != 2) return st;
      found = a[1].as<float>()[0] + b[1].as<float>()[0];  // summed: may be 2.0
    } else {
      auto a = runOk("amp.unscale_check", {&g1, &g2, &scaleT}, {},
                     {typeOf(g1), typeOf(g2), kF32Scalar});
      if (a.size() != 3) return st;
      found = a[2].as<float>()[0];
    }
    // Independent check of found_inf: any non-finite element in either tensor.
    bool anyNonFinite = false;
    for (int i = 0; i < n; ++i)
      anyNonFinite |= !std::isfinite(loadAsF32(DType::F16, g1.data(), i)) ||
                      !std::isfinite(loadAsF32(DType::F16, g2.data(), i));
    if (anyNonFinite != (found != 0.0f)) ++st.mismatches;
    if (found != 0.0f) ++st.overflowSteps;

    const float before = scale;
    Tensor trackerT = i32s(tracker), foundT = f32s(found);
    Tensor scaleIn = f32s(scale);
    auto upd = runOk("amp.update_scale", {&scaleIn, &trackerT, &foundT}, attrs, {kF32Scalar, kI32Scalar});
    if (upd.size() != 2) return st;
    scale = upd[0].as<float>()[0];
    tracker = upd[1].as<int32_t>()[0];
    torchUpdateScale(&oracleScale, &oracleTracker, &found, growth, backoff, interval);
    if (bits(scale) != bits(oracleScale) || tracker != oracleTracker) {
      if (st.mismatches++ < 5)
        ADD_FAILURE() << "step " << step << ": kernel (" << scale << ", " << tracker << ") vs oracle ("
                      << oracleScale << ", " << oracleTracker << ")";
    }
    st.growths += scale > before;
    st.backoffs += scale < before;
    ++st.steps;
  }
  return st;
}

TEST(ScalerParity, TenThousandStepsDefaults) {
  RunStats st = scriptedRun(2.0, 0.5, 2000, 65536.0f, 7, 10000, /*twoOptimizers=*/false,
                            /*injectPer10k=*/2, /*amplitudeExp0=*/0);
  EXPECT_EQ(st.steps, 10000);
  EXPECT_EQ(st.mismatches, 0);
  EXPECT_GT(st.injected, 10);
  EXPECT_GT(st.overflowSteps, st.injected);  // natural f16 overflows happen too
  EXPECT_GT(st.growths, 0);
  EXPECT_GT(st.backoffs, 0);
  std::printf("[defaults] steps=%d injected=%d overflow_steps=%d growths=%d backoffs=%d mismatches=%d\n",
              st.steps, st.injected, st.overflowSteps, st.growths, st.backoffs, st.mismatches);
}

TEST(ScalerParity, TenThousandStepsShortIntervalTwoOptimizers) {
  RunStats st = scriptedRun(2.0, 0.25, 50, 1024.0f, 11, 10000, /*twoOptimizers=*/true);
  EXPECT_EQ(st.steps, 10000);
  EXPECT_EQ(st.mismatches, 0);
  EXPECT_GT(st.growths, 10);
  EXPECT_GT(st.backoffs, 10);
  std::printf("[interval 50, 2 optimizers] steps=%d injected=%d overflow_steps=%d growths=%d backoffs=%d mismatches=%d\n",
              st.steps, st.injected, st.overflowSteps, st.growths, st.backoffs, st.mismatches);
}

TEST(ScalerParity, TenThousandStepsOddFactors) {
  // Factors that are not powers of two exercise the f64 product and its single rounding.
  RunStats st = scriptedRun(1.37, 0.61, 7, 3.0f, 13, 10000, /*twoOptimizers=*/false);
  EXPECT_EQ(st.steps, 10000);
  EXPECT_EQ(st.mismatches, 0);
  std::printf("[growth 1.37, backoff 0.61, interval 7] steps=%d injected=%d overflow_steps=%d growths=%d backoffs=%d mismatches=%d\n",
              st.steps, st.injected, st.overflowSteps, st.growths, st.backoffs, st.mismatches);
}

TEST(ScalerParity, ScriptedSequenceNearTheF32Ceiling) {
  // Grows toward 2^127 with interval 1 and must stick there (no inf), then backs off.
  AttrMap a = scalerAttrs(2.0, 0.5, 1);
  float scale = 1.0f, oracle = 1.0f;
  int32_t tracker = 0;
  int oracleTracker = 0;
  for (int step = 0; step < 300; ++step) {
    const float found = (step == 250 || step == 251) ? 1.0f : 0.0f;
    ScaleState s = update({scale, tracker}, found, a);
    scale = s.scale;
    tracker = s.tracker;
    torchUpdateScale(&oracle, &oracleTracker, &found, 2.0, 0.5, 1);
    ASSERT_EQ(bits(scale), bits(oracle)) << step;
    ASSERT_EQ(tracker, oracleTracker) << step;
    ASSERT_TRUE(std::isfinite(scale));
  }
  EXPECT_EQ(scale, std::ldexp(1.0f, 127));
}

}  // namespace
}  // namespace amp::rt::traintest
