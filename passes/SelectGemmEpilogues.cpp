// amp-select-gemm-epilogues: GEMMs and the elementwise work around them become amp.gemm_epilogue
// ops that cuBLASLt runs as one call each (Passes.td). Legality is cuBLASLt's layout rules, shared
// with the cuda device through runtime/schema/CublasLtEpilogue.h.
#include <optional>
#include <string>

#include "ir/AmpOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "passes/Passes.h"
#include "runtime/schema/CublasLtEpilogue.h"
#include "runtime/schema/Target.h"

namespace mlir::amp {
#define GEN_PASS_DEF_AMPSELECTGEMMEPILOGUESPASS
#include "passes/Passes.h.inc"
}  // namespace mlir::amp

using namespace mlir;
using namespace mlir::amp;
namespace lt = ::amp::rt::cuda;

namespace {

RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }
Type elementOf(Value v) { return tensorType(v).getElementType(); }
std::vector<int64_t> shapeOf(Value v) {
  ArrayRef<int64_t> s = tensorType(v).getShape();
  return {s.begin(), s.end()};
}

// cuBLASLt's view of lhs . rhs with a training epilogue whose auxiliary matrix is `aux`: the
// column-major problem and the aux leading dimension, or nullopt where cuBLASLt has no such call.
struct Layout {
  lt::ColumnMajorGemm gemm;
  int64_t auxLd = 0;
};
std::optional<Layout> epilogueLayout(Value lhs, Value rhs, bool ta, bool tb, lt::EpilogueAux aux) {
  Layout l;
  l.gemm = lt::columnMajorGemm(shapeOf(lhs), shapeOf(rhs), ta, tb);
  if (!l.gemm.error.empty()) return std::nullopt;
  const lt::AuxLayout a = lt::trainingEpilogueAux(l.gemm, aux);
  if (!a.error.empty()) return std::nullopt;
  l.auxLd = a.ld;
  return l;
}
// The forward and backward GEMMs see the auxiliary matrix with one layout.
bool sameLayout(const Layout& f, const Layout& b) {
  return f.gemm.m == b.gemm.m && f.gemm.n == b.gemm.n && f.auxLd == b.auxLd;
}

// A ReLU mask lives in the storage of the op's i1 result, one byte per element.
bool maskFits(const Layout& l, Value d) {
  return lt::reluMaskBytes(l.auxLd, l.gemm.n) <= tensorType(d).getNumElements();
}

// An amp.constant holding +0 (what the ReLU backward selects where the mask is clear).
bool isPositiveZero(Value v) {
  auto c = v.getDefiningOp<ConstantOp>();
  if (!c) return false;
  auto value = dyn_cast<DenseElementsAttr>(c.getValue());
  if (!value || !value.isSplat() || !isa<FloatType>(value.getElementType())) return false;
  const APFloat f = value.getSplatValue<APFloat>();
  return f.isZero() && !f.isNegative();
}

bool isTanh(GeluApproximation a) { return a == GeluApproximation::Tanh; }

// Every user of `v` comes after `op` in its block.
bool usedOnlyAfter(Value v, Operation* op) {
  for (Operation* user : v.getUsers())
    if (user->getBlock() != op->getBlock() || !op->isBeforeInBlock(user)) return false;
  return true;
}

// The value `v` views through reshapes that keep its last dim (so a row sum of either is the
// same sum, in the same order).
Value viewed(Value v) {
  while (auto r = v.getDefiningOp<ReshapeOp>()) {
    Value in = r->getOperand(0);
    if (tensorType(in).getShape().back() != tensorType(v).getShape().back()) break;
    v = in;
  }
  return v;
}

// A matmul that produces `v` for `reader` alone, with the operands' element type.
MatmulOp dxGemm(Value v, Operation* reader) {
  auto mm = v.getDefiningOp<MatmulOp>();
  if (!mm || !v.hasOneUse() || *v.getUsers().begin() != reader) return {};
  return mm;
}

