// The tanh GELU and its gradient on the cpu device take a certified fast path (CpuGelu.h) and must
// still give the reference's bits for every input: every bf16 and f16 value, a million random f32
// values over the whole range where the fast path applies and beyond, NaN, infinities, signed
// zeros. The exact fallback must stay rare on activation-like inputs, or the fast path is moot.
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/devices/cpu/steps/CpuGelu.h"
#include "runtime/numerics/Convert.h"
#include "test/unit/cpu/ParityUtil.h"

namespace amp::rt {
namespace {

using parity::expectParity;
using parity::Operand;
using parity::every16BitValue;

const AttrMap kTanh = {{"approximate", std::string("tanh")}};

std::vector<double> randomF32(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> wide(-12.0f, 12.0f);
  std::vector<double> values(n);
  for (size_t i = 0; i < n; ++i) values[i] = i % 2 ? normal(rng) : wide(rng);
  return values;
}

TEST(CpuGelu, ForwardMatchesTheReferenceOnEvery16BitValue) {
  for (DType t : {DType::BF16, DType::F16}) {
    const std::vector<double> all = every16BitValue(t);
    expectParity("amp.gelu", {{t, {65536}, all}}, {{t, {65536}}}, kTanh);
  }
}

TEST(CpuGelu, ForwardMatchesTheReferenceOnRandomF32) {
  expectParity("amp.gelu", {{DType::F32, {1 << 20}, randomF32(1 << 20, 7)}}, {{DType::F32, {1 << 20}}}, kTanh);
}

TEST(CpuGelu, GradientMatchesTheReferenceOnEvery16BitValue) {
  for (DType t : {DType::BF16, DType::F16}) {
    const std::vector<double> all = every16BitValue(t);
    std::vector<double> dy = randomF32(65536, 11);
    dy[3] = INFINITY;
    dy[5] = NAN;
    dy[9] = -0.0;
    expectParity("amp.gelu_grad", {{t, {65536}, all}, {t, {65536}, dy}}, {{t, {65536}}}, kTanh);
  }
}

TEST(CpuGelu, GradientMatchesTheReferenceOnRandomF32) {
  expectParity("amp.gelu_grad", {{DType::F32, {1 << 20}, randomF32(1 << 20, 13)}, {DType::F32, {1 << 20}, randomF32(1 << 20, 17)}},
               {{DType::F32, {1 << 20}}}, kTanh);
}

TEST(CpuGelu, TheExactFallbackIsRare) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(1 << 16), dy(1 << 16), y(1 << 16);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = normal(rng);
    dy[i] = normal(rng) * 1e-3f;
  }
  cpu::geluTanhBlock(x.data(), y.data(), static_cast<int64_t>(x.size()));
  const int64_t forward = cpu::geluExactFallbacks();
  cpu::geluTanhGradBlock(x.data(), dy.data(), y.data(), static_cast<int64_t>(x.size()));
  const int64_t backward = cpu::geluExactFallbacks();
  std::printf("exact fallbacks on N(0, 1) inputs: forward %lld, gradient %lld of %zu\n", (long long)forward,
              (long long)backward, x.size());
  EXPECT_LT(forward, static_cast<int64_t>(x.size() / 100));
  EXPECT_LT(backward, static_cast<int64_t>(x.size() / 100));
}

TEST(CpuGelu, InPlaceReadsEachElementBeforeWritingIt) {
  std::vector<float> x = {-3.0f, -0.5f, 0.0f, 0.25f, 1.0f, 4.0f, NAN, -INFINITY};
  std::vector<float> copy = x, y(x.size());
  cpu::geluTanhBlock(copy.data(), y.data(), static_cast<int64_t>(x.size()));
  cpu::geluTanhBlock(x.data(), x.data(), static_cast<int64_t>(x.size()));
  EXPECT_EQ(std::memcmp(x.data(), y.data(), x.size() * sizeof(float)), 0);
}

}  // namespace
}  // namespace amp::rt
