// amp-remat: recompute cheap forward values next to their backward readers, so that fewer values
// are alive at the step's memory peak.
#include <algorithm>
#include <limits>
#include <optional>

#include "ir/AmpOps.h"
#include "ir/Origin.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "passes/FusionGroups.h"
#include "passes/Passes.h"
#include "passes/PrecisionReport.h"
#include "passes/TrainStep.h"

namespace mlir::amp {
#define GEN_PASS_DEF_AMPREMATPASS
#include "passes/Passes.h.inc"
}  // namespace mlir::amp

using namespace mlir;
using namespace mlir::amp;
using mlir::amp::train::tensorBytes;

namespace {

// How cheap recomputing `op` is (lower is cheaper), or nothing when it must not be recomputed:
// 0 casts and views, 1 elementwise math, 2 copies and gathers, 3 softmax and layer/RMS norms (a
// pass over each row with its statistics), 4 GEMMs, convolutions and batch norms (a conv -> batch_norm -> relu block; the norm's other results, its batch
// statistics, are recomputed with it and left unread).
std::optional<int> recomputeCost(Operation* op) {
  if (op->getNumRegions() != 0) return std::nullopt;
  if (isa<BatchNormOp>(op)) return 4;
  if (op->getNumResults() != 1) return std::nullopt;
  if (isa<CastOp, ReshapeOp>(op)) return 0;
  if (isFusibleElementwise(op)) return 1;
  if (isa<TransposeOp, BroadcastToOp, EmbeddingOp>(op)) return 2;
  if (isa<SoftmaxOp, LogSoftmaxOp, LayerNormOp, RmsNormOp>(op)) return 3;
  if (isa<MatmulOp, LinearOp, Conv2DOp>(op)) return 4;
  return std::nullopt;
}

// `auto` stays with what costs one pass over memory (a softmax or norm: one over each row); a
// budget may recompute GEMMs.
constexpr int kAutoMaxCost = 3;
constexpr int kBudgetMaxCost = 4;
constexpr int kMaxChainDepth = 8;
// `auto` recomputes at most this share of the step's FLOPs (a GPT's softmax and norms take 0.7%;
// a long elementwise chain would otherwise recompute almost half of its step).
constexpr double kAutoMaxFlopShare = 0.02;
// Candidates applied together at one peak, at most 1 in kBatchDivisor of those found there (at
// least one): a model with thousands of values alive at its peak is profiled tens of times, not
// once per recompute, while a step with a few candidates per peak takes them one at a time.
constexpr size_t kBatchDivisor = 8;

// The step in program order: positions, and for every value that owns storage (a reshape is a
// view of its operand) its bytes and the position of its last reader. Fusion-aware, it sees the
// step as amp-fuse will leave it: a fused group's members run at the group's anchor, values read
// only inside their group take no memory, and a relu folded into its linear layer runs with it.
struct Profile {
  llvm::DenseMap<Operation*, int64_t> pos;    // where an op runs
  llvm::DenseMap<Operation*, int64_t> order;  // block order (members of a group share a position)
  llvm::DenseMap<Value, int64_t> last;        // keyed by storage owner
  llvm::DenseSet<Value> fusedAway;            // never stored: read only inside a fused region
  SmallVector<int64_t> live;                  // bytes of temporaries alive at each position
  int64_t arguments = 0;

  static Value owner(Value v) {
    while (auto reshape = v.getDefiningOp<ReshapeOp>()) v = reshape->getOperand(0);
    return v;
  }
  static bool ownsStorage(Value v) {
    Operation* def = v.getDefiningOp();
    return def && !isa<ReshapeOp, ConstantOp>(def) && tensorBytes(v.getType()) > 0;
  }
  bool stored(Value v) const { return ownsStorage(v) && !fusedAway.contains(v); }

  // Values the step returns as updates of params and state: written into that storage in place.
  llvm::DenseSet<Value> inPlace;