GemmEpilogueOp createEpilogue(OpBuilder& b, Location loc, GemmEpilogueKind kind, TypeRange results, Value lhs,
                              Value rhs, Value input, bool ta, bool tb) {
  auto op = b.create<GemmEpilogueOp>(loc, results, GemmEpilogueKindAttr::get(b.getContext(), kind), lhs, rhs, input,
                                     ta ? b.getUnitAttr() : UnitAttr(), tb ? b.getUnitAttr() : UnitAttr());
  return op;
}

struct Selector {
  func::FuncOp func;

  // The ReLU backward amp-fuse forms: compare gt(h, +0) -> select(mask, g, +0)[ -> row sum].
  struct ReluBackward {
    Value h, g;
    bool biasGrad = false;
  };
  static std::optional<ReluBackward> matchReluBackward(FusedOp f) {
    Block& body = f.getBody().front();
    SmallVector<Operation*> ops;
    for (Operation& op : body.without_terminator()) ops.push_back(&op);
    if (ops.size() < 2 || ops.size() > 3) return std::nullopt;
    auto cmp = dyn_cast<CompareOp>(ops[0]);
    auto sel = dyn_cast<SelectOp>(ops[1]);
    if (!cmp || !sel || cmp.getPredicate() != ComparePredicate::Gt) return std::nullopt;
    auto h = dyn_cast<BlockArgument>(cmp->getOperand(0));
    auto zero = dyn_cast<BlockArgument>(cmp->getOperand(1));
    auto g = dyn_cast<BlockArgument>(sel->getOperand(1));
    if (!h || !zero || !g || sel->getOperand(0) != cmp->getResult(0) || sel->getOperand(2) != zero ||
        !isPositiveZero(f.getInputs()[zero.getArgNumber()]))
      return std::nullopt;
    SmallVector<Value> yields = {sel->getResult(0)};
    ReluBackward m{f.getInputs()[h.getArgNumber()], f.getInputs()[g.getArgNumber()]};
    if (ops.size() == 3) {
      if (!isRowReduction(ops[2]) || ops[2]->getOperand(0) != sel->getResult(0)) return std::nullopt;
      yields.push_back(ops[2]->getResult(0));
      m.biasGrad = true;
    }
    auto yield = cast<YieldOp>(body.getTerminator());
    if (SmallVector<Value>(yield.getValues()) != yields) return std::nullopt;
    // One type throughout: the GEMMs' D and the bias gradient share it.
    const Type e = elementOf(m.h);
    if (tensorType(m.g) != tensorType(m.h) || f.getResult(0).getType() != m.h.getType() ||
        (m.biasGrad && elementOf(f.getResult(1)) != e))
      return std::nullopt;
    return m;
  }

  void relu() {
    SmallVector<FusedOp> regions(func.getOps<FusedOp>());
    for (FusedOp f : regions) {
      auto m = matchReluBackward(f);
      if (!m) continue;
      MatmulOp mm = dxGemm(m->g, f);
      if (!mm || elementOf(mm.getLhs()) != elementOf(m->h)) continue;
      const GemmEpilogueKind bk = m->biasGrad ? GemmEpilogueKind::DReluBgrad : GemmEpilogueKind::DRelu;
      auto bl = epilogueLayout(mm.getLhs(), mm.getRhs(), mm.getTransposeA(), mm.getTransposeB(), lt::EpilogueAux::ReluMask);
      if (!bl) continue;
      // The forward: a relu layer, or one an earlier backward already gave its mask.
      Value mask;
      Operation* forward = m->h.getDefiningOp();
      if (auto done = dyn_cast_or_null<GemmEpilogueOp>(forward)) {
        if (done.getKind() != GemmEpilogueKind::ReluAux && done.getKind() != GemmEpilogueKind::ReluAuxBias) continue;
        auto fl = epilogueLayout(done.getLhs(), done.getRhs(), false, done.getTransposeB(), lt::EpilogueAux::ReluMask);
        if (!fl || !sameLayout(*fl, *bl) || !done->isBeforeInBlock(mm)) continue;
        mask = done.getResult(1);
      } else {
        auto linear = dyn_cast_or_null<LinearOp>(forward);
        if (!linear || linear.getActivation() != LinearActivation::Relu || !linear->isBeforeInBlock(mm)) continue;
        auto fl = epilogueLayout(linear.getInput(), linear.getWeight(), false, linear.getTransposeW(),
                                 lt::EpilogueAux::ReluMask);
        if (!fl || !sameLayout(*fl, *bl) || !maskFits(*fl, linear.getResult())) continue;
        OpBuilder b(linear);
        const Type maskType = RankedTensorType::get(tensorType(m->h).getShape(), b.getI1Type());
        auto fwd = createEpilogue(b, linear.getLoc(),
                                  linear.getBias() ? GemmEpilogueKind::ReluAuxBias : GemmEpilogueKind::ReluAux,
                                  {linear.getType(), maskType}, linear.getInput(), linear.getWeight(), linear.getBias(),
                                  false, linear.getTransposeW());
        linear.getResult().replaceAllUsesWith(fwd.getResult(0));
        linear.erase();
        mask = fwd.getResult(1);
      }
      OpBuilder b(mm);
      auto bwd = createEpilogue(b, mm.getLoc(), bk, f.getResultTypes(), mm.getLhs(), mm.getRhs(), mask,
                                mm.getTransposeA(), mm.getTransposeB());
      f->replaceAllUsesWith(bwd->getResults());
      Value zero = f.getInputs()[cast<BlockArgument>(f.getBody().front().front().getOperand(1)).getArgNumber()];
      f.erase();
      mm.erase();
      if (Operation* c = zero.getDefiningOp(); c && c->use_empty()) c->erase();
    }
  }

