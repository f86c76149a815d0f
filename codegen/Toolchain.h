// Compiles generated C++ kernels into shared objects with the system C++ compiler, at ampc time:
// amp-run never needs a compiler.
#ifndef AMP_CODEGEN_TOOLCHAIN_H
#define AMP_CODEGEN_TOOLCHAIN_H

#include <cstdint>
#include <string>
#include <vector>

namespace amp::codegen {

// Compiles `source` with `compiler` (e.g. "c++") for `isa` ("x86-64-v3" or "x86-64-v4") into a
// position-independent shared object and returns its bytes. On failure returns false with the
// compiler's command line and output in `error`.
bool compileSharedObject(const std::string& compiler, const std::string& source, const std::string& isa,
                         std::vector<uint8_t>& bytes, std::string& error);

}  // namespace amp::codegen

#endif  // AMP_CODEGEN_TOOLCHAIN_H
