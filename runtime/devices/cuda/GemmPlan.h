// How the CUDA device runs amp.matmul and amp.linear through cuBLASLt: the row-major problem
// mapped onto cuBLASLt's column-major one. A row-major [R, C] buffer is a column-major [C, R]
// matrix with leading dimension C, so D[M, N] = op(a) . op(b) is computed as the column-major
// D^T[N, M] = op(b)^T . op(a)^T: cuBLASLt's A is our b and its B is our a, m = N, n = M, and the
// epilogue's bias vector (one value per row of D^T) is our bias[N]. Batch dims become one strided
// batch, with stride 0 for an operand every batch shares; a b shared by every batch of a
// non-transposed a folds the batch into M (one large GEMM). Inputs f16/bf16/f32, compute
// CUBLAS_COMPUTE_32F with an f32 scale (accumulation in f32, one rounding of each result).
// Pure host logic, checked against the reference executor on the host by a column-major emulator.
#ifndef AMP_RUNTIME_DEVICES_CUDA_GEMMPLAN_H
#define AMP_RUNTIME_DEVICES_CUDA_GEMMPLAN_H

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/Tensor.h"

namespace amp::rt::cuda {

// The cuBLASLt epilogues the CUDA device uses (CUBLASLT_EPILOGUE_DEFAULT, _BIAS, _RELU_BIAS).
enum class GemmEpilogue { None, Bias, ReluBias, Relu };
std::string_view gemmEpilogueName(GemmEpilogue e);

struct GemmPlan {
  DType dtype = DType::F32;  // A, B, C and D
  // cuBLASLt's operands, column-major: A is the step's b, B is the step's a.
  bool transA = false, transB = false;  // CUBLAS_OP_T on A / B
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t batch = 1;
  int64_t strideA = 0, strideB = 0, strideC = 0;  // elements between batches; 0: shared
  GemmEpilogue epilogue = GemmEpilogue::None;
  // D = op(A) op(B) + D (cuBLASLt's beta = 1 with C = D): the product's f32 sum plus D's value,
  // rounded once. An implicit-GEMM convolution's bias arrives this way (ConvGemm.h).
  bool accumulate = false;
  Shape resultShape;  // row-major, as the plan types the result
};

struct GemmProblem {
  DType dtype = DType::F32;
  Shape a, b;  // a: [..., M, K] ([..., K, M] if transA); b: [..., K, N] ([..., N, K] if transB)
  bool transA = false, transB = false;
  bool bias = false;  // a bias [N] added in f32 before the rounding
  bool relu = false;  // relu of the result (amp.linear's activation)
};

// amp.linear x[..., in] . w ([out, in] with transpose_w, else [in, out]) + bias as a GemmProblem:
// the leading dims of x fold into M.
GemmProblem linearProblem(DType dtype, const Shape& x, const Shape& w, bool transposeW, bool bias, bool relu);

// Refuses what cuBLASLt cannot express as one strided batch (a broadcast mixing batch dims of both
// operands), dims that disagree, and sizes beyond its 64-bit layouts' 2^31 - 1 rows and columns.
absl::StatusOr<GemmPlan> planGemm(const GemmProblem& p);

}  // namespace amp::rt::cuda

#endif  // AMP_RUNTIME_DEVICES_CUDA_GEMMPLAN_H
