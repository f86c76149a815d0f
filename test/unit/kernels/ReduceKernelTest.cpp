// amp_reduce_{sum,mean,max}_<T> (runtime/kernels/cuda/ReduceKernels.cu), its own source run
// on the host through BlockEmulation.h, against the reference executor's amp.reduce_sum,
// amp.reduce_mean and amp.reduce_max: every result bit for bit, in f32, bf16 and f16, for every
// sorted set of reduced dims of several shapes (odd sizes, empty dims, a scalar), with signed zeros,
// infinities and NaN, on grids smaller than the output (the kernel's grid-stride loop).
#include <algorithm>
#include <limits>
#include <random>

#include "gtest/gtest.h"
#include "test/unit/kernels/KernelTestSupport.h"
#include "test/unit/common/BlockEmulation.h"
#include "runtime/kernels/math/HostDevice.h"
#include "runtime/kernels/math/SumOrder.h"
#include "runtime/kernels/cuda/DeviceIO.cuh"
#include "runtime/kernels/cuda/ReduceArgs.h"
#include "runtime/kernels/cuda/ReduceKernels.cu"

namespace amp::rt {
namespace {

using namespace kerneltest;

using ReduceKernel = void (*)(const void*, void*, AmpReduceShape);
// By op (sum, mean, max) and type code.
const ReduceKernel kKernels[3][3] = {
    {amp_reduce_sum_f32, amp_reduce_sum_bf16, amp_reduce_sum_f16},
    {amp_reduce_mean_f32, amp_reduce_mean_bf16, amp_reduce_mean_f16},
    {amp_reduce_max_f32, amp_reduce_max_bf16, amp_reduce_max_f16},
};
const char* kOps[3] = {"amp.reduce_sum", "amp.reduce_mean", "amp.reduce_max"};

// The argument block as runtime/devices/cuda/CudaReduceActions.cpp fills it.
AmpReduceShape reduceShape(const Shape& shape, const std::vector<int64_t>& dims) {
  AmpReduceShape s = {};
  const int rank = static_cast<int>(shape.size());
  std::vector<long long> strides(shape.size());
  long long stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= shape[d];
  }
  s.outputs = 1;
  s.reducedCount = 1;
  for (int d = 0; d < rank; ++d) {
    const bool reduced = std::find(dims.begin(), dims.end(), d) != dims.end();
    if (reduced) {
      s.reducedSize[s.reducedDims] = shape[d];
      s.reducedStride[s.reducedDims++] = strides[d];
      s.reducedCount *= shape[d];
    } else {
      s.keptSize[s.keptDims] = shape[d];
      s.keptStride[s.keptDims++] = strides[d];
      s.outputs *= shape[d];
    }
  }
  return s;
}

Tensor deviceReduce(int op, const Tensor& x, const std::vector<int64_t>& dims, unsigned blocks) {
  const AmpReduceShape s = reduceShape(x.shape(), dims);
  Tensor out(x.dtype(), {s.outputs});
  const ReduceKernel kernel = kKernels[op][typeCode(x.dtype())];
  EXPECT_EQ(emu::launch({blocks, 1, 1}, {256, 1, 1}, [&] { kernel(x.data(), out.data(), s); }), "");
  return out;
}

std::vector<float> randomValues(int64_t n, bool specials, std::mt19937& rng) {
  std::uniform_real_distribution<float> value(-100.0f, 100.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = value(rng);
  if (specials)
    for (float& x : v) {
      const unsigned r = rng() % 97;
      if (r == 0) x = std::numeric_limits<float>::infinity();
      if (r == 1) x = -std::numeric_limits<float>::infinity();
      if (r == 2) x = std::nanf("");
      if (r == 3) x = -0.0f;
    }
  return v;
}

// Every sorted subset of [0, rank).
std::vector<std::vector<int64_t>> dimSets(int rank) {
  std::vector<std::vector<int64_t>> sets;
  for (int mask = 0; mask < (1 << rank); ++mask) {
    std::vector<int64_t> dims;
    for (int d = 0; d < rank; ++d)
      if (mask & (1 << d)) dims.push_back(d);
    sets.push_back(dims);
  }
  return sets;
}

void expectMatchesReference(int op, const Tensor& x, const std::vector<int64_t>& dims) {
  const AmpReduceShape s = reduceShape(x.shape(), dims);
  if (op == 2 && s.reducedCount == 0 && s.outputs > 0) return;  // both refuse a max of nothing
  Shape outShape;
  for (int d = 0; d < x.rank(); ++d)
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) outShape.push_back(x.shape()[d]);
  const Tensor ref = reference(kOps[op], {&x}, AttrMap{{"dims", dims}}, {{x.dtype(), outShape}})[0];
  // A grid smaller than the output, and one that leaves blocks idle.
  for (unsigned blocks : {1u, 3u}) {
    SCOPED_TRACE(testing::Message() << kOps[op] << " blocks " << blocks);
    expectSameBits(deviceReduce(op, x, dims, blocks), ref, kOps[op]);
  }
}

TEST(CudaReduceKernel, EveryDimSetOfSeveralShapesMatchesTheReferenceBitForBit) {
  std::mt19937 rng(41);
  const std::vector<Shape> shapes = {{}, {0}, {1}, {257}, {3, 0, 4}, {7, 300}, {2, 3, 5, 7}, {300, 3}, {1, 5, 1, 9}};
  for (DType t : {DType::F32, DType::BF16, DType::F16})
    for (const Shape& shape : shapes)
      for (bool specials : {false, true}) {
        const Tensor x = fromValues(t, shape, randomValues(numElements(shape), specials, rng));
        for (const std::vector<int64_t>& dims : dimSets(static_cast<int>(shape.size())))
          for (int op = 0; op < 3; ++op) {
            SCOPED_TRACE(testing::Message() << name(t) << " shape " << shapeToString(shape) << " dims "
                                            << shapeToString(dims) << (specials ? " with inf/NaN" : ""));
            expectMatchesReference(op, x, dims);
            if (HasFatalFailure()) return;
          }
      }
}

// Sums whose bits tell the order: 1 + 1 + 2^24 is 2^24 + 2, while 2^24 + 1 rounds back to 2^24,
// so only row-major order gives these two column sums (a reversed or tree order swaps them).
TEST(CudaReduceKernel, SumsVisitTheReducedElementsInRowMajorOrder) {
  const float big = 16777216.0f;
  const Tensor x = fromValues(DType::F32, {3, 2}, {big, 1.0f, 1.0f, 1.0f, 1.0f, big});
  const Tensor colSums = deviceReduce(0, x, {0}, 1);
  EXPECT_EQ(colSums.as<float>()[0], big);
  EXPECT_EQ(colSums.as<float>()[1], big + 2.0f);
  expectMatchesReference(0, x, {0});
}

// As the reference: a NaN replaces the running max, and so does every later NaN.
TEST(CudaReduceKernel, MaxIsTheLastNaNItMeets) {
  const Tensor x = fromValues(DType::F32, {4}, {1.0f, std::nanf(""), 5.0f, -std::nanf("")});
  const Tensor max = deviceReduce(2, x, {0}, 1);
  EXPECT_EQ(floatBits(max.as<float>()[0]), floatBits(-std::nanf("")));
  const Tensor ref = reference("amp.reduce_max", {&x}, AttrMap{{"dims", std::vector<int64_t>{0}}}, {{DType::F32, {}}})[0];
  EXPECT_EQ(floatBits(ref.as<float>()[0]), floatBits(-std::nanf("")));
}

TEST(CudaReduceKernel, MeanOfNothingIsNaNAndOfOneIsItself) {
  const Tensor empty = fromValues(DType::F32, {2, 0}, {});
  const Tensor mean = deviceReduce(1, empty, {1}, 1);
  ASSERT_EQ(mean.numel(), 2);
  EXPECT_TRUE(std::isnan(mean.as<float>()[0]) && std::isnan(mean.as<float>()[1]));
  const Tensor negativeZero = fromValues(DType::BF16, {1}, {-0.0f});
  EXPECT_EQ(elementBits(deviceReduce(1, negativeZero, {0}, 1), 0), 0x0000u);  // the sum starts at +0
  expectMatchesReference(1, negativeZero, {0});
}

}  // namespace
}  // namespace amp::rt
