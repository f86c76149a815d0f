// Helpers for the reference-kernel tests. Expected values are computed in the tests themselves in
// f64; these helpers only build tensors, run one op and compare.
#ifndef AMP_TEST_UNIT_REFERENCE_REFTESTUTIL_H
#define AMP_TEST_UNIT_REFERENCE_REFTESTUTIL_H

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "runtime/reference/ReferenceKernels.h"
#include "runtime/numerics/Convert.h"

namespace amp::rt::reftest {

// Values are rounded f64 -> f32 -> dtype (RNE).
inline Tensor make(DType dt, Shape shape, const std::vector<double>& v) {
  Tensor t(dt, std::move(shape));
  EXPECT_EQ(static_cast<int64_t>(v.size()), t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) storeFromF32(dt, t.data(), i, static_cast<float>(v[i]));
  return t;
}

inline Tensor makeI64(Shape shape, const std::vector<int64_t>& v) {
  Tensor t(DType::I64, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.as<int64_t>()[i] = v[i];
  return t;
}

inline Tensor makeI32(Shape shape, const std::vector<int32_t>& v) {
  Tensor t(DType::I32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.as<int32_t>()[i] = v[i];
  return t;
}

inline Tensor makeBool(Shape shape, const std::vector<int>& v) {
  Tensor t(DType::Bool, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.as<uint8_t>()[i] = v[i] ? 1 : 0;
  return t;
}

// Element values widened to f64 (exact for every float dtype).
inline std::vector<double> values(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = loadAsF32(t.dtype(), t.data(), i);
  return v;
}

// Deterministic uniform values in [lo, hi), already representable in `dt`.
inline std::vector<double> randomValues(int64_t n, double lo, double hi, unsigned seed,
                                        DType dt = DType::F32) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = roundToDType(dt, static_cast<float>(dist(gen)));
  return v;
}

inline absl::StatusOr<Tensor> run(std::string_view op, std::vector<const Tensor*> operands,
                                  const AttrMap& attrs, TensorType result, int64_t step = 0) {
  EvalContext ctx;
  ctx.step = step;
  auto r = evalReferenceOp(op, operands, attrs, {result}, ctx);
  if (!r.ok()) return r.status();
  if (r->size() != 1) return absl::InternalError("expected exactly one result");
  return std::move((*r)[0]);
}

// Runs an op that must succeed; on failure records the status and returns an empty tensor.
inline Tensor runOk(std::string_view op, std::vector<const Tensor*> operands, const AttrMap& attrs,
                    TensorType result, int64_t step = 0) {
  auto r = run(op, std::move(operands), attrs, std::move(result), step);
  EXPECT_TRUE(r.ok()) << op << ": " << r.status();
  return r.ok() ? std::move(*r) : Tensor(result.dtype, Shape{0});
}

// Distance between adjacent values of `dt` at magnitude |x| (the ulp of x in dt).
inline double ulpOf(DType dt, double x) {
  const int mant = dt == DType::F16 ? 10 : dt == DType::BF16 ? 7 : 23;
  const int minExp = dt == DType::F16 ? -14 : -126;
  int e = x == 0 ? minExp : std::ilogb(x);
  if (e < minExp) e = minExp;
  return std::ldexp(1.0, e - mant);
}

// got[i] == roundToDType(dt, f32(want[i])) for every i (NaN matches NaN).
inline void expectRoundedEq(const Tensor& got, const std::vector<double>& want, const std::string& what) {
  std::vector<double> g = values(got);
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t i = 0; i < g.size(); ++i) {
    const double w = roundToDType(got.dtype(), static_cast<float>(want[i]));
    if (std::isnan(w)) {
      EXPECT_TRUE(std::isnan(g[i])) << what << " [" << i << "]";
    } else {
      EXPECT_EQ(g[i], w) << what << " [" << i << "] f64 value " << want[i];
    }
  }
}

// |got[i] - want[i]| <= ulps * ulp_dt(want[i]), the bound when summation order matters.
inline void expectWithinUlps(const Tensor& got, const std::vector<double>& want, double ulps,
                             const std::string& what) {
  std::vector<double> g = values(got);
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t i = 0; i < g.size(); ++i)
    EXPECT_LE(std::fabs(g[i] - want[i]), ulps * ulpOf(got.dtype(), want[i]))
        << what << " [" << i << "] got " << g[i] << " want " << want[i];
}

// |got[i] - want[i]| <= tol[i].
inline void expectNearEach(const Tensor& got, const std::vector<double>& want,
                           const std::vector<double>& tol, const std::string& what) {
  std::vector<double> g = values(got);
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t i = 0; i < g.size(); ++i)
    EXPECT_NEAR(g[i], want[i], tol[i]) << what << " [" << i << "]";
}

// Expects `r` to be an InvalidArgument whose message contains `needle`.
template <class T>
void expectError(const absl::StatusOr<T>& r, const std::string& needle) {
  ASSERT_FALSE(r.ok()) << "expected an error containing: " << needle;
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  EXPECT_NE(std::string(r.status().message()).find(needle), std::string::npos)
      << "message: " << r.status().message() << "\nexpected to contain: " << needle;
}

constexpr double kU32 = 1.0 / (1 << 24);  // unit roundoff of f32 (2^-24)

}  // namespace amp::rt::reftest

#endif  // AMP_TEST_UNIT_REFERENCE_REFTESTUTIL_H
