// Internal to the reference kernels: the gradient ops amp-autodiff inserts (ir/AmpGradOps.td).
// Semantics and f32 order: docs/reference-executor.md, "Gradient ops".
#ifndef AMP_RUNTIME_REFERENCE_REFERENCEGRAD_H
#define AMP_RUNTIME_REFERENCE_REFERENCEGRAD_H

#include <vector>

#include "runtime/reference/ReferenceCommon.h"

namespace amp::rt::ref {

// Single-result gradient kernels.
absl::StatusOr<Tensor> evalGeluGrad(const OpCall& c);
absl::StatusOr<Tensor> evalSoftmaxGrad(const OpCall& c);
absl::StatusOr<Tensor> evalConv2dGradInput(const OpCall& c);
absl::StatusOr<Tensor> evalConv2dGradWeight(const OpCall& c);
absl::StatusOr<Tensor> evalMaxPool2dGrad(const OpCall& c);
absl::StatusOr<Tensor> evalAvgPool2dGrad(const OpCall& c);
absl::StatusOr<Tensor> evalEmbeddingGrad(const OpCall& c);
absl::StatusOr<Tensor> evalCrossEntropyGrad(const OpCall& c);
absl::StatusOr<Tensor> evalSliceGrad(const OpCall& c);

// Multi-result kernels: one tensor per entry of c.results, in order.
using MultiKernel = absl::StatusOr<std::vector<Tensor>> (*)(const OpCall&);
absl::StatusOr<std::vector<Tensor>> evalLayerNormGrad(const OpCall& c);  // (dx, dweight, dbias)
absl::StatusOr<std::vector<Tensor>> evalRmsNormGrad(const OpCall& c);    // (dx, dweight)
// amp.batch_norm (y, new running mean, new running var) and its gradient (dx, dscale, dbias):
// ReferenceBatchNorm.cpp.
absl::StatusOr<std::vector<Tensor>> evalBatchNorm(const OpCall& c);
absl::StatusOr<std::vector<Tensor>> evalBatchNormGrad(const OpCall& c);

}  // namespace amp::rt::ref

#endif  // AMP_RUNTIME_REFERENCE_REFERENCEGRAD_H
