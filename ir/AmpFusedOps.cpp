// Verifiers of amp.fused and amp.gemm_epilogue (ir/AmpFusedOps.td).
#include "ir/AmpOps.h"
#include "ir/ShapeRules.h"

using namespace mlir;
using namespace mlir::amp;

bool mlir::amp::isFusibleElementwise(Operation* op) {
  return isa<NegOp, AbsOp, ExpOp, LogOp, SqrtOp, RsqrtOp, ReciprocalOp, TanhOp, ErfOp, SigmoidOp, ReluOp, SiluOp, GeluOp,
             AddOp, SubOp, MulOp, DivOp, MaximumOp, MinimumOp, PowOp, CompareOp, SelectOp, CastOp>(op);
}

bool mlir::amp::isRowReduction(Operation* op) {
  auto reduce = dyn_cast<ReduceSumOp>(op);
  if (!reduce || reduce.getKeepdim()) return false;
  auto type = dyn_cast<RankedTensorType>(reduce.getInput().getType());
  if (!type || type.getRank() < 2) return false;
  ArrayRef<int64_t> dims = reduce.getDims();
  if (static_cast<int64_t>(dims.size()) != type.getRank() - 1) return false;
  for (size_t d = 0; d < dims.size(); ++d)
    if (dims[d] != static_cast<int64_t>(d)) return false;
  return true;
}

LogicalResult FusedOp::verify() {
  Block& body = getBody().front();  // the region has one block (ODS checked)
  // The op verifier runs before the block's, which would report a missing terminator: an empty
  // block must not reach getTerminator().
  if (body.empty()) return emitOpError("body must end with amp.yield");
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("body has ") << body.getNumArguments() << " arguments for " << getInputs().size()
                                    << " inputs";
  for (auto [arg, input] : llvm::zip(body.getArguments(), getInputs()))
    if (arg.getType() != input.getType())
      return emitOpError("body argument type ") << arg.getType() << " differs from its input " << input.getType();
  auto yield = dyn_cast<YieldOp>(body.back());
  if (!yield) return emitOpError("body must end with amp.yield");
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("amp.yield types must be the region's result types");
  for (Operation& op : body.without_terminator()) {
    if (isFusibleElementwise(&op)) continue;
    // A row reduction ends the region: only the yield may read it.
    if (isRowReduction(&op)) {
      for (Operation* user : op.getUsers())
        if (!isa<YieldOp>(user)) return op.emitOpError("in an amp.fused region may only be yielded");
      continue;
    }
    return op.emitOpError("cannot be part of an amp.fused region (only elementwise math, compare, select, "
                          "cast and, at its end, a reduce_sum over all but the last dim can)");
  }
  return success();
}

