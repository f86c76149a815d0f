// A GEMM step of the plan (amp.linear, amp.matmul, amp.gemm_epilogue) decoded once for the cuda
// device: the row-major problem GemmPlan.h maps onto cuBLASLt, and the training epilogue an
// amp.gemm_epilogue asks for (its `kind`, which ampc's amp-select-gemm-epilogues chose).
#ifndef AMP_RUNTIME_DEVICES_CUDA_GEMMSTEP_H
#define AMP_RUNTIME_DEVICES_CUDA_GEMMSTEP_H

#include <optional>

#include "absl/status/statusor.h"
#include "runtime/devices/cuda/GemmPlan.h"
#include "runtime/plan/Plan.h"

namespace amp::rt::cuda {

struct GemmStep {
  GemmProblem problem;
  std::optional<EpilogueKind> kind;              // amp.gemm_epilogue only
  GemmEpilogue epilogue = GemmEpilogue::None;    // kind's cuBLASLt epilogue; None for linear and matmul
  // Where the epilogue's tensors are: the step's operand or result index, or -1.
  int bias = -1;          // operand: a linear's (or a forward kind's) bias
  int auxOperand = -1;    // operand: the ReLU mask or GELU input a backward kind reads
  int auxResult = -1;     // result: the ReLU mask or GELU input a forward kind writes
  int biasGrad = -1;      // result: the bias gradient of a BGRAD kind
};

// The step's GEMM, or an error naming what does not fit (operand and result counts per kind, an
// unknown kind, an activation cuBLASLt has no epilogue for).
absl::StatusOr<GemmStep> decodeGemmStep(const Plan& plan, const PlanStep& step);

}  // namespace amp::rt::cuda

#endif  // AMP_RUNTIME_DEVICES_CUDA_GEMMSTEP_H
