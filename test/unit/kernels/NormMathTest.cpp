// The CUDA device's softmax and normalisation kernels (runtime/kernels/cuda/NormKernels.cu,
// arithmetic in NormMath.h), their own source run on the host through BlockEmulation.h with
// -ffp-contract=off, on grids of at most 3 blocks (each block takes several slices, groups or
// channels and reuses its shared arrays) in both schedules: amp_softmax / amp_log_softmax,
// amp_layer_norm, amp_rms_norm, their _grad kernels with the stats scratch handed to the _affine
// column pass, amp_batch_norm and amp_batch_norm_grad, against the reference executor's
// amp.softmax, amp.log_softmax, amp.layer_norm, amp.layer_norm_grad, amp.rms_norm,
// amp.rms_norm_grad, amp.batch_norm and amp.batch_norm_grad: every result bit for bit, in f32,
// bf16 and f16, over several shapes, axes and normalised dims, rows of length 1, large and tiny
// magnitudes, infinities and NaN. On the GPU the same text runs through NVRTC with --fmad=false;
// only the f64 exp and log there come from CUDA's math library (docs/kernels.md), and the bits of
// a NaN result are the GPU's own.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <functional>
#include <random>

#include "gtest/gtest.h"
#include "runtime/reference/ReferenceKernels.h"
#include "runtime/numerics/Convert.h"
#include "test/unit/common/BlockEmulation.h"
#include "runtime/kernels/math/HostDevice.h"
#include "runtime/kernels/math/SumOrder.h"
#include "runtime/kernels/cuda/DeviceIO.cuh"
#include "runtime/kernels/math/RowMath.h"
#include "runtime/kernels/cuda/RowKernels.cuh"
#include "runtime/kernels/math/NormMath.h"
#include "runtime/kernels/cuda/NormKernels.cu"

namespace amp::rt {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
const DType kTypes[] = {DType::F32, DType::BF16, DType::F16};

const char* name(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::BF16: return "bf16";
    case DType::F16: return "f16";
    default: return "?";
  }
}

std::vector<float> widenAll(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = loadAsF32(t.dtype(), t.data(), i);
  return v;
}

Tensor fromValues(DType t, const Shape& shape, const std::vector<float>& values) {
  Tensor out(t, shape);
  for (size_t i = 0; i < values.size(); ++i) storeFromF32(t, out.data(), static_cast<int64_t>(i), values[i]);
  return out;
}

uint32_t elementBits(const Tensor& t, int64_t i) {
  uint32_t u = 0;
  const size_t size = t.dtype() == DType::F32 ? 4 : 2;
  std::memcpy(&u, t.data() + i * size, size);
  return u;
}

// Every bit of every element, except that a NaN matches any NaN: NaN payloads, sign included, are
// outside the numeric contract (docs/numerics.md). Which of two NaN operands an f32 add returns
// depends on the compiler's operand order, and the GPU makes canonical NaNs.
void expectSameBits(const Tensor& device, const Tensor& ref, const char* what) {
  ASSERT_EQ(device.dtype(), ref.dtype()) << what;
  ASSERT_EQ(device.shape(), ref.shape()) << what;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    const float got = loadAsF32(device.dtype(), device.data(), i), want = loadAsF32(ref.dtype(), ref.data(), i);
    if (std::isnan(got) && std::isnan(want)) continue;
    ASSERT_EQ(elementBits(device, i), elementBits(ref, i))
        << what << "[" << i << "]: " << got << " vs reference " << want;
  }
}

std::vector<Tensor> reference(std::string_view op, const std::vector<const Tensor*>& operands, const AttrMap& attrs,
                              const std::vector<TensorType>& types) {
  auto out = evalReferenceOp(op, operands, attrs, types, EvalContext{});
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok() || out->size() != types.size()) return std::vector<Tensor>(types.size());
  return *std::move(out);
}

// ---------------------------------------------------------------------------------------------
// The kernels, their own source through BlockEmulation.h

// Units (slices, groups, channels, column blocks) over a grid of at most 3 blocks of 256 threads,
// so a block takes several units and reuses its shared arrays; odd launches run in reverse.
int launches = 0;
void launchUnits(int64_t units, const std::function<void()>& kernel) {
  const unsigned blocks = static_cast<unsigned>(std::clamp<int64_t>(units, 1, 3));
  ASSERT_EQ(emu::launch({blocks, 1, 1}, {AMP_NRM_BLOCK, 1, 1}, kernel,
                        launches++ % 2 ? emu::Schedule::Reverse : emu::Schedule::Forward),
            "");
}

int typeCode(DType t) { return t == DType::BF16 ? 1 : t == DType::F16 ? 2 : 0; }
const void* dataOrNull(const Tensor* t) { return t ? t->data() : nullptr; }

using SoftmaxKernel = void (*)(const void*, void*, long long, long long, long long);
const SoftmaxKernel kSoftmax[2][3] = {{amp_softmax_f32, amp_softmax_bf16, amp_softmax_f16},
                                      {amp_log_softmax_f32, amp_log_softmax_bf16, amp_log_softmax_f16}};
