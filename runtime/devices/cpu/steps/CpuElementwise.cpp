// Elementwise kernels of the cpu device: cast, unary and binary math, compare, select. Each works
// on blocks: operands are widened to f32 (gathering broadcasts), the f32 formula runs in a loop
// the compiler vectorises, and the block is rounded RNE to the result type. The formulas are the
// reference executor's (docs/reference-executor.md), evaluated the same way, so results are bit
// for bit the reference's; this file is compiled with -ffp-contract=off for that reason.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/devices/cpu/steps/CpuGelu.h"
#include "runtime/devices/cpu/kernels/GeluExact.h"
#include "runtime/devices/cpu/kernels/HalfTable.h"
#include "runtime/devices/cpu/CpuStep.h"
#include "runtime/numerics/Convert.h"

namespace amp::rt::cpu {
namespace {

constexpr int64_t kBlock = 512;    // elements per f32 block (three blocks stay in L1)
constexpr int64_t kGrain = 16384;  // elements per thread before splitting pays

// How an operand's elements map onto the result's: numpy broadcasting, classified at prepare.
struct Broadcast {
  enum Kind { Full, Scalar, Suffix, Indexed } kind = Full;
  int64_t period = 0;              // Suffix: operand element = i % period
  std::vector<int64_t> index;      // Indexed: operand element of result element i
};

absl::StatusOr<Shape> broadcastShape(const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (const Shape& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const Shape& s : shapes)
    for (size_t d = 0; d < s.size(); ++d) {
      int64_t& o = out[rank - s.size() + d];
      if (s[d] == o || s[d] == 1) continue;
      if (o != 1) return absl::InvalidArgumentError("shapes do not broadcast");
      o = s[d];
    }
  return out;
}

Broadcast classify(const Shape& in, const Shape& out) {
  Broadcast b;
  const int64_t n = numElements(in);
  if (in == out) return b;
  if (n == 1) {
    b.kind = Broadcast::Scalar;
    return b;
  }
  // Suffix: after dropping leading 1s, `in` equals the trailing dims of `out`.
  size_t lead = 0;
  while (lead < in.size() && in[lead] == 1) ++lead;
  const size_t k = in.size() - lead;
  if (k <= out.size() && std::equal(in.begin() + lead, in.end(), out.end() - k)) {
    b.kind = Broadcast::Suffix;
    b.period = n;
    return b;
  }
  b.kind = Broadcast::Indexed;
  const int64_t total = numElements(out);
  b.index.resize(static_cast<size_t>(total));
  const size_t rank = out.size(), off = rank - in.size();
  std::vector<int64_t> stride(rank, 0);
  int64_t s = 1;
  for (size_t d = in.size(); d-- > 0;) {
    stride[off + d] = in[d] == 1 ? 0 : s;
    s *= in[d];
  }
  std::vector<int64_t> idx(rank, 0);
  int64_t pos = 0;
  for (int64_t i = 0; i < total; ++i) {
    b.index[i] = pos;
    for (size_t d = rank; d-- > 0;) {  // odometer increment
      pos += stride[d];
      if (++idx[d] < out[d]) break;
      pos -= stride[d] * out[d];
      idx[d] = 0;
    }
  }
  return b;
}

inline float loadF32(DType t, const uint8_t* base, int64_t i) {
  switch (t) {
    case DType::F32: return reinterpret_cast<const float*>(base)[i];
    case DType::BF16: return bf16ToF32(reinterpret_cast<const uint16_t*>(base)[i]);
    default: return loadAsF32(t, base, i);
  }
}

// Below this period a Suffix operand is read element by element (a call per run would cost more).
constexpr int64_t kSuffixRunMin = 16;

// Elements [i0, i0 + n) of the operand, as the result sees them, widened to f32.
void gather(DType t, const uint8_t* base, const Broadcast& b, int64_t i0, int64_t n, float* out) {
  switch (b.kind) {
    case Broadcast::Full:
      convertBuffer(t, base + i0 * dtypeSize(t), DType::F32, out, n);
      return;
    case Broadcast::Scalar: {
      const float v = loadF32(t, base, 0);
      for (int64_t k = 0; k < n; ++k) out[k] = v;
      return;
    }
    case Broadcast::Suffix: {
      int64_t j = i0 % b.period;
      if (b.period < kSuffixRunMin) {
        for (int64_t k = 0; k < n; ++k) {
          out[k] = loadF32(t, base, j);
          if (++j == b.period) j = 0;
        }
        return;
      }
      // Whole runs of the period through convertBuffer (the same exact widening, vectorised): a
      // position table [T, D] added to a [B, T, D] activation is B runs, not B·T·D scalar loads.
      for (int64_t k = 0; k < n; j = 0) {
        const int64_t run = std::min(n - k, b.period - j);
        convertBuffer(t, base + j * dtypeSize(t), DType::F32, out + k, run);
        k += run;
      }
      return;
    }
    case Broadcast::Indexed:
      for (int64_t k = 0; k < n; ++k) out[k] = loadF32(t, base, b.index[i0 + k]);
      return;
  }
}

struct Input {
  int32_t id;
  DType dtype;
  Broadcast bcast;
};

// NaN-propagating max/min with IEEE 754-2019 signed-zero order, as the reference.
inline float nanMax(float a, float b) {
  if (std::isnan(a)) return a;
  if (std::isnan(b)) return b;
  if (a == b) return std::signbit(a) ? b : a;
  return a > b ? a : b;
}
inline float nanMin(float a, float b) {
  if (std::isnan(a)) return a;
  if (std::isnan(b)) return b;
  if (a == b) return std::signbit(a) ? a : b;
  return a < b ? a : b;
}

enum class Math { Add, Sub, Mul, Div, Max, Min, Pow, Neg, Abs, Exp, Log, Sqrt, Rsqrt, Reciprocal, Tanh,
                  Erf, Sigmoid, Relu, Silu, Gelu, GeluTanh };

// f32(formula in f64) as the reference; + - * / and sqrt in f32 are the same values.
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
void applyMath(Math op, const float* a, const float* b, float* y, int64_t n) {
  auto sigmoid = [](double x) { return 1.0 / (1.0 + std::exp(-x)); };
  switch (op) {
    case Math::Add: for (int64_t k = 0; k < n; ++k) y[k] = a[k] + b[k]; return;
    case Math::Sub: for (int64_t k = 0; k < n; ++k) y[k] = a[k] - b[k]; return;
    case Math::Mul: for (int64_t k = 0; k < n; ++k) y[k] = a[k] * b[k]; return;
    case Math::Div: for (int64_t k = 0; k < n; ++k) y[k] = a[k] / b[k]; return;
    case Math::Max: for (int64_t k = 0; k < n; ++k) y[k] = nanMax(a[k], b[k]); return;
    case Math::Min: for (int64_t k = 0; k < n; ++k) y[k] = nanMin(a[k], b[k]); return;
    case Math::Pow: for (int64_t k = 0; k < n; ++k) y[k] = static_cast<float>(std::pow(double(a[k]), double(b[k]))); return;
    case Math::Neg: for (int64_t k = 0; k < n; ++k) y[k] = -a[k]; return;
    case Math::Abs: for (int64_t k = 0; k < n; ++k) y[k] = std::fabs(a[k]); return;
    case Math::Exp: for (int64_t k = 0; k < n; ++k) y[k] = static_cast<float>(std::exp(double(a[k]))); return;
    case Math::Log: for (int64_t k = 0; k < n; ++k) y[k] = static_cast<float>(std::log(double(a[k]))); return;
    case Math::Sqrt: for (int64_t k = 0; k < n; ++k) y[k] = std::sqrt(a[k]); return;
    case Math::Rsqrt: for (int64_t k = 0; k < n; ++k) y[k] = static_cast<float>(1.0 / std::sqrt(double(a[k]))); return;
    case Math::Reciprocal: for (int64_t k = 0; k < n; ++k) y[k] = 1.0f / a[k]; return;
    case Math::Tanh: for (int64_t k = 0; k < n; ++k) y[k] = static_cast<float>(std::tanh(double(a[k]))); return;
    case Math::Erf: for (int64_t k = 0; k < n; ++k) y[k] = static_cast<float>(std::erf(double(a[k]))); return;
    case Math::Sigmoid: for (int64_t k = 0; k < n; ++k) y[k] = static_cast<float>(sigmoid(a[k])); return;
    case Math::Relu: for (int64_t k = 0; k < n; ++k) y[k] = (a[k] > 0 || std::isnan(a[k])) ? a[k] : 0.0f; return;
    case Math::Silu: for (int64_t k = 0; k < n; ++k) y[k] = static_cast<float>(double(a[k]) * sigmoid(a[k])); return;
    case Math::Gelu: geluErfBlock(a, y, n); return;  // certified fast erf (GeluExact.h)
    case Math::GeluTanh: geluTanhBlock(a, y, n); return;  // certified fast tanh (CpuGelu.h)
  }
}

// Unary math that calls libm or a certified polynomial per element: over bf16/f16, a table.
bool worthATable(Math op) {
  switch (op) {
    case Math::Exp: case Math::Log: case Math::Rsqrt: case Math::Tanh: case Math::Erf: case Math::Sigmoid:
    case Math::Silu: case Math::Gelu: case Math::GeluTanh: return true;
    default: return false;
  }
}

// The 16-bit results of `op` for every input of `dtype`, by applyMath itself (HalfTable.h).
const uint16_t* mathTable(Math op, DType dtype) {
  return static_cast<const uint16_t*>(halfTable(absl::StrCat("math.", static_cast<int>(op)), dtype, sizeof(uint16_t),
                                                [&](const float* x, void* out) {
                                                  std::vector<float> y(kHalfInputs);
                                                  applyMath(op, x, nullptr, y.data(), kHalfInputs);
                                                  convertBuffer(DType::F32, y.data(), dtype, out, kHalfInputs);
                                                }));
}

class MathStep final : public CpuStep {
 public:
  MathStep(Math op, std::vector<Input> in, int32_t out, DType outType, int64_t n)
      : op_(op), in_(std::move(in)), out_(out), outType_(outType), n_(n) {
    if (in_.size() == 1 && in_[0].bcast.kind == Broadcast::Full && in_[0].dtype == outType_ &&
        hasHalfTable(outType_) && worthATable(op_))
      table_ = mathTable(op_, outType_);
  }
  bool elementwiseInPlace() const override {
    for (const Input& i : in_)
      if (i.bcast.kind != Broadcast::Full) return false;
    return true;
  }
  absl::Status run(BufferPtrs ptr) override {
    if (table_) {
      const auto* x = reinterpret_cast<const uint16_t*>(ptr[in_[0].id]);
      auto* y = reinterpret_cast<uint16_t*>(ptr[out_]);  // may be x: each element is read first
      parallelFor(n_, kGrain, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) y[i] = table_[x[i]];
      });
      return absl::OkStatus();
    }
    const size_t es = dtypeSize(outType_);
    parallelFor(n_, kGrain, [&](int64_t begin, int64_t end) {
      alignas(64) float a[kBlock], b[kBlock], y[kBlock];
      for (int64_t i0 = begin; i0 < end; i0 += kBlock) {
        const int64_t n = std::min(kBlock, end - i0);
        gather(in_[0].dtype, ptr[in_[0].id], in_[0].bcast, i0, n, a);
        if (in_.size() > 1) gather(in_[1].dtype, ptr[in_[1].id], in_[1].bcast, i0, n, b);
        applyMath(op_, a, b, y, n);
        convertBuffer(DType::F32, y, outType_, ptr[out_] + i0 * es, n);
      }
    });
    return absl::OkStatus();
  }

