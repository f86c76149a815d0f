// amp.softmax_grad is, bit for bit, the chain amp-autodiff emitted before it: mul(dy, y),
// reduce_sum(keepdim) along the axis, sub(dy, s), mul(y, diff), each rounded to y's type (and a
// cast of a bf16/f16 cotangent to f32 first). Both run on the reference executor, every type
// combination the op allows, every axis position, NaN/inf/signed zeros in the cotangent.
#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "gtest/gtest.h"
#include "runtime/devices/Devices.h"
#include "runtime/exec/Session.h"
#include "runtime/numerics/Convert.h"

namespace amp::rt {
namespace {

struct Case {
  DType y, dy;
  Shape shape;
  int64_t axis;
};

// y: a softmax output where `softmaxLike`, else any values; dy: N(0, 2) with specials.
std::map<std::string, Tensor> feeds(const Case& c, bool softmaxLike, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::uniform_real_distribution<float> unit(0.0f, 0.3f);
  Tensor y(c.y, c.shape), dy(c.dy, c.shape);
  for (int64_t i = 0; i < y.numel(); ++i) {
    storeFromF32(c.y, y.data(), i, softmaxLike ? unit(rng) : normal(rng));
    storeFromF32(c.dy, dy.data(), i, normal(rng));
  }
  if (dy.numel() >= 8) {
    storeFromF32(c.dy, dy.data(), 1, NAN);
    storeFromF32(c.dy, dy.data(), 3, -0.0f);
    storeFromF32(c.dy, dy.data(), 5, INFINITY);
    storeFromF32(c.dy, dy.data(), 7, 0.0f);
  }
  std::map<std::string, Tensor> f;
  f.emplace("y", std::move(y));
  f.emplace("dy", std::move(dy));
  return f;
}

// A plan "eval" over inputs y (0) and dy (1): either one amp.softmax_grad or the chain.
Plan plan(const Case& c, bool fused) {
  Plan p;
  p.buffers.push_back({"y", c.y, c.shape, BufferKind::Input, std::nullopt});
  p.buffers.push_back({"dy", c.dy, c.shape, BufferKind::Input, std::nullopt});
  EntryPoint e;
  e.name = "eval";
  auto temp = [&](DType t, Shape s) {
    p.buffers.push_back({"t" + std::to_string(p.buffers.size()), t, std::move(s), BufferKind::Temp, std::nullopt});
    return static_cast<int32_t>(p.buffers.size() - 1);
  };
  auto step = [&](std::string op, std::vector<int32_t> in, int32_t out, AttrMap attrs = {}) {
    e.steps.push_back(PlanStep{std::move(op), std::move(in), {out}, std::move(attrs), "softmax_grad_test.mlir:1:1"});
    return out;
  };
  int32_t result;
  if (fused) {
    result = step("amp.softmax_grad", {0, 1}, temp(c.y, c.shape), {{"axis", c.axis}});
  } else {
    int32_t dy = 1;
    if (c.dy != c.y) dy = step("amp.cast", {1}, temp(c.y, c.shape));
    const int32_t prod = step("amp.mul", {dy, 0}, temp(c.y, c.shape));
    Shape kept = c.shape;
    kept[static_cast<size_t>(c.axis)] = 1;
    const int32_t s = step("amp.reduce_sum", {prod}, temp(c.y, kept),
                           {{"dims", std::vector<int64_t>{c.axis}}, {"keepdim", true}});
    const int32_t diff = step("amp.sub", {dy, s}, temp(c.y, c.shape));
    result = step("amp.mul", {0, diff}, temp(c.y, c.shape));
  }
  e.results = {result};
  e.resultNames = {"dx"};
  p.entries.push_back(std::move(e));
  return p;
}

Tensor runOn(Device device, const Case& c, bool fused, const std::map<std::string, Tensor>& in) {
  auto session = openSession(plan(c, fused), device);
  EXPECT_TRUE(session.ok()) << session.status();
  if (!session.ok()) return Tensor();
  auto out = session->run("eval", in, {});
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return Tensor();
  return std::move((*out)[0].tensor);
}

TEST(SoftmaxGrad, IsTheChainItReplacesBitForBit) {
  const Case cases[] = {
      {DType::F32, DType::F32, {7, 33}, 1},      {DType::F32, DType::BF16, {7, 33}, 1},
      {DType::F32, DType::F16, {7, 33}, 1},      {DType::BF16, DType::BF16, {7, 33}, 1},
      {DType::F16, DType::F16, {7, 33}, 1},      {DType::F32, DType::BF16, {4, 9, 5}, 1},
      {DType::BF16, DType::BF16, {4, 9, 5}, 0},  {DType::F32, DType::F32, {2, 3, 128}, 2},
      {DType::F16, DType::F16, {300}, 0},        {DType::F32, DType::BF16, {3, 1, 4}, 1},
      // f32 rows run 16 at a time on the cpu device: a partial block, rows of two sum blocks, threads.
      {DType::F32, DType::F32, {37, 300}, 1},    {DType::F32, DType::BF16, {1030, 128}, 1},
      {DType::F32, DType::F32, {3, 270001}, 1},  // rows of more than 2^18: one row a block
  };
  uint32_t seed = 1;
  for (const Case& c : cases)
    for (bool softmaxLike : {true, false}) {
      SCOPED_TRACE(std::string(dtypeName(c.y)) + "/" + std::string(dtypeName(c.dy)) + " " + shapeToString(c.shape) +
                   " axis " + std::to_string(c.axis) + (softmaxLike ? " softmax-like" : " any y"));
      const auto in = feeds(c, softmaxLike, seed++);
      const Tensor fused = runOn(Device::Reference, c, true, in), chain = runOn(Device::Reference, c, false, in);
      ASSERT_EQ(fused.nbytes(), chain.nbytes());
      for (int64_t i = 0; i < fused.numel(); ++i) {
        const float f = loadAsF32(c.y, fused.data(), i), w = loadAsF32(c.y, chain.data(), i);
        if (std::isnan(w)) {
          EXPECT_TRUE(std::isnan(f)) << "element " << i;  // NaN payloads are outside the contract
          continue;
        }
        ASSERT_EQ(std::memcmp(&f, &w, sizeof f), 0) << "element " << i << ": " << f << " vs the chain's " << w;
      }
      // The cpu device runs the same slices: its result is the reference's, bit for bit.
      const Tensor cpu = runOn(Device::Cpu, c, true, in);
      ASSERT_EQ(cpu.nbytes(), fused.nbytes());
      EXPECT_EQ(std::memcmp(cpu.data(), fused.data(), fused.nbytes()), 0);
    }
}

TEST(SoftmaxGrad, RefusesAGradWiderThanTheOutput) {
  const Case c{DType::BF16, DType::F32, {2, 4}, 1};
  auto session = openSession(plan(c, true), Device::Reference);
  if (!session.ok()) {  // the plan validator may refuse it before the kernel does
    EXPECT_NE(std::string(session.status().message()).find("softmax_grad"), std::string::npos) << session.status();
    return;
  }
  auto out = session->run("eval", feeds(c, true, 9), {});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(std::string(out.status().message()).find("bf16/f16 under an f32 output"), std::string::npos) << out.status();
}

}  // namespace
}  // namespace amp::rt