namespace {

std::string shapeText(ArrayRef<int64_t> s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// What each kind takes and gives besides lhs and rhs (the table in AmpFusedOps.td).
enum class Extra { None, Bias, Mask, GeluInput };
struct KindShape {
  Extra input = Extra::None;    // the third operand
  Extra result = Extra::None;   // the second result (Mask or GeluInput), when not None
  bool biasGrad = false;        // a last result db
  bool forward = false;         // amp.linear's layer: lhs never transposed, rhs rank 2
};
KindShape kindShape(GemmEpilogueKind k) {
  switch (k) {
    case GemmEpilogueKind::ReluAux: return {Extra::None, Extra::Mask, false, true};
    case GemmEpilogueKind::ReluAuxBias: return {Extra::Bias, Extra::Mask, false, true};
    case GemmEpilogueKind::GeluAux: return {Extra::None, Extra::GeluInput, false, true};
    case GemmEpilogueKind::GeluAuxBias: return {Extra::Bias, Extra::GeluInput, false, true};
    case GemmEpilogueKind::GeluBias: return {Extra::Bias, Extra::None, false, true};
    case GemmEpilogueKind::DRelu: return {Extra::Mask, Extra::None, false, false};
    case GemmEpilogueKind::DReluBgrad: return {Extra::Mask, Extra::None, true, false};
    case GemmEpilogueKind::DGelu: return {Extra::GeluInput, Extra::None, false, false};
    case GemmEpilogueKind::DGeluBgrad: return {Extra::GeluInput, Extra::None, true, false};
    case GemmEpilogueKind::BgradA:
    case GemmEpilogueKind::BgradB: return {Extra::None, Extra::None, true, false};
  }
  return {};
}

}  // namespace

LogicalResult GemmEpilogueOp::verify() {
  const StringRef kind = stringifyGemmEpilogueKind(getKind());
  const KindShape k = kindShape(getKind());
  auto lt = cast<RankedTensorType>(getLhs().getType()), rt = cast<RankedTensorType>(getRhs().getType());
  const Type e = lt.getElementType();
  if (rt.getElementType() != e)
    return emitOpError("operands must have one element type, got ") << e << " and " << rt.getElementType();
  if (lt.getRank() < 2 || rt.getRank() < 2)
    return emitOpError("operands must have rank >= 2, got ") << lt << " and " << rt;
  const bool ta = getTransposeA(), tb = getTransposeB();
  if (k.forward && (ta || rt.getRank() != 2))
    return emitOpError(kind) << " is a linear layer: lhs not transposed, rhs a rank-2 weight";
  ArrayRef<int64_t> ls = lt.getShape(), rs = rt.getShape();
  const int64_t m = ta ? ls.back() : ls[ls.size() - 2], kk = ta ? ls[ls.size() - 2] : ls.back();
  const int64_t k2 = tb ? rs.back() : rs[rs.size() - 2], n = tb ? rs[rs.size() - 2] : rs.back();
  if (kk != k2)
    return emitOpError("contraction dimensions differ: lhs ") << shapeText(ls) << " gives K = " << kk << ", rhs "
                                                               << shapeText(rs) << " gives K = " << k2;
  auto batch = broadcastShapes(ls.drop_back(2), rs.drop_back(2));
  if (!batch) return emitOpError("batch dimensions of ") << shapeText(ls) << " and " << shapeText(rs) << " do not broadcast";
  SmallVector<int64_t> dShape(*batch);
  dShape.push_back(m);
  dShape.push_back(n);
  const auto dType = RankedTensorType::get(dShape, e);
  const auto maskType = RankedTensorType::get(dShape, IntegerType::get(getContext(), 1));

  // Operands: the kind's third one, typed.
  const Value input = getEpilogueInput();
  if ((k.input != Extra::None) != static_cast<bool>(input))
    return emitOpError(kind) << (input ? " takes no third operand" : " needs its third operand");
  if (input) {
    Type want = k.input == Extra::Bias   ? Type(RankedTensorType::get({n}, e))
                : k.input == Extra::Mask ? Type(maskType)
                                         : Type(dType);
    if (input.getType() != want)
      return emitOpError(kind) << "'s third operand ("
                               << (k.input == Extra::Bias ? "the bias" : k.input == Extra::Mask ? "the ReLU mask" : "the GELU input")
                               << ") must be " << want << ", got " << input.getType();
  }
  // Results: d, then the kept mask or GELU input, then the bias gradient.
  SmallVector<Type> want = {dType};
  if (k.result == Extra::Mask) want.push_back(maskType);
  if (k.result == Extra::GeluInput) want.push_back(dType);
  if (k.biasGrad) {
    int64_t length = n;
    if (getKind() == GemmEpilogueKind::BgradA) {
      if (!ta || lt.getRank() != 2) return emitOpError("bgrad_a sums lhs over K: lhs must be a transposed [K, M] matrix");
      length = m;
    } else if (getKind() == GemmEpilogueKind::BgradB) {
      if (tb || rt.getRank() != 2) return emitOpError("bgrad_b sums rhs over K: rhs must be a [K, N] matrix, not transposed");
    }
    want.push_back(RankedTensorType::get({length}, e));
  }
  if (getResultTypes() != TypeRange(want)) {
    std::string text;
    llvm::raw_string_ostream os(text);
    llvm::interleaveComma(want, os);
    return emitOpError(kind) << " must give (" << text << ")";
  }
  return success();
}
