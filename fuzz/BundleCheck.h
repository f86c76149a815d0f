// What the bundle targets do with one input: read it as a bundle (safetensors + plan JSON +
// planFromJson), then create a session on each device (plan validation, memory check, param
// initialisation) and prepare every entry (each device's per-step validation, memory layout
// adoption, kernel selection). Nothing runs: a step could legitimately take long.
#ifndef AMP_FUZZ_BUNDLECHECK_H
#define AMP_FUZZ_BUNDLECHECK_H

#include <string>

#include "fuzz/FuzzCommon.h"
#include "runtime/exec/Session.h"
#include "runtime/plan/Bundle.h"
#include "runtime/devices/Devices.h"

namespace amp::fuzz {

// `memoryLimit`: what a session may allocate (the sessions refuse a plan needing more before
// allocating anything).
inline void checkBundle(const std::string& path, int64_t memoryLimit = kSessionMemoryLimit) {
  auto plan = rt::readBundle(path);
  if (!plan.ok()) return;
  for (rt::Device device : {rt::Device::Reference, rt::Device::Cpu}) {
    auto session = rt::openSession(*plan, device, memoryLimit);
    if (!session.ok()) continue;
    for (const rt::EntryPoint& e : session->plan().entries) (void)session->prepared(e.name);
  }
}

}  // namespace amp::fuzz

#endif  // AMP_FUZZ_BUNDLECHECK_H
