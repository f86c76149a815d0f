// Verifier of amp.fused (ir/AmpFusedOps.td).
#include "ir/AmpOps.h"

using namespace mlir;
using namespace mlir::amp;

bool mlir::amp::isFusibleElementwise(Operation* op) {
  return isa<NegOp, AbsOp, ExpOp, LogOp, SqrtOp, RsqrtOp, ReciprocalOp, TanhOp, SigmoidOp, ReluOp, SiluOp, GeluOp,
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
