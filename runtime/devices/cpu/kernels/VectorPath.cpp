#include "runtime/devices/cpu/kernels/VectorPath.h"

namespace amp::rt::cpu {

VectorPath bestVectorPath(const CpuFeatures& f, const VectorPathNeeds& needs) {
#if defined(__x86_64__)
  const bool avx2 = f.avx2 && (!needs.fma || f.fma);
  const bool avx512 = avx2 && f.avx512f && (!needs.avx512VlDq || (f.avx512vl && f.avx512dq));
  if (avx512) return VectorPath::Avx512;
  if (avx2) return VectorPath::Avx2;
#endif
  (void)f;
  (void)needs;
  return VectorPath::Scalar;
}

VectorPath hostVectorPath(const VectorPathNeeds& needs) {
  // All four requirement sets, resolved together on the first call: the steps ask on every run.
  static const VectorPath paths[2][2] = {
      {bestVectorPath(CpuFeatures::host(), {false, false}), bestVectorPath(CpuFeatures::host(), {false, true})},
      {bestVectorPath(CpuFeatures::host(), {true, false}), bestVectorPath(CpuFeatures::host(), {true, true})},
  };
  return paths[needs.fma][needs.avx512VlDq];
}

const char* vectorPathName(VectorPath path) {
  switch (path) {
    case VectorPath::Scalar: return "scalar";
    case VectorPath::Avx2: return "avx2";
    case VectorPath::Avx512: return "avx512";
  }
  return "?";
}

}  // namespace amp::rt::cpu
