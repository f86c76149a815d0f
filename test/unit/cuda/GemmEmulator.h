// A host emulator of cuBLASLt's matmul as documented, for the tests of the cuda device's GEMM
// mappings (GemmPlan.h, ConvGemm.h): D = op(A) op(B) (+ D before the call when `accumulate`)
// (+ bias[i] on row i) (relu), column-major, accumulating in f32 in k order and rounding once.
// Compile its users with -ffp-contract=off, as the reference is.
#ifndef AMP_TEST_UNIT_CUDA_GEMMEMULATOR_H
#define AMP_TEST_UNIT_CUDA_GEMMEMULATOR_H

#include "runtime/devices/cuda/GemmPlan.h"
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

}  // namespace amp::rt::cuda

#endif  // AMP_TEST_UNIT_CUDA_GEMMEMULATOR_H
