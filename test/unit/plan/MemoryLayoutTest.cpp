// A stored memory layout is adopted only when it is sound for its entry: the planner's own layout
// always is, and every corruption a bundle could carry (out of the arena, misaligned, overlapping
// live buffers, illegal or oversized views, values read after being overwritten, missing or
// double placements, forged in-place updates) is refused with an error naming the buffer.
#include <algorithm>
#include <string>

#include "gtest/gtest.h"
#include "runtime/plan/Bundle.h"
#include "runtime/plan/MemoryLayout.h"
#include "runtime/plan/MemoryPlan.h"

namespace amp::rt {
namespace {

// neg(x) -> a; tanh(x) -> e (live to the end); exp(a) -> b (over a, which dies there);
// reshape b -> c; matmul(c, e) -> d; sub(w, w) -> w.new, computed into w in place;
// relu(d) -> f (over d).
struct Fixture {
  Plan plan;
  enum : int32_t { X, W, A, B, C, D, E, F, WNEW };
  Fixture() {
    auto add = [&](std::string name, Shape shape, BufferKind kind) {
      plan.buffers.push_back({std::move(name), DType::F32, std::move(shape), kind, std::nullopt});
    };
    add("x", {4, 8}, BufferKind::Input);
    add("w", {4, 8}, BufferKind::Param);
    add("a", {4, 8}, BufferKind::Temp);
    add("b", {4, 8}, BufferKind::Temp);
    add("c", {8, 4}, BufferKind::Temp);
    add("d", {8, 8}, BufferKind::Temp);
    add("e", {4, 8}, BufferKind::Temp);
    add("f", {8, 8}, BufferKind::Temp);
    add("w.new", {4, 8}, BufferKind::Temp);
    EntryPoint entry;
    entry.name = "train_step";
    auto step = [&](std::string op, std::vector<int32_t> in, std::vector<int32_t> out) {
      PlanStep s;
      s.op = std::move(op);
      s.code = opCodeOf(s.op);
      s.operands = std::move(in);
      s.results = std::move(out);
      entry.steps.push_back(std::move(s));
    };
    step("amp.neg", {X}, {A});
    step("amp.tanh", {X}, {E});
    step("amp.exp", {A}, {B});
    step("amp.reshape", {B}, {C});
    step("amp.matmul", {C, E}, {D});
    step("amp.sub", {W, W}, {WNEW});
    step("amp.relu", {D}, {F});
    entry.results = {F, E};
    entry.resultNames = {"f", "e"};
    entry.updates = {{WNEW, W}};
    plan.entries.push_back(std::move(entry));
  }
  const EntryPoint& entry() const { return plan.entries[0]; }
  MemoryLayout planned() const { return layoutOf(planMemory(plan, entry(), constantsOutsideArena(plan, entry())), entry()); }
};

int64_t& offsetOf(MemoryLayout& layout, int32_t id) {
  for (auto& [b, offset] : layout.offsets)
    if (b == id) return offset;
  static int64_t none = -1;
  ADD_FAILURE() << "buffer " << id << " has no offset";
  return none;
}

void eraseOffset(MemoryLayout& layout, int32_t id) {
  auto& o = layout.offsets;
  o.erase(std::remove_if(o.begin(), o.end(), [&](const auto& pair) { return pair.first == id; }), o.end());
}

void expectRefused(const Fixture& f, const MemoryLayout& layout, const std::string& needle) {
  auto adopted = adoptMemoryLayout(f.plan, f.entry(), layout);
  ASSERT_FALSE(adopted.ok()) << "accepted a layout that should fail with: " << needle;
  EXPECT_NE(std::string(adopted.status().message()).find(needle), std::string::npos) << adopted.status();
  EXPECT_NE(std::string(adopted.status().message()).find("entry 'train_step': memory layout"), std::string::npos);
}

TEST(MemoryLayout, ThePlannersLayoutIsAdoptedAsPlanned) {
  Fixture f;
  const MemoryPlan planned = planMemory(f.plan, f.entry(), constantsOutsideArena(f.plan, f.entry()));
  MemoryLayout layout = layoutOf(planned, f.entry());
  // What the planner decided for this entry: b over a, c a view of b, w.new computed into w.
  EXPECT_EQ(planned.aliasOf[Fixture::B], Fixture::A);
  EXPECT_EQ(planned.aliasOf[Fixture::C], Fixture::B);
  ASSERT_EQ(planned.inPlaceUpdates.size(), 1u);
  auto adopted = adoptMemoryLayout(f.plan, f.entry(), layout);
  ASSERT_TRUE(adopted.ok()) << adopted.status();
  EXPECT_EQ(adopted->offset, planned.offset);
  EXPECT_EQ(adopted->aliasOf, planned.aliasOf);
  EXPECT_EQ(adopted->inPlaceUpdates, planned.inPlaceUpdates);
  EXPECT_EQ(adopted->arenaBytes, planned.arenaBytes);
  EXPECT_EQ(adopted->unplannedBytes, planned.unplannedBytes);
}

TEST(MemoryLayout, RoundTripsThroughTheBundle) {
  Fixture f;
  f.plan.entries[0].memory = f.planned();
  const std::string path = ::testing::TempDir() + "/layout.ampx";
  ASSERT_TRUE(writeBundle(path, f.plan).ok());
  auto back = readBundle(path);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_TRUE(back->entries[0].memory.has_value());
  const MemoryLayout &a = *f.plan.entries[0].memory, &b = *back->entries[0].memory;
  EXPECT_EQ(b.arenaBytes, a.arenaBytes);
  EXPECT_EQ(b.alignment, a.alignment);
  EXPECT_EQ(b.offsets, a.offsets);
  EXPECT_EQ(b.views, a.views);
  EXPECT_EQ(b.inPlaceUpdates, a.inPlaceUpdates);
}

TEST(MemoryLayout, RefusesBuffersOutsideTheArena) {
  Fixture f;
  MemoryLayout layout = f.planned();
  layout.arenaBytes -= 64;
  expectRefused(f, layout, "does not fit");
  layout = f.planned();
  offsetOf(layout, Fixture::D) = layout.arenaBytes;  // starts at the end
  expectRefused(f, layout, "'d' (256 bytes) at offset");
  layout = f.planned();
  offsetOf(layout, Fixture::D) = -64;
  expectRefused(f, layout, "does not fit");
  layout = f.planned();
  offsetOf(layout, Fixture::D) += 4;  // in bounds, misaligned
  layout.arenaBytes += 64;
  expectRefused(f, layout, "64-byte alignment");
  layout = f.planned();
  layout.alignment = 16;
  expectRefused(f, layout, "alignment 16");
  layout = f.planned();
  layout.arenaBytes = int64_t{1} << 40;
  expectRefused(f, layout, "outside [0,");
}

// Found by fuzz/bundle.cpp: the cpu device allocates the arena with aligned_alloc, whose size must
// be a multiple of the alignment; a 129-byte arena reached it (an ASan invalid-aligned-alloc report).
TEST(MemoryLayout, RefusesAnArenaThatIsNotWholeAlignmentUnits) {
  Fixture f;
  MemoryLayout layout = f.planned();
  ASSERT_EQ(layout.arenaBytes % layout.alignment, 0);
  layout.arenaBytes += 1;  // every buffer still fits
  expectRefused(f, layout, "is not a multiple of its 64-byte alignment");
}

TEST(MemoryLayout, RefusesLiveBuffersThatShareBytes) {
  Fixture f;
  MemoryLayout layout = f.planned();
  // e lives from step 1 to the end, a from step 0 to 2: both at offset 0 would clobber e.
  offsetOf(layout, Fixture::E) = offsetOf(layout, Fixture::A);
  expectRefused(f, layout, "are live at the same time and share arena bytes");
  // Partially overlapping: d placed 64 bytes into e's range.
  layout = f.planned();
  offsetOf(layout, Fixture::D) = offsetOf(layout, Fixture::E) + 64;
  layout.arenaBytes = std::max(layout.arenaBytes, offsetOf(layout, Fixture::D) + 256);
  expectRefused(f, layout, "share arena bytes");
}

TEST(MemoryLayout, RefusesMissingAndDoublePlacements) {
  Fixture f;
  MemoryLayout layout = f.planned();
  eraseOffset(layout, Fixture::E);
  expectRefused(f, layout, "'e', written by step 1 (amp.tanh), has no place");
  layout = f.planned();
  layout.offsets.push_back(layout.offsets.front());
  expectRefused(f, layout, "is placed twice");
  layout = f.planned();
  layout.offsets.emplace_back(Fixture::X, 0);  // an input: no step writes it
  expectRefused(f, layout, "which no step of the entry writes");
  layout = f.planned();
  layout.offsets.emplace_back(99, 0);
  expectRefused(f, layout, "buffer id 99");
}

TEST(MemoryLayout, RefusesIllegalViews) {
  Fixture f;
  MemoryLayout layout = f.planned();
  // d (a matmul result) over its operand c: a GEMM may not write over what it reads.
  eraseOffset(layout, Fixture::D);
  layout.views.insert(layout.views.begin() + 2, {Fixture::D, Fixture::C});
  expectRefused(f, layout, "'d' cannot share the storage of 'c'");
  // The reshape's result must be a view, not a buffer of its own.
  layout = f.planned();
  layout.views.erase(layout.views.begin() + 1);
  layout.offsets.emplace_back(Fixture::C, 0);
  expectRefused(f, layout, "reshape result 'c' must be a view");
  // Views out of step order.
  layout = f.planned();
  std::swap(layout.views[0], layout.views[1]);
  expectRefused(f, layout, "not in step order");
}

TEST(MemoryLayout, RefusesReadsOfOverwrittenValues) {
  // tanh(a) -> e after exp wrote b over a: e's step reads a after its storage was overwritten.
  Fixture f;
  EntryPoint& entry = f.plan.entries[0];
  entry.steps[1].operands = {Fixture::A};
  std::swap(entry.steps[1], entry.steps[2]);  // neg, exp (b over a), tanh(a)
  MemoryLayout layout = f.planned();
  // The planner itself never does this (a does not die at exp), so force it.
  ASSERT_TRUE(adoptMemoryLayout(f.plan, entry, layout).ok());
  eraseOffset(layout, Fixture::B);
  layout.views.insert(layout.views.begin(), {Fixture::B, Fixture::A});
  expectRefused(f, layout, "step 2 (amp.tanh) reads 'a' after its storage was overwritten");
}

TEST(MemoryLayout, RefusesForgedInPlaceUpdates) {
  Fixture f;
  MemoryLayout layout = f.planned();
  layout.inPlaceUpdates = {{Fixture::D, Fixture::W}};
  expectRefused(f, layout, "is not one of the entry's updates");
  // w.new computed into w while a later step still reads w's old value.
  EntryPoint& entry = f.plan.entries[0];
  PlanStep readW;
  readW.op = "amp.neg";
  readW.code = opCodeOf(readW.op);
  readW.operands = {Fixture::W};
  f.plan.buffers.push_back({"g", DType::F32, {4, 8}, BufferKind::Temp, std::nullopt});
  readW.results = {static_cast<int32_t>(f.plan.buffers.size() - 1)};
  entry.steps.push_back(readW);
  entry.results.push_back(readW.results[0]);
  entry.resultNames.push_back("g");
  MemoryLayout planned = layoutOf(planMemory(f.plan, entry, constantsOutsideArena(f.plan, entry)), entry);
  ASSERT_TRUE(planned.inPlaceUpdates.empty()) << "the planner keeps w.new apart while w is still read";
  planned.inPlaceUpdates = {{Fixture::WNEW, Fixture::W}};
  eraseOffset(planned, Fixture::WNEW);
  expectRefused(f, planned, "reads 'w' after its storage was overwritten");
}


// Entries past kFirstFitMaxBuffers temporaries are placed in step order by a best-fit free list.
// A plan shaped like a training step (forward results kept for a backward that frees them in
// reverse, and short-lived scratch between them): the layout is sound (adopted, so no two live
// buffers share a byte), and reuse brings the arena near the largest live set.
TEST(MemoryLayout, LargeEntriesArePlacedInStepOrderSoundly) {
  constexpr int32_t kLayers = 3000;  // 2 temporaries per layer forward, 1 per layer backward
  Plan plan;
  plan.buffers.push_back({"x", DType::F32, {16, 16}, BufferKind::Input, std::nullopt});
  EntryPoint entry;
  entry.name = "train_step";
  auto temp = [&](int64_t rows) {
    plan.buffers.push_back({"t" + std::to_string(plan.buffers.size()), DType::F32, {rows, 16}, BufferKind::Temp,
                            std::nullopt});
    return static_cast<int32_t>(plan.buffers.size() - 1);
  };
  auto step = [&](std::string op, std::vector<int32_t> in, std::vector<int32_t> out) {
    PlanStep s;
    s.op = std::move(op);
    s.code = opCodeOf(s.op);
    s.operands = std::move(in);
    s.results = std::move(out);
    entry.steps.push_back(std::move(s));
  };
  std::vector<int32_t> kept;
  int32_t h = 0;
  for (int32_t l = 0; l < kLayers; ++l) {
    const int32_t scratch = temp(16 + l % 7), act = temp(16);
    step("amp.matmul", {h, h}, {scratch});  // a matmul result is never written over its operand
    step("amp.matmul", {scratch, h}, {act});
    kept.push_back(act);
    h = act;
  }
  int32_t grad = h;
  for (int32_t l = kLayers - 1; l > 0; --l) {
    const int32_t g = temp(16);
    step("amp.matmul", {grad, kept[l - 1]}, {g});
    grad = g;
  }
  entry.results = {grad};
  entry.resultNames = {"g"};
  plan.entries.push_back(std::move(entry));
  const EntryPoint& e = plan.entries[0];
  const MemoryPlan planned = planMemory(plan, e, constantsOutsideArena(plan, e));
  ASSERT_GT(plan.buffers.size() - 1, kFirstFitMaxBuffers);  // the step-order path
  auto adopted = adoptMemoryLayout(plan, e, layoutOf(planned, e));
  ASSERT_TRUE(adopted.ok()) << adopted.status();
  // The activations (kLayers x 1 KiB) are all live at the turn; scratch and gradients reuse the
  // freed bytes, so the arena stays well below the sum of all temporaries.
  EXPECT_GE(planned.arenaBytes, int64_t{kLayers} * 16 * 16 * 4);
  EXPECT_LT(planned.arenaBytes, planned.unplannedBytes / 2) << planned.arenaBytes << " of " << planned.unplannedBytes;
}

// softmax, log_softmax and softmax_grad write their result over operand 0 when it dies there (every
// device reads a slice before writing it); not when it is read later, and not over operand 1.
TEST(MemoryPlan, SoftmaxAndItsGradientWriteOverADyingOperandZero) {
  for (const char* op : {"amp.softmax", "amp.log_softmax", "amp.softmax_grad"}) {
    for (bool readLater : {false, true}) {
      SCOPED_TRACE(std::string(op) + (readLater ? ", operand read later" : ""));
      Plan plan;
      auto add = [&](std::string name, BufferKind kind) {
        plan.buffers.push_back({std::move(name), DType::F32, {4, 8}, kind, std::nullopt});
        return static_cast<int32_t>(plan.buffers.size() - 1);
      };
      const int32_t x = add("x", BufferKind::Input), a = add("a", BufferKind::Temp), b = add("b", BufferKind::Temp),
                    c = add("c", BufferKind::Temp), d = add("d", BufferKind::Temp);
      EntryPoint e;
      e.name = "f";
      auto step = [&](std::string name, std::vector<int32_t> in, int32_t out) {
        PlanStep s;
        s.op = std::move(name);
        s.code = opCodeOf(s.op);
        s.operands = std::move(in);
        s.results = {out};
        e.steps.push_back(std::move(s));
      };
      step("amp.neg", {x}, a);
      step("amp.neg", {x}, b);
      step(op, std::string(op) == "amp.softmax_grad" ? std::vector<int32_t>{a, b} : std::vector<int32_t>{a}, c);
      step("amp.add", {c, readLater ? a : c}, d);
      e.results = {d, b};
      e.resultNames = {"d", "b"};
      plan.entries.push_back(std::move(e));
      const EntryPoint& entry = plan.entries[0];
      const MemoryPlan planned = planMemory(plan, entry);
      EXPECT_EQ(planned.aliasOf[c], readLater ? -1 : a);
      auto adopted = adoptMemoryLayout(plan, entry, layoutOf(planned, entry));
      EXPECT_TRUE(adopted.ok()) << adopted.status();
    }
  }
}

}  // namespace
}  // namespace amp::rt
