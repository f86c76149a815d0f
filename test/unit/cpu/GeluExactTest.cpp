// The exact (erf) GELU and its gradient on the cpu device take a certified vector path
// (GeluExact.h) and must still give the reference's bits for every input, on every code path the
// machine runs: scalar, AVX2 and AVX-512, each chosen explicitly (a path above CpuFeatures::host(),
// which AMP_CPU_FEATURES lowers, is skipped and says so). The inputs: a sweep of the whole f32 range
// (every 2^12th bit pattern, twice, at two offsets), every bf16 and f16 value, and the edges of
// the fast domain. Then: the bound check is what makes the fast values exact (without it some
// inputs differ), the approximations' measured errors stay within the bounds the check uses, and
// the fallback stays rare.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "test/unit/cpu/HostVectorPaths.h"
#include "runtime/devices/cpu/kernels/GeluExact.h"
#include "runtime/devices/cpu/kernels/GeluExactKernels.h"
#include "runtime/numerics/Convert.h"
#include "test/unit/cpu/ParityUtil.h"

namespace amp::rt {
namespace {

using cpu::VectorPath;

std::vector<VectorPath> pathsToTest(bool vectorOnly) { return hostVectorPathsToTest(cpu::kGeluErfNeeds, vectorOnly); }

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

std::vector<float> sweepInputs() {
  std::vector<float> x;
  for (uint32_t offset : {0u, 0x9e3u})
    for (uint64_t b = offset; b <= 0xffffffffu; b += 1u << 12) x.push_back(fromBits(static_cast<uint32_t>(b)));
  for (DType t : {DType::BF16, DType::F16})
    for (uint32_t b = 0; b < 65536; ++b) {
      const uint16_t h = static_cast<uint16_t>(b);
      x.push_back(loadAsF32(t, &h, 0));
    }
  const float domain = static_cast<float>(cpu::gelu_erf::kDomain), edge = std::sqrt(2.0f), six = 6.0f * std::sqrt(2.0f);
  for (float e : {domain, edge, six, 7.0f, 8.0f})
    for (float s : {1.0f, -1.0f})
      for (float in = s * e, out = s * e, k = 0; k < 64; ++k) {  // 64 floats either side of each edge
        x.push_back(in = std::nextafter(in, 0.0f));
        x.push_back(out = std::nextafter(out, s * INFINITY));
      }
  for (float v : {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 1e-45f, -1e-45f, 1.17549e-38f, -1.17549e-38f, 3.4e38f, -3.4e38f})
    x.push_back(v);
  while (x.size() % 8 != 3) x.push_back(0.5f);  // a ragged tail
  return x;
}

std::vector<float> gradientsFor(size_t n) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> dy(n);
  const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 3.4e38f, -1e-45f, 1.0f};
  for (size_t i = 0; i < n; ++i) dy[i] = i % 61 == 0 ? specials[(i / 61) % 8] : normal(rng);
  return dy;
}

// The reference executor's result of `op` (default attributes: approximate = "none") on f32 inputs.
std::vector<float> reference(const std::string& op, const std::vector<std::vector<float>>& inputs) {
  const Shape shape{static_cast<int64_t>(inputs[0].size())};
  std::vector<parity::Operand> operands;
  for (const auto& in : inputs) operands.push_back({DType::F32, shape, std::vector<double>(in.begin(), in.end())});
  parity::SingleStep single = parity::singleStepPlan(op, operands, {{DType::F32, shape}}, {}, true, 1);
  auto session = openSession(single.plan, Device::Reference);
  EXPECT_TRUE(session.ok()) << session.status();
  auto out = session->run("eval", single.feeds, {});
  EXPECT_TRUE(out.ok()) << out.status();
  const Tensor& t = (*out)[0].tensor;
  return std::vector<float>(t.as<float>(), t.as<float>() + t.numel());
}

// Counts elements whose bits differ (NaNs match any NaN: payloads are outside the contract) and
// reports the first.
int64_t mismatches(const std::vector<float>& want, const std::vector<float>& got, const std::vector<float>& x) {
  int64_t n = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (bitsOf(want[i]) == bitsOf(got[i]) || (std::isnan(want[i]) && std::isnan(got[i]))) continue;
    if (n++ == 0) ADD_FAILURE() << "x = " << x[i] << " (0x" << std::hex << bitsOf(x[i]) << "): reference 0x" << bitsOf(want[i]) << ", got 0x" << bitsOf(got[i]);
  }
  return n;
}

