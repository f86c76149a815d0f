// The cuda bundles ampc compiles at build time for the executor tests (test/unit/cuda/CMakeLists.txt),
// loaded by the tests of the device's plan rewrites; a test skips where the build had no NVRTC.
#ifndef AMP_TEST_UNIT_CUDA_TESTBUNDLES_H
#define AMP_TEST_UNIT_CUDA_TESTBUNDLES_H

#include <unistd.h>

#include <map>
#include <optional>
#include <string>

#include "gtest/gtest.h"
#include "runtime/plan/Bundle.h"

namespace amp::rt::cuda {

inline std::optional<Plan> loadTestBundle(const std::string& name) {
  const std::string path = std::string(AMP_TEST_CUDA_BUNDLE_DIR) + "/" + name + ".ampx";
  if (access(path.c_str(), R_OK) != 0) return std::nullopt;
  auto plan = readBundle(path);
  EXPECT_TRUE(plan.ok()) << plan.status();
  if (!plan.ok()) return std::nullopt;
  return std::move(*plan);
}

#define LOAD_OR_SKIP(var, name)                                   \
  std::optional<Plan> var = ::amp::rt::cuda::loadTestBundle(name); \
  if (!var) GTEST_SKIP() << "no bundle " << name << " (built without NVRTC)"

// How many steps of each op an entry runs.
inline std::map<std::string, int> opCounts(const EntryPoint& e) {
  std::map<std::string, int> n;
  for (const PlanStep& s : e.steps) ++n[s.op];
  return n;
}

}  // namespace amp::rt::cuda

#endif  // AMP_TEST_UNIT_CUDA_TESTBUNDLES_H
