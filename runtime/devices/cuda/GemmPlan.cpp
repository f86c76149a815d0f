#include "runtime/devices/cuda/GemmPlan.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"

namespace amp::rt::cuda {
namespace {

std::string shapeText(const Shape& s) { return shapeToString(s); }

int64_t product(const Shape& s, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i) n *= s[i];
  return n;
}

}  // namespace

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

absl::Status setTrainingEpilogue(GemmPlan& g, GemmEpilogue e) {
  if (g.batch != 1)
    return absl::UnimplementedError(absl::StrCat("epilogue ", std::string(gemmEpilogueName(e)), " on a batched GEMM"));
  if (g.accumulate) return absl::InvalidArgumentError("a training epilogue on an accumulating GEMM");
  g.epilogue = e;
  g.auxLd = 0;
  if (epilogueAux(e) == GemmAux::ReluMask) g.auxLd = (g.m + 127) / 128 * 128;
  if (epilogueAux(e) == GemmAux::GeluInput) {
    if (g.ldc % 8 != 0)
      return absl::UnimplementedError(
          absl::StrCat("the GELU input's leading dimension ", g.ldc, " is not a multiple of 8 (cuBLASLt's aux rule)"));
    g.auxLd = g.ldc;
  }
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
  if (p.a.size() < 2 || p.b.size() < 2)
    return absl::InvalidArgumentError(
        absl::StrCat("GEMM operands need rank >= 2, got ", shapeText(p.a), " and ", shapeText(p.b)));
  const size_t ra = p.a.size(), rb = p.b.size();
  const int64_t M = p.transA ? p.a[ra - 1] : p.a[ra - 2], K = p.transA ? p.a[ra - 2] : p.a[ra - 1];
  const int64_t Kb = p.transB ? p.b[rb - 1] : p.b[rb - 2], N = p.transB ? p.b[rb - 2] : p.b[rb - 1];
  if (K != Kb)
    return absl::InvalidArgumentError(absl::StrCat("GEMM contraction dims differ: ", shapeText(p.a),
                                                   p.transA ? " (transposed)" : "", " vs ", shapeText(p.b),
                                                   p.transB ? " (transposed)" : ""));
  // Batch: each operand either has the full batch (after broadcasting) or none.
  const Shape batchA(p.a.begin(), p.a.end() - 2), batchB(p.b.begin(), p.b.end() - 2);
  const int64_t countA = product(batchA, 0, batchA.size()), countB = product(batchB, 0, batchB.size());
  Shape batch;
  if (countA == 1 && countB == 1) {
    batch = batchA.size() >= batchB.size() ? batchA : batchB;
  } else if (countB == 1 && batchB.size() <= batchA.size()) {
    batch = batchA;
  } else if (countA == 1 && batchA.size() <= batchB.size()) {
    batch = batchB;
  } else if (batchA == batchB) {
    batch = batchA;
  } else {
    return absl::UnimplementedError(absl::StrCat("GEMM batch broadcast ", shapeText(p.a), " x ", shapeText(p.b),
                                                 " is not one strided batch (each operand must have the whole "
                                                 "batch or none)"));
  }
  const int64_t count = product(batch, 0, batch.size());
  constexpr int64_t kMaxDim = std::numeric_limits<int32_t>::max();
  GemmPlan g;
  g.dtype = p.dtype;
  g.resultShape = batch;
  g.resultShape.push_back(M);
  g.resultShape.push_back(N);
  // cuBLASLt's A = b: stored [K, N] (col-major [N, K], ld N) or [N, K] with transB (col-major
  // [K, N], ld K, transposed). B = a: stored [M, K] (col-major [K, M], ld K) or [K, M] with transA.
  g.m = N;
  g.n = M;
  g.k = K;
  g.transA = p.transB;
  g.transB = p.transA;
  g.lda = p.transB ? K : N;
  g.ldb = p.transA ? M : K;
  g.ldc = N;
  g.batch = count;
  g.strideA = countB == 1 ? 0 : K * N;
  g.strideB = countA == 1 ? 0 : M * K;
  g.strideC = M * N;
  if (count > 1 && countB == 1 && !p.transA) {  // one shared b: fold the batch into M
    g.n = M * count;
    g.batch = 1;
    g.strideB = g.strideC = 0;
  }
  if (g.m > kMaxDim || g.n > kMaxDim || g.k > kMaxDim || g.batch > kMaxDim)
    return absl::InvalidArgumentError(absl::StrCat("GEMM of ", g.m, " x ", g.n, " x ", g.k, " in ", g.batch,
                                                   " batch(es) exceeds cuBLASLt's 2^31 - 1 per dimension"));
  g.epilogue = p.bias ? (p.relu ? GemmEpilogue::ReluBias : GemmEpilogue::Bias)
                      : (p.relu ? GemmEpilogue::Relu : GemmEpilogue::None);
  return g;
}

}  // namespace amp::rt::cuda
