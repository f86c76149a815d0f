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
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/Tensor.h"
#include "runtime/schema/CublasLtEpilogue.h"

namespace amp::rt::cuda {

// The cuBLASLt epilogues the CUDA device uses: CUBLASLT_EPILOGUE_DEFAULT, _BIAS, _RELU_BIAS, _RELU
// for amp.linear and amp.matmul; the rest for amp.gemm_epilogue, which ampc forms only when asked
// (`ampc --gemm-epilogues=cublaslt`): they trade the exact bits of the unfused ops for fewer passes
// over memory:
//  - ReluAux(Bias), GeluAux(Bias): the forward, also writing the auxiliary matrix the backward
//    reads (a ReLU bit mask, or the GELU input in D's type); GeluBias without it;
//  - DRelu(Bgrad), DGelu(Bgrad): the backward's dX GEMM, masked by the ReLU bits or multiplied by
//    gelu'(aux), and (Bgrad) the bias gradient over D's columns into the bias pointer;
//  - BgradA / BgradB: a weight-gradient GEMM that also sums its A (B) operand over k into the bias
//    pointer (the layer's bias gradient).
enum class GemmEpilogue {
  None, Bias, ReluBias, Relu,
  ReluAux, ReluAuxBias, GeluBias, GeluAux, GeluAuxBias, DRelu, DReluBgrad, DGelu, DGeluBgrad, BgradA,
  BgradB  // the last: parseGemmEpilogue walks them in order
};
std::string_view gemmEpilogueName(GemmEpilogue e);
// The epilogue of that name, or nullopt.
std::optional<GemmEpilogue> parseGemmEpilogue(std::string_view name);
// What an epilogue adds to the call: a bias read (BIAS forms), a bias gradient written (one value
// per row of D, or per column for BgradB), and an auxiliary matrix written or read.
bool epilogueReadsBias(GemmEpilogue e);
// A forward form (the layer's own bias and activation), as opposed to a gradient one (DRELU,
// DGELU, BGRAD): only amp.linear takes a forward form, only amp.matmul a gradient one.
bool epilogueIsForward(GemmEpilogue e);
bool epilogueWritesBiasGrad(GemmEpilogue e);
enum class GemmAux { None, ReluMask, GeluInput };
GemmAux epilogueAux(GemmEpilogue e);
// The bytes of the auxiliary matrix of plan `g` (0 without one): a ReLU mask holds auxLd bits per
// column of D, a GELU input auxLd elements of D's type.
struct GemmPlan;
int64_t auxBytes(const GemmPlan& g);

// The alignment in bytes of each pointer a call passes, a power of two up to 256 (cuBLASLt's
// default assumption). The heuristic is told them (CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*_BYTES and,
// for the bias and aux pointers, a stand-in address of that alignment), so it picks only
// algorithms that work on them: arena buffers are 64-byte aligned, convolution chunks less.
// In cuBLASLt's terms: A is the step's b, B its a.
struct GemmAlignment {
  int64_t a = 256, b = 256, d = 256, bias = 256, aux = 256;
};
int64_t addressAlignment(uint64_t address);

struct GemmPlan {
  DType dtype = DType::F32;  // A, B, C and D
  // cuBLASLt's operands, column-major: A is the step's b, B is the step's a.
  bool transA = false, transB = false;  // CUBLAS_OP_T on A / B
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t batch = 1;
  int64_t strideA = 0, strideB = 0, strideC = 0;  // elements between batches; 0: shared
  GemmEpilogue epilogue = GemmEpilogue::None;
  // The auxiliary matrix's leading dimension (epilogueAux): bits for a ReLU mask (a multiple of
  // 128, at least m), elements for a GELU input (a multiple of 8, at least m).
  int64_t auxLd = 0;
  GemmAlignment alignment;
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
// operands), dims that disagree, and sizes beyond its 64-bit layouts' 2^31 - 1 rows and columns
// (columnMajorGemm, the rule the compiler shares).
absl::StatusOr<GemmPlan> planGemm(const GemmProblem& p);

// Gives planned GEMM `g` the training epilogue `e` and its auxiliary leading dimension by the rules
// the compiler decides with (trainingEpilogueAux: the ReLU mask's m rounded up to 128 bits, or the
// GELU input stored as D is, ldc a multiple of 8). Refuses a batched or accumulating call.
absl::Status setTrainingEpilogue(GemmPlan& g, GemmEpilogue e);
// The cuBLASLt epilogue of an amp.gemm_epilogue kind.
GemmEpilogue cublasLtEpilogue(EpilogueKind k);

// Lowers g's alignments to those of one call's pointers (the step's a and b, the bias, D, the aux
// matrix; 0 for none), so one plan serves every call it is used for.
void alignForCall(GemmPlan& g, uint64_t a, uint64_t b, uint64_t bias, uint64_t d, uint64_t aux);

// What GpuApi::prepareGemm returns when cuBLASLt's heuristic finds no algorithm for `g`:
// Unimplemented, which the device answers with a plainer call (GemmVariants.h) where there is one.
absl::Status noGemmAlgorithm(const GemmPlan& g);

}  // namespace amp::rt::cuda

#endif  // AMP_RUNTIME_DEVICES_CUDA_GEMMPLAN_H
