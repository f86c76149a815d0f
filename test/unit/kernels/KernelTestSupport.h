// What the tests that run the library kernels' source through BlockEmulation.h share: tensors from
// f32 values, the reference executor's result, and a bit-for-bit comparison.
#ifndef AMP_TEST_UNIT_KERNELS_KERNELTESTSUPPORT_H
#define AMP_TEST_UNIT_KERNELS_KERNELTESTSUPPORT_H

#include <cmath>
#include <cstring>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/numerics/Convert.h"
#include "runtime/reference/ReferenceKernels.h"

namespace amp::rt::kerneltest {

inline const char* name(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::BF16: return "bf16";
    case DType::F16: return "f16";
    default: return "?";
  }
}

// The kernels' type code T (DeviceIO.cuh): 0 f32, 1 bf16, 2 f16.
inline int typeCode(DType t) { return t == DType::BF16 ? 1 : t == DType::F16 ? 2 : 0; }

inline Tensor fromValues(DType t, const Shape& shape, const std::vector<float>& values) {
  Tensor out(t, shape);
  for (size_t i = 0; i < values.size(); ++i) storeFromF32(t, out.data(), static_cast<int64_t>(i), values[i]);
  return out;
}

inline uint32_t elementBits(const Tensor& t, int64_t i) {
  uint32_t u = 0;
  const size_t size = t.dtype() == DType::F32 ? 4 : 2;
  std::memcpy(&u, t.data() + i * size, size);
  return u;
}

inline uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Every bit of every element, except that a NaN matches any NaN: NaN payloads are outside the
// numeric contract (docs/numerics.md).
inline void expectSameBits(const Tensor& device, const Tensor& ref, const char* what) {
  ASSERT_EQ(device.dtype(), ref.dtype()) << what;
  ASSERT_EQ(device.numel(), ref.numel()) << what;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    const float got = loadAsF32(device.dtype(), device.data(), i), want = loadAsF32(ref.dtype(), ref.data(), i);
    if (std::isnan(got) && std::isnan(want)) continue;
    ASSERT_EQ(elementBits(device, i), elementBits(ref, i)) << what << "[" << i << "]: " << got << " vs reference " << want;
  }
}

inline std::vector<Tensor> reference(std::string_view op, const std::vector<const Tensor*>& operands,
                                     const AttrMap& attrs, const std::vector<TensorType>& types) {
  auto out = evalReferenceOp(op, operands, attrs, types, EvalContext{});
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok() || out->size() != types.size()) return std::vector<Tensor>(types.size());
  return *std::move(out);
}

}  // namespace amp::rt::kerneltest

#endif  // AMP_TEST_UNIT_KERNELS_KERNELTESTSUPPORT_H
