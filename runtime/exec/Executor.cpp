#include "runtime/exec/Executor.h"

#include "absl/strings/str_cat.h"

namespace amp::rt {

std::string_view deviceName(Device d) {
  switch (d) {
    case Device::Reference: return "reference";
    case Device::Cpu: return "cpu";
    case Device::Cuda: return "cuda";
  }
  return "?";
}

absl::StatusOr<Device> parseDevice(std::string_view name) {
  if (name == "reference") return Device::Reference;
  if (name == "cpu") return Device::Cpu;
  if (name == "cuda") return Device::Cuda;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown device '", std::string(name), "' (expected reference, cpu or cuda)"));
}

}  // namespace amp::rt
