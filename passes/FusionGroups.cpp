// amp-fuse's grouping rules, shared with amp-remat's memory estimate.
#include "passes/FusionGroups.h"

#include <optional>

#include "ir/AmpOps.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace mlir;
using namespace mlir::amp;

namespace {

// How a region input is indexed from the iteration space: the kernel emitter supports the
// iteration shape itself, scalars, and broadcasts along leading dims (trailing dims equal).
bool indexableFrom(ArrayRef<int64_t> in, ArrayRef<int64_t> space) {
  if (in == space) return true;
  int64_t n = 1;
  for (int64_t d : in) n *= d;
  if (n == 1) return true;
  size_t lead = 0;
  while (lead < in.size() && in[lead] == 1) ++lead;
  ArrayRef<int64_t> rest = in.drop_front(lead);
  return rest.size() <= space.size() && rest == space.take_back(rest.size());
}

// The kernel emitter handles f32/f16/bf16 values and i1 masks.
bool emittable(Type t) {
  auto e = cast<RankedTensorType>(t).getElementType();
  return e.isF32() || e.isF16() || e.isBF16() || e.isInteger(1);
}

// The region sits at its last op, so no outside user of a group value may come before `next`.
bool canAppend(const FusionGroups& plan, size_t id, Operation* next, const DenseMap<Operation*, int64_t>& position) {
  for (Operation* member : plan.groups[id].ops)
    for (Operation* user : member->getUsers()) {
      if (user == next) continue;
      auto it = plan.groupOf.find(user);
      if (it != plan.groupOf.end() && it->second == id) continue;
      if (position.lookup(user) < position.lookup(next)) return false;
    }
  return true;
}

// A bias gradient: the column sums of a group value join its group and close it.
void joinRowReduction(FusionGroups& plan, Operation* op) {
  Operation* def = op->getOperand(0).getDefiningOp();
  auto it = def ? plan.groupOf.find(def) : plan.groupOf.end();
  if (it == plan.groupOf.end()) return;
  FusionGroup& g = plan.groups[it->second];
  auto type = cast<RankedTensorType>(op->getOperand(0).getType());
  if (!emittable(type) || type.getElementType().isInteger(1) || g.closed ||
      ArrayRef<int64_t>(g.shape) != type.getShape() || g.ops.size() >= kMaxFusedRegionOps)
    return;
  // No position check: the region is placed at its last elementwise op (anchor), before any
  // outside reader of a group value, and the sums are only read after the reduction.
  g.ops.push_back(op);
  g.closed = true;
  plan.groupOf[op] = it->second;
}

}  // namespace

Operation* FusionGroup::anchor() const {
  for (Operation* op : llvm::reverse(ops))
    if (!isRowReduction(op)) return op;
  return ops.back();
}

Operation* mlir::amp::reluFoldableInto(LinearOp linear) {
  if (linear.getActivation() != LinearActivation::None || !linear->hasOneUse()) return nullptr;
  auto relu = dyn_cast<ReluOp>(*linear->getUsers().begin());
  return relu && relu.getType() == linear.getType() ? relu.getOperation() : nullptr;
}

FusionGroups mlir::amp::planFusionGroups(Block& block) {
  DenseMap<Operation*, int64_t> position;
  llvm::SmallPtrSet<Operation*, 16> foldedRelus;
  int64_t index = 0;
  for (Operation& op : block) {
    position[&op] = index++;
    if (auto linear = dyn_cast<LinearOp>(&op))
      if (Operation* relu = reluFoldableInto(linear)) foldedRelus.insert(relu);
  }
  FusionGroups plan;
  for (Operation& op : block) {
    if (isRowReduction(&op)) {
      joinRowReduction(plan, &op);
      continue;
    }
    if (!isFusibleElementwise(&op) || op.getNumResults() != 1 || foldedRelus.contains(&op)) continue;
    auto type = dyn_cast<RankedTensorType>(op.getResult(0).getType());
    if (!type) continue;
    bool indexable = emittable(type);
    for (Value v : op.getOperands()) {
      auto t = dyn_cast<RankedTensorType>(v.getType());
      indexable &= t && emittable(t) && indexableFrom(t.getShape(), type.getShape());
    }
    if (!indexable) continue;
    // Join the latest group of a producer with the same iteration space, if legal.
    std::optional<size_t> best;
    for (Value v : op.getOperands()) {
      Operation* def = v.getDefiningOp();
      auto it = def ? plan.groupOf.find(def) : plan.groupOf.end();
      if (it == plan.groupOf.end() || ArrayRef<int64_t>(plan.groups[it->second].shape) != type.getShape()) continue;
      if (!best || position[plan.groups[it->second].ops.back()] > position[plan.groups[*best].ops.back()])
        best = it->second;
    }
    if (best && !plan.groups[*best].closed && plan.groups[*best].ops.size() < kMaxFusedRegionOps &&
        canAppend(plan, *best, &op, position)) {
      plan.groups[*best].ops.push_back(&op);
      plan.groupOf[&op] = *best;
      continue;
    }
    plan.groupOf[&op] = plan.groups.size();
    plan.groups.push_back({{&op}, SmallVector<int64_t>(type.getShape())});
  }
  return plan;
}
