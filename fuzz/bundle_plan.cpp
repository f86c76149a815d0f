// The bundle target with the structure-aware plan mutator (fuzz/PlanMutator.h): every input is a
// valid-looking bundle whose plan JSON had one to three values changed, so mutations reach plan
// validation and every device's prepare.
#include "fuzz/BundleCheck.h"
#include "fuzz/PlanMutator.h"

// The seeds are small-shape bundles of a few MiB at most. A mutated shape up to the general limit
// would be accepted and initialised (hundreds of MiB of Philox draws per input), which costs
// seconds and tests nothing the memory checks do not: this target refuses above 16 MiB instead.
constexpr int64_t kPlanMemoryLimit = int64_t{16} << 20;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static amp::fuzz::MemFile file;
  amp::fuzz::checkBundle(file.set(data, size), kPlanMemoryLimit);
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t maxSize, unsigned int seed) {
  return amp::fuzz::mutateBundlePlan(data, size, maxSize, seed);
}
