// amp-shard-optimizer: ZeRO stage 1 on a data-parallel @train_step (docs/data-parallel.md).
// The gradient all-reduce becomes a reduce-scatter, so the check, the clipping and the updates
// run on this rank's chunk; the optimizer state shrinks to the chunk; an all-gather of the
// updated chunks rebuilds the whole f32 params that every rank's forward reads. Values keep
// their ops: the pass re-types the chain from the gradient chunks to the updates in place.
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"

#include "ir/Origin.h"
#include "passes/Passes.h"
#include "passes/TrainStep.h"

namespace mlir::amp {
#define GEN_PASS_DEF_AMPSHARDOPTIMIZERPASS
#include "passes/Passes.h.inc"

namespace {
using namespace train;

RankedTensorType chunkOf(Type whole, int64_t ranks) {
  auto t = cast<RankedTensorType>(whole);
  return RankedTensorType::get({(t.getNumElements() + ranks - 1) / ranks}, t.getElementType());
}

Location zeroLoc(Operation* near) {
  return NameLoc::get(StringAttr::get(near->getContext(), "amp.shard_optimizer"), near->getLoc());
}

void describe(Operation* op, StringRef why) {
  op->setAttr(AmpDialect::kPrecisionAttr, StringAttr::get(op->getContext(), "f32"));
  op->setAttr(AmpDialect::kReasonAttr, ReasonAttr::pass(op->getContext(), "ZeRO-1", why));
}

struct AmpShardOptimizerPass : impl::AmpShardOptimizerPassBase<AmpShardOptimizerPass> {
  // Every op this pass inserts carries amp.origin (ir/Origin.h).
  OriginStamp stamp{Origin::ShardOptimizer};

  using AmpShardOptimizerPassBase::AmpShardOptimizerPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (worldSize < 1) {
      module.emitError("amp-shard-optimizer: world-size must be >= 1, got ") << static_cast<int64_t>(worldSize);
      return signalPassFailure();
    }
    func::FuncOp step = findEntry(module, kTrainStep);
    auto dataParallel = module->getAttrOfType<DataParallelRecipeAttr>(AmpDialect::kDataParallelAttr);
    if (!step || !dataParallel) {
      module.emitError("amp-shard-optimizer: needs a data-parallel @train_step; run amp-data-parallel first");
      return signalPassFailure();
    }
    if (!step.getOps<ReduceScatterOp>().empty()) {
      step.emitError("amp-shard-optimizer: @train_step is already sharded");
      return signalPassFailure();
    }
    auto checks = llvm::to_vector(step.getOps<UnscaleCheckOp>());
    if (checks.size() != 1) {
      step.emitError("amp-shard-optimizer: @train_step needs exactly one amp.unscale_check");
      return signalPassFailure();
    }
    if (failed(shard(step, checks.front()))) return signalPassFailure();
    auto recipe = DataParallelRecipeAttr::getChecked([&] { return module.emitError("amp-shard-optimizer: "); },
                                                     &getContext(), dataParallel.getReduce(),
                                                     static_cast<int64_t>(worldSize));
    if (!recipe) return signalPassFailure();
    module->setAttr(AmpDialect::kDataParallelAttr, recipe);
    // Block arguments and results were re-typed in place: the signature follows them.
    Results::read(step).write(step);
    step.setFunctionType(FunctionType::get(&getContext(), step.front().getArgumentTypes(),
                                           step.getFunctionType().getResults()));
  }

  // The all-reduce result (with the widening cast of a compressed reduction) that feeds gradient
  // operand `k` of the check.
  struct Source {
    AllReduceOp reduce;
    unsigned index;
    CastOp widen;  // null when the reduction ran in the gradient's own type
  };

  FailureOr<Source> sourceOf(UnscaleCheckOp check, unsigned k) {
    Value g = check.getGrads()[k];
    CastOp widen = g.getDefiningOp<CastOp>();
    if (widen) g = widen.getInput();
    auto r = dyn_cast<OpResult>(g);
    auto reduce = r ? dyn_cast<AllReduceOp>(r.getOwner()) : AllReduceOp();
    if (!reduce || reduce.getKind() != ReduceKind::Mean)
      return check.emitError("amp-shard-optimizer: gradient #")
             << k << " of the check is not an amp.all_reduce mean result; run amp-data-parallel first";
    return Source{reduce, r.getResultNumber(), widen};
  }