  Profile(func::FuncOp f, bool fusionAware) {
    Block& block = f.getBody().front();
    for (BlockArgument a : block.getArguments()) arguments += tensorBytes(a.getType());
    Operation* ret = block.getTerminator();
    for (unsigned r = 0; r < ret->getNumOperands() && r < f.getNumResults(); ++r)
      if (f.getResultAttr(r, AmpDialect::kUpdatesAttr)) inPlace.insert(ret->getOperand(r));
    int64_t i = 0;
    for (Operation& op : block) order[&op] = pos[&op] = i++;
    if (fusionAware) seeFusion(block);
    live.assign(i + 1, 0);
    for (Operation& op : block)
      for (Value operand : op.getOperands()) {
        Value o = owner(operand);
        if (stored(o)) last[o] = std::max(last.lookup(o), pos[&op]);
      }
    SmallVector<int64_t> delta(i + 2, 0);
    for (Operation& op : block)
      for (Value r : op.getResults()) {
        if (!stored(r) || inPlace.contains(r)) continue;
        int64_t end = last.count(r) ? last[r] : pos[&op];  // an unread result lives at its step
        // Written over its dying operand, the result adds no bytes at its own step.
        const int64_t start = pos[&op] + (takesOperandStorage(op, r) ? 1 : 0);
        if (start > end) continue;
        delta[start] += tensorBytes(r.getType());
        delta[end + 1] -= tensorBytes(r.getType());
      }
    int64_t running = 0;
    for (int64_t k = 0; k < i; ++k) live[k] = running += delta[k];
  }

  void seeFusion(Block& block) {
    FusionGroups plan = planFusionGroups(block);
    for (const FusionGroup& g : plan.groups) {
      if (g.ops.size() < 2) continue;
      const size_t id = plan.groupOf.lookup(g.ops.front());
      const int64_t at = pos.lookup(g.anchor());
      for (Operation* op : g.ops) {
        pos[op] = at;
        Value r = op->getResult(0);
        if (llvm::all_of(r.getUsers(), [&](Operation* user) {
              auto it = plan.groupOf.find(user);
              return it != plan.groupOf.end() && it->second == id;
            }))
          fusedAway.insert(r);
      }
    }
    for (Operation& op : block)
      if (auto linear = dyn_cast<LinearOp>(&op))
        if (Operation* relu = reluFoldableInto(linear)) {
          fusedAway.insert(linear.getResult());
          pos[relu] = pos.lookup(&op);
        }
  }

  // The memory planner's pairing (inPlacePairs, runtime/plan/MemoryPlan.h) for the ops amp-fuse
  // leaves alone: softmax, log_softmax and softmax_grad write their result over operand 0 when
  // that temporary, of the result's type, is read for the last time there. (Elementwise ops are
  // paired too, but amp-fuse may fuse them later, and fused kernels are not: not counted.)
  bool takesOperandStorage(Operation& op, Value r) const {
    if (!isa<SoftmaxOp, LogSoftmaxOp, SoftmaxGradOp>(op) || r != op.getResult(0)) return false;
    Value operand = op.getOperand(0);
    Value o = owner(operand);
    if (operand.getType() != r.getType() || !stored(o) || inPlace.contains(o)) return false;
    if (llvm::count(op.getOperands(), operand) > 1) return false;
    auto it = last.find(o);
    return it != last.end() && it->second == pos.lookup(&op);
  }
  int64_t peakPosition() const {
    return std::max_element(live.begin(), live.end()) - live.begin();
  }
  // The temporaries alive at `at`, largest first.
  SmallVector<Value> aliveAt(Block& block, int64_t at) const {
    SmallVector<Value> out;
    for (Operation& op : block)
      for (Value r : op.getResults())
        if (stored(r) && !inPlace.contains(r) && pos.lookup(&op) <= at &&
            (last.count(r) ? last.lookup(r) : pos.lookup(&op)) >= at)
          out.push_back(r);
    llvm::stable_sort(out, [](Value a, Value b) { return tensorBytes(a.getType()) > tensorBytes(b.getType()); });
    return out;
  }
};

struct Candidate {
  Operation* op = nullptr;
  Operation* firstLate = nullptr;
  bool move = false;                // no reader before the peak: make the value later instead
  SmallVector<Operation*> chain;     // ops to clone before firstLate, operands first, op last
  int cost = 0;
  int64_t bytes = 0;                 // freed at the peak: the value's bytes, less the kept ones
  bool keeps = false;                // keeps a value alive longer (recomputable's `kept`)
  int64_t flops = 0;                 // of the ops recomputed (none for a move)

