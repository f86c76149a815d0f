// Checks of a bundle's code records (docs/plan-format.md, "code"), for every record, not only
// the one this machine would load: the declared `bytes`, the SHA-256, and that the object is what
// its label says, read from its own bytes without loading it. An x86 shared object must be a
// 64-bit little-endian ELF shared object for x86-64 whose segments and sections lie inside it (a
// truncated object is refused here, not by a SIGBUS in dlopen) and whose "ampc" note records the
// ISA level it was compiled for, equal to the label (a relabelled x86-64-v4 object would raise
// SIGILL on a v3 CPU). A cubin must be an ELF object for EM_CUDA, PTX text must `.target` the
// labelled architecture.
#ifndef AMP_RUNTIME_PLAN_CODERECORDS_H
#define AMP_RUNTIME_PLAN_CODERECORDS_H

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "runtime/plan/Plan.h"

namespace amp::rt {

// The note ampc's generated C++ carries (codegen/emit): name "ampc", this type, the ISA level as
// a NUL-terminated string.
inline constexpr uint32_t kIsaNoteType = 1;

// `declaredBytes` is the record's "bytes" field (nullopt when absent: an error). Errors name the
// record: "<source>: code record 'code/x86-64-v3.so': ...".
absl::Status checkCodeRecord(const CodeObject& code, std::optional<int64_t> declaredBytes, const std::string& source);

// The ISA level an x86 object's "ampc" note records ("" when it has none or is not a valid ELF
// object); for tests and tools.
std::string recordedIsa(const std::vector<uint8_t>& object);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_PLAN_CODERECORDS_H
