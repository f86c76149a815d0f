// The contract of amp.gemm_epilogue shared by the compiler, which decides where a cuBLASLt training
// epilogue is legal (passes/SelectGemmEpilogues.cpp), and the cuda device, which calls cuBLASLt
// with it (runtime/devices/cuda/GemmPlan.h): the kinds as the plan spells them, and the pure layout
// rules. Header-only, no dependencies.
//
// A row-major D[..., M, N] = op(lhs) . op(rhs) is cuBLASLt's column-major D^T[N, M] =
// op(rhs)^T . op(lhs)^T: cuBLASLt's A is rhs, its B is lhs, m = N, n = M (ldc = N). Batch dims
// become one strided batch, or fold into n when one rhs is shared by every batch of an
// untransposed lhs.
#ifndef AMP_RUNTIME_SCHEMA_CUBLASLTEPILOGUE_H
#define AMP_RUNTIME_SCHEMA_CUBLASLTEPILOGUE_H

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace amp::rt::cuda {

// amp.gemm_epilogue's `kind` (ir/AmpEnums.td, same order and spellings).
enum class EpilogueKind {
  ReluAux, ReluAuxBias, GeluAux, GeluAuxBias, GeluBias, DRelu, DReluBgrad, DGelu, DGeluBgrad, BgradA, BgradB
};
inline constexpr EpilogueKind kEpilogueKinds[] = {
    EpilogueKind::ReluAux, EpilogueKind::ReluAuxBias, EpilogueKind::GeluAux, EpilogueKind::GeluAuxBias,
    EpilogueKind::GeluBias, EpilogueKind::DRelu, EpilogueKind::DReluBgrad, EpilogueKind::DGelu,
    EpilogueKind::DGeluBgrad, EpilogueKind::BgradA, EpilogueKind::BgradB};

inline std::string_view epilogueKindName(EpilogueKind k) {
  switch (k) {
    case EpilogueKind::ReluAux: return "relu_aux";
    case EpilogueKind::ReluAuxBias: return "relu_aux_bias";
    case EpilogueKind::GeluAux: return "gelu_aux";
    case EpilogueKind::GeluAuxBias: return "gelu_aux_bias";
    case EpilogueKind::GeluBias: return "gelu_bias";
    case EpilogueKind::DRelu: return "drelu";
    case EpilogueKind::DReluBgrad: return "drelu_bgrad";
    case EpilogueKind::DGelu: return "dgelu";
    case EpilogueKind::DGeluBgrad: return "dgelu_bgrad";
    case EpilogueKind::BgradA: return "bgrad_a";
    case EpilogueKind::BgradB: return "bgrad_b";
  }
  return "?";
}

inline std::optional<EpilogueKind> parseEpilogueKind(std::string_view name) {
  for (EpilogueKind k : kEpilogueKinds)
    if (epilogueKindName(k) == name) return k;
  return std::nullopt;
}

// What the auxiliary matrix of a kind holds: a ReLU bit mask, or the GELU input in D's type.
enum class EpilogueAux { None, ReluMask, GeluInput };
inline EpilogueAux epilogueAuxOf(EpilogueKind k) {
  switch (k) {
    case EpilogueKind::ReluAux: case EpilogueKind::ReluAuxBias: case EpilogueKind::DRelu: case EpilogueKind::DReluBgrad:
      return EpilogueAux::ReluMask;
    case EpilogueKind::GeluAux: case EpilogueKind::GeluAuxBias: case EpilogueKind::DGelu: case EpilogueKind::DGeluBgrad:
      return EpilogueAux::GeluInput;
    case EpilogueKind::GeluBias: case EpilogueKind::BgradA: case EpilogueKind::BgradB:
      return EpilogueAux::None;
  }
  return EpilogueAux::None;
}

// The column-major problem of lhs . rhs (shapes row-major, transposes as amp.matmul's), or the
// reason cuBLASLt cannot run it as one call in `error`.
struct ColumnMajorGemm {
  int64_t m = 0, n = 0, k = 0, ldc = 0;
  int64_t batch = 1;               // strided batches after folding
  int64_t countLhs = 1, countRhs = 1;  // batch elements of each operand (1: shared by every batch)
  bool folded = false;             // the batch folded into n
  std::vector<int64_t> resultShape;  // row-major [batch..., M, N]
  std::string error;
};

inline std::string shapeText(const std::vector<int64_t>& s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

inline ColumnMajorGemm columnMajorGemm(const std::vector<int64_t>& a, const std::vector<int64_t>& b, bool transA,
                                       bool transB) {
  ColumnMajorGemm g;
  if (a.size() < 2 || b.size() < 2) {
    g.error = "GEMM operands need rank >= 2, got " + shapeText(a) + " and " + shapeText(b);
    return g;
  }
  const size_t ra = a.size(), rb = b.size();
  const int64_t M = transA ? a[ra - 1] : a[ra - 2], K = transA ? a[ra - 2] : a[ra - 1];
  const int64_t Kb = transB ? b[rb - 1] : b[rb - 2], N = transB ? b[rb - 2] : b[rb - 1];
  if (K != Kb) {
    g.error = "GEMM contraction dims differ: " + shapeText(a) + (transA ? " (transposed)" : "") + " vs " +
              shapeText(b) + (transB ? " (transposed)" : "");
    return g;
  }
  // Each operand either has the full batch (after broadcasting) or none.
  const std::vector<int64_t> batchA(a.begin(), a.end() - 2), batchB(b.begin(), b.end() - 2);
  int64_t countA = 1, countB = 1;
  for (int64_t d : batchA) countA *= d;
  for (int64_t d : batchB) countB *= d;
  std::vector<int64_t> batch;
  if (countA == 1 && countB == 1) {
    batch = batchA.size() >= batchB.size() ? batchA : batchB;
  } else if (countB == 1 && batchB.size() <= batchA.size()) {
    batch = batchA;
  } else if (countA == 1 && batchA.size() <= batchB.size()) {
    batch = batchB;
  } else if (batchA == batchB) {
    batch = batchA;
  } else {
    g.error = "GEMM batch broadcast " + shapeText(a) + " x " + shapeText(b) +
              " is not one strided batch (each operand must have the whole batch or none)";
    return g;
  }
  int64_t count = 1;
  for (int64_t d : batch) count *= d;
  g.resultShape = batch;
  g.resultShape.push_back(M);
  g.resultShape.push_back(N);
  g.m = N;
  g.n = M;
  g.k = K;
  g.ldc = N;
  g.batch = count;
  g.countLhs = countA;
  g.countRhs = countB;
  if (count > 1 && countB == 1 && !transA) {  // one shared rhs: fold the batch into n
    g.n = M * count;
    g.batch = 1;
    g.folded = true;
  }
  constexpr int64_t kMaxDim = std::numeric_limits<int32_t>::max();
  if (g.m > kMaxDim || g.n > kMaxDim || g.k > kMaxDim || g.batch > kMaxDim)
    g.error = "GEMM of " + std::to_string(g.m) + " x " + std::to_string(g.n) + " x " + std::to_string(g.k) + " in " +
              std::to_string(g.batch) + " batch(es) exceeds cuBLASLt's 2^31 - 1 per dimension";
  return g;
}

// The auxiliary matrix's leading dimension for a training epilogue on `g`, or the reason cuBLASLt
// has no such call in `error`: training epilogues take one unbatched GEMM; a ReLU mask has m bits
// per column rounded up to 128; a GELU input is stored as D is (ldc elements), which must be a
// multiple of 8.
struct AuxLayout {
  int64_t ld = 0;
  std::string error;
};
inline AuxLayout trainingEpilogueAux(const ColumnMajorGemm& g, EpilogueAux aux) {
  AuxLayout l;
  if (g.batch != 1) {
    l.error = "a training epilogue on a batched GEMM";
    return l;
  }
  if (aux == EpilogueAux::ReluMask) l.ld = (g.m + 127) / 128 * 128;
  if (aux == EpilogueAux::GeluInput) {
    if (g.ldc % 8 != 0) {
      l.error = "the GELU input's leading dimension " + std::to_string(g.ldc) +
                " is not a multiple of 8 (cuBLASLt's aux rule)";
      return l;
    }
    l.ld = g.ldc;
  }
  return l;
}

// Bytes of a ReLU bit mask of aux leading dimension `ld` bits over n columns. The mask lives in
// the storage of the op's i1 result (one byte per element), which must hold at least this many.
inline int64_t reluMaskBytes(int64_t ld, int64_t n) { return ld / 8 * n; }

}  // namespace amp::rt::cuda

#endif  // AMP_RUNTIME_SCHEMA_CUBLASLTEPILOGUE_H
