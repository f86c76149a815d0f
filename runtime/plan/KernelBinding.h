// How a fused step is bound to the generated kernel that computes it (docs/kernels.md, "Binding
// kernels"). The generated code object exports one table (runtime/schema/KernelTable.h) of
// (kernel id, body hash, function); the step names its kernel id ("symbol"), and the runtime
// accepts the binding only when the table's entry for that id carries the hash of this step's
// region. So a plan edit can neither name a function outside the table nor point a step at a
// kernel generated for another region.
#ifndef AMP_RUNTIME_PLAN_KERNELBINDING_H
#define AMP_RUNTIME_PLAN_KERNELBINDING_H

#include <string>

#include "runtime/plan/Plan.h"

namespace amp::rt {

// SHA-256 (hex) of everything in a fused step the generated kernel depends on: the types and
// shapes of its locals, every body op (name, local ids, attributes), its yields and its own
// attributes except the names of kernels ("kernel", "symbol", "cuda_symbol") and the CUDA launch
// width. The step's buffer ids are not included: they say where the kernel reads and writes, and
// the device checks those against the locals.
std::string fusedBodyHash(const PlanStep& step);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_PLAN_KERNELBINDING_H
