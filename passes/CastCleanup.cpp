// amp-cast-cleanup: cast canonicalization (identity casts, exact chains, casts of constants)
// followed by CSE, so every (value, type) pair is cast at most once.
#include "ir/AmpOps.h"
#include "llvm/ADT/APFloat.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/CSE.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "passes/Passes.h"

namespace mlir::amp {
#define GEN_PASS_DEF_AMPCASTCLEANUPPASS
#include "passes/Passes.h.inc"

// Exported for pipelines that want the patterns without the pass.
void populateCastCleanupPatterns(RewritePatternSet& patterns);
}  // namespace mlir::amp

using namespace mlir;
using namespace mlir::amp;

namespace {


// True when every value of `from` is exactly representable in `to` (a widening conversion).
bool isExactConversion(Type from, Type to) {
  auto f = dyn_cast<FloatType>(from), t = dyn_cast<FloatType>(to);
  if (!f || !t) return false;
  if (f == t) return true;
  const llvm::fltSemantics &a = f.getFloatSemantics(), &b = t.getFloatSemantics();
  using B = llvm::APFloatBase;
  int aPrec = B::semanticsPrecision(a), bPrec = B::semanticsPrecision(b);
  int aMax = B::semanticsMaxExponent(a), bMax = B::semanticsMaxExponent(b);
  // Smallest subnormal exponent: minExponent - (precision - 1).
  int aMin = B::semanticsMinExponent(a) - (aPrec - 1);
  int bMin = B::semanticsMinExponent(b) - (bPrec - 1);
  // Special values: a type with infinities needs a target with infinities.
  bool aInf = llvm::APFloat::getInf(a).isInfinity(), bInf = llvm::APFloat::getInf(b).isInfinity();
  return bPrec >= aPrec && bMax >= aMax && bMin <= aMin && (!aInf || bInf);
}

Type elementOf(Type t) { return cast<ShapedType>(t).getElementType(); }

// cast(cast(x: A -> B) -> C) => cast(x: A -> C) when A -> B is exact: both round the same exact
// value once. C == A leaves x itself (f16 -> f32 -> f16). f32 -> f16 -> f32 is a rounding and is
// never folded.
struct FoldExactCastChain : OpRewritePattern<CastOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CastOp op, PatternRewriter& rewriter) const override {
    auto inner = op.getInput().getDefiningOp<CastOp>();
    if (!inner) return failure();
    Type a = elementOf(inner.getInput().getType()), b = elementOf(inner.getType());
    if (!isExactConversion(a, b)) return failure();
    if (inner.getInput().getType() == op.getType()) {
      rewriter.replaceOp(op, inner.getInput());
      return success();
    }
    auto folded = rewriter.create<CastOp>(op.getLoc(), op.getType(), inner.getInput());
    if (op->hasAttr(AmpDialect::kAutocastInsertedAttr)) folded->setAttr(AmpDialect::kAutocastInsertedAttr, rewriter.getUnitAttr());
    rewriter.replaceOp(op, folded.getResult());
    return success();
  }
};

// cast(constant) => constant of the cast's type, each element rounded to nearest even (f16
// overflow gives inf, as the cast would at run time).
struct FoldCastOfConstant : OpRewritePattern<CastOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CastOp op, PatternRewriter& rewriter) const override {
    auto cst = op.getInput().getDefiningOp<ConstantOp>();
    if (!cst) return failure();
    auto dense = dyn_cast<DenseFPElementsAttr>(cst.getValue());
    auto to = dyn_cast<FloatType>(elementOf(op.getType()));
    if (!dense || !to) return failure();
    auto type = cast<ShapedType>(op.getType());
    const llvm::fltSemantics& sem = to.getFloatSemantics();
    auto convert = [&](llvm::APFloat v) {
      bool lost = false;
      v.convert(sem, llvm::APFloat::rmNearestTiesToEven, &lost);
      return v;
    };
    DenseElementsAttr result;
    if (dense.isSplat()) {
      result = DenseElementsAttr::get(type, convert(dense.getSplatValue<llvm::APFloat>()));
    } else {
      SmallVector<llvm::APFloat> values;
      for (llvm::APFloat v : dense.getValues<llvm::APFloat>()) values.push_back(convert(v));
      result = DenseElementsAttr::get(type, values);
    }
    rewriter.replaceOpWithNewOp<ConstantOp>(op, op.getType(), result);
    return success();
  }
};

struct AmpCastCleanupPass : mlir::amp::impl::AmpCastCleanupPassBase<AmpCastCleanupPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateCastCleanupPatterns(patterns);
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    IRRewriter rewriter(&getContext());
    DominanceInfo dom(getOperation());
    eliminateCommonSubExpressions(rewriter, dom, getOperation());
  }
};

}  // namespace

void mlir::amp::populateCastCleanupPatterns(RewritePatternSet& patterns) {
  patterns.add<FoldExactCastChain, FoldCastOfConstant>(patterns.getContext());
  // Identity casts fold through CastOp::fold, which the greedy driver applies.
}
