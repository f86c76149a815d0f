// Where the driver's own messages go (flag errors, unreadable files), besides the diagnostics
// MLIR's handler prints: the stream runAmpc was given, llvm::errs() outside a call.
#ifndef AMP_TOOLS_AMPC_DRIVERERRORS_H
#define AMP_TOOLS_AMPC_DRIVERERRORS_H

#include "llvm/Support/raw_ostream.h"

namespace mlir::amp {

inline thread_local llvm::raw_ostream* driverErrsStream = nullptr;

inline llvm::raw_ostream& driverErrs() { return driverErrsStream ? *driverErrsStream : llvm::errs(); }

// Sends driverErrs() to `errs` for a scope.
class ScopedDriverErrs {
 public:
  explicit ScopedDriverErrs(llvm::raw_ostream& errs) : previous_(driverErrsStream) { driverErrsStream = &errs; }
  ~ScopedDriverErrs() { driverErrsStream = previous_; }
  ScopedDriverErrs(const ScopedDriverErrs&) = delete;
  ScopedDriverErrs& operator=(const ScopedDriverErrs&) = delete;

 private:
  llvm::raw_ostream* previous_;
};

}  // namespace mlir::amp

#endif  // AMP_TOOLS_AMPC_DRIVERERRORS_H
