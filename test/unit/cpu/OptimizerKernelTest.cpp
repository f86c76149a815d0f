// The Adam and SGD element updates (runtime/devices/cpu/kernels/OptimizerKernels.h) on every path the
// machine runs (scalar, AVX2, AVX-512, each chosen explicitly; a path above CpuFeatures::host(),
// which AMP_CPU_FEATURES lowers, is skipped and says so) must give the scalar loop's bits for every
// input: every configuration branch, sizes around the vector widths and the 512-element blocks,
// in place and not, unaligned, with NaN, infinities, signed zeros, subnormals and huge values
// (NaN payloads: see Draw).
// Then the whole update steps (gradient widening, fused unscale and clip, weight copy) against the
// reference executor for f32, bf16 and f16 gradients at odd sizes.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/devices/cpu/kernels/StochasticRounding.h"
#include "runtime/kernels/math/ShapeMath.h"
#include "test/unit/cpu/HostVectorPaths.h"
#include "runtime/devices/cpu/kernels/OptimizerKernels.h"
#include "test/unit/cpu/ParityUtil.h"

namespace amp::rt {
namespace {

using cpu::AdamBlock;
using cpu::AdamCoefficients;
using cpu::SgdBlock;
using cpu::SgdCoefficients;
using cpu::VectorPath;

const int64_t kSizes[] = {0, 1, 7, 15, 16, 17, 511, 512, 513, 4097};

std::vector<VectorPath> vectorPaths() { return hostVectorPathsToTest(cpu::kOptimizerNeeds, true); }

float fromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// How an element's inputs are drawn. Which of two different NaNs an add or mul returns depends on
// its operand order, which for these commutative operations is the compiler's choice (in the scalar
// loop as in the vector code), and docs/numerics.md leaves NaN payloads outside the contract; so
// the exact bits of a NaN result are asserted wherever at most one NaN pattern can reach it.
enum class Draw {
  // Mostly normal values, one in four a special: +-inf, +-0, subnormals, the largest and smallest
  // normals, huge and tiny values, negative second moments, and NaN only as 0xffc00000, which is
  // also the NaN that x86 creates (inf - inf, sqrt(-1)): every NaN anywhere has those bits.
  DefaultNaNOnly,
  // Finite moderate values (second moments >= 0, so no operation creates a NaN), and in one
  // element in three one input a NaN of another payload: quiet and signalling, either sign.
  OnePayloadNaN,
  // Any special in any input, NaNs of several payloads: NaN results are compared as "is NaN".
  AnyNaNs,
};
const char* drawName(Draw d) {
  return d == Draw::DefaultNaNOnly ? "default NaN only" : d == Draw::OnePayloadNaN ? "one payload NaN" : "any NaNs";
}
const Draw kDraws[] = {Draw::DefaultNaNOnly, Draw::OnePayloadNaN, Draw::AnyNaNs};

// One input array of n elements per scale (its normal values' standard deviation); array
// `nonNegative` (the second moments, or -1) draws its normal values as magnitudes.
std::vector<std::vector<float>> draw(Draw how, const std::vector<float>& scales, int nonNegative, int64_t n,
                                     std::mt19937& rng) {
  const int count = static_cast<int>(scales.size());
  static const float kFinite[] = {INFINITY, -INFINITY, 0.0f, -0.0f, fromBits(1u), fromBits(0x807fffffu),
                                  fromBits(0x00400000u), FLT_MIN, -FLT_MIN, FLT_MAX, -FLT_MAX, 3e38f, -1e30f,
                                  1e20f, 1e-20f, 1.0f};
  static const uint32_t kNaNs[] = {0xffc00000u, 0x7fc00000u, 0x7fa00001u, 0xff800001u, 0xffc12345u, 0x7fffffffu};
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<std::vector<float>> in(static_cast<size_t>(count), std::vector<float>(static_cast<size_t>(n)));
  for (int a = 0; a < count; ++a)
    for (float& x : in[static_cast<size_t>(a)]) {
      x = normal(rng) * scales[static_cast<size_t>(a)];
      if (a == nonNegative) x = std::fabs(x);
      if (how == Draw::OnePayloadNaN || rng() % 4 != 0) continue;
      const size_t pick = rng() % (std::size(kFinite) + (how == Draw::AnyNaNs ? std::size(kNaNs) : 1));
      x = pick < std::size(kFinite) ? kFinite[pick] : fromBits(kNaNs[pick - std::size(kFinite)]);
    }
  if (how == Draw::OnePayloadNaN)
    for (int64_t k = 0; k < n; ++k)
      if (rng() % 3 == 0) in[rng() % static_cast<size_t>(count)][static_cast<size_t>(k)] = fromBits(kNaNs[rng() % std::size(kNaNs)]);
  return in;
}

// Index of the first element whose bits differ (with anyNaN, a NaN matches any NaN), or -1.
int64_t firstDiff(const std::vector<float>& want, const std::vector<float>& got, bool anyNaN) {
  if (want.size() != got.size()) return 0;
  for (size_t k = 0; k < want.size(); ++k)
    if (bitsOf(want[k]) != bitsOf(got[k]) && !(anyNaN && std::isnan(want[k]) && std::isnan(got[k])))
      return static_cast<int64_t>(k);
  return -1;
}

#define EXPECT_SAME_BITS(want, got, anyNaN, what)                                                            \
  do {                                                                                                       \
    const int64_t d = firstDiff(want, got, anyNaN);                                                          \
    EXPECT_EQ(d, -1) << what << " differs at " << d << ": scalar 0x" << std::hex                            \
                     << (d >= 0 && size_t(d) < want.size() ? bitsOf(want[d]) : 0) << ", vector 0x"          \
                     << (d >= 0 && size_t(d) < got.size() ? bitsOf(got[d]) : 0);                             \
  } while (0)

// Adam's coefficients as AdamStep derives them from its attributes and the step's scalars.
AdamCoefficients adamCoefficients(double beta1, double beta2, double eps, double wd, bool decoupled, int64_t step,
                                  float lrF) {
  const double lr = lrF, stepD = static_cast<double>(step);
  const double bc1 = 1.0 - std::pow(beta1, stepD), bc2 = 1.0 - std::pow(beta2, stepD);
  AdamCoefficients c;
  c.decay = static_cast<float>(1.0 - lr * wd);
  c.wd = static_cast<float>(wd);
  c.w = static_cast<float>(1.0 - beta1);
  c.smallWeight = std::fabs(c.w) < 0.5f;
  c.oneMinusW = 1.0f - c.w;
  c.b2 = static_cast<float>(beta2);
  c.c2 = static_cast<float>(1.0 - beta2);
  c.bc2Sqrt = static_cast<float>(std::pow(bc2, 0.5));
  c.eps = static_cast<float>(eps);
  c.negStepSize = static_cast<float>(-(lr / bc1));
  c.weightDecay = wd != 0.0;
  c.decoupled = decoupled;
  return c;
}

std::vector<AdamCoefficients> adamConfigs() {
  std::vector<AdamCoefficients> configs;
  for (double beta1 : {0.9, 0.2})  // lerp weight 0.1 (small) and 0.8 (not)
    for (double wd : {0.0, 0.01})
      for (bool decoupled : {false, true})
        for (int64_t step : {int64_t{1}, int64_t{100000}})
          for (float lr : {2e-3f, 0.0f}) {
            if (wd == 0.0 && decoupled) continue;  // the same loop as coupled
            configs.push_back(adamCoefficients(beta1, 0.999, 1e-8, wd, decoupled, step, lr));
          }
  return configs;
}

struct AdamState {
  std::vector<float> g, p, m, v;
};

AdamState adamInputs(Draw how, int64_t n, std::mt19937& rng) {
  std::vector<std::vector<float>> in = draw(how, {1.0f, 1.0f, 0.1f, 0.01f}, 3, n, rng);
  return {in[0], in[1], in[2], in[3]};
}

// Runs Adam on `path` out of place (into fresh outputs) or in place (on copies of the inputs),
// from element `offset` on (so the vectors start unaligned), and returns the block's new state.
AdamState runAdam(VectorPath path, const AdamCoefficients& c, const AdamState& in, int64_t offset, bool inPlace) {
  const int64_t n = static_cast<int64_t>(in.g.size()) - offset;
  AdamState out = in;
  if (!inPlace) {
    std::fill(out.p.begin(), out.p.end(), 7.0f), std::fill(out.m.begin(), out.m.end(), 7.0f);
    std::fill(out.v.begin(), out.v.end(), 7.0f);
  }
  const AdamState& src = inPlace ? out : in;
  const AdamBlock b{src.g.data() + offset, src.p.data() + offset, src.m.data() + offset, src.v.data() + offset,
                    out.p.data() + offset, out.m.data() + offset, out.v.data() + offset};
  cpu::adamUpdateBlock(path, c, b, n);
  for (std::vector<float>* x : {&out.g, &out.p, &out.m, &out.v}) x->erase(x->begin(), x->begin() + offset);
  return out;
}

TEST(OptimizerKernel, AdamVectorPathsGiveTheScalarBits) {
  std::mt19937 rng(7);
  const std::vector<AdamCoefficients> configs = adamConfigs();
  int64_t compared = 0;
  for (VectorPath path : vectorPaths())
    for (int64_t n : kSizes)
      for (size_t ci = 0; ci < configs.size(); ++ci)
        for (Draw how : kDraws)
          for (int64_t offset : {0, 1})
            for (bool inPlace : {false, true}) {
              const AdamCoefficients& c = configs[ci];
              SCOPED_TRACE(testing::Message() << cpu::vectorPathName(path) << " n=" << n << " config " << ci << ", "
                                              << drawName(how) << ", offset " << offset << (inPlace ? ", in place" : ""));
              const AdamState in = adamInputs(how, n + offset, rng);
              const AdamState want = runAdam(VectorPath::Scalar, c, in, offset, false);
              const AdamState got = runAdam(path, c, in, offset, inPlace);
              const bool anyNaN = how == Draw::AnyNaNs;
              EXPECT_SAME_BITS(want.p, got.p, anyNaN, "param");
              EXPECT_SAME_BITS(want.m, got.m, anyNaN, "exp_avg");
              EXPECT_SAME_BITS(want.v, got.v, anyNaN, "exp_avg_sq");
              compared += n;
            }
  std::printf("compared %lld elements per output\n", static_cast<long long>(compared));
}

// The scalar loop itself in place gives what it gives out of place (the vector paths are compared
// with it out of place).
TEST(OptimizerKernel, AdamScalarInPlaceIsOutOfPlace) {
  std::mt19937 rng(8);
  for (const AdamCoefficients& c : adamConfigs()) {
    const AdamState in = adamInputs(Draw::AnyNaNs, 1000, rng);
    const AdamState want = runAdam(VectorPath::Scalar, c, in, 0, false);
    const AdamState got = runAdam(VectorPath::Scalar, c, in, 0, true);
    EXPECT_SAME_BITS(want.p, got.p, false, "param");
    EXPECT_SAME_BITS(want.m, got.m, false, "exp_avg");
    EXPECT_SAME_BITS(want.v, got.v, false, "exp_avg_sq");
  }
}

struct SgdState {
  std::vector<float> g, p, buf;
};

SgdState sgdInputs(Draw how, int64_t n, std::mt19937& rng) {
  std::vector<std::vector<float>> in = draw(how, {1.0f, 1.0f, 0.1f}, -1, n, rng);
  return {in[0], in[1], in[2]};
}

std::vector<SgdCoefficients> sgdConfigs() {
  std::vector<SgdCoefficients> configs;
  for (float momentum : {0.0f, 0.9f})
    for (bool nesterov : {false, true})
      for (float wd : {0.0f, 1e-4f})
        for (float lr : {0.1f, 0.0f}) {
          if (nesterov && momentum == 0.0f) continue;
          configs.push_back({lr, momentum, wd, wd != 0.0f, nesterov});
        }
  return configs;
}

SgdState runSgd(VectorPath path, const SgdCoefficients& c, const SgdState& in, int64_t offset, bool inPlace) {
  const int64_t n = static_cast<int64_t>(in.g.size()) - offset;
  const bool momentum = c.momentum != 0.0f;
  SgdState out = in;
  if (!inPlace) std::fill(out.p.begin(), out.p.end(), 7.0f), std::fill(out.buf.begin(), out.buf.end(), 7.0f);
  const SgdState& src = inPlace ? out : in;
  const SgdBlock b{src.g.data() + offset, src.p.data() + offset, momentum ? src.buf.data() + offset : nullptr,
                   out.p.data() + offset, momentum ? out.buf.data() + offset : nullptr};
  cpu::sgdUpdateBlock(path, c, b, n);
  for (std::vector<float>* x : {&out.g, &out.p, &out.buf}) x->erase(x->begin(), x->begin() + offset);
  if (!momentum) out.buf.clear();  // not an output
  return out;
}

TEST(OptimizerKernel, SgdVectorPathsGiveTheScalarBits) {
  std::mt19937 rng(9);
  const std::vector<SgdCoefficients> configs = sgdConfigs();
  for (VectorPath path : vectorPaths())
    for (int64_t n : kSizes)
      for (size_t ci = 0; ci < configs.size(); ++ci)
        for (Draw how : kDraws)
          for (int64_t offset : {0, 1})
            for (bool inPlace : {false, true}) {
              SCOPED_TRACE(testing::Message() << cpu::vectorPathName(path) << " n=" << n << " config " << ci << ", "
                                              << drawName(how) << ", offset " << offset << (inPlace ? ", in place" : ""));
              const SgdState in = sgdInputs(how, n + offset, rng);
              const SgdState want = runSgd(VectorPath::Scalar, configs[ci], in, offset, false);
              const SgdState got = runSgd(path, configs[ci], in, offset, inPlace);
              const bool anyNaN = how == Draw::AnyNaNs;
              EXPECT_SAME_BITS(want.p, got.p, anyNaN, "param");
              EXPECT_SAME_BITS(want.buf, got.buf, anyNaN, "momentum_buffer");
            }
}

TEST(OptimizerKernel, SgdScalarInPlaceIsOutOfPlace) {
  std::mt19937 rng(10);
  for (const SgdCoefficients& c : sgdConfigs()) {
    const SgdState in = sgdInputs(Draw::AnyNaNs, 1000, rng);
    const SgdState want = runSgd(VectorPath::Scalar, c, in, 0, false);
    const SgdState got = runSgd(VectorPath::Scalar, c, in, 0, true);
    EXPECT_SAME_BITS(want.p, got.p, false, "param");
    EXPECT_SAME_BITS(want.buf, got.buf, false, "momentum_buffer");
  }
}

// A sanity check that the comparison can fail: the paths do not all write nothing. Adam with real
// values moves every parameter.
TEST(OptimizerKernel, EveryPathUpdatesEveryElement) {
  std::mt19937 rng(11);
  const AdamCoefficients c = adamCoefficients(0.9, 0.999, 1e-8, 0.01, true, 3, 1e-2f);
  std::vector<VectorPath> paths = vectorPaths();
  paths.insert(paths.begin(), VectorPath::Scalar);
  for (VectorPath path : paths) {
    AdamState in;
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (int k = 0; k < 517; ++k)
      in.g.push_back(normal(rng)), in.p.push_back(normal(rng)), in.m.push_back(0.0f), in.v.push_back(0.0f);
    const AdamState got = runAdam(path, c, in, 0, false);
    for (int k = 0; k < 517; ++k) ASSERT_NE(got.p[k], in.p[k]) << cpu::vectorPathName(path) << " element " << k;
  }
}

// The whole steps on the host's path (AMP_CPU_FEATURES picks it) against the reference: the
// gradient widened from its type, the fused unscale and clip, the weight copy.
using parity::expectParity;
using parity::Operand;

TEST(OptimizerKernel, UpdateStepsMatchTheReference) {
  std::printf("host path: %s\n", cpu::vectorPathName(cpu::hostVectorPath(cpu::kOptimizerNeeds)));
  for (DType g : {DType::F32, DType::BF16, DType::F16})
    for (int64_t n : {1, 7, 17, 513, 4097})
      for (bool decoupled : {false, true}) {
        SCOPED_TRACE(testing::Message() << dtypeName(g) << " n=" << n << (decoupled ? " decoupled" : ""));
        const Shape s{n};
        Operand v{DType::F32, s};
        v.values = {0.25, 0.5, 1e-3, 4.0, 0.0, 1e-40};
        AttrMap attrs{{"beta1", 0.9}, {"beta2", 0.999}, {"eps", 1e-8}, {"weight_decay", 0.01}, {"decoupled", decoupled}};
        // Plain.
        expectParity("amp.adam_update",
                     {{DType::F32, s}, {g, s}, {DType::F32, s}, v, {DType::I64, {}, {3}}, {DType::F32, {}, {0.002}},
                      {DType::F32, {}, {0.0}}},
                     {{DType::F32, s}, {DType::F32, s}, {DType::F32, s}}, attrs, true, 3, 0, true);
        // Fused: unscaled by 1024, clipped at norm 40 to 1, with a bf16 weight copy.
        AttrMap fused = attrs;
        fused.set("unscales", true);
        fused.set("max_norm", 1.0);
        expectParity("amp.adam_update",
                     {{DType::F32, s}, {g, s}, {DType::F32, s}, v, {DType::I64, {}, {3}}, {DType::F32, {}, {0.002}},
                      {DType::F32, {}, {0.0}}, {DType::F32, {}, {1024.0}}, {DType::F32, {}, {40.0}}},
                     {{DType::F32, s}, {DType::F32, s}, {DType::F32, s}, {DType::BF16, s}}, fused, true, 4, 0, true);
        // Fused: clipped only (no unscale: an f32 gradient is widened by nothing but still clipped).
        AttrMap clipped = attrs;
        clipped.set("max_norm", 1.0);
        expectParity("amp.adam_update",
                     {{DType::F32, s}, {g, s}, {DType::F32, s}, v, {DType::I64, {}, {3}}, {DType::F32, {}, {0.002}},
                      {DType::F32, {}, {0.0}}, {DType::F32, {}, {40.0}}},
                     {{DType::F32, s}, {DType::F32, s}, {DType::F32, s}, {DType::F16, s}}, clipped, true, 7, 0, true);
        AttrMap sgd{{"momentum", 0.9}, {"nesterov", decoupled}, {"weight_decay", 1e-4}};
        expectParity("amp.sgd_update",
                     {{DType::F32, s}, {g, s}, {DType::F32, {}, {0.1}}, {DType::F32, {}, {0.0}}, {DType::F32, s}},
                     {{DType::F32, s}, {DType::F32, s}}, sgd, true, 5, 0, true);
        // Fused: unscaled (by 65536, and by 1, which changes nothing), with an f16 weight copy.
        AttrMap sgdFused{{"momentum", 0.0}, {"weight_decay", 0.0}, {"unscales", true}};
        for (double scale : {65536.0, 1.0})
          expectParity("amp.sgd_update",
                       {{DType::F32, s}, {g, s}, {DType::F32, {}, {0.1}}, {DType::F32, {}, {0.0}},
                        {DType::F32, {}, {scale}}},
                       {{DType::F32, s}, {DType::F16, s}}, sgdFused, true, 6, 0, true);
      }
}

}  // namespace
}  // namespace amp::rt

