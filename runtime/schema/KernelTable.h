// The one symbol a generated cpu code object exports (docs/kernels.md, "Binding kernels"), shared
// by the emitter (codegen/emit, which writes kKernelTableDeclaration into the generated C++) and
// the cpu device (runtime/devices/cpu/NativeCode, which reads the table after dlopen). The runtime
// looks up no other name in the object: each fused step binds to an entry by kernel id and the
// hash of its region (runtime/plan/KernelBinding.h).
#ifndef AMP_RUNTIME_SCHEMA_KERNELTABLE_H
#define AMP_RUNTIME_SCHEMA_KERNELTABLE_H

#include <cstdint>

namespace amp::rt {

// Bumped when the layout below changes; the runtime refuses a table of another version.
inline constexpr uint32_t kKernelTableVersion = 1;
inline constexpr const char* kKernelTableSymbol = "amp_kernel_table";

extern "C" {
using AmpFusedKernelFn = void (*)(const unsigned char* const*, unsigned char* const*, long, long);
struct AmpKernelEntry {
  const char* id;           // the fused step's "symbol" attribute
  const char* bodySha256;   // fusedBodyHash of the steps it computes (64 hex digits)
  AmpFusedKernelFn fn;
};
struct AmpKernelTable {
  uint32_t version;         // kKernelTableVersion
  uint32_t count;
  const char* isa;          // the ISA level the object was compiled for
  const AmpKernelEntry* entries;
};
}

// The same declarations as C++ text for the generated translation unit (which includes nothing
// from the runtime). KernelTableTest compiles them and checks the layout against the structs.
inline constexpr const char* kKernelTableDeclaration =
    "extern \"C\" {\n"
    "struct AmpKernelEntry { const char* id; const char* bodySha256;\n"
    "  void (*fn)(const unsigned char* const*, unsigned char* const*, long, long); };\n"
    "struct AmpKernelTable { unsigned int version; unsigned int count; const char* isa;\n"
    "  const AmpKernelEntry* entries; };\n"
    "}\n";

}  // namespace amp::rt

#endif  // AMP_RUNTIME_SCHEMA_KERNELTABLE_H
