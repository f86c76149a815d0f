// Internal to the reference kernels: amp.gemm_epilogue (ir/AmpFusedOps.td), run as the unfused ops
// it stands for.
#ifndef AMP_RUNTIME_REFERENCE_REFERENCEGEMMEPILOGUE_H
#define AMP_RUNTIME_REFERENCE_REFERENCEGEMMEPILOGUE_H

#include <vector>

#include "runtime/reference/ReferenceCommon.h"

namespace amp::rt::ref {

// (d[, mask | GELU input][, bias gradient]), one tensor per entry of c.results.
absl::StatusOr<std::vector<Tensor>> evalGemmEpilogue(const OpCall& c);

}  // namespace amp::rt::ref

#endif  // AMP_RUNTIME_REFERENCE_REFERENCEGEMMEPILOGUE_H