namespace amp::rt::cpu {
namespace {

// The bf16 moments' rounding words: the blocked Philox gives the one-group-at-a-time stream's
// words (ShapeMath.h, which the reference's and CUDA's dropout use), whatever the block's start,
// length and seed, including groups that cross 2^32 and steps above 2^32.
TEST(PhiloxGroups, EqualsTheDropoutStreamGroupByGroup) {
  std::mt19937_64 rng(17);
  for (int trial = 0; trial < 200; ++trial) {
    const uint64_t seed = rng(), step = trial % 3 == 0 ? rng() : rng() % 100000;
    const uint64_t first = trial % 4 == 0 ? (uint64_t{1} << 32) - 5 : rng() % (uint64_t{1} << 40);
    const int64_t groups = 1 + static_cast<int64_t>(rng() % 150);
    std::vector<uint32_t> words(4 * groups);
    philoxGroups(seed, step, first, groups, words.data());
    for (int64_t k = 0; k < groups; ++k) {
      unsigned want[4];
      amp_drop_group_bits(seed, step, first + static_cast<uint64_t>(k), want);
      for (int l = 0; l < 4; ++l) ASSERT_EQ(words[4 * k + l], want[l]) << "trial " << trial << " group " << k;
    }
  }
}

}  // namespace
}  // namespace amp::rt::cpu
