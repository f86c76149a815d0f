// Type inference and the verifier of amp.all_reduce (AmpCollectiveOps.td).
#include "ir/AmpOps.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::amp;

LogicalResult AllReduceOp::inferReturnTypes(MLIRContext*, std::optional<Location>, Adaptor a,
                                            SmallVectorImpl<Type>& out) {
  for (Value v : a.getValues()) out.push_back(v.getType());
  return success();
}

LogicalResult AllReduceOp::verify() {
  if (getValues().empty()) return emitOpError("needs at least one tensor");
  const bool max = getKind() == ReduceKind::Max;
  Type first = cast<RankedTensorType>(getValues()[0].getType()).getElementType();
  for (auto [i, v] : llvm::enumerate(getValues())) {
    Type e = cast<RankedTensorType>(v.getType()).getElementType();
    if (e != first)
      return emitOpError("operand #") << i << " has element type " << e << ", operand #0 " << first
                                      << ": one all-reduce is one collective over one element type";
    bool ok = max ? (e.isF32() || e.isInteger(32) || e.isInteger(64))
                  : isa<Float32Type, Float16Type, BFloat16Type>(e);
    if (!ok)
      return emitOpError("operand #") << i << " has element type " << e << ": "
                                      << (max ? "max takes f32, i32 or i64" : "sum and mean take f32, f16 or bf16");
  }
  return success();
}