 private:
  Math op_;
  std::vector<Input> in_;
  int32_t out_;
  DType outType_;
  int64_t n_;
  const uint16_t* table_ = nullptr;  // 16-bit in and out, expensive op: its results by input bits
};

class CastStep final : public CpuStep {
 public:
  CastStep(int32_t in, DType from, int32_t out, DType to, int64_t n) : in_(in), out_(out), from_(from), to_(to), n_(n) {}
  bool elementwiseInPlace() const override { return dtypeSize(from_) == dtypeSize(to_); }
  absl::Status run(BufferPtrs ptr) override {
    const size_t si = dtypeSize(from_), so = dtypeSize(to_);
    if (from_ == to_ && ptr[in_] == ptr[out_]) return absl::OkStatus();  // in place: nothing to convert
    parallelFor(n_, kGrain, [&](int64_t begin, int64_t end) {
      convertBuffer(from_, ptr[in_] + begin * si, to_, ptr[out_] + begin * so, end - begin);
    });
    return absl::OkStatus();
  }

 private:
  int32_t in_, out_;
  DType from_, to_;
  int64_t n_;
};

class CompareStep final : public CpuStep {
 public:
  CompareStep(int predicate, std::vector<Input> in, int32_t out, int64_t n)
      : predicate_(predicate), in_(std::move(in)), out_(out), n_(n) {}
  absl::Status run(BufferPtrs ptr) override {
    parallelFor(n_, kGrain, [&](int64_t begin, int64_t end) {
      alignas(64) float a[kBlock], b[kBlock];
      for (int64_t i0 = begin; i0 < end; i0 += kBlock) {
        const int64_t n = std::min(kBlock, end - i0);
        gather(in_[0].dtype, ptr[in_[0].id], in_[0].bcast, i0, n, a);
        gather(in_[1].dtype, ptr[in_[1].id], in_[1].bcast, i0, n, b);
        uint8_t* y = ptr[out_] + i0;
        switch (predicate_) {  // IEEE: every predicate but ne is false on NaN
          case 0: for (int64_t k = 0; k < n; ++k) y[k] = a[k] == b[k]; break;
          case 1: for (int64_t k = 0; k < n; ++k) y[k] = a[k] != b[k]; break;
          case 2: for (int64_t k = 0; k < n; ++k) y[k] = a[k] < b[k]; break;
          case 3: for (int64_t k = 0; k < n; ++k) y[k] = a[k] <= b[k]; break;
          case 4: for (int64_t k = 0; k < n; ++k) y[k] = a[k] > b[k]; break;
          default: for (int64_t k = 0; k < n; ++k) y[k] = a[k] >= b[k]; break;
        }
      }
    });
    return absl::OkStatus();
  }