using LayerNormKernel = void (*)(const void*, const void*, const void*, void*, long long, long long, double);
const LayerNormKernel kLayerNorm[3] = {amp_layer_norm_f32, amp_layer_norm_bf16, amp_layer_norm_f16};
using RmsNormKernel = void (*)(const void*, const void*, void*, long long, long long, double);
const RmsNormKernel kRmsNorm[3] = {amp_rms_norm_f32, amp_rms_norm_bf16, amp_rms_norm_f16};
using NormGradKernel = void (*)(const void*, const void*, const void*, void*, float*, long long, long long, double);
const NormGradKernel kLayerNormGrad[3] = {amp_layer_norm_grad_f32, amp_layer_norm_grad_bf16, amp_layer_norm_grad_f16};
const NormGradKernel kRmsNormGrad[3] = {amp_rms_norm_grad_f32, amp_rms_norm_grad_bf16, amp_rms_norm_grad_f16};
using LayerAffineKernel = void (*)(const void*, const void*, const float*, void*, void*, long long, long long);
const LayerAffineKernel kLayerAffine[3] = {amp_layer_norm_grad_affine_f32, amp_layer_norm_grad_affine_bf16,
                                           amp_layer_norm_grad_affine_f16};
using RmsAffineKernel = void (*)(const void*, const void*, const float*, void*, long long, long long);
const RmsAffineKernel kRmsAffine[3] = {amp_rms_norm_grad_affine_f32, amp_rms_norm_grad_affine_bf16,
                                       amp_rms_norm_grad_affine_f16};
using BatchNormKernel = void (*)(const void*, const float*, const float*, const float*, const float*, void*, float*,
                                 float*, long long, long long, long long, double, double, int);
const BatchNormKernel kBatchNorm[3] = {amp_batch_norm_f32, amp_batch_norm_bf16, amp_batch_norm_f16};
using BatchNormGradKernel = void (*)(const void*, const void*, const float*, const float*, const float*, void*, float*,
                                     float*, long long, long long, long long, double, int);
const BatchNormGradKernel kBatchNormGrad[3] = {amp_batch_norm_grad_f32, amp_batch_norm_grad_bf16,
                                               amp_batch_norm_grad_f16};

struct SoftmaxLayout {
  int64_t outer = 1, len = 1, inner = 1;
};

SoftmaxLayout softmaxLayout(const Shape& shape, int64_t axis) {
  SoftmaxLayout l;
  for (int64_t d = 0; d < axis; ++d) l.outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d) l.inner *= shape[d];
  l.len = shape[axis];
  return l;
}

// amp_softmax_<T> / amp_log_softmax_<T>: units = outer (contiguous) or outer * ceil(inner / 256).
Tensor deviceSoftmax(const Tensor& input, int64_t axis, bool log) {
  const SoftmaxLayout l = softmaxLayout(input.shape(), axis);
  Tensor y(input.dtype(), input.shape());
  const int64_t units = l.inner == 1 ? l.outer : l.outer * ((l.inner + AMP_NRM_BLOCK - 1) / AMP_NRM_BLOCK);
  launchUnits(units, [&] { kSoftmax[log][typeCode(input.dtype())](input.data(), y.data(), l.outer, l.len, l.inner); });
  return y;
}

struct Groups {
  int64_t groups = 0, n = 0;
  Shape trailing;
};

Groups groupsOf(const Shape& shape, int64_t ndim) {
  Groups g;
  g.trailing.assign(shape.end() - ndim, shape.end());
  g.n = numElements(g.trailing);
  g.groups = g.n ? numElements(shape) / g.n : 0;
  return g;
}

// Scratch as the device's: garbage until the row pass writes it.
std::vector<float> scratch(int64_t floats) { return std::vector<float>(static_cast<size_t>(floats), std::nanf("7")); }

// amp_layer_norm_<T>: units = groups.
Tensor deviceLayerNorm(const Tensor& input, const Tensor* weight, const Tensor* bias, int64_t ndim, double eps) {
  const Groups s = groupsOf(input.shape(), ndim);
  Tensor y(input.dtype(), input.shape());
  launchUnits(s.groups, [&] {
    kLayerNorm[typeCode(input.dtype())](input.data(), dataOrNull(weight), dataOrNull(bias), y.data(), s.groups, s.n, eps);
  });
  return y;
}

// amp_rms_norm_<T>: units = groups.
Tensor deviceRmsNorm(const Tensor& input, const Tensor* weight, int64_t ndim, double eps) {
  const Groups s = groupsOf(input.shape(), ndim);
  Tensor y(input.dtype(), input.shape());
  launchUnits(s.groups, [&] {
    kRmsNorm[typeCode(input.dtype())](input.data(), dataOrNull(weight), y.data(), s.groups, s.n, eps);
  });
  return y;
}

