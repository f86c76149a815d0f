// Shared by the tests of the cpu device's vector kernel families (GeluExact, SoftmaxExact,
// OptimizerKernels): the paths this host runs for a family, lowest first, saying which it skips.
#ifndef AMP_TEST_UNIT_CPU_HOSTVECTORPATHS_H
#define AMP_TEST_UNIT_CPU_HOSTVECTORPATHS_H

#include <cstdio>
#include <vector>

#include "runtime/devices/cpu/kernels/VectorPath.h"
#include "runtime/schema/CpuFeatures.h"

namespace amp::rt {

inline std::vector<cpu::VectorPath> hostVectorPathsToTest(const cpu::VectorPathNeeds& needs, bool vectorOnly) {
  using cpu::VectorPath;
  const VectorPath best = cpu::bestVectorPath(CpuFeatures::host(), needs);
  std::vector<VectorPath> paths;
  for (VectorPath p : {VectorPath::Scalar, VectorPath::Avx2, VectorPath::Avx512}) {
    if (vectorOnly && p == VectorPath::Scalar) continue;
    if (static_cast<int>(p) <= static_cast<int>(best))
      paths.push_back(p);
    else
      std::printf("skipped: the %s path (this host, as AMP_CPU_FEATURES leaves it, is %s)\n", cpu::vectorPathName(p),
                  CpuFeatures::host().isaLevel().c_str());
  }
  return paths;
}

}  // namespace amp::rt

#endif  // AMP_TEST_UNIT_CPU_HOSTVECTORPATHS_H
