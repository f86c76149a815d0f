// The multi-tensor norm kernels of runtime/kernels/cuda/TrainKernels.cu, their own source
// run on the host through BlockEmulation.h: the block-to-chunk mapping (amp_mt_block) over the
// launches runtime/devices/cuda/MultiTensor.h schedules, the per-block tree of amp_mt_block_sum
// (through amp_mt_sum_squares_f32 and amp_mt_grad_stats_f32) and amp_global_norm's combine,
// against the reference's amp.global_norm. The reference adds each tensor's squares in one
// sequential sum and the device in a tree per 65,536-element chunk (docs/cuda-device.md): with
// integer gradients every sum is exact and the two agree bit for bit; other values show the tree.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "gtest/gtest.h"
#include "runtime/devices/cuda/MultiTensor.h"
#include "test/unit/kernels/KernelTestSupport.h"
#include "test/unit/common/BlockEmulation.h"
#include "runtime/kernels/math/HostDevice.h"
#include "runtime/kernels/cuda/DeviceIO.cuh"
#include "runtime/kernels/cuda/MultiTensorArgs.h"
#include "runtime/kernels/math/TrainMath.h"
#include "runtime/kernels/cuda/TrainArgs.h"
#include "runtime/kernels/cuda/TrainKernels.cu"