// amp_layer_norm_grad_<T> (dx and the stats scratch; units = groups), then
// amp_layer_norm_grad_affine_<T> (units = ceil(n / 256), launched even without groups).
std::vector<Tensor> deviceLayerNormGrad(const Tensor& input, const Tensor* weight, const Tensor& grad, int64_t ndim,
                                        double eps) {
  const Groups s = groupsOf(input.shape(), ndim);
  const DType dt = input.dtype();
  Tensor dx(dt, input.shape()), dw(dt, s.trailing), db(dt, s.trailing);
  std::vector<float> stats = scratch(2 * s.groups);
  if (s.n > 0) {
    if (s.groups > 0)
      launchUnits(s.groups, [&] {
        kLayerNormGrad[typeCode(dt)](input.data(), dataOrNull(weight), grad.data(), dx.data(), stats.data(), s.groups,
                                     s.n, eps);
      });
    launchUnits((s.n + AMP_NRM_BLOCK - 1) / AMP_NRM_BLOCK, [&] {
      kLayerAffine[typeCode(dt)](input.data(), grad.data(), stats.data(), dw.data(), db.data(), s.groups, s.n);
    });
  }
  std::vector<Tensor> out;
  out.push_back(std::move(dx));
  out.push_back(std::move(dw));
  out.push_back(std::move(db));
  return out;
}

// amp_rms_norm_grad_<T>, then amp_rms_norm_grad_affine_<T>, launched as the layer_norm ones.
std::vector<Tensor> deviceRmsNormGrad(const Tensor& input, const Tensor* weight, const Tensor& grad, int64_t ndim,
                                      double eps) {
  const Groups s = groupsOf(input.shape(), ndim);
  const DType dt = input.dtype();
  Tensor dx(dt, input.shape()), dw(dt, s.trailing);
  std::vector<float> stats = scratch(s.groups);
  if (s.n > 0) {
    if (s.groups > 0)
      launchUnits(s.groups, [&] {
        kRmsNormGrad[typeCode(dt)](input.data(), dataOrNull(weight), grad.data(), dx.data(), stats.data(), s.groups,
                                   s.n, eps);
      });
    launchUnits((s.n + AMP_NRM_BLOCK - 1) / AMP_NRM_BLOCK, [&] {
      kRmsAffine[typeCode(dt)](input.data(), grad.data(), stats.data(), dw.data(), s.groups, s.n);
    });
  }
  std::vector<Tensor> out;
  out.push_back(std::move(dx));
  out.push_back(std::move(dw));
  return out;
}

// batch_norm's layout: channel c's element j is x[amp_bn_index(j, c, C, S)].
struct Channels {
  int64_t n = 0, c = 0, s = 1;
  int64_t count() const { return n * s; }
};

Channels channelsOf(const Shape& shape) {
  Channels l{shape[0], shape[1], 1};
  for (size_t d = 2; d < shape.size(); ++d) l.s *= shape[d];
  return l;
}

// amp_batch_norm_<T>: (y, new_running_mean, new_running_var); units = channels.
std::vector<Tensor> deviceBatchNorm(const Tensor& input, const Tensor& scale, const Tensor& bias, const Tensor& runMean,
                                    const Tensor& runVar, double eps, double momentum, bool training) {
  const Channels l = channelsOf(input.shape());
  Tensor y(input.dtype(), input.shape()), newMean(DType::F32, {l.c}), newVar(DType::F32, {l.c});
  if (l.c > 0)
    launchUnits(l.c, [&] {
      kBatchNorm[typeCode(input.dtype())](input.data(), scale.as<float>(), bias.as<float>(), runMean.as<float>(),
                                          runVar.as<float>(), y.data(), newMean.as<float>(), newVar.as<float>(), l.n,
                                          l.c, l.s, eps, momentum, training);
    });
  std::vector<Tensor> out;
  out.push_back(std::move(y));
  out.push_back(std::move(newMean));
  out.push_back(std::move(newVar));
  return out;
}

// amp_batch_norm_grad_<T>: (dx, dscale, dbias); units = channels.
std::vector<Tensor> deviceBatchNormGrad(const Tensor& input, const Tensor& grad, const Tensor& scale,
                                        const Tensor& runMean, const Tensor& runVar, double eps, bool training) {
  const Channels l = channelsOf(input.shape());
  Tensor dx(input.dtype(), input.shape()), dscale(DType::F32, {l.c}), dbias(DType::F32, {l.c});
  if (l.c > 0)
    launchUnits(l.c, [&] {
      kBatchNormGrad[typeCode(input.dtype())](input.data(), grad.data(), scale.as<float>(), runMean.as<float>(),
                                              runVar.as<float>(), dx.data(), dscale.as<float>(), dbias.as<float>(), l.n,
                                              l.c, l.s, eps, training);
    });
  std::vector<Tensor> out;
  out.push_back(std::move(dx));
  out.push_back(std::move(dscale));
  out.push_back(std::move(dbias));
  return out;
}

// ---------------------------------------------------------------------------------------------
// Data

// The largest scale a type holds well: f16 saturates at 65504.
float bigScale(DType t) { return t == DType::F16 ? 3.0e4f : 1.0e18f; }

