// A step's run-only scratch is placed in arena bytes that no buffer live at that step holds, at
// the lowest such offset, and the arena grows only when no gap fits: checked by brute force on
// random entries, with the planner's and the validated stored layout's liveness.
#include <algorithm>
#include <random>
#include <tuple>
#include <string>

#include "gtest/gtest.h"
#include "runtime/plan/MemoryLayout.h"
#include "runtime/plan/MemoryPlan.h"
#include "runtime/plan/StepScratch.h"

namespace amp::rt {
namespace {

int64_t aligned(int64_t n) { return (n + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment; }

// A random entry: each step reads one or two earlier values (the input or temporaries) and writes
// a new temporary; elementwise adds may reuse a dying operand, reshapes are views.
Plan randomPlan(std::mt19937& rng, int steps) {
  Plan plan;
  plan.buffers.push_back({"x", DType::F32, {16, 16}, BufferKind::Input, std::nullopt});
  EntryPoint entry;
  entry.name = "train_step";
  std::vector<int32_t> values = {0};
  for (int s = 0; s < steps; ++s) {
    const int32_t a = values[std::uniform_int_distribution<size_t>(0, values.size() - 1)(rng)];
    const int kind = std::uniform_int_distribution<int>(0, 3)(rng);
    PlanStep step;
    const int32_t id = static_cast<int32_t>(plan.buffers.size());
    Shape shape = plan.buffers[a].shape;
    if (kind == 0) {
      step.op = "amp.reshape";
      shape = {shape[0] * shape[1]};
      shape.push_back(1);
      step.operands = {a};
    } else if (kind == 1) {
      step.op = "amp.add";
      step.operands = {a, a};
    } else {
      step.op = "amp.matmul";
      const int32_t b = values[std::uniform_int_distribution<size_t>(0, values.size() - 1)(rng)];
      step.operands = {a, b};
      shape = {std::uniform_int_distribution<int64_t>(1, 64)(rng), std::uniform_int_distribution<int64_t>(1, 64)(rng)};
    }
    plan.buffers.push_back({"t" + std::to_string(s), DType::F32, shape, BufferKind::Temp, std::nullopt});
    step.code = opCodeOf(step.op);
    step.results = {id};
    entry.steps.push_back(std::move(step));
    values.push_back(id);
  }
  entry.results = {values.back()};
  entry.resultNames = {"y"};
  plan.entries.push_back(std::move(entry));
  return plan;
}

void checkPlacement(const Plan& plan, const MemoryPlan& memory, const std::vector<int64_t>& bytes) {
  const StepScratch placed = placeStepScratch(plan, memory, bytes);
  ASSERT_EQ(placed.offset.size(), bytes.size());
  EXPECT_GE(placed.arenaBytes, memory.arenaBytes);
  EXPECT_EQ(placed.arenaBytes % kArenaAlignment, 0);
  int64_t needed = aligned(memory.arenaBytes);
  for (size_t s = 0; s < bytes.size(); ++s) {
    SCOPED_TRACE("step " + std::to_string(s));
    if (bytes[s] == 0) {
      EXPECT_EQ(placed.offset[s], -1);
      continue;
    }
    // The bytes of every buffer live at s, by brute force.
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (size_t id = 0; id < memory.offset.size(); ++id)
      if (memory.offset[id] >= 0 && memory.liveSteps[id].first <= int64_t(s) && int64_t(s) <= memory.liveSteps[id].second)
        busy.push_back({memory.offset[id], memory.offset[id] + plan.buffers[id].byteSize()});
    auto fits = [&](int64_t at) {
      for (auto [lo, hi] : busy)
        if (at < hi && lo < at + bytes[s]) return false;
      return true;
    };
    const int64_t at = placed.offset[s];
    ASSERT_GE(at, 0);
    EXPECT_EQ(at % kArenaAlignment, 0);
    EXPECT_TRUE(fits(at)) << "scratch at " << at << " overlaps a live buffer";
    EXPECT_LE(at + bytes[s], placed.arenaBytes);
    for (int64_t lower = 0; lower < at; lower += kArenaAlignment)  // the lowest aligned offset that fits
      EXPECT_FALSE(fits(lower)) << "a gap at " << lower << " was free";
    needed = std::max(needed, at + aligned(bytes[s]));
  }
  EXPECT_EQ(placed.arenaBytes, needed) << "the arena grew beyond what the placements need";
}

TEST(StepScratch, GoesIntoBytesNoLiveBufferHoldsAtTheLowestOffset) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    const Plan plan = randomPlan(rng, std::uniform_int_distribution<int>(1, 40)(rng));
    const EntryPoint& entry = plan.entries[0];
    const MemoryPlan planned = planMemory(plan, entry, constantsOutsideArena(plan, entry));
    auto adopted = adoptMemoryLayout(plan, entry, layoutOf(planned, entry));
    ASSERT_TRUE(adopted.ok()) << adopted.status();
    // The planner's liveness and the stored layout's validated liveness agree.
    for (size_t id = 0; id < plan.buffers.size(); ++id)
      if (planned.offset[id] >= 0) EXPECT_EQ(planned.liveSteps[id], adopted->liveSteps[id]) << "buffer " << id;
    std::vector<int64_t> bytes(entry.steps.size());
    for (int64_t& b : bytes)
      b = std::uniform_int_distribution<int>(0, 2)(rng) == 0 ? 0 : std::uniform_int_distribution<int64_t>(1, 20000)(rng);
    checkPlacement(plan, planned, bytes);
    checkPlacement(plan, *adopted, bytes);
  }
}

TEST(StepScratch, AScratchThatFitsAGapDoesNotGrowTheArena) {
  // x -> a (4 KiB) -> b (64 B) -> c (64 B) -> d (4 KiB): a and d share offset 0 (never live
  // together), so at step 2 (b -> c) the first 4 KiB are free.
  Plan plan;
  plan.buffers.push_back({"x", DType::F32, {8}, BufferKind::Input, std::nullopt});
  plan.buffers.push_back({"a", DType::F32, {1024}, BufferKind::Temp, std::nullopt});
  plan.buffers.push_back({"b", DType::F32, {16}, BufferKind::Temp, std::nullopt});
  plan.buffers.push_back({"c", DType::F32, {16}, BufferKind::Temp, std::nullopt});
  plan.buffers.push_back({"d", DType::F32, {1024}, BufferKind::Temp, std::nullopt});
  EntryPoint entry;
  entry.name = "f";
  for (int32_t in = 0; in < 4; ++in) {
    PlanStep s;
    s.op = "amp.matmul";
    s.code = opCodeOf(s.op);
    s.operands = {in, in};
    s.results = {in + 1};
    entry.steps.push_back(std::move(s));
  }
  entry.results = {4};
  entry.resultNames = {"d"};
  plan.entries.push_back(std::move(entry));
  const MemoryPlan memory = planMemory(plan, plan.entries[0]);
  ASSERT_EQ(memory.offset[1], 0);
  ASSERT_EQ(memory.offset[4], 0);
  ASSERT_EQ(memory.arenaBytes, 4096 + 64 + 64);
  StepScratch placed = placeStepScratch(plan, memory, {0, 0, 4096, 0});
  EXPECT_EQ(placed.offset[2], 0);
  EXPECT_EQ(placed.arenaBytes, memory.arenaBytes);
  // At step 1 a and b are live: the scratch goes past b and the arena grows by what sticks out.
  placed = placeStepScratch(plan, memory, {0, 4096, 0, 0});
  EXPECT_EQ(placed.offset[1], 4096 + 64);
  EXPECT_EQ(placed.arenaBytes, 4096 + 64 + 4096);
  checkPlacement(plan, memory, {0, 4096, 0, 0});
  checkPlacement(plan, memory, {100000, 1, 64, 4096});
}

}  // namespace
}  // namespace amp::rt
