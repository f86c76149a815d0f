// Shape rules shared by type inference, verifiers and (later) the VJP rules.
#ifndef AMP_IR_SHAPERULES_H
#define AMP_IR_SHAPERULES_H

#include <optional>

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::amp {

// numpy broadcasting of two shapes; nullopt when incompatible.
std::optional<llvm::SmallVector<int64_t>> broadcastShapes(llvm::ArrayRef<int64_t> a,
                                                          llvm::ArrayRef<int64_t> b);
// True when `from` broadcasts to exactly `to`.
bool broadcastsTo(llvm::ArrayRef<int64_t> from, llvm::ArrayRef<int64_t> to);
// Output size of a conv/pool window along one dimension (<= 0 when the window does not fit, or
// when the size would not fit in 64 bits).
int64_t windowOutputSize(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation);

}  // namespace mlir::amp

#endif  // AMP_IR_SHAPERULES_H
