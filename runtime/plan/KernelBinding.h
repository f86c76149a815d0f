// How a fused step is bound to the generated kernel that computes it (docs/kernels.md, "Binding
// kernels"); for CUDA code objects, by the kernel's name (cudaKernelName). The generated code object exports one table (runtime/schema/KernelTable.h) of
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

// The name of the CUDA kernel ampc generates for a step (a fused region, or a lone elementwise op
// that runs as a one-op kernel): "amp_k" and the SHA-256 (hex) of fusedBodyHash's text, the
// types and shapes of the step's operand and result buffers, and its "cuda_vector_width". The
// CUDA flavour names each kernel so, and the cuda device looks up only the name it derives from
// the step it runs (never a name the plan supplies): an edited plan can point a step at no kernel
// but its own region's, as with the cpu device's table.
std::string cudaKernelName(const Plan& plan, const PlanStep& step);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_PLAN_KERNELBINDING_H
