// The device registry: the executor that serves each Device, and a Session on it. It lives above
// every device (exec/ declares the interface, the devices and the oracle implement it).
#ifndef AMP_RUNTIME_DEVICES_DEVICES_H
#define AMP_RUNTIME_DEVICES_DEVICES_H

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "runtime/exec/Executor.h"
#include "runtime/exec/Session.h"
#include "runtime/plan/Plan.h"

namespace amp::rt {

// The executor for `device`; an error where the device cannot start (a bad AMP_CPU_FEATURES, a
// cuda device without a driver).
absl::StatusOr<std::unique_ptr<Executor>> makeExecutor(Device device);

// Session::create on makeExecutor(device).
absl::StatusOr<Session> openSession(Plan plan, Device device, int64_t memoryLimitBytes = 0);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_DEVICES_DEVICES_H