  void gelu() {
    SmallVector<GeluOp> gelus(func.getOps<GeluOp>());
    for (GeluOp g : gelus) {
      Value pre = g.getInput();
      auto linear = pre.getDefiningOp<LinearOp>();
      if (!isTanh(g.getApproximate()) || !linear || linear.getActivation() != LinearActivation::None ||
          g.getType() != linear.getType())
        continue;
      auto fl = epilogueLayout(linear.getInput(), linear.getWeight(), false, linear.getTransposeW(),
                               lt::EpilogueAux::GeluInput);
      // The backward's gelu_grads, each fed by a dX GEMM of its own.
      SmallVector<std::pair<GeluGradOp, MatmulOp>> grads;
      bool keepsInput = false, ok = true;
      for (Operation* user : pre.getUsers()) {
        if (user == g) continue;
        keepsInput = true;  // read again: the GEMM keeps the GELU input as its aux matrix
        auto q = dyn_cast<GeluGradOp>(user);
        if (!q || !isTanh(q.getApproximate()) || q.getInput() != pre || q.getType() != pre.getType()) continue;
        MatmulOp mm = dxGemm(q.getGrad(), q);
        auto bl = mm ? epilogueLayout(mm.getLhs(), mm.getRhs(), mm.getTransposeA(), mm.getTransposeB(),
                                      lt::EpilogueAux::GeluInput)
                     : std::nullopt;
        if (!mm || elementOf(mm.getLhs()) != elementOf(pre) || !linear->isBeforeInBlock(mm) || !fl || !bl ||
            !sameLayout(*fl, *bl)) {
          ok = false;
          break;
        }
        grads.emplace_back(q, mm);
      }
      if (!ok) continue;
      // Returned from the function: also kept.
      for (Operation* user : pre.getUsers())
        if (isa<func::ReturnOp>(user)) keepsInput = true;
      const bool bias = static_cast<bool>(linear.getBias());
      if (!keepsInput && !bias) continue;  // cuBLASLt has no GELU without aux or bias
      if (keepsInput && !fl) continue;
      if (!keepsInput && !epilogueLayout(linear.getInput(), linear.getWeight(), false, linear.getTransposeW(),
                                         lt::EpilogueAux::None))
        continue;
      const GemmEpilogueKind fk = keepsInput ? (bias ? GemmEpilogueKind::GeluAuxBias : GemmEpilogueKind::GeluAux)
                                             : GemmEpilogueKind::GeluBias;
      OpBuilder b(linear);
      SmallVector<Type> types = {g.getType()};
      if (keepsInput) types.push_back(pre.getType());
      auto fwd = createEpilogue(b, linear.getLoc(), fk, types, linear.getInput(), linear.getWeight(), linear.getBias(),
                                false, linear.getTransposeW());
      g.getResult().replaceAllUsesWith(fwd.getResult(0));
      g.erase();
      if (keepsInput) pre.replaceAllUsesWith(fwd.getResult(1));
      linear.erase();
      for (auto [q, mm] : grads) {
        Value dpre = q.getResult();
        // The bias gradient: a lone row sum of dpre whose readers all come after the dX GEMM.
        ReduceSumOp red;
        for (Operation* user : dpre.getUsers())
          if (auto r = dyn_cast<ReduceSumOp>(user);
              r && isRowReduction(r) && elementOf(r.getResult()) == elementOf(dpre) && usedOnlyAfter(r.getResult(), mm)) {
            red = r;
            break;
          }
        OpBuilder bb(mm);
        SmallVector<Type> dtypes = {dpre.getType()};
        if (red) dtypes.push_back(red.getType());
        auto bwd = createEpilogue(bb, mm.getLoc(), red ? GemmEpilogueKind::DGeluBgrad : GemmEpilogueKind::DGelu, dtypes,
                                  mm.getLhs(), mm.getRhs(), fwd.getResult(1), mm.getTransposeA(), mm.getTransposeB());
        dpre.replaceAllUsesWith(bwd.getResult(0));
        q.erase();
        mm.erase();
        if (red) {
          red.getResult().replaceAllUsesWith(bwd.getResult(1));
          red.erase();
        }
      }
    }
  }

