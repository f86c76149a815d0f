// Elementwise ops: unary math, broadcasting binary math, compare, select, cast, constant.
// Each float result element is f32(formula evaluated in f64 on the f32-widened operands), then
// rounded RNE to the result type. For + - * / sqrt, f32(f64 op) equals the IEEE f32 op exactly
// (53 >= 2*24+2), so backends computing in f32 match bit for bit.
#include <cmath>
#include <cstring>
#include <limits>

#include "runtime/reference/ReferenceCommon.h"
#include "runtime/numerics/Convert.h"

namespace amp::rt::ref {
namespace {

constexpr double kSqrt1_2 = 0.70710678118654752440;  // 1/sqrt(2)
constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2/pi)

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// NaN-propagating max/min; for equal operands (+0 vs -0) max prefers +0 and min prefers -0
// (IEEE 754-2019 maximum/minimum).
float nanMax(float a, float b) {
  if (std::isnan(a)) return a;
  if (std::isnan(b)) return b;
  if (a == b) return std::signbit(a) ? b : a;
  return a > b ? a : b;
}
float nanMin(float a, float b) {
  if (std::isnan(a)) return a;
  if (std::isnan(b)) return b;
  if (a == b) return std::signbit(a) ? a : b;
  return a < b ? a : b;
}

// Exact integer read of an integer or bool element.
int64_t loadInt(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::I64: return t.as<int64_t>()[i];
    case DType::I32: return t.as<int32_t>()[i];
    default: return t.as<uint8_t>()[i];  // U8, Bool
  }
}

}  // namespace

absl::StatusOr<Tensor> evalUnary(const OpCall& c) {
  REF_RETURN_IF_ERROR(expectOperands(c, 1, 1));
  REF_RETURN_IF_ERROR(expectFloatOperand(c, 0));
  const OpCode op = c.code;
  const bool geluTanh = op == OpCode::Gelu && c.attrsOf<GeluAttrs>().approximate == GeluApproximation::Tanh;
  std::vector<float> v = widen(c.in(0));
  for (float& e : v) {
    const double x = e;
    double y;
    switch (op) {  // the dispatcher only routes these ops here
      case OpCode::Neg: y = -x; break;
      case OpCode::Abs: y = std::fabs(x); break;
      case OpCode::Exp: y = std::exp(x); break;
      case OpCode::Log: y = std::log(x); break;
      case OpCode::Sqrt: y = std::sqrt(x); break;
      case OpCode::Rsqrt: y = 1.0 / std::sqrt(x); break;
      case OpCode::Reciprocal: y = 1.0 / x; break;
      case OpCode::Tanh: y = std::tanh(x); break;
      case OpCode::Sigmoid: y = sigmoid(x); break;
      case OpCode::Relu: y = (x > 0 || std::isnan(x)) ? x : 0.0; break;  // NaN propagates, as in torch
      case OpCode::Silu: y = x * sigmoid(x); break;
      case OpCode::Erf: y = std::erf(x); break;
      default:  // gelu
        y = geluTanh ? 0.5 * x * (1.0 + std::tanh(kSqrt2OverPi * (x + 0.044715 * x * x * x)))
                     : 0.5 * x * (1.0 + std::erf(x * kSqrt1_2));
    }
    e = f32(y);
  }
  return narrow(c.in(0).dtype(), c.in(0).shape(), v);
}

absl::StatusOr<Tensor> evalBinary(const OpCall& c) {
  REF_RETURN_IF_ERROR(expectOperands(c, 2, 2));
  REF_RETURN_IF_ERROR(expectFloatOperand(c, 0));
  REF_RETURN_IF_ERROR(expectSameDType(c, 0, 1));
  REF_ASSIGN_OR_RETURN(Shape shape, broadcastShapes(c, {c.in(0).shape(), c.in(1).shape()}));
  const OpCode op = c.code;
  std::vector<float> a = widen(c.in(0)), b = widen(c.in(1));
  std::vector<int64_t> ia = broadcastIndexMap(c.in(0).shape(), shape);
  std::vector<int64_t> ib = broadcastIndexMap(c.in(1).shape(), shape);
  std::vector<float> out(ia.size());
  for (size_t i = 0; i < out.size(); ++i) {
    const float x = a[ia[i]], y = b[ib[i]];
    switch (op) {  // the dispatcher only routes these ops here
      case OpCode::Add: out[i] = f32(double(x) + double(y)); break;
      case OpCode::Sub: out[i] = f32(double(x) - double(y)); break;
      case OpCode::Mul: out[i] = f32(double(x) * double(y)); break;
      case OpCode::Div: out[i] = f32(double(x) / double(y)); break;
      case OpCode::Maximum: out[i] = nanMax(x, y); break;
      case OpCode::Minimum: out[i] = nanMin(x, y); break;
      default: out[i] = f32(std::pow(double(x), double(y)));  // pow
    }
  }
  return narrow(c.in(0).dtype(), shape, out);
}

