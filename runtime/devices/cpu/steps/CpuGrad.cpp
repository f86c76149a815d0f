// gelu_grad and mse_loss on the cpu device.
// - gelu_grad: f32(dy * g'(x)) with g' evaluated in f64 by the reference's own expression
//   (ReferenceGrad.cpp), in blocks widened to f32 and rounded RNE to the result type.
// - mse_loss: fl(sum fl(d*d) / n), d = fl(p - t), one f32 sum in row-major order in the contract's
//   blocked pairwise order (SumOrder.h; the sum runs on one thread; the widening is blocked).
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "runtime/devices/cpu/steps/CpuGelu.h"
#include "runtime/devices/cpu/kernels/GeluExact.h"
#include "runtime/devices/cpu/kernels/HalfTable.h"
#include "runtime/devices/cpu/steps/CpuKernelUtil.h"
#include "runtime/devices/cpu/CpuStep.h"
#include "runtime/kernels/math/SumOrder.h"

namespace amp::rt::cpu {
namespace {

constexpr int64_t kBlock = 512;
constexpr int64_t kGrain = 8192;

// The reference's derivative, term for term (evalGeluGrad).
void geluGradBlock(bool tanhApprox, const float* x, const float* dy, float* y, int64_t n) {
  if (tanhApprox) {
    geluTanhGradBlock(x, dy, y, n);  // the same bits without a libm tanh per element (CpuGelu.h)
  } else {
    geluErfGradBlock(x, dy, y, n);  // the same bits without libm's erf and exp per element (GeluExact.h)
  }
}

// For bf16/f16 x: the reference's f64 derivative of every input (HalfTable.h), so that an element
// is f32(dy d[x]) with one f64 product, the reference's own last operation.
const double* derivativeTable(bool tanhApprox, DType dtype) {
  return static_cast<const double*>(halfTable(tanhApprox ? "gelu_grad.tanh" : "gelu_grad.erf", dtype, sizeof(double),
                                              [&](const float* x, void* out) {
                                                auto* d = static_cast<double*>(out);
                                                for (int64_t i = 0; i < kHalfInputs; ++i)
                                                  d[i] = tanhApprox ? geluTanhDerivative(x[i]) : geluErfDerivative(x[i]);
                                              }));
}

class GeluGradStep final : public CpuStep {
 public:
  GeluGradStep(int32_t x, int32_t dy, int32_t out, DType dtype, int64_t n, bool tanhApprox)
      : x_(x), dy_(dy), out_(out), dtype_(dtype), n_(n), tanh_(tanhApprox),
        derivative_(hasHalfTable(dtype) ? derivativeTable(tanhApprox, dtype) : nullptr) {}
  bool elementwiseInPlace() const override { return true; }
  absl::Status run(BufferPtrs ptr) override {
    const uint8_t* x = ptr[x_];
    const uint8_t* dy = ptr[dy_];
    uint8_t* y = ptr[out_];
    const int64_t blocks = (n_ + kBlock - 1) / kBlock;
    if (derivative_) {
      parallelFor(blocks, std::max<int64_t>(1, kGrain / kBlock), [&](int64_t b0, int64_t b1) {
        alignas(64) float ds[kBlock], ys[kBlock];
        alignas(64) uint16_t xs[kBlock];
        for (int64_t b = b0; b < b1; ++b) {
          const int64_t i0 = b * kBlock, m = std::min(kBlock, n_ - i0);
          // Copied first: y may be x or dy.
          std::memcpy(xs, x + i0 * 2, static_cast<size_t>(m) * 2);
          const float* d = widenRun(dtype_, dy, i0, m, ds);
          for (int64_t k = 0; k < m; ++k) ys[k] = static_cast<float>(double(d[k]) * derivative_[xs[k]]);
          narrowRun(ys, dtype_, y, i0, m);
        }
      });
      return absl::OkStatus();
    }
    parallelFor(blocks, std::max<int64_t>(1, kGrain / kBlock), [&](int64_t b0, int64_t b1) {
      alignas(64) float xs[kBlock], ds[kBlock], ys[kBlock];
      for (int64_t b = b0; b < b1; ++b) {
        const int64_t i0 = b * kBlock, m = std::min(kBlock, n_ - i0);
        geluGradBlock(tanh_, widenRun(dtype_, x, i0, m, xs), widenRun(dtype_, dy, i0, m, ds), ys, m);
        narrowRun(ys, dtype_, y, i0, m);
      }
    });
    return absl::OkStatus();
  }