// Uniform values in [-1, 1] times a scale that changes every `period` elements (so every slice or
// group of a test meets several), some shifted far from zero (the two-pass variance matters
// there); with `nonFinite`, about one element in 40 is -inf and a rare one +inf or NaN.
std::vector<float> randomValues(DType t, int64_t count, int64_t period, bool nonFinite, std::mt19937& rng) {
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  const float scales[] = {4.0f, 1e-3f, 300.0f, bigScale(t), 1.0f};
  const float shifts[] = {0.0f, 0.0f, 0.0f, 0.0f, 1000.0f};
  std::vector<float> v(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    const int64_t kind = (i / std::max<int64_t>(period, 1)) % 5;
    v[i] = unit(rng) * scales[kind] + shifts[kind];
    if (nonFinite) {
      const uint32_t r = rng() % 400;
      if (r < 10) v[i] = -kInf;
      else if (r == 10) v[i] = kInf;
      else if (r == 11) v[i] = std::nanf("");
    }
  }
  return v;
}

struct NormCase {
  Shape shape;
  int64_t ndim;
};

const NormCase kNormCases[] = {
    {{4, 8}, 1},     {{3, 5, 7}, 2},   {{2, 300}, 1},  {{6, 1}, 1},   {{3, 1000}, 1}, {{1, 3, 1}, 3},
    {{200, 3}, 1},   {{2, 2, 257}, 1}, {{9}, 1},       {{2, 3, 4}, 3}, {{0, 8}, 1},   {{3, 0}, 1},
};
const double kEps[] = {1e-5, 1e-12, 0.0};

// ---------------------------------------------------------------------------------------------
// Tests

TEST(CudaNormMath, SoftmaxMatchesTheReferenceBitForBit) {
  struct Case {
    Shape shape;
    int64_t axis;
  };
  const Case cases[] = {
      {{7, 1}, 1},      {{1, 5}, 0},      {{3, 7}, 1},       {{3, 7}, 0},      {{4, 300}, 1},
      {{2, 1000}, 1},   {{6, 5, 3}, 0},   {{6, 5, 3}, 1},    {{6, 5, 3}, 2},   {{2, 257, 4}, 1},
      {{2, 3, 300}, 2}, {{300, 2}, 0},    {{3, 600, 300}, 1}, {{9}, 0},        {{0, 4}, 1},
      {{4, 0}, 1},      {{4, 0, 3}, 1},
  };
  std::mt19937 rng(17);
  for (DType t : kTypes)
    for (const Case& c : cases)
      for (bool nonFinite : {false, true})
        for (const char* op : {"amp.softmax", "amp.log_softmax"}) {
          SCOPED_TRACE(testing::Message() << op << " " << name(t) << " " << shapeToString(c.shape) << " axis "
                                          << c.axis << (nonFinite ? " with inf/NaN" : ""));
          const int64_t count = numElements(c.shape);
          const Tensor x = fromValues(t, c.shape, randomValues(t, count, 97, nonFinite, rng));
          const AttrMap attrs{{"axis", c.axis}};
          const std::vector<Tensor> ref = reference(op, {&x}, attrs, {{t, c.shape}});
          expectSameBits(deviceSoftmax(x, c.axis, std::string_view(op) == "amp.log_softmax"), ref[0], "y");
        }
}

// Slices whose result a random batch rarely shows, each contiguous (block path) and strided.
std::vector<std::vector<float>> awkwardSlices(int64_t len, std::mt19937& rng) {
  std::uniform_real_distribution<float> value(-8.0f, 8.0f);
  auto random = [&](float scale) {
    std::vector<float> r(static_cast<size_t>(len));
    for (float& v : r) v = value(rng) * scale;
    return r;
  };
  std::vector<std::vector<float>> slices = {random(1.0f), random(10.0f), random(1e-3f)};
  slices.push_back(std::vector<float>(len, 80.0f));  // all equal, large
  slices.push_back(std::vector<float>(len, -80.0f));
  std::vector<float> r = random(1.0f);
  for (float& v : r) v = -std::fabs(v) - 1.0f;
  r[0] = -0.0f;  // the max is a zero of either sign, the first one kept
  if (len > 1) r[len - 1] = 0.0f;
  slices.push_back(r);
  std::swap(r[0], r[len - 1]);
  slices.push_back(r);
  if (len > 300) {  // the first zero in a later thread of the block's tree than the second
    r[0] = r[len - 1] = -1.0f;
    r[300] = -0.0f;
    r[100] = 0.0f;
    slices.push_back(r);
  }
  r = std::vector<float>(len, -kInf);  // one finite element left
  r[len / 2] = 1.5f;
  slices.push_back(r);
  slices.push_back(std::vector<float>(len, -kInf));  // max -inf: (-inf) - (-inf) = NaN
  r = random(1.0f);
  r[len / 3] = std::nanf("");
  slices.push_back(r);
  r = random(1.0f);
  r[len - 1] = kInf;
  slices.push_back(r);
  slices.push_back(random(1e6f));  // f32 only: the others round these to inf
  r = random(1.0f);
  r[0] = 3e38f;
  if (len > 1) r[1] = -3e38f;  // x - max overflows to -inf
  slices.push_back(r);
  return slices;
}

