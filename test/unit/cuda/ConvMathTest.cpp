// The arithmetic of the CUDA device's convolution and pooling kernels (runtime/devices/cuda/kernels/
// ConvMath.h), compiled here as host C++ with -ffp-contract=off and driven over every result
// element as ConvKernels.cu's threads do, against the reference executor: every bit, in f32, bf16
// and f16, over strides, padding, dilation, groups and overlapping pooling windows, with
// infinities, NaN and signed zeros among the values (a NaN matches any NaN: docs/numerics.md).
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "runtime/devices/cuda/kernels/ConvMath.h"
#include "runtime/reference/ReferenceKernels.h"
#include "runtime/numerics/Convert.h"
#include "test/unit/cuda/ConvTestSupport.h"

namespace amp::rt {
namespace {

using namespace convtest;

// The kernels' accessor over a tensor's values widened to f32.
struct Values {
  std::vector<float> v;
  explicit Values(const Tensor& t) : v(static_cast<size_t>(t.numel())) {
    for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = loadAsF32(t.dtype(), t.data(), i);
  }
  float operator()(long long i) const { return v[static_cast<size_t>(i)]; }
};

// `element(i)` for every result element, rounded once to the result's type.
template <class Element>
Tensor compute(DType t, const Shape& shape, const Element& element) {
  Tensor out(t, shape);
  for (int64_t i = 0; i < out.numel(); ++i) storeFromF32(t, out.data(), i, element(i));
  return out;
}

TEST(ConvMath, Conv2dAndItsGradientsAreTheReferencesBits) {
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
        const std::string what = absl::StrCat(std::string(dtypeName(t)), " ", k.name(), specials ? " specials" : "");
        SCOPED_TRACE(what);
        const AmpConvShape s = k.shape();
        const Shape xs{k.N, k.C, k.H, k.W}, ws{k.O, s.CG, k.KH, k.KW}, ys{k.N, k.O, s.OH, s.OW};
        const Tensor x = randomTensor(t, xs, rng, specials), w = randomTensor(t, ws, rng, specials);
        const Tensor b = randomTensor(t, {k.O}, rng, false), dy = randomTensor(t, ys, rng, specials);
        const AttrMap attrs = k.attrs();
        const Values xv(x), wv(w), bv(b), dyv(dy);
        const Tensor y = compute(t, ys, [&](int64_t i) {
          const long long ow = i % s.OW, oh = i / s.OW % s.OH, o = i / (s.OW * s.OH) % s.O, n = i / (s.OW * s.OH * s.O);
          return amp_conv2d_at(s, n, o, oh, ow, xv, wv) + bv(o);
        });
        EXPECT_TRUE(sameBits(y, reference("amp.conv2d", {&x, &w, &b}, attrs, {t, ys}))) << "conv2d";
        const Tensor dx = compute(t, xs, [&](int64_t i) {
          const long long iw = i % s.W, ih = i / s.W % s.H, ch = i / (s.W * s.H) % s.C, n = i / (s.W * s.H * s.C);
          return amp_conv2d_grad_input_at(s, n, ch, ih, iw, dyv, wv);
        });
        EXPECT_TRUE(sameBits(dx, reference("amp.conv2d_grad_input", {&dy, &w}, attrs, {t, xs}))) << "conv2d_grad_input";
        const Tensor dw = compute(t, ws, [&](int64_t i) {
          const long long kw = i % s.KW, kh = i / s.KW % s.KH, ci = i / (s.KW * s.KH) % s.CG, o = i / (s.KW * s.KH * s.CG);
          return amp_conv2d_grad_weight_at(s, o, ci, kh, kw, xv, dyv);
        });
        EXPECT_TRUE(sameBits(dw, reference("amp.conv2d_grad_weight", {&x, &dy}, attrs, {t, ws}))) << "conv2d_grad_weight";
      }
}

TEST(ConvMath, PoolingAndItsGradientsAreTheReferencesBits) {
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
        const std::string what = absl::StrCat(std::string(dtypeName(t)), " k", k.KH, "x", k.KW, " s", k.sh, "x", k.sw, " p", k.ph, "x",
                                              k.pw, specials ? " specials" : "");
        SCOPED_TRACE(what);
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
        const Values xv(x), dyv(dy);
        auto outIndex = [&](int64_t i, long long* nc, long long* oh, long long* ow) {
          *ow = i % p.OW, *oh = i / p.OW % p.OH, *nc = i / (p.OW * p.OH);
        };
        auto inIndex = [&](int64_t i, long long* nc, long long* ih, long long* iw) {
          *iw = i % p.W, *ih = i / p.W % p.H, *nc = i / (p.W * p.H);
        };
        const Tensor maxY = compute(t, ys, [&](int64_t i) {
          long long nc, oh, ow;
          outIndex(i, &nc, &oh, &ow);
          float best;
          amp_max_pool_pick(p, nc, oh, ow, xv, &best);
          return best;
        });
        EXPECT_TRUE(sameBits(maxY, reference("amp.max_pool2d", {&x}, attrs, {t, ys}))) << "max_pool2d";
        const Tensor avgY = compute(t, ys, [&](int64_t i) {
          long long nc, oh, ow;
          outIndex(i, &nc, &oh, &ow);
          return amp_avg_pool_at(p, nc, oh, ow, xv);
        });
        EXPECT_TRUE(sameBits(avgY, reference("amp.avg_pool2d", {&x}, attrs, {t, ys}))) << "avg_pool2d";
        const Tensor maxDx = compute(t, xs, [&](int64_t i) {
          long long nc, ih, iw;
          inIndex(i, &nc, &ih, &iw);
          return amp_max_pool_grad_at(p, nc, ih, iw, xv, dyv);
        });
        EXPECT_TRUE(sameBits(maxDx, reference("amp.max_pool2d_grad", {&x, &dy}, attrs, {t, xs}))) << "max_pool2d_grad";
        const Tensor avgDx = compute(t, xs, [&](int64_t i) {
          long long nc, ih, iw;
          inIndex(i, &nc, &ih, &iw);
          return amp_avg_pool_grad_at(p, nc, ih, iw, dyv);
        });
        EXPECT_TRUE(sameBits(avgDx, reference("amp.avg_pool2d_grad", {&dy}, attrs, {t, xs}))) << "avg_pool2d_grad";
      }
}

}  // namespace
}  // namespace amp::rt
