// One emitter for fused regions. The body (how each element is computed from its inputs, op by op,
// rounding every value to its own type) is generated once, independent of where it runs; a flavour
// wraps it into a kernel: the C++ flavour into loops GCC vectorises and ampc compiles into the
// bundle (docs/kernels.md); a CUDA flavour will wrap the same body into a grid-stride loop.
#ifndef AMP_CODEGEN_EMIT_KERNELEMITTER_H
#define AMP_CODEGEN_EMIT_KERNELEMITTER_H

#include <string>
#include <vector>

#include "runtime/plan/Plan.h"

namespace amp::codegen {

// How a kernel reads one input from the iteration space (flattened result index i, or the index j
// within a row of `rowLength` elements).
struct InputAccess {
  enum Kind { Full, Scalar, Suffix } kind = Full;
  int64_t period = 0;  // Suffix: the input's element count; element = j % period
};

// The element body of one fused step, independent of the flavour.
struct KernelBody {
  std::string symbol;                 // C identifier of the kernel
  int64_t rowLength = 1;              // rows of this many elements; Suffix periods divide it
  std::vector<InputAccess> inputs;
  std::vector<std::string> loads;     // one statement per input: "const float v0 = ...;"
  std::vector<std::string> compute;   // one statement per body op
  std::vector<std::string> stores;    // one statement per result
  // Row reductions at the region's end (column sums of a body value over all rows): the kernel
  // then runs by columns, rows in order, so each sum accumulates in the reference's order.
  struct Reduction {
    int32_t source;  // the body value summed
    int32_t yield;   // the result index it is written to
    rt::DType dtype;
  };
  std::vector<Reduction> reductions;
  int64_t rows = 0;  // with reductions: rows of the iteration space (compiled in)
};

// Nullopt-like: `error` is set when the step cannot be emitted (an op or dtype the emitter lacks,
// an input that is not Full/Scalar/Suffix of the iteration space).
KernelBody emitBody(const rt::Plan& plan, const rt::PlanStep& step, std::string& error);

// C identifier for a kernel name ("train_step.k0" -> "amp_train_step_k0").
std::string kernelSymbol(const std::string& kernel);

// The C++ flavour: one translation unit with every fused step of the plan, each
// `extern "C" void SYMBOL(const unsigned char* const* in, unsigned char* const* out,
//                         long begin, long end)` over rows [begin, end), or, for a step with row
// reductions (attr "reduced_results" lists them), over columns [begin, end) of every row.
// Fused steps are annotated with their "row_length" attribute and the "symbol" of the function
// computing them (identical bodies share one function). Returns false with `error` set when a
// step cannot be emitted.
bool emitCpuSource(rt::Plan& plan, std::string& source, std::string& error);

}  // namespace amp::codegen

#endif  // AMP_CODEGEN_EMIT_KERNELEMITTER_H