  // A bias gradient left as its own row sum of an operand of a weight-gradient matmul
  // (x^T . dy): the GEMM sums it over K.
  void biasGrad() {
    SmallVector<ReduceSumOp> sums(func.getOps<ReduceSumOp>());
    for (ReduceSumOp red : sums) {
      Value v = red.getInput();
      if (!isRowReduction(red) || elementOf(red.getResult()) != elementOf(v)) continue;
      for (MatmulOp mm : llvm::make_early_inc_range(func.getOps<MatmulOp>())) {
        if (!mm.getTransposeA() || mm.getTransposeB() || !usedOnlyAfter(red.getResult(), mm) ||
            elementOf(mm.getResult()) != elementOf(v))
          continue;
        // bgrad_b sums rhs [K, N] over K; bgrad_a sums lhs [K, M].
        const bool sumsRhs = viewed(mm.getRhs()) == v, sumsLhs = !sumsRhs && viewed(mm.getLhs()) == v;
        if (!sumsRhs && !sumsLhs) continue;
        Value summed = sumsRhs ? mm.getRhs() : mm.getLhs();
        if (tensorType(summed).getRank() != 2 || tensorType(summed).getShape().back() != tensorType(v).getShape().back() ||
            !epilogueLayout(mm.getLhs(), mm.getRhs(), true, false, lt::EpilogueAux::None))
          continue;
        OpBuilder b(mm);
        auto op = createEpilogue(b, mm.getLoc(), sumsRhs ? GemmEpilogueKind::BgradB : GemmEpilogueKind::BgradA,
                                 {mm.getType(), red.getType()}, mm.getLhs(), mm.getRhs(), Value(), true, false);
        mm.getResult().replaceAllUsesWith(op.getResult(0));
        red.getResult().replaceAllUsesWith(op.getResult(1));
        mm.erase();
        red.erase();
        break;
      }
    }
  }
};

struct AmpSelectGemmEpiloguesPass
    : mlir::amp::impl::AmpSelectGemmEpiloguesPassBase<AmpSelectGemmEpiloguesPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal()) return;
    auto module = func->getParentOfType<ModuleOp>();
    auto attr = module ? module->getAttrOfType<StringAttr>(AmpDialect::kTargetAttr) : StringAttr();
    std::string error;
    auto target = ::amp::rt::Target::parse(attr ? attr.getValue().str() : "cpu", error);
    if (!target || !target->isCuda()) {
      func.emitError("amp-select-gemm-epilogues: cuBLASLt epilogues are for cuda targets; the module's target is '")
          << (attr ? attr.getValue() : "cpu") << "'";
      return signalPassFailure();
    }
    Selector s{func};
    s.relu();
    s.gelu();
    s.biasGrad();
  }
};

}  // namespace
