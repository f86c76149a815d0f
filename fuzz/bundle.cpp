// readBundle + Session::create + prepare of every entry, on both devices, on arbitrary bytes
// (seeded with bundles ampc compiled). fuzz/bundle_plan.cpp mutates the plan JSON instead.
#include "fuzz/BundleCheck.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static amp::fuzz::MemFile file;
  amp::fuzz::checkBundle(file.set(data, size));
  return 0;
}