  LogicalResult shard(func::FuncOp step, UnscaleCheckOp check) {
    const int64_t ranks = worldSize;
    const unsigned n = check.getGrads().size();
    // Gradient k -> its bucket (one all-reduce), in bucket order.
    llvm::MapVector<Operation*, SmallVector<unsigned>> buckets;
    SmallVector<Source> sources;
    for (unsigned k = 0; k < n; ++k) {
      FailureOr<Source> s = sourceOf(check, k);
      if (failed(s)) return failure();
      sources.push_back(*s);
      buckets[s->reduce.getOperation()].push_back(k);
    }

    // 1. Each bucket's all-reduce becomes a reduce-scatter of the same tensors.
    for (auto& [op, members] : buckets) {
      auto reduce = cast<AllReduceOp>(op);
      OpBuilder b(reduce);
      b.setListener(&stamp);
      auto scatter = b.create<ReduceScatterOp>(reduce.getLoc(), ReduceKind::Mean, ranks, reduce.getValues());
      for (NamedAttribute a : reduce->getDiscardableAttrs()) scatter->setAttr(a.getName(), a.getValue());
      setOrigin(scatter, Origin::ShardOptimizer);
      scatter->setAttr(AmpDialect::kReasonAttr,
                       ReasonAttr::pass(b.getContext(), "ZeRO-1", "each rank receives its chunk of the mean gradient"));
      for (unsigned k : members) {
        Source& s = sources[k];
        Value chunk = scatter.getResult(s.index);
        if (s.widen) {
          OpBuilder after(scatter->getBlock(), std::next(Block::iterator(scatter)));
          after.setListener(&stamp);
          chunk = after.create<CastOp>(s.widen.getLoc(), chunkOf(s.widen.getType(), ranks), chunk);
        }
        check->setOperand(k, chunk);
      }
    }
    for (unsigned k = 0; k < n; ++k)
      if (sources[k].widen && sources[k].widen->use_empty()) sources[k].widen->erase();
    for (auto& [op, members] : buckets)
      if (op->use_empty()) op->erase();
      else return op->emitError("amp-shard-optimizer: a gradient all-reduce has readers besides the check");

    // 2. Re-type the chain check -> clip -> updates to chunks.
    for (unsigned k = 0; k < n; ++k) check.getUnscaled()[k].setType(check.getGrads()[k].getType());
    // Gradient value -> its index k, to find each update's bucket.
    llvm::DenseMap<Value, unsigned> gradIndex;
    for (unsigned k = 0; k < n; ++k) gradIndex[check.getUnscaled()[k]] = k;
    for (Operation& op : llvm::make_early_inc_range(step.front())) {
      if (auto norm = dyn_cast<GlobalNormOp>(op)) {
        globalNorm(norm);
      } else if (auto clip = dyn_cast<ClipGradsOp>(op)) {
        for (auto [g, c] : llvm::zip(clip.getGrads(), clip.getClipped())) {
          c.setType(g.getType());
          if (auto it = gradIndex.find(g); it != gradIndex.end()) gradIndex[c] = it->second;
        }
      }
    }

    // 3. Updates on chunks, then one all-gather per bucket after its last update.
    SmallVector<SmallVector<Operation*>> gathers(buckets.size());
    llvm::DenseMap<unsigned, unsigned> bucketOf;
    for (auto [b, entry] : llvm::enumerate(buckets))
      for (unsigned k : entry.second) bucketOf[k] = b;
    SmallVector<Operation*> updates;
    for (Operation& op : step.front())
      if (isa<SgdUpdateOp, AdamUpdateOp>(op)) updates.push_back(&op);
    for (Operation* update : updates) {
      auto it = gradIndex.find(update->getOperand(1));
      if (it == gradIndex.end())
        return update->emitError("amp-shard-optimizer: the update's gradient does not come from the check");
      if (failed(shardUpdate(step, update))) return failure();
      gathers[bucketOf[it->second]].push_back(update);
    }
    for (auto& members : gathers) {
      if (members.empty()) continue;
      Operation* last = members.front();
      SmallVector<Value> chunks;
      SmallVector<Type> wholes;
      for (Operation* update : members) {
        if (last->isBeforeInBlock(update)) last = update;
        chunks.push_back(update->getResult(0));  // the new param
        wholes.push_back(update->getOperand(0).getDefiningOp<RankChunkOp>().getValue().getType());
      }
      OpBuilder b(last->getBlock(), std::next(Block::iterator(last)));
      b.setListener(&stamp);
      auto gather = b.create<AllGatherOp>(zeroLoc(last), wholes, ranks, chunks);
      describe(gather, "the updated f32 master chunks of every rank make the whole params");
      for (auto [i, chunk] : llvm::enumerate(chunks)) chunk.replaceAllUsesExcept(gather.getResult(i), gather);
    }
    return success();
  }