 private:
  int predicate_;
  std::vector<Input> in_;
  int32_t out_;
  int64_t n_;
};

// select copies bits (no rounding); element index of each operand per its broadcast.
class SelectStep final : public CpuStep {
 public:
  SelectStep(std::vector<Input> in, int32_t out, size_t elementSize, int64_t n)
      : in_(std::move(in)), out_(out), es_(elementSize), n_(n) {}
  bool elementwiseInPlace() const override {
    for (const Input& i : in_)
      if (i.bcast.kind != Broadcast::Full) return false;
    return true;
  }
  absl::Status run(BufferPtrs ptr) override {
    parallelFor(n_, kGrain, [&](int64_t begin, int64_t end) {
      const uint8_t* cond = ptr[in_[0].id];
      const uint8_t* a = ptr[in_[1].id];
      const uint8_t* b = ptr[in_[2].id];
      uint8_t* y = ptr[out_];
      for (int64_t i = begin; i < end; ++i) {
        const bool c = cond[index(in_[0].bcast, i)] != 0;
        const uint8_t* src = c ? a + index(in_[1].bcast, i) * es_ : b + index(in_[2].bcast, i) * es_;
        std::memcpy(y + i * es_, src, es_);
      }
    });
    return absl::OkStatus();
  }

 private:
  static int64_t index(const Broadcast& b, int64_t i) {
    switch (b.kind) {
      case Broadcast::Full: return i;
      case Broadcast::Scalar: return 0;
      case Broadcast::Suffix: return i % b.period;
      default: return b.index[i];
    }
  }
  std::vector<Input> in_;
  int32_t out_;
  size_t es_;
  int64_t n_;
};

