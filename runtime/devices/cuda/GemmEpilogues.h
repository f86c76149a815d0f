// The cuda device's opt-in rewrite of an entry onto cuBLASLt's training epilogues
// (CudaOptions::epilogues = GemmEpilogueMode::Cublaslt, `amp-run --gemm-epilogues=cublaslt`).
//
// By default every activation gradient and bias gradient runs in a generated kernel in the
// reference's order, which gives the reference's bits. This rewrite moves that work into the GEMMs
// that produce or consume the tensors, which saves a pass over each activation gradient:
//
//  - ReLU: `amp.linear ... activation = relu` writes a ReLU bit mask beside its result
//    (RELU_AUX_BIAS / RELU_AUX); the dX GEMM of the layer above (`amp.matmul`) applies it and
//    sums the bias gradient (DRELU_BGRAD / DRELU), replacing the fused kernel
//    `compare gt(h, 0) -> select -> [reduce_sum]`.
//  - GELU (tanh form, cuBLASLt's): `amp.linear` + `amp.gelu approximate = tanh` become one GEMM
//    (GELU_AUX_BIAS keeps the GELU input, which the backward reads; GELU_BIAS when nothing does);
//    the dX GEMM feeding `amp.gelu_grad` applies gelu'(input) and sums the bias gradient
//    (DGELU_BGRAD / DGELU), replacing gelu_grad and the bias gradient's reduce_sum.
//  - A bias gradient left as its own `amp.reduce_sum` over the rows of an operand of a weight
//    gradient GEMM (`amp.matmul transpose_a`) is summed by that GEMM (BGRADA / BGRADB).
//
// Numerics: within summation-order bounds, not bit-exact (docs/cuda-device.md): cuBLASLt applies
// the activation to the f32 sum before rounding, sums bias gradients in its own order, and its
// ReLU mask says where the f32 pre-activation was positive. Pure host logic on the plan; memory
// is planned again for the rewritten entry.
#ifndef AMP_RUNTIME_DEVICES_CUDA_GEMMEPILOGUES_H
#define AMP_RUNTIME_DEVICES_CUDA_GEMMEPILOGUES_H

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/devices/cuda/GemmPlan.h"
#include "runtime/plan/Plan.h"

namespace amp::rt::cuda {

// Attributes of a rewritten GEMM step. "cuda_epilogue": the epilogue's cuBLASLt name
// (gemmEpilogueName). "cuda_relu_mask": the buffer id of the ReLU output whose mask the step writes
// (forward) or reads (backward); the mask itself is device scratch. Operands and results grow by
// what the epilogue adds: a GELU forward's results are [output, GELU input] (the input only when
// the backward reads it), a DGELU's operands end with the GELU input, and a bias gradient is the
// last result of DRELU_BGRAD, DGELU_BGRAD, BGRADA and BGRADB steps.
inline constexpr char kEpilogueAttr[] = "cuda_epilogue";
inline constexpr char kReluMaskAttr[] = "cuda_relu_mask";

// The epilogue a GEMM step asks for (None without the attribute), or an error for a name this
// device does not know.
absl::StatusOr<GemmEpilogue> requestedEpilogue(const PlanStep& step);

// The GEMM problem of an amp.linear / amp.matmul step as the plan types it (no epilogue beyond
// the layer's own bias and relu).
absl::StatusOr<GemmProblem> gemmProblemOf(const Plan& plan, const PlanStep& step);

struct EpilogueRewrite {
  EntryPoint entry;              // the rewritten entry, without a stored memory layout
  std::vector<size_t> planStep;  // for each of its steps, the step of the entry it comes from
  std::string summary;           // what moved into which epilogues, for reports
};

// The rewritten entry, or nullopt when no pattern above applies.
std::optional<EpilogueRewrite> fuseGemmEpilogues(const Plan& plan, const EntryPoint& entry);

}  // namespace amp::rt::cuda

#endif  // AMP_RUNTIME_DEVICES_CUDA_GEMMEPILOGUES_H
