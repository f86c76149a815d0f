// The loss-scaling and optimizer kernels of runtime/kernels/cuda/TrainKernels.cu, their own
// source run on the host through BlockEmulation.h over the launches runtime/devices/cuda/MultiTensor.h
// schedules (CudaTrainActions.cpp's calls), against the reference executor (ReferenceTrain.cpp)
// bit for bit: amp_optimizer_scalars then amp_mt_adam_* / amp_mt_sgd_* (plain, decoupled and
// nesterov forms, fused unscale and clip, every gradient type, the "w" kernels that widen before
// unscaling, every weight copy type, skipped steps) against amp.adam_update and amp.sgd_update;
// amp_mt_unscale_check_* against amp.unscale_check; amp_mt_grad_stats_* with a loss scale against
// amp.grad_stats; amp_mt_clip against amp.clip_grads; and the one-thread kernels (update_scale,
// step_counters, lr_schedule) against theirs. TrainKernels.cu is also included by
// TrainKernelTest.cpp, so this file is its own test binary.
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <sstream>

#include "gtest/gtest.h"
#include "runtime/devices/cuda/MultiTensor.h"
#include "test/unit/kernels/KernelTestSupport.h"
#include "test/unit/common/BlockEmulation.h"
#include "runtime/kernels/math/HostDevice.h"
#include "runtime/kernels/cuda/DeviceIO.cuh"
#include "runtime/kernels/cuda/MultiTensorArgs.h"
#include "runtime/kernels/math/TrainMath.h"
#include "runtime/kernels/cuda/TrainArgs.h"
#include "runtime/kernels/cuda/TrainKernels.cu"

