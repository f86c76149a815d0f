// The device registry: which executor serves each Device.
#include "runtime/devices/cpu/CpuExecutor.h"
#include "runtime/devices/cuda/CudaExecutor.h"
#include "runtime/devices/reference/ReferenceExecutor.h"
#include "runtime/exec/Session.h"

namespace amp::rt {

absl::StatusOr<std::unique_ptr<Executor>> makeExecutor(Device device) {
  switch (device) {
    case Device::Reference: return makeReferenceExecutor();
    case Device::Cpu: return makeCpuExecutor();
    case Device::Cuda: return makeCudaExecutor();
  }
  return absl::InvalidArgumentError("unknown device");
}

absl::StatusOr<Session> Session::create(Plan plan, Device device, int64_t memoryLimitBytes) {
  auto executor = makeExecutor(device);
  if (!executor.ok()) return executor.status();
  return create(std::move(plan), std::move(*executor), memoryLimitBytes);
}

}  // namespace amp::rt
