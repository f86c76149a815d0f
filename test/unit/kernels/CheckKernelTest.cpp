// amp_check_finite_<T> (runtime/kernels/cuda/CheckKernels.cu), its own source run on the
// host through BlockEmulation.h, against runtime/exec's firstNonFinite (what the cpu device and
// --check-numerics use): the index of the first NaN or inf, or ~0 when there is none, for f32,
// bf16 and f16, on grids that stride, in both schedules (the atomicMin makes the order irrelevant).
#include <limits>
#include <random>

#include "gtest/gtest.h"
#include "runtime/exec/NumericsCheck.h"
#include "test/unit/kernels/KernelTestSupport.h"
#include "test/unit/common/BlockEmulation.h"
#include "runtime/kernels/math/HostDevice.h"
#include "runtime/kernels/cuda/DeviceIO.cuh"
#include "runtime/kernels/cuda/CheckKernels.cu"

namespace amp::rt {
namespace {

using namespace kerneltest;

using CheckKernel = void (*)(const void*, long long, unsigned long long*);
const CheckKernel kKernels[3] = {amp_check_finite_f32, amp_check_finite_bf16, amp_check_finite_f16};

unsigned long long deviceFirst(const Tensor& x, unsigned blocks, emu::Schedule schedule) {
  unsigned long long first = ~0ull;  // the graph's fill
  const CheckKernel kernel = kKernels[typeCode(x.dtype())];
  EXPECT_EQ(emu::launch({blocks, 1, 1}, {256, 1, 1}, [&] { kernel(x.data(), x.numel(), &first); }, schedule), "");
  return first;
}

TEST(CudaCheckKernel, FindsTheFirstNonFiniteElementAsTheHostCheckDoes) {
  std::mt19937 rng(79);
  const float kInf = std::numeric_limits<float>::infinity();
  for (DType t : {DType::F32, DType::BF16, DType::F16})
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{255}, int64_t{256}, int64_t{1000}, int64_t{5000}})
      for (int trial = 0; trial < 8; ++trial) {
        std::vector<float> v(static_cast<size_t>(n));
        for (float& x : v) x = static_cast<float>(rng() % 2001) - 1000.0f;
        // trial 0: all finite; then one to three of inf, -inf, NaN, an f16 overflow (70000).
        const float bad[] = {kInf, -kInf, std::nanf(""), 70000.0f};
        for (int k = 0; n > 0 && k < trial % 4; ++k) v[rng() % n] = bad[rng() % 4];
        const Tensor x = fromValues(t, {n}, v);
        const int64_t want = firstNonFinite(t, x.data(), n);
        for (unsigned blocks : {1u, 3u})
          for (emu::Schedule schedule : {emu::Schedule::Forward, emu::Schedule::Reverse}) {
            SCOPED_TRACE(testing::Message() << name(t) << " n " << n << " trial " << trial << " blocks " << blocks);
            const unsigned long long got = deviceFirst(x, blocks, schedule);
            if (want < 0) EXPECT_EQ(got, ~0ull);
            else EXPECT_EQ(got, static_cast<unsigned long long>(want));
          }
      }
}

}  // namespace
}  // namespace amp::rt
