// What the tests of the cuda device's convolution kernels share (ConvMathTest.cpp, ConvGemmTest.cpp):
// random tensors with special values, the reference executor's result, bitwise comparison (a NaN
// matches any NaN: docs/numerics.md) and the shape of a convolution case.
#ifndef AMP_TEST_UNIT_COMMON_CONVTESTSUPPORT_H
#define AMP_TEST_UNIT_COMMON_CONVTESTSUPPORT_H

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>

#include "gtest/gtest.h"
#include "runtime/kernels/math/ConvMath.h"
#include "runtime/reference/ReferenceKernels.h"
#include "runtime/numerics/Convert.h"

namespace amp::rt::convtest {

inline const DType kFloatTypes[] = {DType::F32, DType::BF16, DType::F16};

// Normal values with an inf, a -inf, a NaN and a -0 at random places (when `specials`).
inline Tensor randomTensor(DType t, const Shape& shape, std::mt19937& rng, bool specials) {
  Tensor out(t, shape);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int64_t i = 0; i < out.numel(); ++i) storeFromF32(t, out.data(), i, normal(rng));
  if (specials && out.numel() > 4) {
    const float special[] = {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                             std::numeric_limits<float>::quiet_NaN(), -0.0f};
    for (float s : special) storeFromF32(t, out.data(), static_cast<int64_t>(rng() % out.numel()), s);
  }
  return out;
}

inline Tensor reference(std::string_view op, std::vector<const Tensor*> operands, const AttrMap& attrs,
                        const TensorType& result) {
  auto out = evalReferenceOp(op, operands, attrs, {result}, EvalContext{});
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() && out->size() == 1 ? (*out)[0] : Tensor();
}

// Whether `device` has `ref`'s bits (a NaN matches any NaN); on failure, the first mismatches.
inline ::testing::AssertionResult sameBits(const Tensor& device, const Tensor& ref) {
  if (device.shape() != ref.shape() || device.dtype() != ref.dtype())
    return ::testing::AssertionFailure() << "shape or type differs from the reference's";
  const size_t es = dtypeSize(ref.dtype());
  int64_t mismatches = 0;
  ::testing::AssertionResult failure = ::testing::AssertionFailure();
  for (int64_t i = 0; i < ref.numel(); ++i) {
    if (std::memcmp(device.data() + i * es, ref.data() + i * es, es) == 0) continue;
    if (std::isnan(loadAsF32(ref.dtype(), device.data(), i)) && std::isnan(loadAsF32(ref.dtype(), ref.data(), i))) continue;
    if (++mismatches <= 3)
      failure << "element " << i << " is " << loadAsF32(ref.dtype(), device.data(), i) << ", the reference "
              << loadAsF32(ref.dtype(), ref.data(), i) << "; ";
  }
  if (mismatches == 0) return ::testing::AssertionSuccess();
  return failure << mismatches << " element(s) differ";
}

struct ConvCase {
  int64_t N, C, H, W, O, KH, KW, groups, sh, sw, ph, pw, dh, dw;

  AmpConvShape shape() const {
    AmpConvShape s{};
    s.N = N, s.C = C, s.H = H, s.W = W, s.O = O, s.CG = C / groups, s.KH = KH, s.KW = KW;
    s.strideH = sh, s.strideW = sw, s.padH = ph, s.padW = pw, s.dilH = dh, s.dilW = dw;
    s.OH = (H + 2 * ph - dh * (KH - 1) - 1) / sh + 1;
    s.OW = (W + 2 * pw - dw * (KW - 1) - 1) / sw + 1;
    s.OG = O / groups;
    return s;
  }
  AttrMap attrs() const {
    return {{"stride", std::vector<int64_t>{sh, sw}},
            {"padding", std::vector<int64_t>{ph, pw}},
            {"dilation", std::vector<int64_t>{dh, dw}},
            {"groups", groups}};
  }
  std::string name() const {
    return "C" + std::to_string(C) + " O" + std::to_string(O) + " g" + std::to_string(groups) + " s" + std::to_string(sh) +
           "x" + std::to_string(sw) + " p" + std::to_string(ph) + "x" + std::to_string(pw) + " d" + std::to_string(dh) +
           "x" + std::to_string(dw);
  }
};

}  // namespace amp::rt::convtest

#endif  // AMP_TEST_UNIT_COMMON_CONVTESTSUPPORT_H