  // The ops it changes or reads: what another candidate applied with it must not touch.
  SmallVector<Operation*> involved() const {
    SmallVector<Operation*> ops(chain.begin(), chain.end());
    for (Operation* op : chain)
      for (Value operand : op->getOperands())
        if (Operation* def = operand.getDefiningOp()) ops.push_back(def);
    return ops;
  }
};

// Appends to `chain` what must be recomputed at position `at` for `v` to be available there:
// nothing when it is an argument, a constant or alive there anyway; else its cheap producer, after
// that producer's own operands. With `kept`, a stored value whose producer is too dear to recompute
// is kept alive until `at` instead (added to `kept`): a softmax recomputed from the bf16 scores
// of its attention, which are half its f32 result. False when something on the way can be neither.
bool recomputable(const Profile& p, Value v, int64_t at, int maxCost, int depth, llvm::SetVector<Operation*>& chain,
                  int& cost, llvm::SetVector<Value>* kept) {
  Operation* def = v.getDefiningOp();
  if (!def || isa<ConstantOp>(def)) return true;
  Value storage = Profile::owner(v);
  // A value fused away is never stored: a reader outside its region must recompute it.
  if (!p.fusedAway.contains(storage) && (!Profile::ownsStorage(storage) || p.last.lookup(storage) >= at))
    return true;
  std::optional<int> c = recomputeCost(def);
  if (!c || *c > maxCost || depth >= kMaxChainDepth) {
    if (!kept || !p.stored(storage) || p.inPlace.contains(storage)) return false;
    kept->insert(storage);
    return true;
  }
  for (Value operand : def->getOperands())
    if (!recomputable(p, operand, at, maxCost, depth + 1, chain, cost, kept)) return false;
  cost = std::max(cost, *c);
  chain.insert(def);
  return true;
}

struct AmpRematPass : mlir::amp::impl::AmpRematPassBase<AmpRematPass> {
  using AmpRematPassBase::AmpRematPassBase;

