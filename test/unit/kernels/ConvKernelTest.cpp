// The convolution and pooling kernels of runtime/kernels/cuda/ConvKernels.cu, their own
// source run on the host through BlockEmulation.h (grids far smaller than the result, so every
// thread's grid-stride loop takes several turns; both schedules), against the reference executor:
// amp_conv2d (with and without bias), amp_conv2d_grad_input, amp_conv2d_grad_weight,
// amp_max_pool2d, amp_avg_pool2d and their gradients, every bit in f32, bf16 and f16, over
// strides, padding, dilation, groups and overlapping windows, with infinities, NaN and signed
// zeros (a NaN matches any NaN). ConvMathTest.cpp checks ConvMath.h's formulas element by element.
#include <cmath>
#include <limits>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "test/unit/common/BlockEmulation.h"
#include "runtime/kernels/math/HostDevice.h"
#include "runtime/kernels/cuda/DeviceIO.cuh"
#include "runtime/kernels/math/ConvMath.h"
#include "runtime/kernels/cuda/ConvKernels.cu"
#include "test/unit/common/ConvTestSupport.h"

namespace amp::rt {
namespace {

using namespace convtest;

int typeCode(DType t) { return t == DType::BF16 ? 1 : t == DType::F16 ? 2 : 0; }

// Two blocks of 32 threads, forwards then in reverse on alternate launches.
int launches = 0;
void launchSmall(const std::function<void()>& kernel) {
  ASSERT_EQ(emu::launch({2, 1, 1}, {32, 1, 1}, kernel, launches++ % 2 ? emu::Schedule::Reverse : emu::Schedule::Forward),
            "");
}

using ConvKernel = void (*)(const void*, const void*, const void*, void*, AmpConvShape);
const ConvKernel kConv[3] = {amp_conv2d_f32, amp_conv2d_bf16, amp_conv2d_f16};
using ConvGradKernel = void (*)(const void*, const void*, void*, AmpConvShape);
const ConvGradKernel kConvGradInput[3] = {amp_conv2d_grad_input_f32, amp_conv2d_grad_input_bf16,
                                          amp_conv2d_grad_input_f16};
const ConvGradKernel kConvGradWeight[3] = {amp_conv2d_grad_weight_f32, amp_conv2d_grad_weight_bf16,
                                           amp_conv2d_grad_weight_f16};
using PoolKernel = void (*)(const void*, void*, AmpPoolShape);
const PoolKernel kMaxPool[3] = {amp_max_pool2d_f32, amp_max_pool2d_bf16, amp_max_pool2d_f16};
const PoolKernel kAvgPool[3] = {amp_avg_pool2d_f32, amp_avg_pool2d_bf16, amp_avg_pool2d_f16};
using MaxPoolGradKernel = void (*)(const void*, const void*, void*, AmpPoolShape);
const MaxPoolGradKernel kMaxPoolGrad[3] = {amp_max_pool2d_grad_f32, amp_max_pool2d_grad_bf16, amp_max_pool2d_grad_f16};
const PoolKernel kAvgPoolGrad[3] = {amp_avg_pool2d_grad_f32, amp_avg_pool2d_grad_bf16, amp_avg_pool2d_grad_f16};

TEST(CudaConvKernel, Conv2dAndItsGradientsAreTheReferencesBits) {
  const ConvCase cases[] = {
      {2, 3, 7, 6, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1},  // same padding
      {1, 4, 9, 8, 6, 3, 2, 2, 2, 1, 1, 0, 1, 1},  // groups, stride, asymmetric kernel
      {2, 2, 8, 9, 2, 2, 3, 2, 1, 2, 0, 1, 2, 2},  // depthwise, dilation
      {1, 3, 5, 5, 5, 5, 5, 1, 3, 3, 2, 2, 1, 1},  // a kernel as large as the input, stride 3
  };
  std::mt19937 rng(7);
  for (const ConvCase& k : cases)
    for (DType t : kFloatTypes)
      for (bool specials : {false, true}) {
        SCOPED_TRACE(absl::StrCat(std::string(dtypeName(t)), " ", k.name(), specials ? " specials" : ""));
        const AmpConvShape s = k.shape();
        const Shape xs{k.N, k.C, k.H, k.W}, ws{k.O, s.CG, k.KH, k.KW}, ys{k.N, k.O, s.OH, s.OW};
        const Tensor x = randomTensor(t, xs, rng, specials), w = randomTensor(t, ws, rng, specials);
        const Tensor b = randomTensor(t, {k.O}, rng, false), dy = randomTensor(t, ys, rng, specials);
        const AttrMap attrs = k.attrs();
        const int c = typeCode(t);
        Tensor y(t, ys), yNoBias(t, ys), dx(t, xs), dw(t, ws);
        launchSmall([&] { kConv[c](x.data(), w.data(), b.data(), y.data(), s); });
        launchSmall([&] { kConv[c](x.data(), w.data(), nullptr, yNoBias.data(), s); });
        launchSmall([&] { kConvGradInput[c](dy.data(), w.data(), dx.data(), s); });
        launchSmall([&] { kConvGradWeight[c](x.data(), dy.data(), dw.data(), s); });
        EXPECT_TRUE(sameBits(y, reference("amp.conv2d", {&x, &w, &b}, attrs, {t, ys}))) << "conv2d";
        EXPECT_TRUE(sameBits(yNoBias, reference("amp.conv2d", {&x, &w}, attrs, {t, ys}))) << "conv2d without bias";
        EXPECT_TRUE(sameBits(dx, reference("amp.conv2d_grad_input", {&dy, &w}, attrs, {t, xs}))) << "conv2d_grad_input";
        EXPECT_TRUE(sameBits(dw, reference("amp.conv2d_grad_weight", {&x, &dy}, attrs, {t, ws}))) << "conv2d_grad_weight";
      }
}

TEST(CudaConvKernel, PoolingAndItsGradientsAreTheReferencesBits) {
  struct PoolCase {
    int64_t H, W, KH, KW, sh, sw, ph, pw;
  };
  const PoolCase cases[] = {
      {8, 8, 2, 2, 2, 2, 0, 0},  // the common 2x2/2
      {7, 9, 3, 3, 2, 2, 1, 1},  // overlapping windows with padding
      {6, 5, 3, 2, 1, 1, 1, 0},  // stride 1: every element under several windows
  };
  std::mt19937 rng(11);
  for (const PoolCase& k : cases)
    for (DType t : kFloatTypes)
      for (bool specials : {false, true}) {
        SCOPED_TRACE(absl::StrCat(std::string(dtypeName(t)), " k", k.KH, "x", k.KW, " s", k.sh, "x", k.sw, " p", k.ph,
                                  "x", k.pw, specials ? " specials" : ""));
        AmpPoolShape p{};
        p.NC = 2 * 3, p.H = k.H, p.W = k.W, p.KH = k.KH, p.KW = k.KW, p.strideH = k.sh, p.strideW = k.sw;
        p.padH = k.ph, p.padW = k.pw;
        p.OH = (k.H + 2 * k.ph - k.KH) / k.sh + 1, p.OW = (k.W + 2 * k.pw - k.KW) / k.sw + 1;
        const Shape xs{2, 3, k.H, k.W}, ys{2, 3, p.OH, p.OW};
        Tensor x = randomTensor(t, xs, rng, specials);
        // Ties and an all -inf window: the picks must follow the reference's scan.
        storeFromF32(t, x.data(), 1, loadAsF32(t, x.data(), 0));
        for (int64_t i = 0; i < std::min<int64_t>(4, x.numel()); ++i)
          if (specials) storeFromF32(t, x.data(), x.numel() - 1 - i, -std::numeric_limits<float>::infinity());
        const Tensor dy = randomTensor(t, ys, rng, specials);
        const AttrMap attrs{{"kernel", std::vector<int64_t>{k.KH, k.KW}},
                            {"stride", std::vector<int64_t>{k.sh, k.sw}},
                            {"padding", std::vector<int64_t>{k.ph, k.pw}}};
        const int c = typeCode(t);
        Tensor maxY(t, ys), avgY(t, ys), maxDx(t, xs), avgDx(t, xs);
        launchSmall([&] { kMaxPool[c](x.data(), maxY.data(), p); });
        launchSmall([&] { kAvgPool[c](x.data(), avgY.data(), p); });
        launchSmall([&] { kMaxPoolGrad[c](x.data(), dy.data(), maxDx.data(), p); });
        launchSmall([&] { kAvgPoolGrad[c](dy.data(), avgDx.data(), p); });
        EXPECT_TRUE(sameBits(maxY, reference("amp.max_pool2d", {&x}, attrs, {t, ys}))) << "max_pool2d";
        EXPECT_TRUE(sameBits(avgY, reference("amp.avg_pool2d", {&x}, attrs, {t, ys}))) << "avg_pool2d";
        EXPECT_TRUE(sameBits(maxDx, reference("amp.max_pool2d_grad", {&x, &dy}, attrs, {t, xs}))) << "max_pool2d_grad";
        EXPECT_TRUE(sameBits(avgDx, reference("amp.avg_pool2d_grad", {&dy}, attrs, {t, xs}))) << "avg_pool2d_grad";
      }
}

}  // namespace
}  // namespace amp::rt
