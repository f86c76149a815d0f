// The cpu device's entries share one arena (runtime/devices/cpu/SharedArena.h): a session counts
// it once, sized for its largest entry, and an entry prepared before a bigger one grew it rebinds
// to the new storage. Alternating calls give the reference's bits.
#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/devices/Devices.h"
#include "runtime/exec/Session.h"
#include "runtime/numerics/Convert.h"

namespace amp::rt {
namespace {

constexpr int64_t kSmallRows = 4, kSmallCols = 64, kBigRows = 96, kBigCols = 1024;

// "small": p = softmax(x) + c (c a constant), s' = p + s with s' the new state s; results p, s'.
// "big": q = softmax(xb)^2 in bf16, d = s + s; results q, d. big's arena is far larger than small's.
Plan twoEntryPlan() {
  Plan plan;
  auto add = [&](std::string name, DType dtype, Shape shape, BufferKind kind) {
    plan.buffers.push_back({std::move(name), dtype, std::move(shape), kind, std::nullopt});
    return static_cast<int32_t>(plan.buffers.size() - 1);
  };
  const Shape small = {kSmallRows, kSmallCols}, big = {kBigRows, kBigCols};
  const int32_t x = add("x", DType::F32, small, BufferKind::Input), s = add("s", DType::F32, small, BufferKind::State),
                xb = add("xb", DType::BF16, big, BufferKind::Input);
  const int32_t soft = add("soft", DType::F32, small, BufferKind::Temp), c = add("c", DType::F32, small, BufferKind::Temp),
                p = add("p", DType::F32, small, BufferKind::Temp), s2 = add("s2", DType::F32, small, BufferKind::Temp);
  const int32_t u = add("u", DType::BF16, big, BufferKind::Temp), q = add("q", DType::BF16, big, BufferKind::Temp),
                d = add("d", DType::F32, small, BufferKind::Temp);
  AttrMap softmax;
  softmax.set("axis", int64_t{1});
  Tensor value(DType::F32, small);
  for (int64_t i = 0; i < value.numel(); ++i) value.as<float>()[i] = 0.25f * static_cast<float>(i % 7) - 0.5f;
  AttrMap constant;
  constant.set("value", value);

  EntryPoint first;
  first.name = "small";
  first.steps = {{"amp.softmax", {x}, {soft}, softmax, "shared.mlir:1:1"},
                 {"amp.constant", {}, {c}, constant, "shared.mlir:2:1"},
                 {"amp.add", {soft, c}, {p}, {}, "shared.mlir:3:1"},
                 {"amp.add", {p, s}, {s2}, {}, "shared.mlir:4:1"}};
  first.results = {p, s2};
  first.resultNames = {"p", "s2"};
  first.updates = {{s2, s}};
  EntryPoint second;
  second.name = "big";
  second.steps = {{"amp.softmax", {xb}, {u}, softmax, "shared.mlir:5:1"},
                  {"amp.mul", {u, u}, {q}, {}, "shared.mlir:6:1"},
                  {"amp.add", {s, s}, {d}, {}, "shared.mlir:7:1"}};
  second.results = {q, d};
  second.resultNames = {"q", "d"};
  plan.entries = {std::move(first), std::move(second)};
  return plan;
}

Tensor random(DType dtype, const Shape& shape, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 3.0f);
  Tensor t(dtype, shape);
  for (int64_t i = 0; i < t.numel(); ++i) storeFromF32(dtype, t.data(), i, normal(rng));
  return t;
}

// The bytes an entry needs in the arena: its buffers and the growth for its steps' scratch (this
// plan's steps keep no private scratch, so report().scratchBytes is all growth).
int64_t arenaNeed(const PreparedEntry& e) { return e.report().arenaBytes + e.report().scratchBytes; }

TEST(CpuSharedArena, EntriesShareOneArenaSizedForTheLargestAndGiveTheReferenceBits) {
  auto ref = openSession(twoEntryPlan(), Device::Reference);
  auto cpu = openSession(twoEntryPlan(), Device::Cpu);
  ASSERT_TRUE(ref.ok()) << ref.status();
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  std::mt19937 rng(5);
  // small, big, small again (after big grew the arena), big again: fresh inputs at every call, and
  // small's state update read by every later call.
  const char* order[] = {"small", "big", "small", "big"};
  for (int call = 0; call < 4; ++call) {
    const std::string name = order[call];
    SCOPED_TRACE("call " + std::to_string(call) + ": " + name);
    std::map<std::string, Tensor> feeds;  // the session binds every input at every call
    feeds.emplace("x", random(DType::F32, {kSmallRows, kSmallCols}, rng));
    feeds.emplace("xb", random(DType::BF16, {kBigRows, kBigCols}, rng));
    auto want = ref->run(name, feeds);
    auto got = cpu->run(name, feeds);
    ASSERT_TRUE(want.ok()) << want.status();
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(want->size(), got->size());
    for (size_t r = 0; r < want->size(); ++r)
      EXPECT_TRUE((*got)[r].tensor.bitwiseEquals((*want)[r].tensor)) << (*want)[r].name;

    auto small = cpu->prepared("small");
    ASSERT_TRUE(small.ok());
    EXPECT_EQ((**small).report().referenceSteps, 0);
    const int64_t smallNeed = arenaNeed(**small), smallOwn = (**small).workspaceBytes();
    EXPECT_GT(smallNeed, 0);
    EXPECT_GE(smallOwn, kSmallRows * kSmallCols * 4);  // the decoded constant
    if (call == 0) {  // only small is prepared (prepared() above would prepare big: not yet)
      EXPECT_EQ(cpu->executor().sharedWorkspaceBytes(), smallNeed);
      EXPECT_EQ(cpu->workspaceBytes(), smallNeed + smallOwn);
      continue;
    }
    auto big = cpu->prepared("big");
    ASSERT_TRUE(big.ok());
    EXPECT_EQ((**big).report().referenceSteps, 0);
    const int64_t bigNeed = arenaNeed(**big), bigOwn = (**big).workspaceBytes();
    EXPECT_GE(bigNeed, 3 * kBigRows * kBigCols * 2) << "xb, u and q may not all share bytes";
    EXPECT_GT(bigNeed, 2 * smallNeed);
    EXPECT_EQ(bigOwn, 0);
    // One arena for both, the larger: not the sum of the two.
    EXPECT_EQ(cpu->executor().sharedWorkspaceBytes(), std::max(smallNeed, bigNeed));
    EXPECT_EQ(cpu->workspaceBytes(), std::max(smallNeed, bigNeed) + smallOwn + bigOwn);
  }
  // The state small updated twice, read back from the session: the reference's bits too.
  ASSERT_EQ(ref->persistent().size(), 1u);
  EXPECT_TRUE(cpu->persistent()[0].tensor->bitwiseEquals(*ref->persistent()[0].tensor));
}

}  // namespace
}  // namespace amp::rt