  void runOnOperation() override {
    func::FuncOp f = getOperation();
    if (f.isExternal() || (!autoRemat && budget <= 0)) return;
    // Only the entries that train: the model's own function (eval) has no backward to recompute
    // in, and @grads is an inspection entry.
    auto entry = f->getAttrOfType<StringAttr>(AmpDialect::kEntryAttr);
    if (!entry || (entry.getValue() != train::kTrainStep && entry.getValue() != train::kAccumulate)) return;
    Block& block = f.getBody().front();
    const int64_t limit = 4 * static_cast<int64_t>(block.getOperations().size());
    int64_t stepFlops = 0;
    for (Operation& op : block) stepFlops += estimateFlops(&op);
    const int64_t maxFlops = budget > 0 ? std::numeric_limits<int64_t>::max()
                                         : static_cast<int64_t>(kAutoMaxFlopShare * static_cast<double>(stepFlops));
    int64_t recomputedFlops = 0;
    // `auto` keeps its changes only when they lower the step's estimate: moves that free nothing
    // in the end would only reorder the step. The step as it came is copied before the first
    // change, so a step with nothing to recompute costs no copy.
    std::optional<int64_t> startTotal;
    func::FuncOp original;
    auto keepOriginal = [&] {
      if (budget <= 0 && !original) original = f.clone();
    };
    auto restoreUnlessLower = [&](int64_t total) {
      if (!original) return;
      if (startTotal && total >= *startTotal) f.getBody().takeBody(original.getBody());
      original.erase();
    };
    // The profile of the step as it stands, when the last iteration already made it.
    std::optional<Profile> known;
    for (int64_t iteration = 0;; ++iteration) {
      Profile p = known ? std::move(*known) : Profile(f, fusionAware);
      known.reset();
      const int64_t peak = p.peakPosition();
      const int64_t total = p.arguments + p.live[peak];
      if (!startTotal) startTotal = total;
      if (budget > 0 && total <= budget) return;
      SmallVector<Candidate> found =
          iteration < limit ? pick(p, block, peak, maxFlops - recomputedFlops) : SmallVector<Candidate>();
      if (found.empty()) {
        if (budget > 0) {
          InFlightDiagnostic error = f.emitError("amp-remat: the step needs an estimated ")
                                     << total << " bytes (arguments " << p.arguments << " + temporaries "
                                     << p.live[peak] << " alive at op #" << peak << "), over the budget of "
                                     << static_cast<int64_t>(budget)
                                     << " bytes; nothing alive there can be recomputed (casts, elementwise math, "
                                        "copies, softmax, layer and RMS norms, GEMMs, convolutions, batch norms; "
                                        "chains of up to "
                                     << kMaxChainDepth << " ops) from values alive where it is read again";
          // What is alive there says what a smaller step would need (a fused backward, a larger chain).
          SmallVector<Value> alive = p.aliveAt(block, peak);
          for (Value v : ArrayRef<Value>(alive).take_front(4)) {
            Operation* def = v.getDefiningOp();
            error.attachNote(def->getLoc()) << "alive there: " << tensorBytes(v.getType()) << " bytes made by '"
                                            << def->getName() << "' at op #" << p.pos.lookup(def)
                                            << ", last read at op #" << p.last.lookup(v);
          }
          return signalPassFailure();
        }
        return restoreUnlessLower(total);
      }
      const Candidate& best = found.front();
      keepOriginal();
      if (best.keeps) {
        SmallVector<Operation*> clones = apply(best);
        // A kept value lives longer than before, so the peak may move there: keep the change only
        // when the step's estimate does not grow.
        Profile after(f, fusionAware);
        if (after.arguments + after.live[after.peakPosition()] > total) {
          revert(best, clones);  // the step is as `p` saw it again
          rejected.insert(best.op);
          known = std::move(p);
          continue;
        }
        recomputedFlops += best.flops;
        known = std::move(after);
      } else {
        // Candidates that share no op or operand with one applied before them at this peak: each
        // still frees what the profile says, and none reads another's original value late.
        llvm::DenseSet<Operation*> touched;
        const size_t batch = std::max<size_t>(1, found.size() / kBatchDivisor);
        size_t applied = 0;
        for (const Candidate& c : found) {
          if (applied == batch) break;
          if (c.keeps || recomputedFlops + c.flops > maxFlops) continue;
          SmallVector<Operation*> involved = c.involved();
          if (llvm::any_of(involved, [&](Operation* op) { return touched.contains(op); })) continue;
          touched.insert(involved.begin(), involved.end());
          apply(c);
          recomputedFlops += c.flops;
          ++applied;
        }
      }
      rejected.clear();
    }
  }

  // Recomputes whose kept values made the estimate grow, until another change is made.
  llvm::DenseSet<Operation*> rejected;

