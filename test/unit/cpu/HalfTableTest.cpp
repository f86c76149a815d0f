// Expensive elementwise ops over bf16/f16 read their results from a table of every input, filled by
// the op's own kernel (HalfTable.h); gelu_grad reads the reference's f64 derivative from one. Each
// must give the reference's bits on every 16-bit input (NaNs, infinities, subnormals, signed zeros),
// in place too, and the tables must be made once per process.
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/devices/cpu/kernels/HalfTable.h"
#include "runtime/numerics/Convert.h"
#include "test/unit/cpu/ParityUtil.h"

namespace amp::rt {
namespace {

using parity::expectParity;
using parity::every16BitValue;

uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

TEST(HalfTable, UnaryOpsGiveTheReferenceBitsOnEvery16BitValue) {
  for (DType t : {DType::BF16, DType::F16})
    for (const char* op : {"amp.exp", "amp.log", "amp.rsqrt", "amp.tanh", "amp.erf", "amp.sigmoid", "amp.silu"}) {
      SCOPED_TRACE(std::string(op) + " " + std::string(dtypeName(t)));
      expectParity(op, {{t, {65536}, every16BitValue(t)}}, {{t, {65536}}});
    }
}

TEST(HalfTable, GeluAndItsGradientGiveTheReferenceBitsOnEvery16BitValue) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (DType t : {DType::BF16, DType::F16})
    for (const char* approx : {"none", "tanh"}) {
      SCOPED_TRACE(std::string(approx) + " " + std::string(dtypeName(t)));
      const AttrMap attrs = {{"approximate", std::string(approx)}};
      const std::vector<double> all = every16BitValue(t);
      expectParity("amp.gelu", {{t, {65536}, all}}, {{t, {65536}}}, attrs);
      std::vector<double> dy(65536);
      for (double& d : dy) d = normal(rng);
      dy[1] = INFINITY, dy[2] = -INFINITY, dy[4] = NAN, dy[6] = -0.0, dy[8] = 1e-40;
      expectParity("amp.gelu_grad", {{t, {65536}, all}, {t, {65536}, dy}}, {{t, {65536}}}, attrs);
      // The derivative does not depend on dy: every x against a second dy as well.
      for (double& d : dy) d = 1000.0 * normal(rng);
      expectParity("amp.gelu_grad", {{t, {65536}, all}, {t, {65536}, dy}}, {{t, {65536}}}, attrs);
    }
}

// scaleByTable's vector path against its scalar loop: every table index, dy with infinities, NaN
// payloads, signed zeros, subnormals and values whose product overflows or underflows f32,
// lengths around the 16-lane step, and in place (y = dy). A lane where both operands are NaN may
// keep either payload (docs/numerics.md); everywhere else the bits must match.
TEST(HalfTable, ScaleByTableVectorPathIsTheScalarLoop) {
  std::mt19937 rng(5);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> table(cpu::kHalfInputs);
  for (double& d : table) d = normal(rng);
  table[3] = INFINITY, table[5] = -0.0, table[7] = 1e300, table[9] = 1e-300, table[11] = std::nan("0x5");
  const int64_t n = 3 * cpu::kHalfInputs + 13;
  std::vector<uint16_t> x(n);
  std::vector<float> dy(n);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = static_cast<uint16_t>(i % cpu::kHalfInputs);
    dy[i] = static_cast<float>(normal(rng) * (i % 3 == 0 ? 1e30 : 1.0));
  }
  dy[1] = INFINITY, dy[2] = -INFINITY, dy[4] = std::nanf("0x3"), dy[6] = -0.0f, dy[8] = 1e-40f, dy[11] = std::nanf("0x7");
  std::vector<float> want(n);
  cpu::scaleByTable(cpu::VectorPath::Scalar, table.data(), x.data(), dy.data(), want.data(), n);
  for (cpu::VectorPath path : {cpu::VectorPath::Scalar, cpu::VectorPath::Avx2, cpu::VectorPath::Avx512}) {
    if (path > cpu::hostVectorPath({false, false})) continue;
    for (int64_t len : {int64_t{0}, int64_t{15}, int64_t{16}, int64_t{17}, n}) {
      SCOPED_TRACE(std::string(cpu::vectorPathName(path)) + " n=" + std::to_string(len));
      std::vector<float> got(dy.begin(), dy.end());
      cpu::scaleByTable(path, table.data(), x.data(), got.data(), got.data(), len);  // in place
      for (int64_t i = 0; i < len; ++i) {
        if (std::isnan(dy[i]) && std::isnan(table[x[i]])) {
          EXPECT_TRUE(std::isnan(got[i])) << i;
          continue;
        }
        ASSERT_EQ(floatBits(got[i]), floatBits(want[i])) << "element " << i << ": " << got[i] << " vs " << want[i];
      }
    }
  }
}

TEST(HalfTable, IsFilledOncePerKeyAndType) {
  int fills = 0;
  auto fill = [&](const float* x, void* out) {
    ++fills;
    auto* y = static_cast<float*>(out);
    for (int64_t i = 0; i < cpu::kHalfInputs; ++i) y[i] = x[i];
  };
  const void* a = cpu::halfTable("test.identity", DType::BF16, sizeof(float), fill);
  const void* b = cpu::halfTable("test.identity", DType::BF16, sizeof(float), fill);
  const void* c = cpu::halfTable("test.identity", DType::F16, sizeof(float), fill);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(fills, 2);
  // Entry i is the function of the value whose bits are i.
  const uint16_t one = 0x3F80;  // bf16 1.0
  EXPECT_EQ(static_cast<const float*>(a)[one], 1.0f);
  EXPECT_EQ(static_cast<const float*>(c)[0x3C00], 1.0f);  // f16 1.0
}

}  // namespace
}  // namespace amp::rt
