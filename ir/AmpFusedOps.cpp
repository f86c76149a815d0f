// Verifier of amp.fused (ir/AmpFusedOps.td).
#include "ir/AmpOps.h"

using namespace mlir;
using namespace mlir::amp;

bool mlir::amp::isFusibleElementwise(Operation* op) {
  return isa<NegOp, AbsOp, ExpOp, LogOp, SqrtOp, RsqrtOp, ReciprocalOp, TanhOp, SigmoidOp, ReluOp, SiluOp, GeluOp,
             AddOp, SubOp, MulOp, DivOp, MaximumOp, MinimumOp, PowOp, CompareOp, SelectOp, CastOp>(op);
}

LogicalResult FusedOp::verify() {
  Block& body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("body has ") << body.getNumArguments() << " arguments for " << getInputs().size()
                                    << " inputs";
  for (auto [arg, input] : llvm::zip(body.getArguments(), getInputs()))
    if (arg.getType() != input.getType())
      return emitOpError("body argument type ") << arg.getType() << " differs from its input " << input.getType();
  auto yield = dyn_cast<YieldOp>(body.getTerminator());
  if (!yield) return emitOpError("body must end with amp.yield");
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("amp.yield types must be the region's result types");
  for (Operation& op : body.without_terminator())
    if (!isFusibleElementwise(&op))
      return op.emitOpError("cannot be part of an amp.fused region (only elementwise math, compare, select "
                            "and cast can)");
  return success();
}