  // Every value alive across the peak whose later readers can recompute it (from operands alive
  // there anyway or themselves recomputed) at most `flopsLeft`, or make it later: best first.
  SmallVector<Candidate> pick(const Profile& p, Block& block, int64_t peak, int64_t flopsLeft) const {
    const int maxCost = budget > 0 ? kBudgetMaxCost : kAutoMaxCost;
    SmallVector<Candidate> found;
    for (Operation& op : block) {
      // Not a break: a fused group's members run at its anchor, later than the ops between them.
      if (p.pos.lookup(&op) >= peak) continue;
      // Moving an op costs nothing, whatever it computes; recomputing it costs at most maxCost.
      std::optional<int> cost = recomputeCost(&op);
      if (!cost || isa<ReshapeOp>(op) || op.getNumResults() != 1) continue;
      Value v = op.getResult(0);
      if (!p.stored(v) || !p.last.count(v) || p.last.lookup(v) <= peak) continue;
      Operation* firstLate = nullptr;
      bool early = false, unsplittable = false;
      for (OpOperand& use : v.getUses()) {
        Operation* user = block.findAncestorOpInBlock(*use.getOwner());
        const int64_t at = p.pos.lookup(user);
        // Read at the peak itself, or through a view made before it (which keeps the storage
        // alive past the peak): recomputing would not free it there.
        // Returned: alive to the end of the step whatever happens to its other readers.
        if (at == peak || (at < peak && isa<ReshapeOp>(user)) || user->hasTrait<OpTrait::IsTerminator>())
          unsplittable = true;
        if (at < peak) early = true;
        else if (at > peak && (!firstLate || std::make_pair(at, p.order.lookup(user)) <
                                                 std::make_pair(p.pos.lookup(firstLate), p.order.lookup(firstLate))))
          firstLate = user;
      }
      if (unsplittable || !firstLate) continue;
      const int64_t insertAt = p.pos.lookup(firstLate);
      const int64_t bytes = tensorBytes(v.getType());
      if (!early) {
        // Made later instead: its operands then live until firstLate. Where they die earlier today,
        // they stay alive only where the value itself is alive now, so the move pays when they are
        // smaller than it (dP = dO Vt made before a recomputed softmax that its own reader waits for).
        std::optional<int64_t> extended = extendedBytes(p, op, insertAt);
        if (!extended || *extended >= bytes) continue;
        found.push_back(Candidate{&op, firstLate, /*move=*/true, {&op}, /*cost=*/-1, bytes - *extended});
        continue;
      }
      if (*cost > maxCost || rejected.contains(&op)) continue;
      // From values alive at firstLate anyway; failing that, from narrower ones kept alive until then.
      for (bool keep : {false, true}) {
        llvm::SetVector<Operation*> chain;
        llvm::SetVector<Value> kept;
        int chainCost = *cost;
        bool ok = true;
        for (Value operand : op.getOperands())
          ok = ok && recomputable(p, operand, insertAt, maxCost, 1, chain, chainCost, keep ? &kept : nullptr);
        if (!ok) continue;
        int64_t keptBytes = 0;
        for (Value k : kept) keptBytes += tensorBytes(k.getType());
        if (keptBytes >= bytes) break;
        chain.insert(&op);
        Candidate c{&op, firstLate, /*move=*/false, SmallVector<Operation*>(chain.begin(), chain.end()),
                    chainCost, bytes - keptBytes, /*keeps=*/!kept.empty()};
        for (Operation* recomputed : chain) c.flops += estimateFlops(recomputed);
        if (c.flops <= flopsLeft) found.push_back(std::move(c));
        break;
      }
    }
    // Cheapest first, then the most bytes; ties in block order.
    llvm::stable_sort(found, [](const Candidate& a, const Candidate& b) {
      return a.cost != b.cost ? a.cost < b.cost : a.bytes > b.bytes;
    });
    return found;
  }

  // The bytes of `op`'s operands that die before `at` today and would live until `at` if `op` ran
  // there; nothing when an operand is never stored (read inside a fused region: it cannot wait).
  static std::optional<int64_t> extendedBytes(const Profile& p, Operation& op, int64_t at) {
    int64_t extended = 0;
    llvm::SmallDenseSet<Value> seen;
    for (Value operand : op.getOperands()) {
      Value o = Profile::owner(operand);
      if (p.fusedAway.contains(o)) return std::nullopt;
      if (p.stored(o) && !p.inPlace.contains(o) && p.last.lookup(o) < at && seen.insert(o).second)
        extended += tensorBytes(o.getType());
    }
    return extended;
  }

  // Applies `c`; returns the clones it made, operands first.
  static SmallVector<Operation*> apply(const Candidate& c) {
    Block* block = c.op->getBlock();
    SmallVector<Operation*> clones;
    if (c.move) {
      c.op->moveBefore(c.firstLate);
      return clones;
    }
    OpBuilder b(c.op->getContext());
    b.setInsertionPoint(c.firstLate);
    IRMapping map;
    Operation* clone = nullptr;
    for (Operation* op : c.chain) {
      clone = b.clone(*op, map);
      clones.push_back(clone);
      setOrigin(clone, Origin::Remat);
      clone->setLoc(NameLoc::get(b.getStringAttr("amp.remat"), op->getLoc()));
    }
    Operation* firstLate = c.firstLate;
    c.op->getResult(0).replaceUsesWithIf(clone->getResult(0), [&](OpOperand& use) {
      Operation* user = block->findAncestorOpInBlock(*use.getOwner());
      return user == firstLate || firstLate->isBeforeInBlock(user);
    });
    return clones;
  }

  // Undoes apply(c) of a recompute: the later readers read the original again.
  static void revert(const Candidate& c, ArrayRef<Operation*> clones) {
    clones.back()->getResult(0).replaceAllUsesWith(c.op->getResult(0));
    for (Operation* clone : llvm::reverse(clones)) clone->erase();
  }
};

}  // namespace
