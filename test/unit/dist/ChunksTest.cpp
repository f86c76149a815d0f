// ZeRO-1's chunking (runtime/dist/Chunks.h): chunk r of a tensor of n elements over N ranks is
// elements [r*c, min((r+1)*c, n)) with c = ceil(n/N), zero-padded; buckets travel rank-major.
#include "runtime/dist/Chunks.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

namespace amp::rt {
namespace {

TEST(Chunks, LengthIsTheCeiling) {
  EXPECT_EQ(chunkLength(7, 3), 3);
  EXPECT_EQ(chunkLength(6, 3), 2);
  EXPECT_EQ(chunkLength(2, 5), 1);
  EXPECT_EQ(chunkLength(0, 4), 0);
  EXPECT_EQ(chunkLength(200704, 3), 66902);
  // A hostile plan's `ranks` near 2^63 must not overflow (the naive (n + ranks - 1) / ranks does).
  EXPECT_EQ(chunkLength(12, std::numeric_limits<int64_t>::max()), 1);
  EXPECT_EQ(chunkLength(std::numeric_limits<int64_t>::max(), 2), int64_t{1} << 62);
}

TEST(Chunks, RankChunksArePaddedWithZeros) {
  const std::vector<float> whole = {1, 2, 3, 4, 5, 6, 7};
  std::vector<float> chunk(3, -1.0f);
  copyRankChunk(whole.data(), 7, 3, 2, sizeof(float), chunk.data());
  EXPECT_EQ(chunk, (std::vector<float>{7, 0, 0}));
  // Over 5 ranks a 2-element tensor leaves ranks 2..4 only padding.
  std::vector<float> tiny(1, -1.0f);
  copyRankChunk(whole.data(), 2, 5, 4, sizeof(float), tiny.data());
  EXPECT_EQ(tiny, (std::vector<float>{0}));
}

TEST(Chunks, BucketsTravelRankMajorAndRebuildTheWholeTensors) {
  const std::vector<float> a = {1, 2, 3, 4, 5, 6, 7}, b = {10, 20};
  const ChunkedBucket bucket = chunkBucket({7, 2}, 3, sizeof(float));
  EXPECT_EQ(bucket.chunk, (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(bucket.blockElements, 4);
  std::vector<float> blocks(12, -1.0f);
  packBlocks(bucket, {a.data(), b.data()}, blocks.data());
  EXPECT_EQ(blocks, (std::vector<float>{1, 2, 3, 10, 4, 5, 6, 20, 7, 0, 0, 0}));
  std::vector<float> ca(3), cb(1);
  unpackBlock(bucket, blocks.data() + 4, {ca.data(), cb.data()});
  EXPECT_EQ(ca, (std::vector<float>{4, 5, 6}));
  EXPECT_EQ(cb, (std::vector<float>{20}));
  std::vector<float> block(4);
  packBlock(bucket, {ca.data(), cb.data()}, block.data());
  EXPECT_EQ(block, (std::vector<float>{4, 5, 6, 20}));
  std::vector<float> wa(7, -1.0f), wb(2, -1.0f);
  unpackBlocks(bucket, blocks.data(), {wa.data(), wb.data()});
  EXPECT_EQ(wa, a);
  EXPECT_EQ(wb, b);
}

TEST(Chunks, AStepCompiledForAnotherJobSizeIsRefused) {
  auto one = makeSingleProcessCommunicator();
  EXPECT_TRUE(checkJobSize(nullptr, 1, "amp.all_gather").ok());
  EXPECT_TRUE(checkJobSize(one.get(), 1, "amp.all_gather").ok());
  absl::Status s = checkJobSize(one.get(), 2, "amp.all_gather");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("compiled for 2 rank(s)"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("mpirun -np 2"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace amp::rt