namespace amp::rt {
namespace {

using namespace kerneltest;

constexpr float kInf = std::numeric_limits<float>::infinity();

// The limits that cut a list into several launches, a tensor continuing into the next one.
const cuda::MultiTensorLimits kLimits[] = {{}, {AMP_MT_CHUNK, 2, 0}, {AMP_MT_CHUNK, 320, 2}};

// Runs a multi-tensor kernel over every launch of the schedule for `numels`, as listLaunches in
// CudaTrainActions.cpp does: `pointer(d, t)` is pointer d of tensor t, `kernel(list)` the call.
template <int Depth, class PointerOf, class Kernel>
void multiTensorLaunches(const std::vector<int64_t>& numels, cuda::MultiTensorLimits limits, PointerOf pointer,
                         Kernel kernel, emu::Schedule schedule = emu::Schedule::Forward) {
  auto plan = cuda::scheduleMultiTensor(numels, Depth, limits);
  ASSERT_TRUE(plan.ok()) << plan.status();
  for (const cuda::MultiTensorLaunch& launch : plan->launches) {
    AmpTensorList<Depth> list;
    cuda::fillTensorList<Depth>(launch, numels, pointer, list);
    ASSERT_EQ(emu::launch({static_cast<unsigned>(launch.blocks.size()), 1, 1}, {AMP_MT_BLOCK_THREADS, 1, 1},
                          [&] { kernel(list); }, schedule),
              "");
  }
}

Tensor scalarF32(float v) {
  Tensor t(DType::F32, {});
  t.as<float>()[0] = v;
  return t;
}
Tensor scalarI64(int64_t v) {
  Tensor t(DType::I64, {});
  t.as<int64_t>()[0] = v;
  return t;
}
Tensor scalarI32(int32_t v) {
  Tensor t(DType::I32, {});
  t.as<int32_t>()[0] = v;
  return t;
}

// Values that break careless kernels: signed zeros, subnormals, huge and tiny magnitudes.
std::vector<float> awkward(int64_t n, std::mt19937& rng, float lo, float hi) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(rng);
  const float special[] = {0.0f, -0.0f, 1e-40f, -1e-45f, 3e4f, -6e4f, 1e-20f};
  for (size_t i = 0; i < std::size(special) && i * 7 < v.size(); ++i) v[i * 7] = special[i] * (hi > 0 ? 1.0f : -1.0f);
  return v;
}

//===----------------------------------------------------------------------===//
// Adam / AdamW / SGD
//===----------------------------------------------------------------------===//

using AdamKernel = void (*)(AmpTensorList<5>, const AmpStepScalars*);
using SgdKernel = void (*)(AmpTensorList<4>, const AmpStepScalars*);
// By gradient kernel (f32, bf16, f16, bf16w, f16w) and copy type (none, bf16, f16).
#define AMP_TEST_COPIES(kind, g) {amp_mt_##kind##_##g##_none, amp_mt_##kind##_##g##_bf16, amp_mt_##kind##_##g##_f16}
const AdamKernel kAdam[5][3] = {AMP_TEST_COPIES(adam, f32), AMP_TEST_COPIES(adam, bf16), AMP_TEST_COPIES(adam, f16),
                                AMP_TEST_COPIES(adam, bf16w), AMP_TEST_COPIES(adam, f16w)};
const SgdKernel kSgd[5][3] = {AMP_TEST_COPIES(sgd, f32), AMP_TEST_COPIES(sgd, bf16), AMP_TEST_COPIES(sgd, f16),
                              AMP_TEST_COPIES(sgd, bf16w), AMP_TEST_COPIES(sgd, f16w)};
#undef AMP_TEST_COPIES

// One run of updates sharing their attributes and scalars (CudaTrainActions.cpp's `updates`).
struct UpdateRun {
  bool adam = true;
  DType grad = DType::F32;
  std::optional<DType> copy;       // the fused update's weight copy
  bool unscales = false;           // fused: the gradient is unscaled by `scale`
  std::optional<double> maxNorm;   // fused: clipped by `norm`
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weightDecay = 0.0, momentum = 0.0;
  bool decoupled = false, nesterov = false;
  // Scalar operands.
  int64_t step = 1;
  float lr = 1e-3f, foundInf = 0.0f, scale = 1.0f, norm = 1.0f;
};

// One tensor's state: the f32 master, its moments (adam: exp_avg, exp_avg_sq; sgd: the momentum
// buffer in `m`), its stored gradient and the weight copy.
struct ParamState {
  std::vector<float> param, m, v;
  Tensor grad, copy;
};

bool hasBuffer(const UpdateRun& r) { return !r.adam && r.momentum != 0.0; }

ParamState randomState(const UpdateRun& r, int64_t n, std::mt19937& rng) {
  ParamState s;
  s.param = awkward(n, rng, -1.0f, 1.0f);
  if (r.adam || hasBuffer(r)) s.m = awkward(n, rng, -0.1f, 0.1f);
  if (r.adam) s.v = awkward(n, rng, 0.0f, 0.01f);
  // Stored gradients: scaled by the loss scale when the update unscales them.
  std::vector<float> g = awkward(n, rng, -2.0f, 2.0f);
  if (r.unscales)
    for (float& x : g) x *= r.scale;
  s.grad = fromValues(r.grad, {n}, g);
  if (r.copy) {
    s.copy = Tensor(*r.copy, {n});
    for (size_t b = 0; b < s.copy.nbytes(); ++b) s.copy.data()[b] = static_cast<uint8_t>(rng());  // garbage
  }
  return s;
}

// The device: amp_optimizer_scalars on one thread, then the multi-tensor pass, in place.
void deviceUpdate(const UpdateRun& r, std::vector<ParamState>& states, cuda::MultiTensorLimits limits,
                  emu::Schedule schedule) {
  const long long step = r.step;
  const float lr = r.lr, found = r.foundInf, scale = r.scale, norm = r.norm;
  AmpStepScalars scalars;
  std::memset(&scalars, 0xff, sizeof scalars);  // scratch: garbage until the kernel writes it
  AmpOptimizerArgs args = {};
  args.step = r.adam ? &step : nullptr;
  args.lr = &lr;
  args.foundInf = &found;
  args.scale = r.unscales ? &scale : nullptr;
  args.norm = r.maxNorm ? &norm : nullptr;
  args.maxNorm = r.maxNorm.value_or(0.0);
  args.optimizer = r.adam ? 1 : 2;
  args.beta1 = r.beta1;
  args.beta2 = r.beta2;
  args.eps = r.eps;
  args.weightDecay = r.weightDecay;
  args.momentum = r.momentum;
  args.decoupled = r.decoupled;
  args.nesterov = r.nesterov;
  args.out = &scalars;
  ASSERT_EQ(emu::launch({1, 1, 1}, {1, 1, 1}, [&] { amp_optimizer_scalars(args); }), "");
  const bool widened = r.grad != DType::F32 && (r.unscales || r.maxNorm);
  const int gradKernel = widened ? 2 + typeCode(r.grad) : typeCode(r.grad);
  const int copyKernel = r.copy ? typeCode(*r.copy) : 0;
  std::vector<int64_t> numels;
  for (const ParamState& s : states) numels.push_back(static_cast<int64_t>(s.param.size()));
  const int copySlot = r.adam ? 4 : 3;
  auto pointer = [&](int d, int32_t t) -> void* {
    ParamState& s = states[static_cast<size_t>(t)];
    if (d == 0) return s.grad.data();
    if (d == 1) return s.param.data();
    if (d == copySlot) return r.copy ? s.copy.data() : nullptr;
    if (d == 2) return r.adam || hasBuffer(r) ? s.m.data() : nullptr;
    return s.v.data();
  };
  if (r.adam)
    multiTensorLaunches<5>(numels, limits, pointer,
                           [&](const AmpTensorList<5>& l) { kAdam[gradKernel][copyKernel](l, &scalars); }, schedule);
  else
    multiTensorLaunches<4>(numels, limits, pointer,
                           [&](const AmpTensorList<4>& l) { kSgd[gradKernel][copyKernel](l, &scalars); }, schedule);
}

// amp.adam_update / amp.sgd_update on one tensor, as the plan writes it.
std::vector<Tensor> referenceUpdate(const UpdateRun& r, const ParamState& s) {
  const int64_t n = static_cast<int64_t>(s.param.size());
  const Tensor param = fromValues(DType::F32, {n}, s.param), m = fromValues(DType::F32, {n}, s.m),
               v = fromValues(DType::F32, {n}, s.v);
  const Tensor step = scalarI64(r.step), lr = scalarF32(r.lr), found = scalarF32(r.foundInf),
               scale = scalarF32(r.scale), norm = scalarF32(r.norm);
  std::vector<const Tensor*> operands;
  std::vector<TensorType> results = {{DType::F32, {n}}};
  AttrMap attrs;
  attrs.set("weight_decay", r.weightDecay);
  if (r.adam) {
    operands = {&param, &s.grad, &m, &v, &step, &lr, &found};
    results.push_back({DType::F32, {n}});
    results.push_back({DType::F32, {n}});
    attrs.set("beta1", r.beta1);
    attrs.set("beta2", r.beta2);
    attrs.set("eps", r.eps);
    attrs.set("decoupled", r.decoupled);
  } else {
    operands = {&param, &s.grad, &lr, &found};
    if (hasBuffer(r)) {
      operands.push_back(&m);
      results.push_back({DType::F32, {n}});
    }
    attrs.set("momentum", r.momentum);
    attrs.set("nesterov", r.nesterov);
  }
  if (r.unscales) {
    operands.push_back(&scale);
    attrs.set("unscales", true);
  }
  if (r.maxNorm) {
    operands.push_back(&norm);
    attrs.set("max_norm", *r.maxNorm);
  }
  if (r.copy) results.push_back({*r.copy, {n}});
  return reference(r.adam ? "amp.adam_update" : "amp.sgd_update", operands, attrs, results);
}

void checkUpdates(const UpdateRun& r, const std::vector<int64_t>& sizes, cuda::MultiTensorLimits limits,
                  emu::Schedule schedule, std::mt19937& rng) {
  std::vector<ParamState> states;
  for (int64_t n : sizes) states.push_back(randomState(r, n, rng));
  std::vector<std::vector<Tensor>> want;
  for (const ParamState& s : states) want.push_back(referenceUpdate(r, s));
  deviceUpdate(r, states, limits, schedule);
  for (size_t t = 0; t < states.size(); ++t) {
    SCOPED_TRACE(testing::Message() << "tensor " << t << " of " << sizes[t] << " elements");
    const ParamState& s = states[t];
    const int64_t n = sizes[t];
    size_t k = 0;
    expectSameBits(fromValues(DType::F32, {n}, s.param), want[t][k++], "param");
    if (r.adam || hasBuffer(r)) expectSameBits(fromValues(DType::F32, {n}, s.m), want[t][k++], r.adam ? "exp_avg" : "momentum_buffer");
    if (r.adam) expectSameBits(fromValues(DType::F32, {n}, s.v), want[t][k++], "exp_avg_sq");
    if (r.copy) expectSameBits(s.copy, want[t][k++], "weight copy");
  }
}

std::string describe(const UpdateRun& r) {
  std::ostringstream o;
  o << (r.adam ? (r.decoupled ? "adamw" : "adam") : (r.nesterov ? "sgd nesterov" : "sgd")) << " grad " << name(r.grad)
    << " copy " << (r.copy ? name(*r.copy) : "none") << (r.unscales ? " unscales" : "")
    << (r.maxNorm ? " clips" : "") << " wd " << r.weightDecay << " momentum " << r.momentum << " found_inf "
    << r.foundInf << " step " << r.step;
  return o.str();
}

// Sizes across chunk boundaries (AMP_MT_CHUNK elements per block), an empty tensor and odd ones.
const std::vector<int64_t> kSizes = {1, 0, 300, AMP_MT_CHUNK + 3, 7};

// Every gradient type, fused or not, every copy type, applied and skipped steps, over each launch
// split: the states and copies are the reference's bits.
TEST(CudaOptimizerKernel, UpdatesMatchTheReferenceBitForBit) {
  std::mt19937 rng(101);
  int config = 0;
  for (int kind = 0; kind < 4; ++kind)  // adam, adamw, sgd with momentum (nesterov on odd configs), plain sgd
    for (DType grad : {DType::F32, DType::BF16, DType::F16})
      for (int fusion = 0; fusion < 4; ++fusion)  // none, unscale, unscale + clip, clip
        for (std::optional<DType> copy : {std::optional<DType>{}, std::optional<DType>{DType::BF16},
                                          std::optional<DType>{DType::F16}}) {
          UpdateRun r;
          r.adam = kind < 2;
          r.decoupled = kind == 1;
          r.grad = grad;
          r.copy = copy;
          r.unscales = fusion == 1 || fusion == 2;
          if (fusion >= 2) r.maxNorm = 1.0;
          r.scale = 3.0f * 1024.0f;  // inverse not a power of two: the unscaled value rounds
          r.norm = fusion == 3 ? 0.5f : 40.0f;  // below and above max_norm
          r.weightDecay = config % 3 == 0 ? 0.0 : 0.01;
          if (kind == 2) r.momentum = 0.9, r.nesterov = config % 2 == 1;
          r.step = 1 + config % 5 * 1000;
          r.lr = config % 2 ? 3e-3f : 0.1f;
          r.foundInf = config % 7 == 3 ? 1.0f : config % 7 == 5 ? std::nanf("") : 0.0f;
          SCOPED_TRACE(describe(r));
          checkUpdates(r, kSizes, kLimits[config % 3], config % 2 ? emu::Schedule::Reverse : emu::Schedule::Forward,
                       rng);
          if (HasFatalFailure()) return;
          ++config;
        }
}

// A skipped step leaves every state bit as it was, non-finite moments included, and still writes
// the copy (the cast the plan runs after the optimizer).
TEST(CudaOptimizerKernel, SkippedStepsTouchNoStateAndStillWriteTheCopy) {
  std::mt19937 rng(103);
  for (bool adam : {true, false}) {
    UpdateRun r;
    r.adam = adam;
    r.momentum = adam ? 0.0 : 0.9;
    r.grad = DType::BF16;
    r.unscales = true;
    r.scale = 65536.0f;
    r.copy = DType::F16;
    r.foundInf = 1.0f;
    SCOPED_TRACE(describe(r));
    std::vector<ParamState> states = {randomState(r, 1000, rng), randomState(r, AMP_MT_CHUNK + 1, rng)};
    states[0].param[3] = kInf;
    states[0].m[4] = std::nanf("");
    const std::vector<ParamState> before = states;
    deviceUpdate(r, states, {}, emu::Schedule::Forward);
    for (size_t t = 0; t < states.size(); ++t) {
      EXPECT_EQ(std::memcmp(states[t].param.data(), before[t].param.data(), 4 * before[t].param.size()), 0);
      EXPECT_EQ(std::memcmp(states[t].m.data(), before[t].m.data(), 4 * before[t].m.size()), 0);
      const Tensor want = fromValues(DType::F16, {static_cast<int64_t>(before[t].param.size())}, before[t].param);
      EXPECT_TRUE(states[t].copy.bitwiseEquals(want)) << "tensor " << t;
    }
  }
}

//===----------------------------------------------------------------------===//
// unscale_check, grad_stats, clip
//===----------------------------------------------------------------------===//

using UnscaleKernel = void (*)(AmpTensorList<2>, const float*, float*);
const UnscaleKernel kUnscale[3] = {amp_mt_unscale_check_f32, amp_mt_unscale_check_bf16, amp_mt_unscale_check_f16};

// One launch sequence per gradient type, found_inf zeroed first (a fill node): the unscaled
// gradients rounded to their type, and found_inf, against amp.unscale_check.
TEST(CudaOptimizerKernel, UnscaleCheckMatchesTheReferenceBitForBit) {
  std::mt19937 rng(107);
  int config = 0;
  for (DType t : {DType::F32, DType::BF16, DType::F16})
    for (bool hasScale : {true, false})
      for (int bad = 0; bad < 4; ++bad) {  // none, inf, -inf, NaN in the second tensor
        SCOPED_TRACE(testing::Message() << name(t) << (hasScale ? " scale" : " no scale") << " bad " << bad);
        std::vector<Tensor> grads;
        for (int64_t n : kSizes) {
          std::vector<float> g = awkward(n, rng, -3000.0f, 3000.0f);
          if (n > 5 && config % 2) g[5] = 7e4f;  // an f16 overflow: inf once stored as f16
          grads.push_back(fromValues(t, {n}, g));
        }
        const float badValue[] = {0.0f, kInf, -kInf, std::nanf("")};
        if (bad) storeFromF32(t, grads[3].data(), AMP_MT_CHUNK + 1, badValue[bad]);
        const Tensor scale = scalarF32(1000.0f);
        std::vector<const Tensor*> operands;
        std::vector<TensorType> types;
        for (const Tensor& g : grads) operands.push_back(&g), types.push_back({t, g.shape()});
        if (hasScale) operands.push_back(&scale);
        types.push_back({DType::F32, {}});
        const std::vector<Tensor> want = reference("amp.unscale_check", operands, AttrMap{}, types);
        std::vector<Tensor> out;
        std::vector<int64_t> numels;
        for (const Tensor& g : grads) out.emplace_back(t, g.shape()), numels.push_back(g.numel());
        float found = 0.0f;
        const float scaleValue = 1000.0f;
        multiTensorLaunches<2>(
            numels, kLimits[config % 3],
            [&](int d, int32_t i) -> void* { return d == 0 ? grads[i].data() : out[i].data(); },
            [&](const AmpTensorList<2>& l) { kUnscale[typeCode(t)](l, hasScale ? &scaleValue : nullptr, &found); },
            config % 2 ? emu::Schedule::Reverse : emu::Schedule::Forward);
        for (size_t i = 0; i < grads.size(); ++i) expectSameBits(out[i], want[i], "unscaled");
        EXPECT_EQ(floatBits(found), floatBits(want.back().as<float>()[0]));
        ++config;
      }
}

using GradStatsKernel = void (*)(AmpTensorList<1>, const float*, float*, float*);
// By stored type, widened before unscaling as the plan does (f32, bf16w, f16w).
const GradStatsKernel kGradStats[3] = {amp_mt_grad_stats_f32, amp_mt_grad_stats_bf16w, amp_mt_grad_stats_f16w};

// amp.grad_stats with a loss scale: found_inf, and the norm from the unscaled values through the
// per-block tree and amp_global_norm. Stored values k * 512 unscaled by 512 are integers whose
// squares sum exactly, so the tree and the reference's sequential sum agree bit for bit.
TEST(CudaOptimizerKernel, GradStatsWithAScaleMatchTheReference) {
  std::mt19937 rng(109);
  std::uniform_int_distribution<int> value(-3, 3);
  int config = 0;
  for (DType t : {DType::F32, DType::BF16, DType::F16})
    for (int bad = 0; bad < 2; ++bad) {
      SCOPED_TRACE(testing::Message() << name(t) << (bad ? " with inf" : ""));
      std::vector<Tensor> grads;
      std::vector<int64_t> numels;
      for (int64_t n : kSizes) {
        std::vector<float> g(static_cast<size_t>(n));
        for (float& x : g) x = static_cast<float>(value(rng)) * 512.0f;
        grads.push_back(fromValues(t, {n}, g));
        numels.push_back(n);
      }
      if (bad) storeFromF32(t, grads[2].data(), 299, kInf);
      const Tensor scale = scalarF32(512.0f);
      std::vector<const Tensor*> operands;
      for (const Tensor& g : grads) operands.push_back(&g);
      operands.push_back(&scale);
      const std::vector<Tensor> want = reference("amp.grad_stats", operands, AttrMap{{"unscales", true}},
                                                 {{DType::F32, {}}, {DType::F32, {}}});
      auto plan = cuda::scheduleMultiTensor(numels, 1, kLimits[config % 3]);
      ASSERT_TRUE(plan.ok());
      std::vector<float> partials(static_cast<size_t>(plan->slots), std::nanf(""));
      float found = 0.0f, norm = std::nanf("");
      const float scaleValue = 512.0f;
      multiTensorLaunches<1>(
          numels, kLimits[config % 3], [&](int, int32_t i) -> void* { return grads[i].data(); },
          [&](const AmpTensorList<1>& l) { kGradStats[typeCode(t)](l, &scaleValue, &found, partials.data()); });
      std::vector<int> slotRange;
      for (size_t i = 0; i < grads.size(); ++i)
        slotRange.push_back(plan->tensorFirstSlot[i]), slotRange.push_back(plan->tensorFirstSlot[i + 1]);
      std::vector<float> norms(grads.size());
      ASSERT_EQ(emu::launch({1, 1, 1}, {256, 1, 1},
                            [&] {
                              amp_global_norm(partials.data(), slotRange.data(), static_cast<int>(grads.size()),
                                              norms.data(), &norm);
                            }),
                "");
      EXPECT_EQ(floatBits(found), floatBits(want[0].as<float>()[0]));
      EXPECT_EQ(floatBits(norm), floatBits(want[1].as<float>()[0])) << norm << " vs " << want[1].as<float>()[0];
      ++config;
    }
}

TEST(CudaOptimizerKernel, ClipMatchesTheReferenceBitForBit) {
  std::mt19937 rng(113);
  for (float normValue : {0.3f, 1.0f, 7.5f, 1e30f, 0.0f})
    for (double maxNorm : {1.0, 0.1}) {
      SCOPED_TRACE(testing::Message() << "norm " << normValue << " max_norm " << maxNorm);
      std::vector<Tensor> grads;
      std::vector<int64_t> numels;
      for (int64_t n : kSizes) grads.push_back(fromValues(DType::F32, {n}, awkward(n, rng, -3.0f, 3.0f))), numels.push_back(n);
      const Tensor norm = scalarF32(normValue);
      std::vector<const Tensor*> operands;
      std::vector<TensorType> types;
      for (const Tensor& g : grads) operands.push_back(&g), types.push_back({DType::F32, g.shape()});
      operands.push_back(&norm);
      const std::vector<Tensor> want = reference("amp.clip_grads", operands, AttrMap{{"max_norm", maxNorm}}, types);
      std::vector<Tensor> out;
      for (const Tensor& g : grads) out.emplace_back(DType::F32, g.shape());
      multiTensorLaunches<2>(
          numels, kLimits[1], [&](int d, int32_t i) -> void* { return d == 0 ? grads[i].data() : out[i].data(); },
          [&](const AmpTensorList<2>& l) { amp_mt_clip(l, &normValue, maxNorm); }, emu::Schedule::Reverse);
      for (size_t i = 0; i < grads.size(); ++i) expectSameBits(out[i], want[i], "clipped");
    }
}

//===----------------------------------------------------------------------===//
// The one-thread kernels
//===----------------------------------------------------------------------===//

TEST(CudaOptimizerKernel, ScalerCountersAndScheduleMatchTheReference) {
  for (float scale : {65536.0f, 3e38f, 1.0f, 1e-30f})
    for (int32_t tracker : {0, 1, 1999})
      for (float found : {0.0f, 1.0f, std::nanf("")}) {
        SCOPED_TRACE(testing::Message() << "scale " << scale << " tracker " << tracker << " found " << found);
        const Tensor s = scalarF32(scale), tr = scalarI32(tracker), f = scalarF32(found);
        const AttrMap attrs = {{"growth_factor", 2.0}, {"backoff_factor", 0.5}, {"growth_interval", int64_t{2000}}};
        const std::vector<Tensor> want = reference("amp.update_scale", {&s, &tr, &f}, attrs,
                                                   {{DType::F32, {}}, {DType::I32, {}}});
        float scaleOut = std::nanf("");
        int trackerOut = -7;
        ASSERT_EQ(emu::launch({1, 1, 1}, {1, 1, 1},
                              [&] { amp_update_scale_kernel(&scale, &tracker, &found, &scaleOut, &trackerOut, 2.0, 0.5, 2000); }),
                  "");
        EXPECT_EQ(floatBits(scaleOut), floatBits(want[0].as<float>()[0]));
        EXPECT_EQ(trackerOut, want[1].as<int32_t>()[0]);
        const long long step = 41, skipped = 3;
        const Tensor st = scalarI64(step), sk = scalarI64(skipped);
        const std::vector<Tensor> counters =
            reference("amp.step_counters", {&st, &sk, &f}, AttrMap{}, {{DType::I64, {}}, {DType::I64, {}}});
        long long stepOut = -1, skippedOut = -1;
        ASSERT_EQ(emu::launch({1, 1, 1}, {1, 1, 1},
                              [&] { amp_step_counters_kernel(&step, &skipped, &found, &stepOut, &skippedOut); }),
                  "");
        EXPECT_EQ(stepOut, counters[0].as<int64_t>()[0]);
        EXPECT_EQ(skippedOut, counters[1].as<int64_t>()[0]);
      }
  for (bool cosine : {false, true})
    for (long long step : {0LL, 1LL, 5LL, 10LL, 11LL, 57LL, 100LL, 1000LL}) {
      SCOPED_TRACE(testing::Message() << (cosine ? "cosine" : "constant") << " step " << step);
      const Tensor st = scalarI64(step);
      AttrMap attrs = {{"kind", std::string(cosine ? "cosine" : "constant")}, {"base_lr", 3e-3}, {"warmup_steps", int64_t{10}}};
      if (cosine) attrs.set("total_steps", int64_t{100}), attrs.set("min_lr", 1e-5);
      const Tensor want = reference("amp.lr_schedule", {&st}, attrs, {{DType::F32, {}}})[0];
      float lr = std::nanf("");
      ASSERT_EQ(emu::launch({1, 1, 1}, {1, 1, 1},
                            [&] { amp_lr_schedule_kernel(&step, cosine, 3e-3, 10, cosine ? 100 : 0, cosine ? 1e-5 : 0.0, &lr); }),
                "");
      EXPECT_EQ(floatBits(lr), floatBits(want.as<float>()[0]));
    }
}

}  // namespace
}  // namespace amp::rt