absl::StatusOr<Tensor> evalCompare(const OpCall& c) {
  REF_RETURN_IF_ERROR(expectOperands(c, 2, 2));
  REF_RETURN_IF_ERROR(expectSameDType(c, 0, 1));
  const int p = static_cast<int>(c.attrsOf<CompareAttrs>().predicate);  // eq, ne, lt, le, gt, ge
  const DType dt = c.in(0).dtype();
  if (dt == DType::F64) return c.error("f64 operands are not supported");
  REF_ASSIGN_OR_RETURN(Shape shape, broadcastShapes(c, {c.in(0).shape(), c.in(1).shape()}));
  std::vector<int64_t> ia = broadcastIndexMap(c.in(0).shape(), shape);
  std::vector<int64_t> ib = broadcastIndexMap(c.in(1).shape(), shape);
  Tensor out(DType::Bool, shape);
  auto cmp = [p](auto x, auto y) {  // IEEE: every predicate but ne is false on NaN
    switch (p) {
      case 0: return x == y;
      case 1: return x != y;
      case 2: return x < y;
      case 3: return x <= y;
      case 4: return x > y;
      default: return x >= y;
    }
  };
  const bool flt = isFloat(dt);
  for (size_t i = 0; i < ia.size(); ++i) {
    bool r = flt ? cmp(loadAsF32(dt, c.in(0).data(), ia[i]), loadAsF32(dt, c.in(1).data(), ib[i]))
                 : cmp(loadInt(c.in(0), ia[i]), loadInt(c.in(1), ib[i]));
    out.as<uint8_t>()[i] = r ? 1 : 0;
  }
  return out;
}

absl::StatusOr<Tensor> evalSelect(const OpCall& c) {
  REF_RETURN_IF_ERROR(expectOperands(c, 3, 3));
  if (c.in(0).dtype() != DType::Bool)
    return c.error("operand 0 (condition) must have element type i1, got ", dtypeName(c.in(0).dtype()));
  REF_RETURN_IF_ERROR(expectSameDType(c, 1, 2));
  REF_ASSIGN_OR_RETURN(Shape shape,
                       broadcastShapes(c, {c.in(0).shape(), c.in(1).shape(), c.in(2).shape()}));
  std::vector<int64_t> ic = broadcastIndexMap(c.in(0).shape(), shape);
  std::vector<int64_t> ia = broadcastIndexMap(c.in(1).shape(), shape);
  std::vector<int64_t> ib = broadcastIndexMap(c.in(2).shape(), shape);
  const size_t es = dtypeSize(c.in(1).dtype());
  Tensor out(c.in(1).dtype(), shape);
  for (size_t i = 0; i < ic.size(); ++i) {  // copies bits: select never rounds
    const bool cond = c.in(0).as<uint8_t>()[ic[i]] != 0;
    const uint8_t* src = cond ? c.in(1).data() + ia[i] * es : c.in(2).data() + ib[i] * es;
    std::memcpy(out.data() + i * es, src, es);
  }
  return out;
}

absl::StatusOr<Tensor> evalCast(const OpCall& c) {
  REF_RETURN_IF_ERROR(expectOperands(c, 1, 1));
  const Tensor& x = c.in(0);
  if (x.shape() != c.result().shape)
    return c.error("result shape ", shapeToString(c.result().shape), " differs from the operand shape ",
                   shapeToString(x.shape()));
  Tensor out(c.result().dtype, x.shape());
  convertBuffer(x.dtype(), x.data(), out.dtype(), out.data(), x.numel());
  return out;
}

absl::StatusOr<Tensor> evalConstant(const OpCall& c) {
  REF_RETURN_IF_ERROR(expectOperands(c, 0, 0));
  const Tensor* value = c.attrsOf<ConstantAttrs>().value.get();
  if (value->shape() != c.result().shape)
    return c.error("attribute 'value' has shape ", shapeToString(value->shape()),
                   " but the result shape is ", shapeToString(c.result().shape));
  if (value->numel() > 0 && !value->data()) return c.error("attribute 'value' has no storage");
  Tensor out(c.result().dtype, value->shape());
  convertBuffer(value->dtype(), value->data(), out.dtype(), out.data(), value->numel());
  return out;
}

}  // namespace amp::rt::ref
