// How the multi-tensor kernels' launches cover a list of tensors
// (runtime/devices/cuda/MultiTensor.h): every element of every tensor is in exactly one block,
// launches respect the argument block's capacity, and each tensor's partial-sum slots are
// consecutive and in chunk order. Host logic, tested without a GPU.
#include <map>
#include <set>

#include "gtest/gtest.h"
#include "runtime/devices/cuda/MultiTensor.h"

namespace amp::rt::cuda {
namespace {

// Checks the schedule's invariants and returns, per tensor, the chunks in the order they run.
std::map<int32_t, std::vector<int32_t>> checkCoverage(const MultiTensorSchedule& s, const std::vector<int64_t>& numels,
                                                      const MultiTensorLimits& limits, int depth) {
  const int maxTensors = limits.maxTensors ? limits.maxTensors : amp_mt_capacity(depth);
  std::map<int32_t, std::vector<int32_t>> chunks;
  int32_t slot = 0;
  for (const MultiTensorLaunch& l : s.launches) {
    EXPECT_FALSE(l.blocks.empty());
    EXPECT_LE(static_cast<int>(l.blocks.size()), limits.maxBlocks);
    EXPECT_LE(static_cast<int>(l.tensors.size()), maxTensors);
    EXPECT_EQ(l.firstSlot, slot);
    for (const MultiTensorBlock& b : l.blocks) {
      const int32_t t = l.tensors.at(b.tensor);
      EXPECT_GE(slot, s.tensorFirstSlot.at(t));
      EXPECT_LT(slot, s.tensorFirstSlot.at(t + 1));
      EXPECT_EQ(slot - s.tensorFirstSlot[t], b.chunk) << "a tensor's slots follow its chunks";
      chunks[t].push_back(b.chunk);
      ++slot;
    }
  }
  EXPECT_EQ(slot, s.slots);
  for (size_t t = 0; t < numels.size(); ++t) {
    const int64_t expected = numels[t] == 0 ? 0 : (numels[t] - 1) / limits.chunk + 1;
    EXPECT_EQ(static_cast<int64_t>(chunks[static_cast<int32_t>(t)].size()), expected) << "tensor " << t;
    for (int64_t c = 0; c < expected; ++c) EXPECT_EQ(chunks[static_cast<int32_t>(t)][c], c);
  }
  return chunks;
}

TEST(CudaMultiTensor, TheMlpsParamsFitOneLaunch) {
  // 784x256, 256, 256x256, 256, 256x10, 10: 4 + 1 + 1 + 1 + 1 + 1 chunks.
  const std::vector<int64_t> numels = {784 * 256, 256, 256 * 256, 256, 2560, 10};
  auto s = scheduleMultiTensor(numels, 5);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->launches.size(), 1u);
  EXPECT_EQ(s->slots, 9);
  EXPECT_EQ(s->tensorFirstSlot, (std::vector<int32_t>{0, 4, 5, 6, 7, 8, 9}));
  checkCoverage(*s, numels, {}, 5);
}

TEST(CudaMultiTensor, BlocksOverflowIntoTheNextLaunchMidTensor) {
  MultiTensorLimits limits;
  limits.chunk = 10;
  limits.maxBlocks = 4;
  const std::vector<int64_t> numels = {35, 5, 0, 61};
  auto s = scheduleMultiTensor(numels, 2, limits);
  ASSERT_TRUE(s.ok()) << s.status();
  // 4 + 1 + 0 + 7 = 12 blocks: three launches of 4; tensor 3 spans the last two.
  ASSERT_EQ(s->launches.size(), 3u);
  EXPECT_EQ(s->launches[0].tensors, (std::vector<int32_t>{0}));
  EXPECT_EQ(s->launches[1].tensors, (std::vector<int32_t>{1, 3}));
  EXPECT_EQ(s->launches[2].tensors, (std::vector<int32_t>{3}));
  EXPECT_EQ(s->tensorFirstSlot[2], s->tensorFirstSlot[3]) << "an empty tensor owns no slot";
  checkCoverage(*s, numels, limits, 2);
}

TEST(CudaMultiTensor, TensorCapacityStartsANewLaunch) {
  MultiTensorLimits limits;
  limits.maxTensors = 3;
  std::vector<int64_t> numels(10, 100);
  auto s = scheduleMultiTensor(numels, 4, limits);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->launches.size(), 4u);  // 3 + 3 + 3 + 1
  checkCoverage(*s, numels, limits, 4);
  // The default capacity of the argument block: 43 tensors of 5 pointers.
  std::vector<int64_t> many(100, 7);
  auto d = scheduleMultiTensor(many, 5);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->launches.size(), 3u);  // 43 + 43 + 14
  EXPECT_EQ(d->launches[0].tensors.size(), static_cast<size_t>(amp_mt_capacity(5)));
  checkCoverage(*d, many, {}, 5);
}

TEST(CudaMultiTensor, RefusesWhatTheArgumentBlockCannotHold) {
  EXPECT_FALSE(scheduleMultiTensor(std::vector<int64_t>{-1}, 1).ok());
  EXPECT_FALSE(scheduleMultiTensor(std::vector<int64_t>{1}, 6).ok());
  MultiTensorLimits tooMany;
  tooMany.maxTensors = amp_mt_capacity(5) + 1;
  EXPECT_FALSE(scheduleMultiTensor(std::vector<int64_t>{1}, 5, tooMany).ok());
  // 2^31 chunks of 65536 elements: more slots than an int indexes.
  auto s = scheduleMultiTensor(std::vector<int64_t>{int64_t{1} << 47}, 1);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("2^31 - 1 chunks"), std::string::npos) << s.status();
}

TEST(CudaMultiTensor, FillsTheKernelsArgumentBlock) {
  MultiTensorLimits limits;
  limits.chunk = 10;
  limits.maxBlocks = 3;
  const std::vector<int64_t> numels = {25, 12};
  auto s = scheduleMultiTensor(numels, 2, limits);
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s->launches.size(), 2u);
  int storage[2][2];
  AmpTensorList<2> list;
  fillTensorList<2>(s->launches[1], numels, [&](int d, int32_t t) { return static_cast<void*>(&storage[t][d]); }, list);
  // Launch 1 holds tensor 1's two chunks.
  EXPECT_EQ(list.blocks, 2);
  EXPECT_EQ(list.firstSlot, 3);
  EXPECT_EQ(list.numel[0], 12);
  EXPECT_EQ(list.ptr[0][0], &storage[1][0]);
  EXPECT_EQ(list.ptr[1][0], &storage[1][1]);
  EXPECT_EQ(list.blockTensor[0], 0);
  EXPECT_EQ(list.blockChunk[0], 0);
  EXPECT_EQ(list.blockChunk[1], 1);
  EXPECT_LE(sizeof(AmpTensorList<5>), 4096u - 64u) << "kernel parameters are limited to 4 KB";
}

}  // namespace
}  // namespace amp::rt::cuda
