// The linear step of the cpu device: amp.linear as one oneDNN matmul with the bias in its epilogue
// (Gemm.h): x [..., in] is a [rows, in] matrix (the batch folds into M), the weight is read
// transposed when transpose_w (PyTorch's [out, in]), and the bias is added to the f32 accumulator
// before the one rounding to the result type, exactly as the reference (docs/reference-executor.md)
// says, within the GEMM bound of docs/cpu-device.md. No pass over the result of its own, except
// for `activation = "relu"`: one pass over the rounded result while it is still in cache, on the
// bits (not oneDNN's relu post-op, which turns NaN into 0 and would hide an overflow).
#include <cstdint>
#include <memory>

#include "absl/strings/str_cat.h"
#include "runtime/devices/cpu/CpuStep.h"
#include "runtime/devices/cpu/kernels/Gemm.h"
#include "runtime/devices/cpu/kernels/ReluBits.h"

namespace amp::rt::cpu {
namespace {

// relu on the bits of the n rounded results (ReluBits.h), split across the threads.
void reluInPlace(DType t, uint8_t* data, int64_t n) {
  parallelFor(n, 16384, [&](int64_t begin, int64_t end) { reluBitsInPlace(t, data, begin, end); });
}

class LinearStep final : public CpuStep {
 public:
  LinearStep(std::unique_ptr<Gemm> gemm, int32_t x, int32_t w, int32_t bias, int32_t out, bool relu, DType dtype,
             int64_t numel)
      : gemm_(std::move(gemm)), x_(x), w_(w), bias_(bias), out_(out), relu_(relu), dtype_(dtype), numel_(numel) {}
  absl::Status run(BufferPtrs ptr) override {
    gemm_->run(ptr[x_], ptr[w_], bias_ >= 0 ? ptr[bias_] : nullptr, ptr[out_], scratch_);
    if (relu_) reluInPlace(dtype_, ptr[out_], numel_);
    return absl::OkStatus();
  }
  // The GEMM's scratch (widened operands, oneDNN's scratchpad) is the entry's shared buffer.
  int64_t sharedScratchBytes() const override { return static_cast<int64_t>(gemm_->scratchBytes()); }
  void bindSharedScratch(uint8_t* scratch) override { scratch_ = scratch; }

 private:
  std::unique_ptr<Gemm> gemm_;
  int32_t x_, w_, bias_, out_;  // bias_ < 0: none
  bool relu_;
  DType dtype_;
  int64_t numel_;
  uint8_t* scratch_ = nullptr;
};

}  // namespace

absl::StatusOr<std::unique_ptr<CpuStep>> makeLinearStep(const StepContext& c) {
  if (c.code != OpCode::Linear) return nullptr;
  const size_t n = c.step.operands.size();
  if (n < 2 || n > 3 || c.step.results.size() != 1) return c.error("expected 2 or 3 operands and 1 result");
  const BufferDesc &x = c.operand(0), &w = c.operand(1), &y = c.result(0);
  if (w.dtype != x.dtype || (n == 3 && c.operand(2).dtype != x.dtype))
    return c.error("input, weight and bias must have one element type");
  if (x.dtype != DType::F32 && x.dtype != DType::BF16 && x.dtype != DType::F16) return nullptr;
  auto attrs = c.step.typedAttrs<LinearAttrs>();
  if (!attrs.ok()) return attrs.status();
  const bool* tw = &attrs->transposeW;
  if (x.shape.size() < 2) return c.error("input must be [..., in] with rank >= 2");
  if (w.shape.size() != 2) return c.error("weight must have rank 2");
  const int64_t out = *tw ? w.shape[0] : w.shape[1];
  if (n == 3 && c.operand(2).shape != Shape{out})
    return c.error(absl::StrCat("bias must have shape [", out, "]"));
  // x [..., M, in] . op(W): the Gemm folds the leading dims into M (one 2-D product).
  GemmDesc desc{x.dtype, x.shape, w.shape, false, *tw};
  desc.bias = n == 3;
  auto gemm = Gemm::create(desc, c.features);
  if (!gemm.ok()) return c.error(gemm.status().message());
  if ((*gemm)->resultShape() != y.shape || y.dtype != x.dtype)
    return c.error(absl::StrCat("result type must be ", std::string(dtypeName(x.dtype)),
                                shapeToString((*gemm)->resultShape())));
  return std::unique_ptr<CpuStep>(new LinearStep(std::move(*gemm), c.step.operands[0], c.step.operands[1],
                                                 n == 3 ? c.step.operands[2] : -1, c.step.results[0],
                                                 attrs->activation == LinearActivation::Relu, y.dtype, y.numel()));
}

}  // namespace amp::rt::cpu