TEST(GeluExact, ForwardMatchesTheReferenceOnEveryPath) {
  const std::vector<float> x = sweepInputs();
  const std::vector<float> want = reference("amp.gelu", {x});
  for (VectorPath path : pathsToTest(false)) {
    SCOPED_TRACE(cpu::vectorPathName(path));
    std::vector<float> y(x.size());
    const int64_t fallbacks = cpu::geluErfBlock(path, x.data(), y.data(), static_cast<int64_t>(x.size()));
    EXPECT_EQ(mismatches(want, y, x), 0);
    std::printf("%s forward: %zu inputs, %lld exact fallbacks\n", cpu::vectorPathName(path), x.size(), (long long)fallbacks);
  }
}

TEST(GeluExact, GradientMatchesTheReferenceOnEveryPath) {
  const std::vector<float> x = sweepInputs(), dy = gradientsFor(x.size());
  const std::vector<float> want = reference("amp.gelu_grad", {x, dy});
  for (VectorPath path : pathsToTest(false)) {
    SCOPED_TRACE(cpu::vectorPathName(path));
    std::vector<float> y(x.size());
    const int64_t fallbacks = cpu::geluErfGradBlock(path, x.data(), dy.data(), y.data(), static_cast<int64_t>(x.size()));
    EXPECT_EQ(mismatches(want, y, x), 0);
    std::printf("%s gradient: %zu inputs, %lld exact fallbacks\n", cpu::vectorPathName(path), x.size(), (long long)fallbacks);
  }
}

// Where 1 + erf(x/sqrt 2) cancels (x below about -6), the fast value and the reference's differ
// often, by far more than an f32 rounding. The check must reject every such lane, and does so
// only by its bound: certified lanes equal the reference, and some uncertified ones do not.
TEST(GeluExact, TheBoundCheckIsWhatMakesTheFastValueExact) {
  std::vector<float> x;
  for (float v = -9.0f; v < -4.0f; v += 1.0f / 4096) x.push_back(v);
  const std::vector<float> dy(x.size(), 1.0f);
  const std::vector<float> forward = reference("amp.gelu", {x}), grad = reference("amp.gelu_grad", {x, dy});
  for (VectorPath path : pathsToTest(true)) {
    SCOPED_TRACE(cpu::vectorPathName(path));
    int64_t wrongForward = 0, wrongGrad = 0;
    float witness = NAN;
    for (size_t i = 0; i < x.size(); ++i) {
      const cpu::GeluErfLane f = cpu::geluErfForwardLane(path, x[i]), g = cpu::geluErfGradLane(path, x[i], dy[i]);
      const bool fEqual = bitsOf(f.fast) == bitsOf(forward[i]), gEqual = bitsOf(g.fast) == bitsOf(grad[i]);
      if (f.certified) { ASSERT_TRUE(fEqual) << "certified but wrong: gelu(" << x[i] << ")"; }
      if (g.certified) { ASSERT_TRUE(gEqual) << "certified but wrong: gelu'(" << x[i] << ")"; }
      if (!fEqual && wrongForward++ == 0) witness = x[i];
      wrongGrad += !gEqual;
    }
    std::printf("%s: on [-9, -4) the unchecked fast value is wrong for %lld of %zu forward, %lld gradient "
                "(e.g. gelu(%.9g)); the check rejected them all\n",
                cpu::vectorPathName(path), (long long)wrongForward, x.size(), (long long)wrongGrad, witness);
    EXPECT_GT(wrongForward, 0);
    EXPECT_GT(wrongGrad, 0);
    ASSERT_FALSE(std::isnan(witness));
    EXPECT_FALSE(cpu::geluErfForwardLane(path, witness).certified);
  }
}

