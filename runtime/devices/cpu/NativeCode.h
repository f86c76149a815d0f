// Loads the fused kernels a bundle carries (docs/kernels.md). A bundle with native code is an
// executable, so loading is narrow: amp-run has already dropped the code of a bundle whose
// provenance tag does not verify (runtime/plan/Provenance.h); here every code record is checked
// again from its bytes (size, SHA-256, ELF machine and recorded ISA level: CodeRecords.h), the
// object for this CPU (x86-64-v4, else x86-64-v3) is loaded from memory (an anonymous memfd of
// this process, never a path another process could replace) with RTLD_NOW | RTLD_LOCAL, and
// kernels are found only through the one table the object exports (runtime/schema/KernelTable.h),
// each bound to a step by kernel id and region-body hash. No name from the plan is looked up.
#ifndef AMP_RUNTIME_DEVICES_CPU_NATIVECODE_H
#define AMP_RUNTIME_DEVICES_CPU_NATIVECODE_H

#include <map>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "runtime/plan/Plan.h"
#include "runtime/schema/CpuFeatures.h"
#include "runtime/schema/KernelTable.h"

namespace amp::rt::cpu {

// void kernel(const unsigned char* const* in, unsigned char* const* out, long rowBegin, long rowEnd)
using FusedKernel = AmpFusedKernelFn;

class NativeLibrary {
 public:
  // Null when the plan has no code object this CPU can run (the fused steps are then interpreted).
  // An error when a code record fails its checks, or the chosen object cannot be loaded or has no
  // valid kernel table.
  static absl::StatusOr<std::unique_ptr<NativeLibrary>> load(const Plan& plan, const CpuFeatures& features);
  ~NativeLibrary();
  NativeLibrary(const NativeLibrary&) = delete;
  NativeLibrary& operator=(const NativeLibrary&) = delete;

  // The kernel `id` computing a step whose region hashes to `bodyHash` (fusedBodyHash); an error
  // saying which of the two does not match the table.
  absl::StatusOr<FusedKernel> bind(const std::string& id, const std::string& bodyHash) const;
  const std::string& isa() const { return isa_; }

 private:
  NativeLibrary(void* handle, int memfd, std::string isa) : handle_(handle), memfd_(memfd), isa_(std::move(isa)) {}
  void* handle_;
  // The memfd the object was loaded from, open while it is loaded: dlopen knows a loaded object by
  // its path, /proc/self/fd/N, and a second object loaded from a reused descriptor number would
  // get the first one's handle (a process with several sessions: the Python package).
  int memfd_;
  std::string isa_;
  std::map<std::pair<std::string, std::string>, FusedKernel> kernels_;  // (id, body hash) -> function
  std::map<std::string, int> ids_;                                       // id -> entries
};

}  // namespace amp::rt::cpu

#endif  // AMP_RUNTIME_DEVICES_CPU_NATIVECODE_H
