// The cuda bundles ampc compiles at build time for the cuda tests (test/unit/cuda/CMakeLists.txt), and
// where a test finds them: AMP_TEST_BUNDLE_DIR when set (scripts/gpu-check.sh's package, the one
// variable every GPU-side test binary reads), else the build's folder. A missing bundle fails the
// test wherever bundles are expected (the package, or a build that compiled them); it skips only
// in a build without NVRTC, which compiles none.
#ifndef AMP_TEST_UNIT_CUDA_TESTBUNDLES_H
#define AMP_TEST_UNIT_CUDA_TESTBUNDLES_H

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <optional>
#include <string>

#include "gtest/gtest.h"
#include "runtime/plan/Bundle.h"

namespace amp::rt::cuda {

inline std::string testBundleDir() {
  const char* dir = std::getenv("AMP_TEST_BUNDLE_DIR");
  return dir ? dir : AMP_TEST_CUDA_BUNDLE_DIR;
}

inline std::string testBundlePath(const std::string& name) { return testBundleDir() + "/" + name + ".ampx"; }

// Whether a missing bundle is a broken build or package rather than a build without NVRTC.
inline bool testBundlesExpected() {
#ifdef AMP_TEST_CUDA_BUNDLES_BUILT
  return true;
#else
  return std::getenv("AMP_TEST_BUNDLE_DIR") != nullptr;
#endif
}

// Whether the NVIDIA driver initialises and sees a GPU, asked of libcuda directly rather than
// through the cuda device: on such a machine a test must not skip, so a device that fails to open
// (cuBLASLt missing, say) fails instead of reading as "no GPU here".
inline bool cudaDriverSeesAGpu() {
  static const bool sees = [] {
    void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!cuda) return false;
    auto init = reinterpret_cast<int (*)(unsigned)>(dlsym(cuda, "cuInit"));
    auto count = reinterpret_cast<int (*)(int*)>(dlsym(cuda, "cuDeviceGetCount"));
    int devices = 0;
    return init && count && init(0) == 0 && count(&devices) == 0 && devices > 0;
  }();
  return sees;
}

// The bundle, or nullopt with the reason recorded: a failure where bundles are expected.
inline std::optional<Plan> loadTestBundle(const std::string& name) {
  const std::string path = testBundlePath(name);
  if (access(path.c_str(), R_OK) != 0) {
    if (testBundlesExpected()) ADD_FAILURE() << "no bundle " << path;
    return std::nullopt;
  }
  auto plan = readBundle(path);
  EXPECT_TRUE(plan.ok()) << plan.status();
  if (!plan.ok()) return std::nullopt;
  return std::move(*plan);
}

// Ends the test when `loaded` is false: skipped in a build without NVRTC, else failed (already
// recorded by whatever failed to load).
#define AMP_SKIP_OR_FAIL_UNLESS_LOADED(loaded, name)                                              \
  if (!(loaded)) {                                                                                \
    if (::amp::rt::cuda::testBundlesExpected()) return;                                           \
    GTEST_SKIP() << "no " << ::amp::rt::cuda::testBundlePath(name) << " (built without NVRTC)"; \
  }

#define LOAD_OR_SKIP(var, name)                                    \
  std::optional<Plan> var = ::amp::rt::cuda::loadTestBundle(name); \
  AMP_SKIP_OR_FAIL_UNLESS_LOADED(var.has_value(), name)

// How many steps of each op an entry runs.
inline std::map<std::string, int> opCounts(const EntryPoint& e) {
  std::map<std::string, int> n;
  for (const PlanStep& s : e.steps) ++n[s.op];
  return n;
}

}  // namespace amp::rt::cuda

#endif  // AMP_TEST_UNIT_CUDA_TESTBUNDLES_H
