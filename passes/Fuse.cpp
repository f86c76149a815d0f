// amp-fuse: elementwise producer/consumer chains become amp.fused regions (one generated kernel,
// one pass over memory). Each op keeps its precision inside the region, so fusion changes memory
// traffic, never numbers.
#include "ir/AmpOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "passes/Passes.h"

namespace mlir::amp {
#define GEN_PASS_DEF_AMPFUSEPASS
#include "passes/Passes.h.inc"
}  // namespace mlir::amp

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

// Regions stop growing at this many ops: longer chains become several kernels, which keeps each
// generated function small enough for the C++ compiler to optimise quickly (compile time grows
// faster than linearly with function size) at the cost of one extra pass over memory per cut.
constexpr size_t kMaxRegionOps = 32;

struct Group {
  SmallVector<Operation*> ops;
  SmallVector<int64_t> shape;
  bool closed = false;  // ends with a row reduction: the kernel runs by columns, nothing may follow
};

// GEMM epilogue: a relu that is the only reader of a linear layer's result becomes the layer's
// activation (the relu VJP reads the relu's output, so training leaves the layer's result with no
// other reader). The layer computes the same bits (amp.linear's description).
void foldReluIntoLinear(Block& block) {
  SmallVector<LinearOp> layers;
  for (Operation& op : block)
    if (auto linear = dyn_cast<LinearOp>(&op)) layers.push_back(linear);
  for (LinearOp linear : layers) {
    if (linear.getActivation() != LinearActivation::None || !linear->hasOneUse()) continue;
    auto relu = dyn_cast<ReluOp>(*linear->getUsers().begin());
    if (!relu || relu.getType() != linear.getType()) continue;
    linear.setActivation(LinearActivation::Relu);
    relu.getResult().replaceAllUsesWith(linear.getResult());
    relu.erase();
  }
}

struct AmpFusePass : mlir::amp::impl::AmpFusePassBase<AmpFusePass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal()) return;
    Block& block = func.getBody().front();
    foldReluIntoLinear(block);
    DenseMap<Operation*, int64_t> position;
    int64_t index = 0;
    for (Operation& op : block) position[&op] = index++;

    std::vector<Group> groups;
    DenseMap<Operation*, size_t> groupOf;
    for (Operation& op : block) {
      // A bias gradient: the column sums of a group value join its group and close it.
      if (isRowReduction(&op)) {
        Operation* def = op.getOperand(0).getDefiningOp();
        auto it = def ? groupOf.find(def) : groupOf.end();
        auto type = cast<RankedTensorType>(op.getOperand(0).getType());
        if (it != groupOf.end() && emittable(type) && !type.getElementType().isInteger(1) &&
            !groups[it->second].closed &&
            ArrayRef<int64_t>(groups[it->second].shape) == type.getShape() &&
            groups[it->second].ops.size() < kMaxRegionOps) {
          // No position check: the region is placed at its last elementwise op (outline), before
          // any outside reader of a group value, and the sums are only read after the reduction.
          groups[it->second].ops.push_back(&op);
          groups[it->second].closed = true;
          groupOf[&op] = it->second;
        }
        continue;
      }
      if (!isFusibleElementwise(&op) || op.getNumResults() != 1) continue;
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
        auto it = def ? groupOf.find(def) : groupOf.end();
        if (it == groupOf.end() || ArrayRef<int64_t>(groups[it->second].shape) != type.getShape()) continue;
        if (!best || position[groups[it->second].ops.back()] > position[groups[*best].ops.back()]) best = it->second;
      }
      if (best && !groups[*best].closed && groups[*best].ops.size() < kMaxRegionOps &&
          canAppend(groups[*best], &op, groupOf, *best, position)) {
        groups[*best].ops.push_back(&op);
        groupOf[&op] = *best;
        continue;
      }
      groupOf[&op] = groups.size();
      groups.push_back({{&op}, SmallVector<int64_t>(type.getShape())});
    }

    int64_t kernel = 0;
    for (Group& g : groups)
      if (g.ops.size() >= 2) outline(func, g, groupOf, kernel++);
  }

  // The region sits at its last op, so no outside user of a group value may come before `next`.
  static bool canAppend(const Group& g, Operation* next, const DenseMap<Operation*, size_t>& groupOf, size_t id,
                        DenseMap<Operation*, int64_t>& position) {
    for (Operation* member : g.ops)
      for (Operation* user : member->getUsers()) {
        if (user == next) continue;
        auto it = groupOf.find(user);
        if (it != groupOf.end() && it->second == id) continue;
        if (position[user] < position[next]) return false;
      }
    return true;
  }

  static void outline(func::FuncOp func, Group& g, DenseMap<Operation*, size_t>& groupOf, int64_t kernel) {
    llvm::SmallPtrSet<Operation*, 16> members(g.ops.begin(), g.ops.end());
    SmallVector<Value> inputs, results;
    llvm::SmallPtrSet<Value, 16> seen;
    for (Operation* op : g.ops)
      for (Value v : op->getOperands())
        if (!members.contains(v.getDefiningOp()) && seen.insert(v).second) inputs.push_back(v);
    for (Operation* op : g.ops)
      for (OpOperand& use : op->getResult(0).getUses())
        if (!members.contains(use.getOwner())) {
          results.push_back(op->getResult(0));
          break;
        }
    // At the last elementwise op: a closing reduction may come after readers of the group's values
    // (a bias gradient after the weight gradient's GEMM), which must still see the region first.
    Operation* last = g.ops.back();
    if (g.closed)
      for (Operation* op : llvm::reverse(g.ops))
        if (!isRowReduction(op)) {
          last = op;
          break;
        }
    OpBuilder b(last);
    SmallVector<Type> resultTypes;
    for (Value v : results) resultTypes.push_back(v.getType());
    std::string name = (func.getSymName() + ".k" + Twine(kernel)).str();
    auto fused = b.create<FusedOp>(last->getLoc(), resultTypes, b.getStringAttr(name), inputs);
    Block* body = b.createBlock(&fused.getBody());
    IRMapping map;
    for (Value v : inputs) map.map(v, body->addArgument(v.getType(), v.getLoc()));
    b.setInsertionPointToStart(body);
    for (Operation* op : g.ops) b.clone(*op, map);
    SmallVector<Value> yielded;
    for (Value v : results) yielded.push_back(map.lookup(v));
    b.create<YieldOp>(last->getLoc(), yielded);
    for (auto [old, now] : llvm::zip(results, fused.getResults())) old.replaceAllUsesWith(now);
    for (Operation* op : llvm::reverse(g.ops)) {
      groupOf.erase(op);
      op->erase();
    }
  }
};

}  // namespace
