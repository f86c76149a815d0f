// The grad-stats kernel: amp.unscale_check followed by amp.global_norm over its unscaled gradients
// runs as one pass over each gradient on the cpu device, and still gives the reference's bits for
// the unscaled gradients, found_inf and the norm (with and without a loss scale, with an inf).
#include <cmath>
#include <random>

#include "gtest/gtest.h"
#include "runtime/devices/cpu/CpuExecutor.h"
#include "runtime/exec/Session.h"
#include "runtime/devices/Devices.h"

namespace amp::rt {
namespace {

struct StatsRun {
  std::vector<NamedTensor> results;
  int64_t fused = 0;
};

StatsRun runStats(Device device, bool withScale, bool withInf) {
  const std::vector<Shape> shapes = {{300, 70}, {70}, {33, 5}, {1}};
  Plan plan;
  EntryPoint e;
  e.name = "eval";
  PlanStep check{"amp.unscale_check", {}, {}, {}, "stats.mlir:1:1"};
  for (size_t i = 0; i < shapes.size(); ++i) {
    plan.buffers.push_back({"g" + std::to_string(i), DType::F32, shapes[i], BufferKind::Input, std::nullopt});
    check.operands.push_back(static_cast<int32_t>(i));
  }
  if (withScale) {
    check.operands.push_back(static_cast<int32_t>(plan.buffers.size()));
    plan.buffers.push_back({"scale", DType::F32, {}, BufferKind::Input, std::nullopt});
  }
  PlanStep norm{"amp.global_norm", {}, {}, {}, "stats.mlir:2:1"};
  for (size_t i = 0; i < shapes.size(); ++i) {
    const int32_t id = static_cast<int32_t>(plan.buffers.size());
    plan.buffers.push_back({"u" + std::to_string(i), DType::F32, shapes[i], BufferKind::Temp, std::nullopt});
    check.results.push_back(id);
    norm.operands.push_back(id);
    e.results.push_back(id);
    e.resultNames.push_back("u" + std::to_string(i));
  }
  const int32_t found = static_cast<int32_t>(plan.buffers.size());
  plan.buffers.push_back({"found_inf", DType::F32, {}, BufferKind::Temp, std::nullopt});
  check.results.push_back(found);
  const int32_t total = static_cast<int32_t>(plan.buffers.size());
  plan.buffers.push_back({"norm", DType::F32, {}, BufferKind::Temp, std::nullopt});
  norm.results.push_back(total);
  e.steps = {check, norm};
  e.results.insert(e.results.end(), {found, total});
  e.resultNames.insert(e.resultNames.end(), {"found_inf", "norm"});
  plan.entries.push_back(e);

  std::map<std::string, Tensor> feeds;
  std::mt19937 rng(9);
  std::normal_distribution<float> normal(0.0f, 300.0f);
  for (size_t i = 0; i < shapes.size(); ++i) {
    Tensor g(DType::F32, shapes[i]);
    for (int64_t k = 0; k < g.numel(); ++k) g.as<float>()[k] = normal(rng);
    if (withInf && i == 2) g.as<float>()[17] = INFINITY;
    feeds.emplace("g" + std::to_string(i), std::move(g));
  }
  if (withScale) {
    Tensor s(DType::F32, {});
    s.as<float>()[0] = 1024.0f;
    feeds.emplace("scale", std::move(s));
  }
  StatsRun run;
  auto session = openSession(plan, device);
  EXPECT_TRUE(session.ok()) << session.status();
  if (!session.ok()) return run;  // failed above; no results to compare
  auto out = session->run("eval", feeds);
  EXPECT_TRUE(out.ok()) << out.status();
  if (out.ok()) run.results = std::move(*out);
  if (device == Device::Cpu) {
    auto prepared = session->prepared("eval");
    EXPECT_TRUE(prepared.ok()) << prepared.status();
    if (prepared.ok()) run.fused = (**prepared).report().fusedGradStats;
  }
  return run;
}

TEST(CpuGradStats, OnePassGivesTheReferenceBits) {
  for (bool withScale : {false, true})
    for (bool withInf : {false, true}) {
      SCOPED_TRACE(std::string(withScale ? "scaled" : "unscaled") + (withInf ? ", with inf" : ""));
      StatsRun ref = runStats(Device::Reference, withScale, withInf), cpu = runStats(Device::Cpu, withScale, withInf);
      EXPECT_EQ(cpu.fused, 1) << "the norm did not take its sums from the unscale pass";
      ASSERT_EQ(ref.results.size(), cpu.results.size());
      for (size_t r = 0; r < ref.results.size(); ++r)
        EXPECT_TRUE(cpu.results[r].tensor.bitwiseEquals(ref.results[r].tensor)) << ref.results[r].name;
      EXPECT_EQ(cpu.results[cpu.results.size() - 2].tensor.as<float>()[0], withInf ? 1.0f : 0.0f);
    }
}

}  // namespace
}  // namespace amp::rt
