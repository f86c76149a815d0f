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

namespace amp::fuzz {

inline void checkBundle(const std::string& path) {
  auto plan = rt::readBundle(path);
  if (!plan.ok()) return;
  for (rt::Device device : {rt::Device::Reference, rt::Device::Cpu}) {
    auto session = rt::Session::create(*plan, device, kSessionMemoryLimit);
    if (!session.ok()) continue;
    for (const rt::EntryPoint& e : session->plan().entries) (void)session->prepared(e.name);
  }
}

}  // namespace amp::fuzz

#endif  // AMP_FUZZ_BUNDLECHECK_H
