// The bundle's recipe metadata (runtime/plan/TrainingConfig.h), read from the module attributes
// the passes stamp: amp.precision (amp-autocast), amp.optimizer, amp.loss_scaling and
// amp.data_parallel (the training passes; ir/AmpAttrs.td). The plan builder is its only caller:
// the driver writes no recipe of its own.
#ifndef AMP_CODEGEN_RECIPEMETADATA_H
#define AMP_CODEGEN_RECIPEMETADATA_H

#include "mlir/IR/BuiltinOps.h"
#include "runtime/plan/TrainingConfig.h"

namespace mlir::amp {

// The recipe as typed fields; a module no training pass ran on gives its precision alone.
::amp::rt::TrainingConfig recipeOf(ModuleOp module);

// Its metadata keys: precision, then, when amp-optimizer or amp-loss-scaling ran, the training keys.
::amp::rt::Metadata recipeMetadata(ModuleOp module);

}  // namespace mlir::amp

#endif  // AMP_CODEGEN_RECIPEMETADATA_H
