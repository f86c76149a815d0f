// Which elementwise ops amp-fuse puts into one amp.fused region. amp-fuse outlines these groups;
// amp-remat, which runs before it, reads them to know which values will never be stored.
#ifndef AMP_PASSES_FUSIONGROUPS_H
#define AMP_PASSES_FUSIONGROUPS_H

#include <vector>

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "mlir/IR/Block.h"

namespace mlir::amp {

class LinearOp;

struct FusionGroup {
  SmallVector<Operation*> ops;  // in block order
  SmallVector<int64_t> shape;   // the iteration space
  bool closed = false;          // ends with a row reduction: the kernel runs by columns, nothing may follow

  // Where amp-fuse places the region: its last op that is not the closing reduction.
  Operation* anchor() const;
};

struct FusionGroups {
  std::vector<FusionGroup> groups;               // single-op groups included (amp-fuse leaves them alone)
  llvm::DenseMap<Operation*, size_t> groupOf;    // member -> index in groups
};

// Regions stop growing at this many ops: longer chains become several kernels, which keeps each
// generated function small enough for the C++ compiler to optimise quickly (compile time grows
// faster than linearly with function size) at the cost of one extra pass over memory per cut.
constexpr size_t kMaxFusedRegionOps = 32;

// The relu that amp-fuse folds into `linear` as its activation, or null: a relu that is the only
// reader of the layer's result, of the same type (the layer then computes the same bits).
Operation* reluFoldableInto(LinearOp linear);

// amp-fuse's grouping of `block`, in one walk in program order. A relu foldable into its linear
// layer joins no group (amp-fuse folds it first).
FusionGroups planFusionGroups(Block& block);

}  // namespace mlir::amp

#endif  // AMP_PASSES_FUSIONGROUPS_H
