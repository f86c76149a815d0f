#include "runtime/devices/cuda/GemmStep.h"

#include "absl/strings/str_cat.h"

namespace amp::rt::cuda {

absl::StatusOr<GemmStep> decodeGemmStep(const Plan& plan, const PlanStep& step) {
  if (!step.code || (*step.code != OpCode::Linear && *step.code != OpCode::Matmul && *step.code != OpCode::GemmEpilogue))
    return absl::InvalidArgumentError("expected a GEMM step");
  if (step.operands.size() < 2 || step.results.empty()) return absl::InvalidArgumentError("expected the GEMM's operands");
  const BufferDesc& x = plan.buffers[step.operands[0]];
  const BufferDesc& w = plan.buffers[step.operands[1]];
  GemmStep g;
  g.problem.dtype = x.dtype;
  if (*step.code == OpCode::Linear) {
    auto attrs = step.typedAttrs<LinearAttrs>();
    if (!attrs.ok()) return attrs.status();
    if (step.operands.size() > 3 || step.results.size() != 1)
      return absl::InvalidArgumentError("expected the GEMM's operands and results");
    const bool bias = step.operands.size() == 3;
    g.problem = linearProblem(x.dtype, x.shape, w.shape, attrs->transposeW, bias,
                              attrs->activation == LinearActivation::Relu);
    if (bias) g.bias = 2;
    return g;
  }
  auto ta = step.withAttrsOf<MatmulAttrs, GemmEpilogueAttrs>([](const auto& a) { return a.transposeA; });
  auto tb = step.withAttrsOf<MatmulAttrs, GemmEpilogueAttrs>([](const auto& a) { return a.transposeB; });
  if (!ta.ok()) return ta.status();
  if (!tb.ok()) return tb.status();
  g.problem.a = x.shape;
  g.problem.b = w.shape;
  g.problem.transA = *ta;
  g.problem.transB = *tb;
  size_t operands = 2, results = 1;
  if (*step.code == OpCode::GemmEpilogue) {
    auto name = step.withAttrsOf<GemmEpilogueAttrs>([](const auto& a) { return std::string(gemmEpilogueKindKeyword(a.kind)); });
    if (!name.ok()) return name.status();
    g.kind = parseEpilogueKind(*name);
    if (!g.kind) return absl::InvalidArgumentError(absl::StrCat("unknown epilogue kind \"", *name, "\""));
    g.epilogue = cublasLtEpilogue(*g.kind);
    const bool forward = epilogueIsForward(g.epilogue);
    if (forward && g.problem.transA) return absl::InvalidArgumentError(absl::StrCat(*name, " is a linear layer: lhs is not transposed"));
    if (epilogueReadsBias(g.epilogue)) {
      g.problem.bias = true;
      g.bias = static_cast<int>(operands++);
    }
    if (epilogueAux(g.epilogue) != GemmAux::None) {
      if (forward) g.auxResult = static_cast<int>(results++);
      else g.auxOperand = static_cast<int>(operands++);
    }
    if (epilogueWritesBiasGrad(g.epilogue)) g.biasGrad = static_cast<int>(results++);
  }
  if (step.operands.size() != operands || step.results.size() != results)
    return absl::InvalidArgumentError(absl::StrCat("expected ", operands, " operand(s) and ", results, " result(s)"));
  return g;
}

}  // namespace amp::rt::cuda