bool isComputeFloat(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

std::optional<Math> mathOf(OpCode op) {
  static constexpr std::pair<OpCode, Math> kOps[] = {
      {OpCode::Add, Math::Add},   {OpCode::Sub, Math::Sub},         {OpCode::Mul, Math::Mul},
      {OpCode::Div, Math::Div},   {OpCode::Maximum, Math::Max},     {OpCode::Minimum, Math::Min},
      {OpCode::Pow, Math::Pow},   {OpCode::Neg, Math::Neg},         {OpCode::Abs, Math::Abs},
      {OpCode::Exp, Math::Exp},   {OpCode::Log, Math::Log},         {OpCode::Sqrt, Math::Sqrt},
      {OpCode::Rsqrt, Math::Rsqrt}, {OpCode::Reciprocal, Math::Reciprocal}, {OpCode::Tanh, Math::Tanh},
      {OpCode::Erf, Math::Erf},   {OpCode::Sigmoid, Math::Sigmoid}, {OpCode::Relu, Math::Relu}, {OpCode::Silu, Math::Silu},
      {OpCode::Gelu, Math::Gelu}};
  for (const auto& [name, m] : kOps)
    if (name == op) return m;
  return std::nullopt;
}

}  // namespace

absl::Status StepContext::error(absl::string_view message) const {
  return absl::InvalidArgumentError(absl::StrCat(step.op, ": ", message));
}