 private:
  int32_t x_, dy_, out_;
  DType dtype_;
  int64_t n_;
  bool tanh_;
  const double* derivative_;  // bf16/f16: d(x) by x's bits
};

class MseLossStep final : public CpuStep {
 public:
  MseLossStep(int32_t p, int32_t t, int32_t out, DType dtype, int64_t n) : p_(p), t_(t), out_(out), dtype_(dtype), n_(n) {}
  absl::Status run(BufferPtrs ptr) override {
    alignas(64) float ps[kBlock], ts[kBlock], dd[kBlock];
    AmpBlockedSum<float> sum;
    sum.reset(0.0f);
    for (int64_t i0 = 0; i0 < n_; i0 += kBlock) {
      const int64_t m = std::min(kBlock, n_ - i0);
      const float* p = widenRun(dtype_, ptr[p_], i0, m, ps);
      const float* t = widenRun(dtype_, ptr[t_], i0, m, ts);
      for (int64_t k = 0; k < m; ++k) {  // vectorised: fl(d*d) per element
        const float d = p[k] - t[k];
        dd[k] = d * d;
      }
      for (int64_t k = 0; k < m; ++k) sum.add(dd[k]);  // the contract's order
    }
    const float mean = sum.result() / static_cast<float>(n_);  // empty: 0/0 = NaN
    narrowRun(&mean, dtype_, ptr[out_], 0, 1);
    return absl::OkStatus();
  }

 private:
  int32_t p_, t_, out_;
  DType dtype_;
  int64_t n_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<CpuStep>> makeGradStep(const StepContext& c) {
  if (c.code == OpCode::GeluGrad) {
    if (c.step.operands.size() != 2 || c.step.results.size() != 1) return c.error("expected 2 operands and 1 result");
    const BufferDesc &x = c.operand(0), &dy = c.operand(1), &y = c.result(0);
    if (!isKernelFloat(x.dtype)) return c.error("operand 0 must have a float element type");
    if (dy.dtype != x.dtype || dy.shape != x.shape) return c.error("grad must have x's type");
    if (y.dtype != x.dtype || y.shape != x.shape) return c.error("the result type must be x's");
    auto attrs = c.step.typedAttrs<GeluGradAttrs>();
    if (!attrs.ok()) return attrs.status();
    return std::unique_ptr<CpuStep>(new GeluGradStep(c.step.operands[0], c.step.operands[1], c.step.results[0], x.dtype,
                                                     x.numel(), attrs->approximate == GeluApproximation::Tanh));
  }
  if (c.code == OpCode::MseLoss) {
    if (c.step.operands.size() != 2 || c.step.results.size() != 1) return c.error("expected 2 operands and 1 result");
    const BufferDesc &p = c.operand(0), &t = c.operand(1), &y = c.result(0);
    if (!isKernelFloat(p.dtype)) return c.error("operand 0 must have a float element type");
    if (t.dtype != p.dtype || t.shape != p.shape) return c.error("pred and target must have the same type");
    if (y.dtype != p.dtype || !y.shape.empty()) return c.error("the result must be a scalar of the operands' type");
    return std::unique_ptr<CpuStep>(new MseLossStep(c.step.operands[0], c.step.operands[1], c.step.results[0], p.dtype, p.numel()));
  }
  return nullptr;
}

}  // namespace amp::rt::cpu
