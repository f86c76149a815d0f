#include "runtime/devices/Devices.h"

#include "runtime/devices/cpu/CpuExecutor.h"
#include "runtime/devices/cuda/CudaExecutor.h"
#include "runtime/reference/ReferenceExecutor.h"

namespace amp::rt {

absl::StatusOr<std::unique_ptr<Executor>> makeExecutor(Device device) {
  switch (device) {
    case Device::Reference: return makeReferenceExecutor();
    case Device::Cpu: return makeCpuExecutor();
    case Device::Cuda: return makeCudaExecutor();
  }
  return absl::InvalidArgumentError("unknown device");
}

absl::StatusOr<Session> openSession(Plan plan, Device device, int64_t memoryLimitBytes) {
  auto executor = makeExecutor(device);
  if (!executor.ok()) return executor.status();
  return Session::create(std::move(plan), std::move(*executor), memoryLimitBytes);
}

}  // namespace amp::rt
