// One emitter for fused regions. The body (how each element is computed from its inputs, op by op,
// rounding every value to its own type) is generated once, independent of where it runs; a flavour
// wraps it into a kernel: the C++ flavour (KernelEmitter.cpp) into loops GCC vectorises and ampc
// compiles into the bundle; the CUDA flavour (CudaFlavour.cpp) into grid-stride loops with 16-byte
// vector accesses that NVRTC compiles (docs/kernels.md).
#ifndef AMP_CODEGEN_EMIT_KERNELEMITTER_H
#define AMP_CODEGEN_EMIT_KERNELEMITTER_H

#include <string>
#include <vector>

#include "runtime/plan/Plan.h"

namespace amp::codegen {

// How a kernel reads one input from the iteration space (flattened result index i, or the index j
// within a row of `rowLength` elements).
struct InputAccess {
  enum Kind { Full, Scalar, Suffix, Outer, Middle } kind = Full;
  // Suffix: the input's element count, element = j % period (a broadcast along leading dims).
  // Outer: the space's elements per input element, element = i / period (a [M, 1] input).
  // Middle: a broadcast along one run of inner dims ([A, 1, C] against [A, B, C]): element =
  // (i / period) * inner + i % inner, with inner = C's elements and period = B's times inner.
  int64_t period = 0;
  int64_t inner = 0;
};

// The element body of one fused step, independent of the flavour.
struct KernelBody {
  std::string symbol;                 // C identifier of the kernel
  int64_t rowLength = 1;              // rows of this many elements; Suffix periods divide it
  std::vector<InputAccess> inputs;
  std::vector<rt::DType> inputTypes;  // element type of each input
  // The results written once per element (all but the reductions), in `stores` order.
  struct ElementStore {
    int32_t result;  // index into the step's results
    int32_t value;   // the body value stored
    rt::DType dtype;
  };
  std::vector<ElementStore> elementStores;
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
// rowBroadcasts: accept Outer and Middle inputs (the CUDA flavour; the cpu device's kernels
// validate only leading-dim broadcasts, so the C++ flavour refuses them).
KernelBody emitBody(const rt::Plan& plan, const rt::PlanStep& step, std::string& error, bool rowBroadcasts = false);
// emitBody, plus the attributes every flavour's runtime reads from the step: "row_length" and,
// for row reductions, "reduced_results".
KernelBody emitAnnotatedBody(const rt::Plan& plan, rt::PlanStep& step, std::string& error, bool rowBroadcasts = false);

// Text shared by the flavours: the C type of an element in memory ("float", "unsigned short" for
// f16/bf16, "unsigned char" for i1), the statement loading body value `value` from `element` (an
// lvalue such as "in0[i]"), and the expression converting an f32/bool body value for storing.
const char* storageType(rt::DType t);
std::string loadStatement(int32_t value, rt::DType t, const std::string& element);
std::string storeExpr(rt::DType t, const std::string& value);

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

// The CUDA flavour (CudaFlavour.cpp): one CUDA C++ translation unit for NVRTC with an
// `extern "C" __global__` kernel per distinct body, taking its input pointers then its result
// pointers by value. Elementwise bodies run a grid-stride loop over vectors of
// "cuda_vector_width" elements (16-byte loads and stores when every pointer is 16-byte aligned,
// else element by element); bodies with row reductions run one thread per column, rows in order.
// Fused steps are annotated with "cuda_symbol" and "cuda_vector_width" (and the flavour-independent
// "row_length"/"reduced_results"); the C++ flavour's "symbol" is left alone. Lone elementwise
// op steps the emitter can express become one-op kernels, annotated the same way. The unit ends
// with cudaLibrarySource().
bool emitCudaSource(rt::Plan& plan, std::string& source, std::string& error);

// The prelude of the CUDA translation unit: the f16/bf16 conversions and the helper formulas. It
// also compiles as host C++ (no __CUDACC__), so the tests check its conversions bit for bit
// against runtime/numerics without a GPU.
const char* cudaPrelude();

// The CUDA device's library kernels (runtime/kernels/cuda/: the multi-tensor argument
// block, the loss-scaling/optimizer and cross-entropy arithmetic shared with the host tests, the
// kernels), as text.
const char* cudaLibrarySource();

}  // namespace amp::codegen

#endif  // AMP_CODEGEN_EMIT_KERNELEMITTER_H