namespace amp::rt {
namespace {

using namespace kerneltest;

enum class Pass { SumSquares, GradStats };

struct DeviceNorm {
  float norm = 0.0f;
  float foundInf = 0.0f;
  std::vector<float> partials;  // one per block, in the schedule's slot order
};

// What CudaTrainActions.cpp launches for amp.global_norm (or the fused amp.grad_stats without a
// scale): the schedule's launches of the partials kernel, then amp_global_norm on one block.
DeviceNorm deviceNorm(const std::vector<std::vector<float>>& grads, cuda::MultiTensorLimits limits, Pass pass,
                      emu::Schedule schedule = emu::Schedule::Forward) {
  std::vector<int64_t> numels;
  for (const auto& g : grads) numels.push_back(static_cast<int64_t>(g.size()));
  auto plan = cuda::scheduleMultiTensor(numels, 1, limits);
  EXPECT_TRUE(plan.ok()) << plan.status();
  DeviceNorm out;
  if (!plan.ok()) return out;
  out.partials.assign(static_cast<size_t>(plan->slots), std::nanf(""));
  for (const cuda::MultiTensorLaunch& launch : plan->launches) {
    AmpTensorList<1> list;
    cuda::fillTensorList<1>(launch, numels,
                            [&](int, int32_t t) { return const_cast<float*>(grads[static_cast<size_t>(t)].data()); },
                            list);
    const unsigned blocks = static_cast<unsigned>(launch.blocks.size());
    EXPECT_EQ(emu::launch({blocks, 1, 1}, {AMP_MT_BLOCK_THREADS, 1, 1},
                          [&] {
                            if (pass == Pass::SumSquares) amp_mt_sum_squares_f32(list, out.partials.data());
                            else amp_mt_grad_stats_f32(list, nullptr, &out.foundInf, out.partials.data());
                          },
                          schedule),
              "");
  }
  std::vector<int> slotRange;
  for (size_t t = 0; t < grads.size(); ++t) {
    slotRange.push_back(plan->tensorFirstSlot[t]);
    slotRange.push_back(plan->tensorFirstSlot[t + 1]);
  }
  std::vector<float> norms(grads.size());
  EXPECT_EQ(emu::launch({1, 1, 1}, {256, 1, 1},
                        [&] {
                          amp_global_norm(out.partials.data(), slotRange.data(), static_cast<int>(grads.size()),
                                          norms.data(), &out.norm);
                        },
                        schedule),
            "");
  return out;
}

float referenceNorm(const std::vector<std::vector<float>>& grads) {
  std::vector<Tensor> tensors;
  for (const auto& g : grads) tensors.push_back(fromValues(DType::F32, {static_cast<int64_t>(g.size())}, g));
  std::vector<const Tensor*> operands;
  for (const Tensor& t : tensors) operands.push_back(&t);
  const Tensor norm = reference("amp.global_norm", operands, AttrMap{}, {{DType::F32, {}}})[0];
  return norm.as<float>()[0];
}

std::vector<float> integers(int64_t n, std::mt19937& rng) {
  std::uniform_int_distribution<int> value(-3, 3);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = static_cast<float>(value(rng));
  return v;
}

// The limits that cut the list into several launches, a tensor continuing into the next one.
const cuda::MultiTensorLimits kLimits[] = {{}, {AMP_MT_CHUNK, 2, 0}, {AMP_MT_CHUNK, 320, 2}};

// Squares of at most 9 over at most 200,000 elements: every sum is an exact integer in f32.
TEST(CudaTrainKernel, ExactNormsMatchTheReferenceBitForBitOverEveryLaunchSplit) {
  std::mt19937 rng(67);
  const std::vector<int64_t> sizes = {1, 0, 255, AMP_MT_CHUNK, AMP_MT_CHUNK + 1, 7, 200000, 3 * AMP_MT_CHUNK};
  std::vector<std::vector<float>> grads;
  for (int64_t n : sizes) grads.push_back(integers(n, rng));
  const float want = referenceNorm(grads);
  for (const cuda::MultiTensorLimits& limits : kLimits)
    for (Pass pass : {Pass::SumSquares, Pass::GradStats}) {
      SCOPED_TRACE(testing::Message() << "max blocks " << limits.maxBlocks << " max tensors " << limits.maxTensors
                                      << (pass == Pass::GradStats ? " grad_stats" : " sum_squares"));
      const DeviceNorm got = deviceNorm(grads, limits, pass);
      EXPECT_EQ(floatBits(got.norm), floatBits(want)) << got.norm << " vs reference " << want;
      EXPECT_EQ(got.foundInf, 0.0f);
      // Every slot written: the mapping covers every chunk of every tensor once.
      for (size_t s = 0; s < got.partials.size(); ++s) EXPECT_FALSE(std::isnan(got.partials[s])) << "slot " << s;
    }
}

// One non-finite element decides the norm (inf, or NaN) and, in grad_stats, sets found_inf.
TEST(CudaTrainKernel, NonFiniteGradientsMatchTheReference) {
  std::mt19937 rng(71);
  for (float bad : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(), std::nanf("")}) {
    std::vector<std::vector<float>> grads = {integers(1000, rng), integers(AMP_MT_CHUNK + 5, rng), integers(3, rng)};
    grads[1][AMP_MT_CHUNK + 2] = bad;
    const float want = referenceNorm(grads);
    const DeviceNorm got = deviceNorm(grads, {}, Pass::GradStats);
    EXPECT_EQ(std::isnan(got.norm), std::isnan(want)) << bad;
    if (!std::isnan(want)) {
      EXPECT_EQ(floatBits(got.norm), floatBits(want)) << bad;
    }
    EXPECT_EQ(got.foundInf, 1.0f) << bad;
  }
}

// The documented order: inside a chunk, 256 strided sums and a halving shared-memory tree: squares
// 2^24, 1, 0, 1, 0, 1, 0, 1 on threads 0-7 meet as 2^24 + (1 + 1 + 1 + 1), one ulp of the norm
// above 4096, where the reference's sequential sum (and a tree of neighbours) loses the ones.
// Across a tensor's chunks, their slots in order (2^24 first: the ones are lost, as in the reference).
TEST(CudaTrainKernel, SumsInTheDocumentedTree) {
  const std::vector<std::vector<float>> grads = {{4096.0f, 1.0f, 0.0f, 1.0f, 0.0f, 1.0f, 0.0f, 1.0f}};
  const DeviceNorm tree = deviceNorm(grads, {}, Pass::SumSquares);
  EXPECT_EQ(tree.partials, (std::vector<float>{16777220.0f}));
  EXPECT_EQ(tree.norm, std::nextafter(4096.0f, 5000.0f));
  EXPECT_EQ(referenceNorm(grads), 4096.0f);
  std::vector<std::vector<float>> chunks = {std::vector<float>(2 * AMP_MT_CHUNK + 1, 0.0f)};
  chunks[0][0] = 4096.0f;
  chunks[0][AMP_MT_CHUNK] = 1.0f;
  chunks[0][2 * AMP_MT_CHUNK] = 1.0f;
  const DeviceNorm got = deviceNorm(chunks, {}, Pass::SumSquares);
  EXPECT_EQ(got.partials, (std::vector<float>{16777216.0f, 1.0f, 1.0f}));
  EXPECT_EQ(got.norm, 4096.0f);
  EXPECT_EQ(referenceNorm(chunks), 4096.0f);
}

// Random values: within the summation-order bound of the reference, and the same bits when the
// emulated threads and blocks run in reverse (no race between them).
TEST(CudaTrainKernel, RandomNormsAreWithinTheBoundAndDeterministic) {
  std::mt19937 rng(73);
  std::uniform_real_distribution<float> value(-2.0f, 2.0f);
  std::vector<std::vector<float>> grads;
  for (int64_t n : {300, 70000, 5}) {
    std::vector<float> g(static_cast<size_t>(n));
    for (float& x : g) x = value(rng);
    grads.push_back(g);
  }
  const float want = referenceNorm(grads);
  const DeviceNorm forward = deviceNorm(grads, kLimits[2], Pass::SumSquares);
  EXPECT_NEAR(forward.norm, want, want * 1e-4f);
  const DeviceNorm reverse = deviceNorm(grads, kLimits[2], Pass::SumSquares, emu::Schedule::Reverse);
  EXPECT_EQ(floatBits(reverse.norm), floatBits(forward.norm));
  EXPECT_EQ(reverse.partials, forward.partials);
}

}  // namespace
}  // namespace amp::rt
