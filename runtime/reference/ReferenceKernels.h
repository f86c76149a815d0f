// The reference executor's kernels: a scalar, exact implementation of every forward op of the
// `amp` dialect on runtime tensors. This is the numeric oracle of the project (docs/reference-
// executor.md gives each op's exact semantics, including its f32 evaluation order).
#ifndef AMP_RUNTIME_REFERENCE_REFERENCEKERNELS_H
#define AMP_RUNTIME_REFERENCE_REFERENCEKERNELS_H

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/Tensor.h"
#include "runtime/plan/Attr.h"
#include "runtime/plan/OpAttrs.h"

namespace amp::rt {

// A result type as inferred by the compiler.
struct TensorType {
  DType dtype = DType::F32;
  Shape shape;
};

class Communicator;

struct EvalContext {
  int64_t step = 0;  // Training step: the high half of the dropout RNG counter.
  // The data-parallel job amp.all_reduce runs in; null: a job of one rank (results = operands).
  Communicator* communicator = nullptr;
};

// Evaluates op `opName` (e.g. "amp.matmul"). Operands, attributes and result types are validated;
// any mismatch (unknown op, wrong operand count/dtype/shape, missing or ill-typed attribute,
// result type different from what the op computes, out-of-range ids or labels) returns
// InvalidArgument naming the op. Never crashes on bad input.
// `decoded`, when given and holding the op's attributes (a decoded plan step's), spares decoding
// `attrs` again.
absl::StatusOr<std::vector<Tensor>> evalReferenceOp(std::string_view opName,
                                                    absl::Span<const Tensor* const> operands,
                                                    const AttrMap& attrs,
                                                    absl::Span<const TensorType> resultTypes,
                                                    const EvalContext& ctx, const OpAttrs* decoded = nullptr);

// Names of every op evalReferenceOp implements, sorted.
std::vector<std::string_view> referenceOpNames();

}  // namespace amp::rt

#endif  // AMP_RUNTIME_REFERENCE_REFERENCEKERNELS_H
