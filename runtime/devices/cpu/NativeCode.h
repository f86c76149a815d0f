// Loads the fused kernels a bundle carries (docs/kernels.md). A bundle with native code is an
// executable: the code object is chosen for this CPU (x86-64-v4, else x86-64-v3), its SHA-256 is
// checked against the plan before anything is loaded, and it is loaded from memory (an anonymous
// memfd of this process), never from a path another process could replace.
#ifndef AMP_RUNTIME_DEVICES_CPU_NATIVECODE_H
#define AMP_RUNTIME_DEVICES_CPU_NATIVECODE_H

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/schema/CpuFeatures.h"
#include "runtime/plan/Plan.h"

namespace amp::rt::cpu {

// void kernel(const unsigned char* const* in, unsigned char* const* out, long rowBegin, long rowEnd)
using FusedKernel = void (*)(const uint8_t* const*, uint8_t* const*, long, long);

class NativeLibrary {
 public:
  // Null when the plan has no code object this CPU can run (the fused steps are then interpreted).
  // An error when the chosen object fails its hash check or cannot be loaded.
  static absl::StatusOr<std::unique_ptr<NativeLibrary>> load(const Plan& plan, const CpuFeatures& features);
  ~NativeLibrary();
  NativeLibrary(const NativeLibrary&) = delete;
  NativeLibrary& operator=(const NativeLibrary&) = delete;

  FusedKernel find(const std::string& symbol) const;  // null when absent
  const std::string& isa() const { return isa_; }

 private:
  NativeLibrary(void* handle, std::string isa) : handle_(handle), isa_(std::move(isa)) {}
  void* handle_;
  std::string isa_;
};

}  // namespace amp::rt::cpu

#endif  // AMP_RUNTIME_DEVICES_CPU_NATIVECODE_H
