// Type inference and the verifiers of the collectives (AmpCollectiveOps.td).
#include <limits>

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

namespace {

// The ZeRO-1 chunk of a tensor over `ranks` ranks: ceil(numel / ranks) elements, 1-D. The
// ceiling is taken without `n + ranks - 1`, which overflows for ranks near 2^63 (found by
// fuzz/pipeline.cpp); the element count saturates instead of overflowing (the model verifier
// refuses such tensors later, located).
RankedTensorType chunkType(Type whole, int64_t ranks) {
  auto t = cast<RankedTensorType>(whole);
  int64_t n = 1;
  for (int64_t d : t.getShape())
    if (__builtin_mul_overflow(n, d, &n)) n = std::numeric_limits<int64_t>::max();
  const int64_t chunk = n <= 0 ? 0 : ranks > 0 ? (n - 1) / ranks + 1 : n;
  return RankedTensorType::get({chunk}, t.getElementType());
}

}  // namespace

LogicalResult ReduceScatterOp::inferReturnTypes(MLIRContext*, std::optional<Location>, Adaptor a,
                                                SmallVectorImpl<Type>& out) {
  for (Value v : a.getValues()) out.push_back(chunkType(v.getType(), a.getRanks()));
  return success();
}

LogicalResult ReduceScatterOp::verify() {
  if (getValues().empty()) return emitOpError("needs at least one tensor");
  if (getKind() == ReduceKind::Max) return emitOpError("takes sum or mean, not max");
  Type first = cast<RankedTensorType>(getValues()[0].getType()).getElementType();
  for (auto [i, v] : llvm::enumerate(getValues())) {
    Type e = cast<RankedTensorType>(v.getType()).getElementType();
    if (e != first)
      return emitOpError("operand #") << i << " has element type " << e << ", operand #0 " << first
                                      << ": one reduce-scatter is one collective over one element type";
    if (!isa<Float32Type, Float16Type, BFloat16Type>(e))
      return emitOpError("operand #") << i << " has element type " << e << ": sum and mean take f32, f16 or bf16";
  }
  return success();
}

LogicalResult AllGatherOp::verify() {
  if (getValues().empty()) return emitOpError("needs at least one tensor");
  if (getValues().size() != getGathered().size())
    return emitOpError("has ") << getValues().size() << " chunk(s) but " << getGathered().size() << " result(s)";
  for (auto [i, pair] : llvm::enumerate(llvm::zip(getValues(), getGathered()))) {
    auto [chunk, whole] = pair;
    RankedTensorType expected = chunkType(whole.getType(), getRanks());
    if (chunk.getType() != expected)
      return emitOpError("operand #") << i << " is " << chunk.getType() << ", but the chunk of result #" << i << " ("
                                      << whole.getType() << ") over " << getRanks() << " ranks is " << expected;
  }
  return success();
}

LogicalResult RankChunkOp::inferReturnTypes(MLIRContext*, std::optional<Location>, Adaptor a,
                                            SmallVectorImpl<Type>& out) {
  out.push_back(chunkType(a.getValue().getType(), a.getRanks()));
  return success();
}
