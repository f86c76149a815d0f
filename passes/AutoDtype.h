// The auto dtype (amp-autocast dtype=auto): which low precision, if any, the target computes
// faster in than in f32. docs/precision-policy.md ("dtype=auto") describes the rule.
#ifndef AMP_PASSES_AUTODTYPE_H
#define AMP_PASSES_AUTODTYPE_H

#include <string>

#include "llvm/ADT/StringRef.h"
#include "mlir/Support/LogicalResult.h"

namespace mlir::amp {

// auto dtype. `target` is "cuda:sm_NN", "cpu", "cpu:FEATURE[,FEATURE]" (avx512_bf16, amx_bf16,
// or "generic" for none), or "reference". A plain "cpu" asks the compiling machine's CPU.
// Returns the dtype and explains the choice in `why`: bf16 where the target computes in bf16 faster
// than in f32 (CUDA sm_80+; CPUs with AMX, or AVX512-BF16 on AMD), f16 on CUDA GPUs without bf16,
// f32 on other CPUs (bf16 GEMMs would run widened to f32 there, so low precision would only add
// conversions, and for f16 loss scaling).
enum class AutoDtype { BF16, F16, F32 };
llvm::FailureOr<AutoDtype> autoDtypeFor(llvm::StringRef target, std::string& why, std::string& error);

}  // namespace mlir::amp

#endif  // AMP_PASSES_AUTODTYPE_H
