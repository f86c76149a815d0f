// The fused gradient pipeline (amp-fuse-grad-pipeline): amp.grad_stats and updates that unscale,
// clip and write the weight copy themselves give, on the reference and on the cpu device, the
// bits of the unfused ops they replace (widen, unscale_check, global_norm, clip_grads, the update,
// the cast), with and without a loss scale, with a scale of exactly 1, and on a skipped step.
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <tuple>

#include "gtest/gtest.h"
#include "runtime/devices/Devices.h"
#include "runtime/exec/Session.h"
#include "runtime/numerics/Convert.h"

namespace amp::rt {
namespace {

const std::vector<Shape> kShapes = {{300, 70}, {70}, {33, 5}};
const std::vector<DType> kGradTypes = {DType::BF16, DType::F32, DType::F16};
constexpr double kMaxNorm = 1.0;

struct Case {
  bool scaled;
  float scale;
  bool withInf;
};

struct Builder {
  Plan plan;
  EntryPoint entry;
  int32_t add(const std::string& name, DType dtype, Shape shape, BufferKind kind = BufferKind::Temp) {
    plan.buffers.push_back({name, dtype, std::move(shape), kind, std::nullopt});
    return static_cast<int32_t>(plan.buffers.size() - 1);
  }
  void step(std::string op, std::vector<int32_t> in, std::vector<int32_t> out, AttrMap attrs = {}) {
    PlanStep s{std::move(op), std::move(in), std::move(out), std::move(attrs), "pipeline.mlir:1:1"};
    entry.steps.push_back(std::move(s));
  }
  void result(int32_t id, std::string name) {
    entry.results.push_back(id);
    entry.resultNames.push_back(std::move(name));
  }
};

AttrMap sgdAttrs(bool fused, bool scaled) {
  AttrMap a;
  a.set("momentum", 0.9);
  a.set("nesterov", false);
  a.set("weight_decay", 1e-4);
  if (fused) {
    a.set("unscales", scaled);
    a.set("max_norm", kMaxNorm);
  }
  return a;
}

// The step as the training passes emit it (fused = false) or as amp-fuse-grad-pipeline leaves it.
Plan pipelinePlan(bool fused, bool scaled) {
  Builder b;
  std::vector<int32_t> grads, params, buffers;
  for (size_t i = 0; i < kShapes.size(); ++i) {
    grads.push_back(b.add("g" + std::to_string(i), kGradTypes[i], kShapes[i], BufferKind::Input));
    params.push_back(b.add("p" + std::to_string(i), DType::F32, kShapes[i], BufferKind::Input));
    buffers.push_back(b.add("b" + std::to_string(i), DType::F32, kShapes[i], BufferKind::Input));
  }
  const int32_t scale = scaled ? b.add("scale", DType::F32, {}, BufferKind::Input) : -1;
  const int32_t lr = b.add("lr", DType::F32, {}, BufferKind::Input);
  const int32_t found = b.add("found_inf", DType::F32, {});
  const int32_t norm = b.add("norm", DType::F32, {});
  std::vector<int32_t> sources = grads;
  if (!fused) {
    std::vector<int32_t> unscaled, clipped;
    for (size_t i = 0; i < kShapes.size(); ++i) {
      if (kGradTypes[i] != DType::F32) {
        sources[i] = b.add("w" + std::to_string(i), DType::F32, kShapes[i]);
        b.step("amp.cast", {grads[i]}, {sources[i]});
      }
      unscaled.push_back(b.add("u" + std::to_string(i), DType::F32, kShapes[i]));
      clipped.push_back(b.add("c" + std::to_string(i), DType::F32, kShapes[i]));
    }
    std::vector<int32_t> in = sources, out = unscaled;
    if (scaled) in.push_back(scale);
    out.push_back(found);
    b.step("amp.unscale_check", in, out);
    b.step("amp.global_norm", unscaled, {norm});
    in = unscaled;
    in.push_back(norm);
    AttrMap clip;
    clip.set("max_norm", kMaxNorm);
    b.step("amp.clip_grads", in, clipped, clip);
    sources = clipped;
  } else {
    std::vector<int32_t> in = grads;
    if (scaled) in.push_back(scale);
    AttrMap stats;
    stats.set("unscales", scaled);
    b.step("amp.grad_stats", in, {found, norm}, stats);
  }
  for (size_t i = 0; i < kShapes.size(); ++i) {
    const std::string n = std::to_string(i);
    const int32_t p2 = b.add("p2_" + n, DType::F32, kShapes[i]), b2 = b.add("b2_" + n, DType::F32, kShapes[i]);
    const int32_t copy = b.add("copy" + n, DType::BF16, kShapes[i]);
    std::vector<int32_t> in = {params[i], sources[i], lr, found, buffers[i]};
    if (fused && scaled) in.push_back(scale);
    if (fused) in.push_back(norm);
    std::vector<int32_t> out = {p2, b2};
    if (fused) out.push_back(copy);
    b.step("amp.sgd_update", in, out, sgdAttrs(fused, scaled));
    if (!fused) b.step("amp.cast", {p2}, {copy});
    b.result(p2, "p2_" + n);
    b.result(b2, "b2_" + n);
    b.result(copy, "copy" + n);
  }
  b.result(found, "found_inf");
  b.result(norm, "norm");
  b.entry.name = "eval";
  b.plan.entries.push_back(std::move(b.entry));
  return std::move(b.plan);
}

std::map<std::string, Tensor> feeds(const Case& c) {
  std::map<std::string, Tensor> f;
  std::mt19937 rng(11);
  std::normal_distribution<float> grad(0.0f, c.scaled ? 300.0f : 0.3f), value(0.0f, 1.0f);
  for (size_t i = 0; i < kShapes.size(); ++i) {
    Tensor g32(DType::F32, kShapes[i]);
    for (int64_t k = 0; k < g32.numel(); ++k) g32.as<float>()[k] = grad(rng);
    if (c.withInf && i == 2) g32.as<float>()[17] = INFINITY;
    Tensor g(kGradTypes[i], kShapes[i]);
    convertBuffer(DType::F32, g32.data(), g.dtype(), g.data(), g.numel());
    f.emplace("g" + std::to_string(i), std::move(g));
    for (const char* state : {"p", "b"}) {
      Tensor t(DType::F32, kShapes[i]);
      for (int64_t k = 0; k < t.numel(); ++k) t.as<float>()[k] = value(rng);
      f.emplace(state + std::to_string(i), std::move(t));
    }
  }
  Tensor lr(DType::F32, {});
  lr.as<float>()[0] = 0.05f;
  f.emplace("lr", std::move(lr));
  if (c.scaled) {
    Tensor s(DType::F32, {});
    s.as<float>()[0] = c.scale;
    f.emplace("scale", std::move(s));
  }
  return f;
}

std::vector<NamedTensor> run(const Plan& plan, Device device, const Case& c) {
  auto session = openSession(plan, device);
  EXPECT_TRUE(session.ok()) << session.status();
  if (!session.ok()) return {};
  auto out = session->run("eval", feeds(c));
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? std::move(*out) : std::vector<NamedTensor>{};
}

TEST(FusedGradPipeline, GivesTheUnfusedBitsOnTheReferenceAndTheCpu) {
  const Case cases[] = {{true, 1024.0f, false}, {true, 1.0f, false}, {true, 65536.0f, true}, {false, 1.0f, false},
                        {false, 1.0f, true}};
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.scaled ? "scale " + std::to_string(c.scale) : "no loss scaling") +
                 (c.withInf ? ", with an inf (skipped step)" : ""));
    const Plan unfused = pipelinePlan(false, c.scaled), fused = pipelinePlan(true, c.scaled);
    const std::vector<NamedTensor> expected = run(unfused, Device::Reference, c);
    ASSERT_EQ(expected.size(), 3 * kShapes.size() + 2);
    EXPECT_EQ(expected[expected.size() - 2].tensor.as<float>()[0], c.withInf ? 1.0f : 0.0f);
    if (!c.withInf) EXPECT_TRUE(std::isfinite(expected.back().tensor.as<float>()[0]));
    for (const auto& [plan, device, what] : {std::tuple{&fused, Device::Reference, "fused, reference"},
                                             {&unfused, Device::Cpu, "unfused, cpu"},
                                             {&fused, Device::Cpu, "fused, cpu"}}) {
      SCOPED_TRACE(what);
      const std::vector<NamedTensor> got = run(*plan, device, c);
      ASSERT_EQ(got.size(), expected.size());
      for (size_t r = 0; r < got.size(); ++r)
        EXPECT_TRUE(got[r].tensor.bitwiseEquals(expected[r].tensor)) << expected[r].name;
    }
  }
}

TEST(FusedGradPipeline, AnUpdateWhoseOperandsDoNotFitItsAttributesIsRefused) {
  Plan plan = pipelinePlan(true, true);
  plan.entries[0].steps.back().attrs.set("unscales", false);  // one operand too many for the layout
  for (Device device : {Device::Reference, Device::Cpu}) {
    auto session = openSession(plan, device);
    absl::Status status = session.ok() ? session->run("eval", feeds({true, 2.0f, false})).status() : session.status();
    EXPECT_FALSE(status.ok());
    EXPECT_NE(status.message().find("amp.sgd_update"), std::string::npos) << status;
  }
}

}  // namespace
}  // namespace amp::rt
