// Compiles generated C++ kernels into shared objects with the system C++ compiler, at ampc time:
// amp-run never needs a compiler.
#ifndef AMP_CODEGEN_TOOLCHAIN_H
#define AMP_CODEGEN_TOOLCHAIN_H

#include <cstdint>
#include <string>
#include <vector>

namespace amp::codegen {

// Compiles `source` with `compiler` (e.g. "c++") once per ISA level in `isas` ("x86-64-v3",
// "x86-64-v4"), the compilations running in parallel, into position-independent shared objects
// that record their level (-DAMP_TARGET_ISA, read by the emitted note and kernel table);
// `objects[i]` receives the bytes for `isas[i]`. On failure returns false with the compiler's
// command line and output in `error`.
bool compileSharedObjects(const std::string& compiler, const std::string& source, const std::vector<std::string>& isas,
                          std::vector<std::vector<uint8_t>>& objects, std::string& error);

// One ISA level.
bool compileSharedObject(const std::string& compiler, const std::string& source, const std::string& isa,
                         std::vector<uint8_t>& bytes, std::string& error);

}  // namespace amp::codegen

#endif  // AMP_CODEGEN_TOOLCHAIN_H