TEST(CudaNormMath, SoftmaxOfAwkwardSlicesMatchesTheReference) {
  std::mt19937 rng(23);
  for (DType t : kTypes)
    for (int64_t len : {int64_t{1}, int64_t{2}, int64_t{10}, int64_t{1000}}) {
      const std::vector<std::vector<float>> slices = awkwardSlices(len, rng);
      for (size_t k = 0; k < slices.size(); ++k)
        for (const char* op : {"amp.softmax", "amp.log_softmax"}) {
          SCOPED_TRACE(testing::Message() << op << " " << name(t) << " len " << len << " slice " << k);
          const bool log = std::string_view(op) == "amp.log_softmax";
          const Tensor row = fromValues(t, {1, len}, slices[k]);
          expectSameBits(deviceSoftmax(row, 1, log), reference(op, {&row}, {{"axis", int64_t{1}}}, {{t, {1, len}}})[0],
                         "contiguous");
          std::vector<float> columns;  // the slice three times side by side: inner = 3
          for (float v : slices[k]) columns.insert(columns.end(), {v, v, v});
          const Tensor column = fromValues(t, {len, 3}, columns);
          expectSameBits(deviceSoftmax(column, 0, log),
                         reference(op, {&column}, {{"axis", int64_t{0}}}, {{t, {len, 3}}})[0], "strided");
        }
    }
}

// Many short slices, one tensor each: every slice shows its f32(exp) and f32(log(s)) to the bit.
TEST(CudaNormMath, ManySmallSlicesMatchTheReference) {
  std::mt19937 rng(53);
  std::uniform_int_distribution<int64_t> lengths(1, 16);
  std::uniform_real_distribution<float> value(-6.0f, 6.0f);
  for (int trial = 0; trial < 20000; ++trial) {
    const int64_t len = lengths(rng);
    std::vector<float> x(static_cast<size_t>(len));
    for (float& v : x) v = value(rng);
    const char* op = trial % 2 ? "amp.log_softmax" : "amp.softmax";
    SCOPED_TRACE(testing::Message() << "trial " << trial << " " << op << " len " << len);
    const Tensor row = fromValues(DType::F32, {1, len}, x);
    const Tensor ref = reference(op, {&row}, {{"axis", int64_t{1}}}, {{DType::F32, {1, len}}})[0];
    expectSameBits(deviceSoftmax(row, 1, trial % 2), ref, "y");
    if (HasFatalFailure()) return;
  }
}

TEST(CudaNormMath, LayerNormMatchesTheReferenceBitForBit) {
  std::mt19937 rng(29);
  int round = 0;
  for (DType t : kTypes)
    for (const NormCase& c : kNormCases)
      for (bool hasWeight : {false, true})
        for (bool hasBias : {false, true})
          for (bool nonFinite : {false, true}) {
            const double eps = kEps[round++ % std::size(kEps)];
            SCOPED_TRACE(testing::Message() << name(t) << " " << shapeToString(c.shape) << " ndim " << c.ndim << " eps "
                                            << eps << " weight " << hasWeight << " bias " << hasBias
                                            << (nonFinite ? " with inf/NaN" : ""));
            const Groups s = groupsOf(c.shape, c.ndim);
            const Tensor x = fromValues(t, c.shape, randomValues(t, numElements(c.shape), s.n, nonFinite, rng));
            const Tensor w = fromValues(t, s.trailing, randomValues(t, s.n, 3, false, rng));
            const Tensor b = fromValues(t, s.trailing, randomValues(t, s.n, 5, false, rng));
            std::vector<const Tensor*> operands = {&x};
            if (hasWeight) operands.push_back(&w);
            if (hasBias) operands.push_back(&b);
            const AttrMap attrs{
                {"normalized_ndim", c.ndim}, {"eps", eps}, {"has_weight", hasWeight}, {"has_bias", hasBias}};
            const std::vector<Tensor> ref = reference("amp.layer_norm", operands, attrs, {{t, c.shape}});
            expectSameBits(deviceLayerNorm(x, hasWeight ? &w : nullptr, hasBias ? &b : nullptr, c.ndim, eps), ref[0],
                           "y");
          }
}

TEST(CudaNormMath, RmsNormMatchesTheReferenceBitForBit) {
  std::mt19937 rng(31);
  int round = 0;
  for (DType t : kTypes)
    for (const NormCase& c : kNormCases)
      for (bool hasWeight : {false, true})
        for (bool nonFinite : {false, true}) {
          const double eps = kEps[round++ % std::size(kEps)];
          SCOPED_TRACE(testing::Message() << name(t) << " " << shapeToString(c.shape) << " ndim " << c.ndim << " eps "
                                          << eps << " weight " << hasWeight << (nonFinite ? " with inf/NaN" : ""));
          const Groups s = groupsOf(c.shape, c.ndim);
          const Tensor x = fromValues(t, c.shape, randomValues(t, numElements(c.shape), s.n, nonFinite, rng));
          const Tensor w = fromValues(t, s.trailing, randomValues(t, s.n, 3, false, rng));
          std::vector<const Tensor*> operands = {&x};
          if (hasWeight) operands.push_back(&w);
          const AttrMap attrs{{"normalized_ndim", c.ndim}, {"eps", eps}, {"has_weight", hasWeight}};
          const std::vector<Tensor> ref = reference("amp.rms_norm", operands, attrs, {{t, c.shape}});
          expectSameBits(deviceRmsNorm(x, hasWeight ? &w : nullptr, c.ndim, eps), ref[0], "y");
        }
}

