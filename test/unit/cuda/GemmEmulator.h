// A host emulator of cuBLASLt's matmul as documented, for the tests of the cuda device's GEMM
// mappings (GemmPlan.h, ConvGemm.h): D = op(A) op(B) (+ D before the call when `accumulate`)
// (+ bias[i] on row i) (relu), column-major, accumulating in f32 in k order and rounding once.
// Compile its users with -ffp-contract=off, as the reference is.
#ifndef AMP_TEST_UNIT_CUDA_GEMMEMULATOR_H
#define AMP_TEST_UNIT_CUDA_GEMMEMULATOR_H

#include <cstdint>
#include <vector>

#include "runtime/devices/cuda/GemmPlan.h"
#include "runtime/reference/ReferenceKernels.h"
#include "runtime/numerics/Convert.h"

namespace amp::rt::cuda {

// `a` and `b` are the step's operands (cuBLASLt's B and A: the row-major swap); `prior`, D's
// contents before the call, is read when the plan accumulates.
inline Tensor emulateGemm(const GemmPlan& g, const Tensor& a, const Tensor& b, const Tensor* bias,
                          const Tensor* prior = nullptr) {
  const Tensor& A = b;
  const Tensor& B = a;
  Tensor d = prior ? *prior : Tensor(g.dtype, g.resultShape);
  for (int64_t batch = 0; batch < g.batch; ++batch)
    for (int64_t j = 0; j < g.n; ++j)
      for (int64_t i = 0; i < g.m; ++i) {
        float acc = 0.0f;
        for (int64_t k = 0; k < g.k; ++k) {
          const int64_t ia = batch * g.strideA + (g.transA ? k + i * g.lda : i + k * g.lda);
          const int64_t ib = batch * g.strideB + (g.transB ? j + k * g.ldb : k + j * g.ldb);
          acc += loadAsF32(g.dtype, A.data(), ia) * loadAsF32(g.dtype, B.data(), ib);
        }
        const int64_t id = batch * g.strideC + i + j * g.ldc;
        if (g.accumulate) acc += loadAsF32(g.dtype, d.data(), id);
        if (bias) acc += loadAsF32(g.dtype, bias->data(), i);
        if ((g.epilogue == GemmEpilogue::ReluBias || g.epilogue == GemmEpilogue::Relu) && !(acc > 0.0f)) acc = 0.0f;
        storeFromF32(g.dtype, d.data(), id, acc);
      }
  return d;
}

// The training epilogues (GemmPlan.h), as cuBLASLt documents them: the activation of the f32 sum
// (+ bias) before D's one rounding; a ReLU mask bit per element of D where that sum was positive,
// at bit i + j * auxLd; the GELU input stored in D's type at i + j * auxLd; DRELU / DGELU apply
// the mask or gelu'(input) to the f32 sum; a bias gradient sums, in f32 in column (or k) order, the
// f32 values D is rounded from (or the summed operand), rounded once. GELU is the tanh form; its
// formulas are the reference's, evaluated on the f32 values. `mask` is read (DRELU) or written
// (RELU_AUX) as bytes; `geluInput` is read (DGELU) or written (GELU_AUX); `biasGrad` is written.
struct EpilogueIo {
  const Tensor* bias = nullptr;
  std::vector<uint8_t>* mask = nullptr;
  Tensor* geluInput = nullptr;
  Tensor* biasGrad = nullptr;
};

inline float geluTanhEpilogue(const char* op, float x, float dy) {
  Tensor in(DType::F32, {1}), grad(DType::F32, {1});
  storeFromF32(DType::F32, in.data(), 0, x);
  storeFromF32(DType::F32, grad.data(), 0, dy);
  AttrMap attrs{{"approximate", std::string("tanh")}};
  std::vector<const Tensor*> operands = {&in};
  if (std::string_view(op) == "amp.gelu_grad") operands.push_back(&grad);
  auto out = evalReferenceOp(op, operands, attrs, {{DType::F32, {1}}}, EvalContext{});
  return out.ok() ? loadAsF32(DType::F32, (*out)[0].data(), 0) : 0.0f / 0.0f;
}

inline Tensor emulateTrainingGemm(const GemmPlan& g, const Tensor& a, const Tensor& b, EpilogueIo io) {
  const Tensor& A = b;
  const Tensor& B = a;
  const GemmEpilogue e = g.epilogue;
  const GemmAux aux = epilogueAux(e);
  const bool forward = epilogueIsForward(e);
  Tensor d(g.dtype, g.resultShape);
  if (io.mask && forward && aux == GemmAux::ReluMask) io.mask->assign(static_cast<size_t>(auxBytes(g)), 0);
  std::vector<float> grad(static_cast<size_t>(e == GemmEpilogue::BgradB ? g.n : g.m), 0.0f);
  for (int64_t j = 0; j < g.n; ++j)
    for (int64_t i = 0; i < g.m; ++i) {
      float acc = 0.0f;
      for (int64_t k = 0; k < g.k; ++k) {
        const float x = loadAsF32(g.dtype, A.data(), g.transA ? k + i * g.lda : i + k * g.lda);
        const float y = loadAsF32(g.dtype, B.data(), g.transB ? j + k * g.ldb : k + j * g.ldb);
        acc += x * y;
        if (e == GemmEpilogue::BgradA && j == 0) grad[static_cast<size_t>(i)] += x;
        if (e == GemmEpilogue::BgradB && i == 0) grad[static_cast<size_t>(j)] += y;
      }
      if (epilogueReadsBias(e)) acc += loadAsF32(g.dtype, io.bias->data(), i);
      const int64_t bit = i + j * g.auxLd;
      switch (e) {
        case GemmEpilogue::Relu:
        case GemmEpilogue::ReluBias: acc = acc > 0.0f ? acc : 0.0f; break;
        case GemmEpilogue::ReluAux:
        case GemmEpilogue::ReluAuxBias:
          if (acc > 0.0f) (*io.mask)[static_cast<size_t>(bit / 8)] |= static_cast<uint8_t>(1u << (bit % 8));
          acc = acc > 0.0f ? acc : 0.0f;
          break;
        case GemmEpilogue::GeluAux:
        case GemmEpilogue::GeluAuxBias:
          storeFromF32(g.dtype, io.geluInput->data(), bit, acc);
          acc = geluTanhEpilogue("amp.gelu", acc, 0.0f);
          break;
        case GemmEpilogue::GeluBias: acc = geluTanhEpilogue("amp.gelu", acc, 0.0f); break;
        case GemmEpilogue::DRelu:
        case GemmEpilogue::DReluBgrad:
          if (!(((*io.mask)[static_cast<size_t>(bit / 8)] >> (bit % 8)) & 1u)) acc = 0.0f;
          break;
        case GemmEpilogue::DGelu:
        case GemmEpilogue::DGeluBgrad:
          acc = geluTanhEpilogue("amp.gelu_grad", loadAsF32(g.dtype, io.geluInput->data(), bit), acc);
          break;
        default: break;
      }
      if (e == GemmEpilogue::DReluBgrad || e == GemmEpilogue::DGeluBgrad) grad[static_cast<size_t>(i)] += acc;
      storeFromF32(g.dtype, d.data(), i + j * g.ldc, acc);
    }
  if (epilogueWritesBiasGrad(e))
    for (size_t i = 0; i < grad.size(); ++i) storeFromF32(g.dtype, io.biasGrad->data(), static_cast<int64_t>(i), grad[i]);
  return d;
}

}  // namespace amp::rt::cuda

#endif  // AMP_TEST_UNIT_CUDA_GEMMEMULATOR_H
