// Expensive elementwise ops over bf16/f16 read their results from a table of every input, filled by
// the op's own kernel (HalfTable.h); gelu_grad reads the reference's f64 derivative from one. Each
// must give the reference's bits on every 16-bit input (NaNs, infinities, subnormals, signed zeros),
// in place too, and the tables must be made once per process.
#include <cmath>
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
