// The run-time choice between a cpu kernel family's scalar, AVX2 and AVX-512 code paths, shared by
// the exact GELU (GeluExact.h), the certified softmax (SoftmaxExact.h) and the optimizer updates
// (OptimizerKernels.h). Each family builds its vector files for an ISA and states, in a
// VectorPathNeeds constant, the CPU features beyond AVX2 / AVX-512 F that those files use; the
// path chosen is the widest one the CpuFeatures have all of.
#ifndef AMP_RUNTIME_DEVICES_CPU_KERNELS_VECTORPATH_H
#define AMP_RUNTIME_DEVICES_CPU_KERNELS_VECTORPATH_H

#include "runtime/schema/CpuFeatures.h"

namespace amp::rt::cpu {

// The code paths, lowest first (tests compare them as ints: a path runs if it is <= the best).
enum class VectorPath { Scalar, Avx2, Avx512 };

// What a kernel family's vector files are compiled for. The AVX2 path always needs avx2, the
// AVX-512 path avx2 and avx512f; these add to that.
struct VectorPathNeeds {
  bool fma;         // both vector paths (built with -mfma)
  bool avx512VlDq;  // the AVX-512 path (built with -mavx512vl -mavx512dq)
};

// The widest path `features` runs for a family with `needs`; Scalar off x86-64.
VectorPath bestVectorPath(const CpuFeatures& features, const VectorPathNeeds& needs);
// bestVectorPath(CpuFeatures::host(), needs), detected once per `needs` (AMP_CPU_FEATURES lowers
// it): the path the cpu device's steps take.
VectorPath hostVectorPath(const VectorPathNeeds& needs);
// "scalar", "avx2" or "avx512".
const char* vectorPathName(VectorPath path);

}  // namespace amp::rt::cpu

#endif  // AMP_RUNTIME_DEVICES_CPU_KERNELS_VECTORPATH_H
