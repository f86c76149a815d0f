#include "runtime/devices/cuda/GemmPlan.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace amp::rt::cuda {

std::string_view gemmEpilogueName(GemmEpilogue e) {
  switch (e) {
    case GemmEpilogue::None: return "DEFAULT";
    case GemmEpilogue::Bias: return "BIAS";
    case GemmEpilogue::ReluBias: return "RELU_BIAS";
    case GemmEpilogue::Relu: return "RELU";
    case GemmEpilogue::ReluAux: return "RELU_AUX";
    case GemmEpilogue::ReluAuxBias: return "RELU_AUX_BIAS";
    case GemmEpilogue::GeluBias: return "GELU_BIAS";
    case GemmEpilogue::GeluAux: return "GELU_AUX";
    case GemmEpilogue::GeluAuxBias: return "GELU_AUX_BIAS";
    case GemmEpilogue::DRelu: return "DRELU";
    case GemmEpilogue::DReluBgrad: return "DRELU_BGRAD";
    case GemmEpilogue::DGelu: return "DGELU";
    case GemmEpilogue::DGeluBgrad: return "DGELU_BGRAD";
    case GemmEpilogue::BgradA: return "BGRADA";
    case GemmEpilogue::BgradB: return "BGRADB";
  }
  return "?";
}

std::optional<GemmEpilogue> parseGemmEpilogue(std::string_view name) {
  for (int i = 0; i <= static_cast<int>(GemmEpilogue::BgradB); ++i)
    if (gemmEpilogueName(static_cast<GemmEpilogue>(i)) == name) return static_cast<GemmEpilogue>(i);
  return std::nullopt;
}

bool epilogueReadsBias(GemmEpilogue e) {
  return e == GemmEpilogue::Bias || e == GemmEpilogue::ReluBias || e == GemmEpilogue::ReluAuxBias ||
         e == GemmEpilogue::GeluBias || e == GemmEpilogue::GeluAuxBias;
}

bool epilogueIsForward(GemmEpilogue e) {
  return e == GemmEpilogue::None || e == GemmEpilogue::Bias || e == GemmEpilogue::ReluBias || e == GemmEpilogue::Relu ||
         e == GemmEpilogue::ReluAux || e == GemmEpilogue::ReluAuxBias || e == GemmEpilogue::GeluBias ||
         e == GemmEpilogue::GeluAux || e == GemmEpilogue::GeluAuxBias;
}

bool epilogueWritesBiasGrad(GemmEpilogue e) {
  return e == GemmEpilogue::DReluBgrad || e == GemmEpilogue::DGeluBgrad || e == GemmEpilogue::BgradA ||
         e == GemmEpilogue::BgradB;
}

GemmAux epilogueAux(GemmEpilogue e) {
  switch (e) {
    case GemmEpilogue::ReluAux:
    case GemmEpilogue::ReluAuxBias:
    case GemmEpilogue::DRelu:
    case GemmEpilogue::DReluBgrad: return GemmAux::ReluMask;
    case GemmEpilogue::GeluAux:
    case GemmEpilogue::GeluAuxBias:
    case GemmEpilogue::DGelu:
    case GemmEpilogue::DGeluBgrad: return GemmAux::GeluInput;
    default: return GemmAux::None;
  }
}

int64_t auxBytes(const GemmPlan& g) {
  switch (epilogueAux(g.epilogue)) {
    case GemmAux::ReluMask: return g.auxLd / 8 * g.n;
    case GemmAux::GeluInput: return g.auxLd * g.n * static_cast<int64_t>(dtypeSize(g.dtype));
    case GemmAux::None: break;
  }
  return 0;
}

int64_t addressAlignment(uint64_t address) {
  if (address == 0) return 256;
  const uint64_t lowest = address & (~address + 1);
  return static_cast<int64_t>(lowest < 256 ? lowest : 256);
}

void alignForCall(GemmPlan& g, uint64_t a, uint64_t b, uint64_t bias, uint64_t d, uint64_t aux) {
  GemmAlignment& al = g.alignment;
  al.a = std::min(al.a, addressAlignment(b));  // cuBLASLt's A is the step's b
  al.b = std::min(al.b, addressAlignment(a));
  al.d = std::min(al.d, addressAlignment(d));
  al.bias = std::min(al.bias, addressAlignment(bias));
  al.aux = std::min(al.aux, addressAlignment(aux));
}

absl::Status noGemmAlgorithm(const GemmPlan& g) {
  const bool training = epilogueAux(g.epilogue) != GemmAux::None || epilogueWritesBiasGrad(g.epilogue);
  return absl::UnimplementedError(absl::StrCat(
      "cuBLASLt has no algorithm for a ", std::string(dtypeName(g.dtype)), " GEMM of ", g.m, " x ", g.n, " x ", g.k,
      g.batch > 1 ? absl::StrCat(" in ", g.batch, " batches") : "", " with epilogue ", std::string(gemmEpilogueName(g.epilogue)),
      g.accumulate ? " (accumulating)" : "",
      training ? "; a bundle compiled without ampc --gemm-epilogues runs it without the training epilogues" : ""));
}

