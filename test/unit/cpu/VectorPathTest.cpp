// The one run-time path choice of the cpu device's SIMD kernels (VectorPath.h) must pick, for
// every family's needs, the path each family's own check picked before they shared it: the exact
// GELU and the certified softmax run AVX2 only with fma and AVX-512 only with F, VL and DQ (plus
// AVX2 + fma); the optimizer updates need AVX2 alone, and AVX-512 F with it. BW, CD and the rest
// are never required. The expected paths below are those checks' answers on each feature set.
#include <initializer_list>
#include <string>

#include "gtest/gtest.h"
#include "runtime/devices/cpu/kernels/GeluExact.h"
#include "runtime/devices/cpu/kernels/OptimizerKernels.h"
#include "runtime/devices/cpu/kernels/SoftmaxExact.h"
#include "runtime/devices/cpu/kernels/VectorPath.h"

namespace amp::rt {
namespace {

using cpu::VectorPath;

CpuFeatures withFlags(std::initializer_list<bool CpuFeatures::*> flags) {
  CpuFeatures f;
  for (bool CpuFeatures::*flag : flags) f.*flag = true;
  return f;
}

struct Case {
  const char* what;
  CpuFeatures features;
  VectorPath certified;  // the GELU's and the softmax's path
  VectorPath optimizer;
};

TEST(VectorPath, EachFamilyKeepsItsRequirements) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "the vector paths exist on x86-64 only";
#endif
  using F = CpuFeatures;
  constexpr VectorPath S = VectorPath::Scalar, A2 = VectorPath::Avx2, A512 = VectorPath::Avx512;
  const Case cases[] = {
      {"none", withFlags({}), S, S},
      {"fma without avx2", withFlags({&F::avx, &F::fma}), S, S},
      {"avx2 without fma", withFlags({&F::avx, &F::avx2}), S, A2},
      {"avx2 + fma", withFlags({&F::avx, &F::avx2, &F::fma}), A2, A2},
      {"avx2 + fma + f16c", withFlags({&F::avx, &F::avx2, &F::fma, &F::f16c}), A2, A2},
      {"avx512f alone", withFlags({&F::avx512f}), S, S},
      {"avx512f + vl + dq without avx2", withFlags({&F::avx512f, &F::avx512vl, &F::avx512dq}), S, S},
      {"avx2 + avx512f, no fma", withFlags({&F::avx2, &F::avx512f}), S, A512},
      {"avx2 + fma + avx512f", withFlags({&F::avx2, &F::fma, &F::avx512f}), A2, A512},
      {"avx2 + fma + avx512f + vl", withFlags({&F::avx2, &F::fma, &F::avx512f, &F::avx512vl}), A2, A512},
      {"avx2 + fma + avx512f + dq", withFlags({&F::avx2, &F::fma, &F::avx512f, &F::avx512dq}), A2, A512},
      {"avx2 + fma + avx512f + vl + dq (no bw)",
       withFlags({&F::avx2, &F::fma, &F::avx512f, &F::avx512vl, &F::avx512dq}), A512, A512},
      {"avx2 + avx512f + vl + dq, no fma", withFlags({&F::avx2, &F::avx512f, &F::avx512vl, &F::avx512dq}), S, A512},
      {"x86-64-v4",
       withFlags({&F::avx, &F::avx2, &F::fma, &F::f16c, &F::bmi1, &F::bmi2, &F::lzcnt, &F::movbe, &F::avx512f,
                  &F::avx512dq, &F::avx512cd, &F::avx512bw, &F::avx512vl}),
       A512, A512},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    EXPECT_EQ(cpu::bestVectorPath(c.features, cpu::kGeluErfNeeds), c.certified);
    EXPECT_EQ(cpu::bestVectorPath(c.features, cpu::kSoftmaxNeeds), c.certified);
    EXPECT_EQ(cpu::bestVectorPath(c.features, cpu::kOptimizerNeeds), c.optimizer);
  }
}

// The checks the three families had before they shared VectorPath, verbatim, as the oracle.
VectorPath oldCertifiedPath(const CpuFeatures& f) {  // geluErfBestPath, softmaxBestPath
  if (f.avx512f && f.avx512vl && f.avx512dq && f.avx2 && f.fma) return VectorPath::Avx512;
  if (f.avx2 && f.fma) return VectorPath::Avx2;
  return VectorPath::Scalar;
}
VectorPath oldOptimizerPath(const CpuFeatures& f) {  // optimizerBestPath
  if (f.avx512f && f.avx2) return VectorPath::Avx512;
  if (f.avx2) return VectorPath::Avx2;
  return VectorPath::Scalar;
}

TEST(VectorPath, AgreesWithTheOldChecksOnEveryCombination) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "the vector paths exist on x86-64 only";
#endif
  using F = CpuFeatures;
  bool F::*const flags[] = {&F::avx2, &F::fma, &F::f16c, &F::avx512f, &F::avx512vl, &F::avx512dq, &F::avx512bw};
  constexpr int kFlags = sizeof flags / sizeof flags[0];
  for (int bits = 0; bits < 1 << kFlags; ++bits) {
    CpuFeatures f;
    for (int i = 0; i < kFlags; ++i) f.*flags[i] = (bits >> i & 1) != 0;
    SCOPED_TRACE(f.summary());
    EXPECT_EQ(cpu::bestVectorPath(f, cpu::kGeluErfNeeds), oldCertifiedPath(f));
    EXPECT_EQ(cpu::bestVectorPath(f, cpu::kSoftmaxNeeds), oldCertifiedPath(f));
    EXPECT_EQ(cpu::bestVectorPath(f, cpu::kOptimizerNeeds), oldOptimizerPath(f));
  }
}

// The cached host path is the best path for CpuFeatures::host() (as AMP_CPU_FEATURES lowers it),
// per family: a family's cache must not answer for another's needs.
TEST(VectorPath, HostPathIsTheBestForTheHost) {
  for (const cpu::VectorPathNeeds& needs : {cpu::kGeluErfNeeds, cpu::kSoftmaxNeeds, cpu::kOptimizerNeeds,
                                            cpu::VectorPathNeeds{true, false}, cpu::VectorPathNeeds{false, true}}) {
    SCOPED_TRACE(testing::Message() << "fma " << needs.fma << " avx512VlDq " << needs.avx512VlDq);
    EXPECT_EQ(cpu::hostVectorPath(needs), cpu::bestVectorPath(CpuFeatures::host(), needs));
  }
}

// Tests and the GELU bench print these.
TEST(VectorPath, Names) {
  EXPECT_EQ(std::string(cpu::vectorPathName(VectorPath::Scalar)), "scalar");
  EXPECT_EQ(std::string(cpu::vectorPathName(VectorPath::Avx2)), "avx2");
  EXPECT_EQ(std::string(cpu::vectorPathName(VectorPath::Avx512)), "avx512");
}

}  // namespace
}  // namespace amp::rt
