// What the cuda device's lowering files share (CudaActions.cpp and the Cuda*Actions.cpp of each op
// family): the kernels' type names and device addresses as typed pointers.
#ifndef AMP_RUNTIME_DEVICES_CUDA_KERNELTYPES_H
#define AMP_RUNTIME_DEVICES_CUDA_KERNELTYPES_H

#include <cstdint>
#include <optional>
#include <string>

#include "runtime/DType.h"
#include "runtime/devices/cuda/GpuApi.h"

namespace amp::rt::cuda {

// The kernels' names for an element type: f32, bf16, f16.
inline std::optional<std::string> floatSuffix(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::BF16: return "bf16";
    case DType::F16: return "f16";
    default: return std::nullopt;
  }
}

template <class T>
T* device(DevicePtr p) {
  return reinterpret_cast<T*>(static_cast<uintptr_t>(p));
}

}  // namespace amp::rt::cuda

#endif  // AMP_RUNTIME_DEVICES_CUDA_KERNELTYPES_H