  // The norm of all gradients from the norms of every rank's chunks: sqrt(sum over ranks of the
  // squared chunk norms). The padding is zeros and adds nothing.
  void globalNorm(GlobalNormOp norm) {
    OpBuilder b(norm->getBlock(), std::next(Block::iterator(norm)));
    b.setListener(&stamp);
    Location loc = zeroLoc(norm);
    Value local = norm.getNorm();
    Value squared = b.create<MulOp>(loc, local, local);
    auto sum = b.create<AllReduceOp>(loc, ReduceKind::Sum, ValueRange{squared});
    describe(sum, "the global gradient norm sums every rank's squared chunk norm");
    Value global = b.create<SqrtOp>(loc, sum.getResult(0));
    local.replaceAllUsesExcept(global, squared.getDefiningOp());
  }

  // One update on this rank's chunk: the master through amp.rank_chunk, the state arguments
  // re-typed to the chunk and marked amp.shard_of.
  LogicalResult shardUpdate(func::FuncOp step, Operation* update) {
    const int64_t ranks = worldSize;
    auto param = dyn_cast<BlockArgument>(update->getOperand(0));
    if (!param || argRole(step, param.getArgNumber()) != "param")
      return update->emitError("amp-shard-optimizer: the update's master is not a param of @train_step");
    StringRef paramName = argName(step, param.getArgNumber());
    OpBuilder b(update);
    b.setListener(&stamp);
    auto mine = b.create<RankChunkOp>(zeroLoc(update), ranks, param);
    update->setOperand(0, mine);
    // bf16 moments round with a stream indexed by the element's place in the whole tensor; a
    // rank's chunk would need its offset in that stream.
    if (auto adam = dyn_cast<AdamUpdateOp>(update); adam && !cast<RankedTensorType>(adam.getExpAvg().getType()).getElementType().isF32())
      return update->emitError("amp-shard-optimizer: bf16 optimizer state (optimizer-state=bf16) is not sharded; "
                               "keep f32 moments with shard-world-size > 0");
    auto stateOperands = isa<AdamUpdateOp>(update) ? SmallVector<unsigned>{2, 3} : SmallVector<unsigned>{};
    if (auto sgd = dyn_cast<SgdUpdateOp>(update); sgd && sgd.getMomentumBuffer()) stateOperands.push_back(4);
    for (unsigned i : stateOperands) {
      auto state = dyn_cast<BlockArgument>(update->getOperand(i));
      if (!state || argRole(step, state.getArgNumber()) != "state" || !state.hasOneUse())
        return update->emitError("amp-shard-optimizer: optimizer state operand #")
               << i << " is not a state argument read by this update only";
      state.setType(chunkOf(state.getType(), ranks));
      step.setArgAttr(state.getArgNumber(), AmpDialect::kShardOfAttr, b.getStringAttr(paramName));
    }
    for (OpResult r : update->getResults()) r.setType(chunkOf(r.getType(), ranks));
    return success();
  }
};

}  // namespace
}  // namespace mlir::amp
