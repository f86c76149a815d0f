// Launch configuration of the generated CUDA kernels (runtime/devices/cuda/LaunchConfig.h): the
// vector width per step, the work items and the capped grid of the grid-stride loops. Host logic,
// tested without a GPU.
#include "gtest/gtest.h"
#include "runtime/devices/cuda/LaunchConfig.h"

namespace amp::rt::cuda {
namespace {

TEST(CudaLaunchConfig, VectorWidthMovesSixteenBytesOfTheWidestOperand) {
  EXPECT_EQ(vectorWidth(4, 1 << 20, false), 4);   // f32: float4
  EXPECT_EQ(vectorWidth(2, 1 << 20, false), 8);   // f16/bf16 only: 8 halves
  EXPECT_EQ(vectorWidth(1, 1 << 20, false), 16);  // i1 only
  // Element counts that are not a multiple keep the width: the kernel has a scalar tail.
  EXPECT_EQ(vectorWidth(4, 1001, false), 4);
}

TEST(CudaLaunchConfig, ScalarWhereVectorsDoNotApply) {
  EXPECT_EQ(vectorWidth(4, 1 << 20, true), 1);  // column kernel (row reductions)
  EXPECT_EQ(vectorWidth(2, 7, false), 1);       // fewer elements than one vector
  EXPECT_EQ(vectorWidth(2, 8, false), 8);
  EXPECT_EQ(vectorWidth(0, 1024, false), 1);
  EXPECT_EQ(vectorWidth(3, 1024, false), 1);   // does not divide 16 bytes
  EXPECT_EQ(vectorWidth(32, 1024, false), 1);  // wider than one access
}

TEST(CudaLaunchConfig, WorkItemsCountThePartialVector) {
  EXPECT_EQ(workItems(8, 4), 2);
  EXPECT_EQ(workItems(10, 4), 3);  // two vectors + a 2-element tail
  EXPECT_EQ(workItems(5, 1), 5);
  EXPECT_EQ(workItems(0, 4), 0);
  EXPECT_EQ(workItems(5, 0), 5);  // a width below 1 is scalar
}

TEST(CudaLaunchConfig, GridCoversTheWorkUntilTheDeviceIsFull) {
  constexpr int kH100Sms = 132;
  EXPECT_EQ(gridStrideLaunch(0, kH100Sms).blocks, 0);  // nothing to launch
  EXPECT_EQ(gridStrideLaunch(1, kH100Sms).blocks, 1);
  EXPECT_EQ(gridStrideLaunch(256, kH100Sms).blocks, 1);
  EXPECT_EQ(gridStrideLaunch(257, kH100Sms).blocks, 2);
  for (int64_t work : {int64_t{1}, int64_t{1000}, int64_t{100000}, int64_t{270336}}) {
    const LaunchConfig c = gridStrideLaunch(work, kH100Sms);
    EXPECT_EQ(c.threads, kBlockThreads);
    EXPECT_GE(c.blocks * c.threads, work) << work;                // one thread per item
    EXPECT_LT((c.blocks - 1) * c.threads, work) << work;          // and no idle block
  }
  // Beyond one full wave the grid stops growing: 132 SMs x 8 resident blocks of 256 threads.
  EXPECT_EQ(gridStrideLaunch(int64_t{1} << 40, kH100Sms).blocks, 132 * 8);
  EXPECT_EQ(gridStrideLaunch(int64_t{1} << 40, 108).blocks, 108 * 8);  // A100
  EXPECT_EQ(gridStrideLaunch(int64_t{1} << 40, 0).blocks, kBlocksPerMultiprocessor);
}

}  // namespace
}  // namespace amp::rt::cuda