// The check's bounds rest on these measurements (GeluExactKernels.h): for t = fl(x / sqrt 2) and
// w = fl(-x/2 * x) of every 2^8th f32 x in the fast domain, against long double erfl/expl
// (64-bit mantissa, far below the errors measured). The claim keeps a factor 4 above the worst.
TEST(GeluExact, ApproximationErrorsStayWithinTheClaimedBounds) {
  std::vector<double> t, w;
  for (uint64_t b = 0; b <= 0xffffffffu; b += 1u << 8) {
    const float x = fromBits(static_cast<uint32_t>(b));
    if (!(std::fabs(x) <= cpu::gelu_erf::kDomain)) continue;
    t.push_back(double(x) * cpu::gelu_erf::kSqrt1_2);
    w.push_back(-0.5 * double(x) * double(x));
  }
  t.resize(t.size() / 8 * 8);
  w.resize(w.size() / 8 * 8);
  std::vector<long double> erfWant(t.size()), expWant(w.size());
  for (size_t i = 0; i < t.size(); ++i) erfWant[i] = 1.0L + erfl(t[i]), expWant[i] = expl(w[i]);
  for (VectorPath path : pathsToTest(true)) {
    SCOPED_TRACE(cpu::vectorPathName(path));
    std::vector<double> s(t.size()), e(w.size());
    cpu::geluErfApproxErfPlusOne(path, t.data(), s.data(), static_cast<int64_t>(t.size()));
    cpu::geluErfApproxExp(path, w.data(), e.data(), static_cast<int64_t>(w.size()));
    long double erfWorst = 0, expWorst = 0;
    for (size_t i = 0; i < t.size(); ++i) {
      erfWorst = std::max(erfWorst, std::fabs(s[i] - erfWant[i]));
      expWorst = std::max(expWorst, std::fabs(e[i] - expWant[i]) / expWant[i]);
    }
    std::printf("%s over %zu points: |1 + erf - approx| <= 2^%.2f (claimed 2^%.0f), exp relative <= 2^%.2f (claimed 2^%.0f)\n",
                cpu::vectorPathName(path), t.size(), double(std::log2(erfWorst)), std::log2(cpu::gelu_erf::kErfPlusOneError),
                double(std::log2(expWorst)), std::log2(cpu::gelu_erf::kExpError));
    EXPECT_LE(erfWorst, cpu::gelu_erf::kErfPlusOneError / 4);
    EXPECT_LE(expWorst, cpu::gelu_erf::kExpError / 4);
  }
}

// Below x = -5, 1 + erf(x/sqrt 2) < 2^-24 and glibc's own 2^-53 absolute error in erf dominates
// the bound, so most such elements fall back: a wider distribution falls back more.
TEST(GeluExact, TheExactFallbackIsRareOnNormalActivations) {
  const int64_t n = 1 << 18;
  for (float sigma : {1.0f, 2.0f}) {
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(n), dy(n), y(n);
    for (int64_t i = 0; i < n; ++i) x[i] = normal(rng) * sigma, dy[i] = normal(rng) * 1e-3f;
    for (VectorPath path : pathsToTest(true)) {
      const int64_t forward = cpu::geluErfBlock(path, x.data(), y.data(), n);
      const int64_t grad = cpu::geluErfGradBlock(path, x.data(), dy.data(), y.data(), n);
      std::printf("%s exact fallbacks on N(0, %g^2) inputs: forward %lld, gradient %lld of %lld\n",
                  cpu::vectorPathName(path), sigma, (long long)forward, (long long)grad, (long long)n);
      EXPECT_LT(forward, sigma == 1.0f ? n / 1000 : n / 100);
      EXPECT_LT(grad, sigma == 1.0f ? n / 1000 : n / 100);
    }
  }
}

TEST(GeluExact, InPlaceReadsEachElementBeforeWritingIt) {
  std::vector<float> x = {-8.0f, -3.0f, -0.5f, 0.0f, 0.25f, 1.0f, 4.0f, NAN, -INFINITY, 40.0f, -7.25f};
  for (VectorPath path : pathsToTest(false)) {
    std::vector<float> copy = x, y(x.size()), inPlace = x;
    cpu::geluErfBlock(path, copy.data(), y.data(), static_cast<int64_t>(x.size()));
    cpu::geluErfBlock(path, inPlace.data(), inPlace.data(), static_cast<int64_t>(x.size()));
    EXPECT_EQ(std::memcmp(inPlace.data(), y.data(), x.size() * sizeof(float)), 0) << cpu::vectorPathName(path);
    std::vector<float> dy(x.size(), 0.5f), g(x.size()), gInPlace = dy;
    cpu::geluErfGradBlock(path, copy.data(), dy.data(), g.data(), static_cast<int64_t>(x.size()));
    cpu::geluErfGradBlock(path, copy.data(), gInPlace.data(), gInPlace.data(), static_cast<int64_t>(x.size()));
    EXPECT_EQ(std::memcmp(gInPlace.data(), g.data(), x.size() * sizeof(float)), 0) << cpu::vectorPathName(path);
  }
}

// Through the device (the host's path) in every float type, as the other parity tests.
TEST(GeluExact, TheDeviceMatchesTheReferenceInEveryFloatType) {
  for (DType t : {DType::F32, DType::BF16, DType::F16}) {
    parity::expectParity("amp.gelu", {{t, {70001}}}, {{t, {70001}}});
    parity::expectParity("amp.gelu_grad", {{t, {70001}}, {t, {70001}}}, {{t, {70001}}});
  }
}

}  // namespace
}  // namespace amp::rt
