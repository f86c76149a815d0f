// The ampc compiler driver as a function: ampc's command line in, its outputs written, its
// diagnostics (located, as MLIR prints them) to `errs`; 0 on success. The ampc tool is a main()
// around it; the Python package (python/) calls it in process and raises ampc.CompileError with
// what it wrote to `errs`. Calls are not reentrant: LLVM's options are process-global.
#ifndef AMP_TOOLS_AMPC_DRIVER_H
#define AMP_TOOLS_AMPC_DRIVER_H

#include "llvm/Support/raw_ostream.h"

namespace mlir::amp {

int runAmpc(int argc, const char* const* argv, llvm::raw_ostream& errs);

}  // namespace mlir::amp

#endif  // AMP_TOOLS_AMPC_DRIVER_H
