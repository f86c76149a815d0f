// Sizes read from a bundle, checked before anything is allocated: every class of bad size the
// e2e bad_inputs scenario edits into a real bundle, here at the function that refuses it, so the
// sanitized CI subset (scripts/sanitize.sh --ci) sees the arithmetic itself.
#include "runtime/plan/PlanValidation.h"

#include <string>

#include "gtest/gtest.h"

namespace amp::rt {
namespace {

Plan planWith(Shape shape, DType dtype = DType::F32, BufferKind kind = BufferKind::Param) {
  Plan p;
  BufferDesc b;
  b.name = "w";
  b.dtype = dtype;
  b.shape = std::move(shape);
  b.kind = kind;
  p.buffers.push_back(b);
  return p;
}

void expectRefused(const absl::Status& s, const std::string& fragment) {
  EXPECT_FALSE(s.ok());
  EXPECT_NE(std::string(s.message()).find(fragment), std::string::npos) << s.message();
}

TEST(PlanValidation, BufferSizesAreCheckedWithoutOverflow) {
  const std::string limit = "is larger than the runtime's limit of 68719476736 bytes";
  expectRefused(validateBuffers(planWith({4, -1})), "buffer 'w' has a negative dimension");
  expectRefused(validateBuffers(planWith({int64_t{1} << 32, int64_t{1} << 32})), "buffer 'w' [4294967296, 4294967296] " + limit);
  expectRefused(validateBuffers(planWith({int64_t{1} << 21, int64_t{1} << 21, int64_t{1} << 21})), limit);
  expectRefused(validateBuffers(planWith({INT64_MAX, 2})), limit);
  expectRefused(validateBuffers(planWith({2, INT64_MAX})), limit);
  // The byte size, not the element count: 2^35 f32 elements are 2^37 bytes.
  expectRefused(validateBuffers(planWith({int64_t{1} << 35})), limit);
  EXPECT_TRUE(validateBuffers(planWith({int64_t{1} << 34})).ok()) << "exactly 2^36 bytes is allowed";
  EXPECT_TRUE(validateBuffers(planWith({int64_t{1} << 35}, DType::BF16)).ok());
  // A zero dimension makes any other dimension harmless (no division by zero either).
  EXPECT_TRUE(validateBuffers(planWith({0, INT64_MAX})).ok());
}

TEST(PlanValidation, MemoryIsCheckedAgainstTheLimitWithoutOverflow) {
  Plan p = planWith({int64_t{1} << 31});  // 8 GiB of params
  expectRefused(validateMemory(p, int64_t{4} << 30), "more than the memory limit of 4294967296 bytes (--memory-limit)");
  EXPECT_TRUE(validateMemory(p, int64_t{16} << 30).ok());
  // Temporaries live in the arenas, so they do not count twice.
  EXPECT_TRUE(validateMemory(planWith({int64_t{1} << 31}, DType::F32, BufferKind::Temp), 1 << 20).ok());
  // Arena sizes: negative, and two whose sum overflows int64.
  Plan q = planWith({4});
  EntryPoint e;
  e.name = "a";
  e.memory = MemoryLayout();
  e.memory->arenaBytes = -64;
  q.entries.push_back(e);
  expectRefused(validateMemory(q, INT64_MAX), "entry 'a': arena size out of range");
  q.entries[0].memory->arenaBytes = int64_t{1} << 62;
  q.entries.push_back(q.entries[0]);
  q.entries[1].name = "b";
  expectRefused(validateMemory(q, INT64_MAX), "entry 'b': arena size out of range");
}

}  // namespace
}  // namespace amp::rt