absl::StatusOr<std::unique_ptr<CpuStep>> makeElementwiseStep(const StepContext& c) {
  const size_t nIn = c.step.operands.size();
  if (c.step.results.size() != 1) return nullptr;
  const BufferDesc& out = c.result(0);
  auto inputs = [&](size_t count) -> absl::StatusOr<std::vector<Input>> {
    std::vector<Shape> shapes;
    for (size_t i = 0; i < count; ++i) shapes.push_back(c.operand(i).shape);
    auto shape = broadcastShape(shapes);
    if (!shape.ok() || *shape != out.shape)
      return c.error(absl::StrCat("operand shapes do not broadcast to the result shape ", shapeToString(out.shape)));
    std::vector<Input> in;
    for (size_t i = 0; i < count; ++i)
      in.push_back({c.step.operands[i], c.operand(i).dtype, classify(c.operand(i).shape, out.shape)});
    return in;
  };
  if (c.code == OpCode::Cast) {
    if (nIn != 1 || c.operand(0).shape != out.shape) return c.error("result shape differs from the operand shape");
    return std::unique_ptr<CpuStep>(new CastStep(c.step.operands[0], c.operand(0).dtype, c.step.results[0],
                                                 out.dtype, out.numel()));
  }
  if (c.code == OpCode::Compare) {
    if (nIn != 2 || out.dtype != DType::Bool) return c.error("expected 2 operands and an i1 result");
    if (!isComputeFloat(c.operand(0).dtype) || c.operand(0).dtype != c.operand(1).dtype)
      return nullptr;  // integer compares: reference kernel
    auto attrs = c.step.typedAttrs<CompareAttrs>();
    if (!attrs.ok()) return attrs.status();
    const int p = static_cast<int>(attrs->predicate);  // eq, ne, lt, le, gt, ge
    auto in = inputs(2);
    if (!in.ok()) return in.status();
    return std::unique_ptr<CpuStep>(new CompareStep(p, std::move(*in), c.step.results[0], out.numel()));
  }
  if (c.code == OpCode::Select) {
    if (nIn != 3 || c.operand(0).dtype != DType::Bool || c.operand(1).dtype != c.operand(2).dtype ||
        out.dtype != c.operand(1).dtype)
      return c.error("expected an i1 condition and two operands of the result's element type");
    auto in = inputs(3);
    if (!in.ok()) return in.status();
    return std::unique_ptr<CpuStep>(new SelectStep(std::move(*in), c.step.results[0], dtypeSize(out.dtype), out.numel()));
  }
  auto math = mathOf(c.code);
  if (!math) return nullptr;
  const bool binary = *math <= Math::Pow;
  if (nIn != (binary ? 2u : 1u)) return c.error(absl::StrCat("expected ", binary ? 2 : 1, " operand(s)"));
  for (size_t i = 0; i < nIn; ++i)
    if (!isComputeFloat(c.operand(i).dtype) || c.operand(i).dtype != out.dtype)
      return nullptr;  // f8 and mixed types: reference kernel (it reports what is wrong)
  if (*math == Math::Gelu) {
    auto attrs = c.step.typedAttrs<GeluAttrs>();
    if (!attrs.ok()) return attrs.status();
    if (attrs->approximate == GeluApproximation::Tanh) math = Math::GeluTanh;
  }
  auto in = inputs(nIn);
  if (!in.ok()) return in.status();
  return std::unique_ptr<CpuStep>(new MathStep(*math, std::move(*in), c.step.results[0], out.dtype, out.numel()));
}

}  // namespace amp::rt::cpu
