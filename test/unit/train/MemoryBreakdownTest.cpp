// The plan's memory split (runtime/plan/MemoryBreakdown.h) on a hand-built training step whose
// buffers and lifetimes are known: bytes by class, the temporaries at the arena's peak by phase,
// and that the params-and-state classes are what a session allocates and what a run reports.
#include <algorithm>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/devices/Devices.h"
#include "runtime/plan/MemoryBreakdown.h"
#include "runtime/plan/MemoryPlan.h"
#include "runtime/train/RunSummary.h"
#include "runtime/train/Trainer.h"

namespace amp::rt {
namespace {

// A step with one buffer of every class. Temporaries, none of which shares storage (no view, no
// elementwise step, no in-place update):
//   0 forward   h    = matmul(x, w)    f32 [4,2]   32 B, read by step 3 (backward): saved
//   1 forward   loss = mse_loss(h, y)  f32 []       4 B, an entry result: lives to the end
//   2 backward  xt   = transpose(x)    f32 [8,4]  128 B
//   3 backward  dw   = matmul(xt, h)   f32 [8,2]   64 B
//   4 update    gn   = reduce_sum(dw)  f32 []       4 B, an entry result
// Live per step: 32, 36, 164, 228, 72: the peak is step 3, in the backward.
Plan trainingStep() {
  Plan p;
  p.metadata = {{"model", "split"}};
  auto add = [&](std::string name, DType t, Shape s, BufferKind k, std::optional<InitSpec> init = std::nullopt) {
    p.buffers.push_back({std::move(name), t, std::move(s), k, std::move(init)});
    return static_cast<int32_t>(p.buffers.size() - 1);
  };
  int32_t x = add("x", DType::F32, {4, 8}, BufferKind::Input);
  int32_t y = add("y", DType::F32, {4, 2}, BufferKind::Label);
  int32_t w = add("w", DType::F32, {8, 2}, BufferKind::Param, InitSpec{"zeros", 1, 0});
  add("w.exp_avg", DType::F32, {8, 2}, BufferKind::State, InitSpec{"zeros", 1, 0});
  add("w.exp_avg_sq", DType::F32, {8, 2}, BufferKind::State, InitSpec{"zeros", 1, 0});
  add("w.grad_accum", DType::F32, {8, 2}, BufferKind::State, InitSpec{"zeros", 1, 0});
  add("w.bf16", DType::BF16, {8, 2}, BufferKind::State, InitSpec{"cast", 1, 0, "w"});
  add("amp.loss_scale", DType::F32, {}, BufferKind::State, InitSpec{"constant", 65536, 0});
  add("amp.step", DType::I64, {}, BufferKind::State, InitSpec{"zeros", 1, 0});
  int32_t h = add("%h", DType::F32, {4, 2}, BufferKind::Temp);
  int32_t loss = add("%loss", DType::F32, {}, BufferKind::Temp);
  int32_t xt = add("%xt", DType::F32, {8, 4}, BufferKind::Temp);
  int32_t dw = add("%dw", DType::F32, {8, 2}, BufferKind::Temp);
  int32_t gn = add("%gn", DType::F32, {}, BufferKind::Temp);
  AttrMap perm, all;
  perm.set("permutation", std::vector<int64_t>{1, 0});
  all.set("dims", std::vector<int64_t>{0, 1});
  all.set("keepdim", false);
  EntryPoint e;
  e.name = "train_step";
  e.steps = {{"amp.matmul", {x, w}, {h}, {}, "", "forward"},
             {"amp.mse_loss", {h, y}, {loss}, {}, "", "forward"},
             {"amp.transpose", {x}, {xt}, perm, "", "backward"},
             {"amp.matmul", {xt, h}, {dw}, {}, "", "backward"},
             {"amp.reduce_sum", {dw}, {gn}, all, "", "update"}};
  e.results = {loss, gn};
  e.resultNames = {"loss", "grad_norm"};
  p.entries.push_back(e);
  return p;
}

TEST(MemoryBreakdown, BytesByClass) {
  const Plan plan = trainingStep();
  const ClassBytes c = bytesByClass(plan);
  // Elements times element size, counted here by hand.
  EXPECT_EQ(c[BufferClass::Params], 16 * 4);
  EXPECT_EQ(c[BufferClass::OptimizerMoments], 2 * 16 * 4);
  EXPECT_EQ(c[BufferClass::GradientAccumulators], 16 * 4);
  EXPECT_EQ(c[BufferClass::WeightCopies], 16 * 2);
  EXPECT_EQ(c[BufferClass::ScalerAndCounters], 4 + 8);
  EXPECT_EQ(c[BufferClass::InputsAndLabels], 32 * 4 + 8 * 4);
  EXPECT_EQ(c[BufferClass::Constants], 0);
  EXPECT_FALSE(c.has(BufferClass::Constants));
  EXPECT_EQ(c[BufferClass::Temporaries], 0);  // the arena's, counted by entry
  EXPECT_EQ(c.buffers[static_cast<int>(BufferClass::OptimizerMoments)], 2);
  EXPECT_EQ(c.persistentBytes(), 64 + 128 + 64 + 32 + 12);
  const EntryPoint& e = *plan.findEntry("train_step");
  EXPECT_EQ(temporariesAllAtOnce(plan, e), 32 + 4 + 128 + 64 + 4);
  EXPECT_EQ(plannedArenaBytes(plan, e), planMemory(plan, e, constantsOutsideArena(plan, e)).arenaBytes);
}

TEST(MemoryBreakdown, PeakSplitByPhase) {
  const Plan plan = trainingStep();
  const PeakSplit p = peakSplit(plan, "train_step");
  EXPECT_EQ(p.step, 3);
  EXPECT_EQ(p.steps, 5);
  EXPECT_EQ(p.phase, "backward");
  EXPECT_EQ(p.savedActivations, 32);  // h, which the backward's matmul reads
  EXPECT_EQ(p.forwardOther, 4);       // the loss
  EXPECT_EQ(p.backward, 128 + 64);    // xt, dw
  EXPECT_EQ(p.update, 0);
  EXPECT_EQ(p.live, 228);
  EXPECT_EQ(p.savedActivations + p.forwardOther + p.backward + p.update, p.live);
  // The planner's own lifetimes (MemoryPlan::liveSteps) give the same peak, and its arena holds it.
  const EntryPoint& e = *plan.findEntry("train_step");
  const MemoryPlan m = planMemory(plan, e, constantsOutsideArena(plan, e));
  int64_t peak = 0;
  for (int64_t step = 0; step < p.steps; ++step) {
    int64_t live = 0;
    for (size_t b = 0; b < plan.buffers.size(); ++b)
      if (m.offset[b] >= 0 && m.liveSteps[b].first <= step && step <= m.liveSteps[b].second)
        live += plan.buffers[b].byteSize();
    peak = std::max(peak, live);
  }
  EXPECT_EQ(p.live, peak);
  EXPECT_EQ(p.arena, m.arenaBytes);
  EXPECT_GE(p.arena, p.live);
  EXPECT_EQ(peakSplit(plan, "eval").step, -1);  // no such entry
}

TEST(MemoryBreakdown, PersistentClassesAreWhatTheSessionAllocates) {
  const Plan plan = trainingStep();
  const int64_t planned = bytesByClass(plan).persistentBytes();
  for (Device device : {Device::Cpu, Device::Reference}) {
    auto s = openSession(plan, device);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(s->persistentBytes(), planned) << deviceName(device);
  }
}

// A run's report carries the plan's split next to what the device allocated: on the cpu device
// the params-and-state classes add up to persistent_bytes, and the summary says so.
TEST(MemoryBreakdown, ARunReportsThePlannedSplit) {
  const Plan plan = trainingStep();
  auto s = openSession(plan, Device::Cpu);
  ASSERT_TRUE(s.ok()) << s.status();
  Dataset d;
  d.name = "ramp";
  d.inputs = Tensor(DType::F32, {8, 8});
  d.labels = Tensor(DType::F32, {8, 2});
  for (int64_t i = 0; i < 64; ++i) d.inputs.as<float>()[i] = static_cast<float>(i % 5) - 2;
  for (int64_t i = 0; i < 16; ++i) d.labels.as<float>()[i] = 1;
  TrainOptions o;
  o.steps = 2;
  auto report = train(*s, d, nullptr, o, {});
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_TRUE(report->plannedMemory.has_value());
  const TrainReport::PlannedMemory& planned = *report->plannedMemory;
  EXPECT_EQ(report->persistentBytes, 300);
  EXPECT_EQ(planned.classes.persistentBytes(), report->persistentBytes);
  EXPECT_EQ(planned.arenaPeak.live, 228);
  EXPECT_EQ(planned.arenaPeak.savedActivations, 32);
  EXPECT_LE(planned.arenaPeak.arena, report->workspaceBytes);  // the allocated workspace holds the arena

  const JsonValue summary = runSummary(*report, TrainingConfig(), {"cpu", 4, true, false});
  const JsonValue* memory = summary.find("memory");
  ASSERT_NE(memory, nullptr);
  int64_t sum = 0;
  for (const JsonValue::Member& m : memory->find("persistent")->members()) sum += m.second.asInt64().value_or(-1);
  EXPECT_EQ(sum, summary.find("persistent_bytes")->asInt64());
  EXPECT_EQ(memory->find("persistent")->find("weight_copies")->asInt64(), 32);
  EXPECT_EQ(memory->find("arena_peak")->find("step")->asInt64(), 4);  // 1-based
  EXPECT_EQ(memory->find("arena_peak")->find("phase")->asString(), "backward");
  EXPECT_EQ(memory->find("arena_peak")->find("live_bytes")->asInt64(), 228);
}

}  // namespace
}  // namespace amp::rt