absl::Status setTrainingEpilogue(GemmPlan& g, GemmEpilogue e) {
  if (g.accumulate) return absl::InvalidArgumentError("a training epilogue on an accumulating GEMM");
  ColumnMajorGemm c;
  c.m = g.m;
  c.n = g.n;
  c.k = g.k;
  c.ldc = g.ldc;
  c.batch = g.batch;
  const EpilogueAux aux = epilogueAux(e) == GemmAux::ReluMask    ? EpilogueAux::ReluMask
                          : epilogueAux(e) == GemmAux::GeluInput ? EpilogueAux::GeluInput
                                                                 : EpilogueAux::None;
  const AuxLayout layout = trainingEpilogueAux(c, aux);
  if (!layout.error.empty())
    return absl::UnimplementedError(absl::StrCat("epilogue ", std::string(gemmEpilogueName(e)), ": ", layout.error));
  g.epilogue = e;
  g.auxLd = layout.ld;
  return absl::OkStatus();
}

GemmProblem linearProblem(DType dtype, const Shape& x, const Shape& w, bool transposeW, bool bias, bool relu) {
  GemmProblem p;
  p.dtype = dtype;
  const int64_t in = x.empty() ? 0 : x.back();
  const int64_t rows = in ? numElements(x) / in : numElements(Shape(x.begin(), x.end() - (x.empty() ? 0 : 1)));
  p.a = {rows, in};
  p.b = w;
  p.transB = transposeW;
  p.bias = bias;
  p.relu = relu;
  return p;
}

absl::StatusOr<GemmPlan> planGemm(const GemmProblem& p) {
  if (p.dtype != DType::F32 && p.dtype != DType::F16 && p.dtype != DType::BF16)
    return absl::InvalidArgumentError(absl::StrCat("cuBLASLt GEMMs take f32, f16 or bf16, got ", std::string(dtypeName(p.dtype))));
  // The layout rules the compiler decides epilogues by (runtime/schema/CublasLtEpilogue.h).
  const ColumnMajorGemm c = columnMajorGemm(p.a, p.b, p.transA, p.transB);
  if (!c.error.empty()) {
    const bool batchRule = c.error.rfind("GEMM batch", 0) == 0;
    return batchRule ? absl::UnimplementedError(c.error) : absl::InvalidArgumentError(c.error);
  }
  GemmPlan g;
  g.dtype = p.dtype;
  g.resultShape = c.resultShape;
  // cuBLASLt's A = b: stored [K, N] (col-major [N, K], ld N) or [N, K] with transB (col-major
  // [K, N], ld K, transposed). B = a: stored [M, K] (col-major [K, M], ld K) or [K, M] with transA.
  const int64_t M = c.resultShape[c.resultShape.size() - 2], N = c.m, K = c.k;
  g.m = c.m;
  g.n = c.n;
  g.k = c.k;
  g.transA = p.transB;
  g.transB = p.transA;
  g.lda = p.transB ? K : N;
  g.ldb = p.transA ? M : K;
  g.ldc = c.ldc;
  g.batch = c.batch;
  g.strideA = c.countRhs == 1 ? 0 : K * N;
  g.strideB = c.countLhs == 1 ? 0 : M * K;
  g.strideC = M * N;
  if (c.folded) g.strideB = g.strideC = 0;
  g.epilogue = p.bias ? (p.relu ? GemmEpilogue::ReluBias : GemmEpilogue::Bias)
                      : (p.relu ? GemmEpilogue::Relu : GemmEpilogue::None);
  return g;
}

GemmEpilogue cublasLtEpilogue(EpilogueKind k) {
  switch (k) {
    case EpilogueKind::ReluAux: return GemmEpilogue::ReluAux;
    case EpilogueKind::ReluAuxBias: return GemmEpilogue::ReluAuxBias;
    case EpilogueKind::GeluAux: return GemmEpilogue::GeluAux;
    case EpilogueKind::GeluAuxBias: return GemmEpilogue::GeluAuxBias;
    case EpilogueKind::GeluBias: return GemmEpilogue::GeluBias;
    case EpilogueKind::DRelu: return GemmEpilogue::DRelu;
    case EpilogueKind::DReluBgrad: return GemmEpilogue::DReluBgrad;
    case EpilogueKind::DGelu: return GemmEpilogue::DGelu;
    case EpilogueKind::DGeluBgrad: return GemmEpilogue::DGeluBgrad;
    // bgrad_a sums the op's lhs, which is cuBLASLt's B; bgrad_b its rhs, cuBLASLt's A.
    case EpilogueKind::BgradA: return GemmEpilogue::BgradB;
    case EpilogueKind::BgradB: return GemmEpilogue::BgradA;
  }
  return GemmEpilogue::None;
}

}  // namespace amp::rt::cuda