TEST(CudaNormMath, LayerNormGradMatchesTheReferenceBitForBit) {
  std::mt19937 rng(37);
  int round = 0;
  for (DType t : kTypes)
    for (const NormCase& c : kNormCases)
      for (bool hasWeight : {false, true})
        for (bool nonFinite : {false, true}) {
          const double eps = kEps[round++ % std::size(kEps)];
          SCOPED_TRACE(testing::Message() << name(t) << " " << shapeToString(c.shape) << " ndim " << c.ndim << " eps "
                                          << eps << " weight " << hasWeight << (nonFinite ? " with inf/NaN" : ""));
          const Groups s = groupsOf(c.shape, c.ndim);
          const int64_t count = numElements(c.shape);
          const Tensor x = fromValues(t, c.shape, randomValues(t, count, s.n, nonFinite, rng));
          const Tensor dy = fromValues(t, c.shape, randomValues(t, count, 7, false, rng));
          const Tensor w = fromValues(t, s.trailing, randomValues(t, s.n, 3, false, rng));
          std::vector<const Tensor*> operands = {&x};
          if (hasWeight) operands.push_back(&w);
          operands.push_back(&dy);
          const AttrMap attrs{{"normalized_ndim", c.ndim}, {"eps", eps}};
          const std::vector<Tensor> ref =
              reference("amp.layer_norm_grad", operands, attrs, {{t, c.shape}, {t, s.trailing}, {t, s.trailing}});
          const std::vector<Tensor> dev = deviceLayerNormGrad(x, hasWeight ? &w : nullptr, dy, c.ndim, eps);
          expectSameBits(dev[0], ref[0], "dx");
          expectSameBits(dev[1], ref[1], "dweight");
          expectSameBits(dev[2], ref[2], "dbias");
        }
}

TEST(CudaNormMath, RmsNormGradMatchesTheReferenceBitForBit) {
  std::mt19937 rng(41);
  int round = 0;
  for (DType t : kTypes)
    for (const NormCase& c : kNormCases)
      for (bool hasWeight : {false, true})
        for (bool nonFinite : {false, true}) {
          const double eps = kEps[round++ % std::size(kEps)];
          SCOPED_TRACE(testing::Message() << name(t) << " " << shapeToString(c.shape) << " ndim " << c.ndim << " eps "
                                          << eps << " weight " << hasWeight << (nonFinite ? " with inf/NaN" : ""));
          const Groups s = groupsOf(c.shape, c.ndim);
          const int64_t count = numElements(c.shape);
          const Tensor x = fromValues(t, c.shape, randomValues(t, count, s.n, nonFinite, rng));
          const Tensor dy = fromValues(t, c.shape, randomValues(t, count, 7, false, rng));
          const Tensor w = fromValues(t, s.trailing, randomValues(t, s.n, 3, false, rng));
          std::vector<const Tensor*> operands = {&x};
          if (hasWeight) operands.push_back(&w);
          operands.push_back(&dy);
          const AttrMap attrs{{"normalized_ndim", c.ndim}, {"eps", eps}};
          const std::vector<Tensor> ref =
              reference("amp.rms_norm_grad", operands, attrs, {{t, c.shape}, {t, s.trailing}});
          const std::vector<Tensor> dev = deviceRmsNormGrad(x, hasWeight ? &w : nullptr, dy, c.ndim, eps);
          expectSameBits(dev[0], ref[0], "dx");
          expectSameBits(dev[1], ref[1], "dweight");
        }
}

