// The ways the cuda device may run one GEMM step of amp.linear or amp.matmul, in the order it tries
// them: its first choice, then plainer calls for when cuBLASLt's heuristic finds no algorithm
// (GpuApi::prepareGemm returns Unimplemented, noGemmAlgorithm). Each variant computes the
// reference's bits (given cuBLASLt's summation order):
//  - first choice: the planned call, but a relu runs as its own pass after it (kernels/
//    EpilogueKernels.cu) rather than in cuBLASLt's RELU_BIAS/RELU epilogue, since that epilogue's
//    max(x, 0) turns NaN into 0 and the reference keeps NaN (ReferenceLinalg.cpp);
//  - without the BIAS epilogue: D filled with the bias row by row, then the call accumulates onto it
//    (beta = 1): the f32 sum plus the bias, rounded once, as the epilogue does;
//  - without the strided batch: one unbatched call per batch.
// The training epilogues (amp.gemm_epilogue) have no plainer form that keeps their contract, so
// they get their planned call only.
#ifndef AMP_RUNTIME_DEVICES_CUDA_GEMMVARIANTS_H
#define AMP_RUNTIME_DEVICES_CUDA_GEMMVARIANTS_H

#include <string>
#include <vector>

#include "runtime/devices/cuda/GemmPlan.h"

namespace amp::rt::cuda {

struct GemmVariant {
  GemmPlan plan;          // what prepareGemm is asked for
  bool biasRows = false;  // D is first filled with the bias, one copy per row; plan accumulates onto it
  bool relu = false;      // the reference's relu over D after the call (NaN kept, -0 -> +0)
  bool perBatch = false;  // plan is one batch of the original: one call per batch
  std::string change;     // how it differs from the planned call, for reports ("" for none)
};

// `libraryPasses`: whether the bundle's code has the relu and bias-rows kernels
// (kernels/EpilogueKernels.cu). A bundle from an older ampc lacks them: its relu stays in
// cuBLASLt's epilogue (NaN becomes 0) and its bias has no fallback.
std::vector<GemmVariant> gemmVariants(const GemmPlan& planned, bool trainingEpilogue, bool libraryPasses);

}  // namespace amp::rt::cuda

#endif  // AMP_RUNTIME_DEVICES_CUDA_GEMMVARIANTS_H
