// Helpers for the training-op tests: build scalars/tensors and run one reference op.
#ifndef AMP_TEST_UNIT_REFERENCE_TRAINTESTUTIL_H
#define AMP_TEST_UNIT_REFERENCE_TRAINTESTUTIL_H

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "runtime/reference/ReferenceKernels.h"
#include "runtime/numerics/Convert.h"

namespace amp::rt::traintest {

inline Tensor f32s(float v) {
  Tensor t(DType::F32, {});
  t.as<float>()[0] = v;
  return t;
}
inline Tensor i32s(int32_t v) {
  Tensor t(DType::I32, {});
  t.as<int32_t>()[0] = v;
  return t;
}
inline Tensor i64s(int64_t v) {
  Tensor t(DType::I64, {});
  t.as<int64_t>()[0] = v;
  return t;
}
inline Tensor f32t(Shape shape, const std::vector<float>& v) {
  Tensor t(DType::F32, std::move(shape));
  EXPECT_EQ(static_cast<int64_t>(v.size()), t.numel());
  std::memcpy(t.data(), v.data(), v.size() * sizeof(float));
  return t;
}
inline std::vector<float> vals(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = loadAsF32(t.dtype(), t.data(), i);
  return v;
}
inline std::vector<float> randomF32(int64_t n, float lo, float hi, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(gen);
  return v;
}
inline uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float fromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline TensorType typeOf(const Tensor& t) { return TensorType{t.dtype(), t.shape()}; }

// Runs `op`; result types are given explicitly (as the compiler infers them).
inline absl::StatusOr<std::vector<Tensor>> run(const std::string& op, std::vector<const Tensor*> operands,
                                               const AttrMap& attrs, std::vector<TensorType> results) {
  return evalReferenceOp(op, operands, attrs, results, EvalContext{});
}

// Runs `op` and fails the test on error.
inline std::vector<Tensor> runOk(const std::string& op, std::vector<const Tensor*> operands,
                                 const AttrMap& attrs, std::vector<TensorType> results) {
  auto r = run(op, std::move(operands), attrs, std::move(results));
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return {};
  return *std::move(r);
}

inline const TensorType kF32Scalar{DType::F32, {}};
inline const TensorType kI32Scalar{DType::I32, {}};
inline const TensorType kI64Scalar{DType::I64, {}};

}  // namespace amp::rt::traintest

#endif  // AMP_TEST_UNIT_REFERENCE_TRAINTESTUTIL_H