// Well-scaled groups with many rows: the column pass adds hundreds of groups per column, so a
// different order of those sums (or of any group sum) would show in the low bits.
TEST(CudaNormMath, GradientsOfManyGroupsMatchTheReference) {
  std::mt19937 rng(47);
  std::uniform_real_distribution<float> value(-2.0f, 2.0f);
  for (DType t : kTypes)
    for (const Shape& shape : {Shape{500, 64}, Shape{64, 3, 50}}) {
      SCOPED_TRACE(testing::Message() << name(t) << " " << shapeToString(shape));
      const Groups s = groupsOf(shape, 1);
      std::vector<float> xv(static_cast<size_t>(numElements(shape))), dyv(xv.size()), wv(static_cast<size_t>(s.n));
      for (float& v : xv) v = value(rng) + 0.5f;
      for (float& v : dyv) v = value(rng);
      for (float& v : wv) v = value(rng);
      const Tensor x = fromValues(t, shape, xv), dy = fromValues(t, shape, dyv), w = fromValues(t, s.trailing, wv);
      const AttrMap attrs{{"normalized_ndim", int64_t{1}}, {"eps", 1e-5}};
      const std::vector<Tensor> refLayer =
          reference("amp.layer_norm_grad", {&x, &w, &dy}, attrs, {{t, shape}, {t, s.trailing}, {t, s.trailing}});
      const std::vector<Tensor> devLayer = deviceLayerNormGrad(x, &w, dy, 1, 1e-5);
      for (int r = 0; r < 3; ++r) expectSameBits(devLayer[r], refLayer[r], "layer_norm_grad");
      const std::vector<Tensor> refRms =
          reference("amp.rms_norm_grad", {&x, &w, &dy}, attrs, {{t, shape}, {t, s.trailing}});
      const std::vector<Tensor> devRms = deviceRmsNormGrad(x, &w, dy, 1, 1e-5);
      for (int r = 0; r < 2; ++r) expectSameBits(devRms[r], refRms[r], "rms_norm_grad");
    }
}

// With no groups the column pass still writes dweight and dbias: +0, as the reference.
TEST(CudaNormMath, NoGroupsGiveZeroAffineGradients) {
  for (DType t : kTypes) {
    const Tensor x(t, {0, 5}), dy(t, {0, 5}), w = fromValues(t, {5}, {1, 2, 3, 4, 5});
    const AttrMap attrs{{"normalized_ndim", int64_t{1}}, {"eps", 1e-5}};
    const std::vector<Tensor> dev = deviceLayerNormGrad(x, &w, dy, 1, 1e-5);
    const std::vector<Tensor> ref =
        reference("amp.layer_norm_grad", {&x, &w, &dy}, attrs, {{t, {0, 5}}, {t, {5}}, {t, {5}}});
    for (int r = 1; r < 3; ++r) {
      expectSameBits(dev[r], ref[r], "affine");
      for (int64_t j = 0; j < 5; ++j) EXPECT_EQ(elementBits(dev[r], j), 0u) << name(t);
    }
  }
}

// batch_norm in [N, C], [N, C, L], [N, C, H, W] and rank-5 layouts, channels longer than a block
// (several chunks of thread 0's sum) and of 2 elements, N = 1, no channels; training (batch
// statistics, the running update) and eval (the running statistics); momentum 0, 1 and between.
struct BatchNormCase {
  Shape shape;
  bool training;
};

const BatchNormCase kBatchNormCases[] = {
    {{4, 3, 5, 5}, true},   {{4, 3, 5, 5}, false}, {{8, 2}, true},         {{8, 2}, false},
    {{2, 4, 300}, true},    {{2, 4, 300}, false},  {{3, 2, 1, 1}, true},   {{1, 3, 7}, true},
    {{2, 1}, true},         {{600, 2}, true},      {{2, 2, 3, 2, 2}, true}, {{2, 0, 4}, true},
    {{0, 3, 2}, false},     {{5, 3, 0}, false},    {{3, 2, 17, 9}, false}, {{1, 2}, false},
};
const double kMomenta[] = {0.1, 0.0, 1.0, 0.3};
const double kBatchNormEps[] = {1e-5, 1e-3, 1e-12};

// Per-channel f32 operands: scale and bias of either sign, running variances >= 0 (some 0, some
// tiny, so eps matters), running means far and near.
Tensor perChannel(int64_t channels, float lo, float hi, std::mt19937& rng) {
  std::uniform_real_distribution<float> value(lo, hi);
  std::vector<float> v(static_cast<size_t>(channels));
  for (float& e : v) e = value(rng);
  if (channels > 1 && lo >= 0) v[1] = 0.0f;
  return fromValues(DType::F32, {channels}, v);
}

TEST(CudaNormMath, BatchNormMatchesTheReferenceBitForBit) {
  std::mt19937 rng(53);
  int round = 0;
  for (DType t : kTypes)
    for (const BatchNormCase& c : kBatchNormCases)
      for (bool nonFinite : {false, true}) {
        const double eps = kBatchNormEps[round % std::size(kBatchNormEps)];
        const double momentum = kMomenta[round++ % std::size(kMomenta)];
        SCOPED_TRACE(testing::Message() << name(t) << " " << shapeToString(c.shape) << (c.training ? " training" : " eval")
                                        << " eps " << eps << " momentum " << momentum
                                        << (nonFinite ? " with inf/NaN" : ""));
        const Channels l = channelsOf(c.shape);
        const Tensor x = fromValues(t, c.shape, randomValues(t, numElements(c.shape), l.s, nonFinite, rng));
        const Tensor scale = perChannel(l.c, -2.0f, 2.0f, rng), bias = perChannel(l.c, -3.0f, 3.0f, rng);
        const Tensor rm = perChannel(l.c, -50.0f, 50.0f, rng), rv = perChannel(l.c, 0.0f, 4.0f, rng);
        const AttrMap attrs{{"epsilon", eps}, {"momentum", momentum}, {"training", c.training}};
        const std::vector<Tensor> ref = reference("amp.batch_norm", {&x, &scale, &bias, &rm, &rv}, attrs,
                                                  {{t, c.shape}, {DType::F32, {l.c}}, {DType::F32, {l.c}}});
        const std::vector<Tensor> dev = deviceBatchNorm(x, scale, bias, rm, rv, eps, momentum, c.training);
        expectSameBits(dev[0], ref[0], "y");
        expectSameBits(dev[1], ref[1], "new_running_mean");
        expectSameBits(dev[2], ref[2], "new_running_var");
        if (!c.training)
          for (int64_t k = 0; k < l.c; ++k) {  // bit copies of the running statistics
            EXPECT_EQ(elementBits(dev[1], k), elementBits(rm, k));
            EXPECT_EQ(elementBits(dev[2], k), elementBits(rv, k));
          }
      }
}

TEST(CudaNormMath, BatchNormGradMatchesTheReferenceBitForBit) {
  std::mt19937 rng(59);
  int round = 0;
  for (DType t : kTypes)
    for (const BatchNormCase& c : kBatchNormCases)
      for (bool nonFinite : {false, true}) {
        const double eps = kBatchNormEps[round++ % std::size(kBatchNormEps)];
        SCOPED_TRACE(testing::Message() << name(t) << " " << shapeToString(c.shape) << (c.training ? " training" : " eval")
                                        << " eps " << eps << (nonFinite ? " with inf/NaN" : ""));
        const Channels l = channelsOf(c.shape);
        const int64_t count = numElements(c.shape);
        const Tensor x = fromValues(t, c.shape, randomValues(t, count, l.s, nonFinite, rng));
        const Tensor dy = fromValues(t, c.shape, randomValues(t, count, 7, false, rng));
        const Tensor scale = perChannel(l.c, -2.0f, 2.0f, rng);
        const Tensor rm = perChannel(l.c, -50.0f, 50.0f, rng), rv = perChannel(l.c, 0.0f, 4.0f, rng);
        const AttrMap attrs{{"epsilon", eps}, {"training", c.training}};
        const std::vector<Tensor> ref = reference("amp.batch_norm_grad", {&x, &dy, &scale, &rm, &rv}, attrs,
                                                  {{t, c.shape}, {DType::F32, {l.c}}, {DType::F32, {l.c}}});
        const std::vector<Tensor> dev = deviceBatchNormGrad(x, dy, scale, rm, rv, eps, c.training);
        expectSameBits(dev[0], ref[0], "dx");
        expectSameBits(dev[1], ref[1], "dscale");
        expectSameBits(dev[2], ref[2], "dbias");
      }
}

// Well-scaled channels of many elements (a conv layer's activations): thousands of terms per sum,
// so any other order of a channel's sums (or another element order: h before n, say) shows in the
// low bits of the statistics, the running update and the gradients.
TEST(CudaNormMath, BatchNormOfLongChannelsMatchesTheReference) {
  std::mt19937 rng(61);
  std::uniform_real_distribution<float> value(-2.0f, 2.0f);
  for (DType t : kTypes)
    for (const Shape& shape : {Shape{16, 4, 12, 12}, Shape{3000, 3}}) {
      SCOPED_TRACE(testing::Message() << name(t) << " " << shapeToString(shape));
      const Channels l = channelsOf(shape);
      std::vector<float> xv(static_cast<size_t>(numElements(shape))), dyv(xv.size());
      for (float& v : xv) v = value(rng) + 0.75f;
      for (float& v : dyv) v = value(rng);
      const Tensor x = fromValues(t, shape, xv), dy = fromValues(t, shape, dyv);
      const Tensor scale = perChannel(l.c, -2.0f, 2.0f, rng), bias = perChannel(l.c, -1.0f, 1.0f, rng);
      const Tensor rm = perChannel(l.c, -1.0f, 1.0f, rng), rv = perChannel(l.c, 0.5f, 2.0f, rng);
      const std::vector<TensorType> types = {{t, shape}, {DType::F32, {l.c}}, {DType::F32, {l.c}}};
      for (bool training : {true, false}) {
        const std::vector<Tensor> ref =
            reference("amp.batch_norm", {&x, &scale, &bias, &rm, &rv},
                      AttrMap{{"epsilon", 1e-5}, {"momentum", 0.1}, {"training", training}}, types);
        const std::vector<Tensor> dev = deviceBatchNorm(x, scale, bias, rm, rv, 1e-5, 0.1, training);
        for (int r = 0; r < 3; ++r) expectSameBits(dev[r], ref[r], "batch_norm");
        const std::vector<Tensor> refGrad = reference("amp.batch_norm_grad", {&x, &dy, &scale, &rm, &rv},
                                                      AttrMap{{"epsilon", 1e-5}, {"training", training}}, types);
        const std::vector<Tensor> devGrad = deviceBatchNormGrad(x, dy, scale, rm, rv, 1e-5, training);
        for (int r = 0; r < 3; ++r) expectSameBits(devGrad[r], refGrad[r], "batch_norm_grad");
      }
    }
}

}  // namespace
}  // namespace amp::rt
