// Type inference and verifiers of the loss-scaling and optimizer ops (AmpTrainOps.td). The op
// classes themselves are generated into AmpOps.cpp; only their hand-written members live here.
#include <cmath>
#include <cstdint>

#include "ir/AmpOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace mlir::amp;

namespace {

RankedTensorType tensorOf(Value v) {
  return v ? dyn_cast<RankedTensorType>(v.getType()) : RankedTensorType();
}

// Every gradient in `grads` must be a ranked tensor; their types are copied to `out`.
LogicalResult copyTensorTypes(std::optional<Location> loc, StringRef op, ValueRange grads,
                              SmallVectorImpl<Type>& out) {
  for (auto [i, g] : llvm::enumerate(grads)) {
    if (!tensorOf(g))
      return emitOptionalError(loc, "'amp.", op, "' op gradient #", i, " must be a ranked tensor");
    out.push_back(g.getType());
  }
  return success();
}

LogicalResult needGrads(Operation* op, size_t n) {
  if (n == 0) return op->emitOpError("needs at least one gradient");
  return success();
}

}  // namespace

//===----------------------------------------------------------------------===//
// unscale_check
//===----------------------------------------------------------------------===//

LogicalResult UnscaleCheckOp::inferReturnTypes(MLIRContext* ctx, std::optional<Location> loc,
                                               Adaptor a, SmallVectorImpl<Type>& out) {
  if (failed(copyTensorTypes(loc, "unscale_check", a.getGrads(), out))) return failure();
  out.push_back(RankedTensorType::get({}, Float32Type::get(ctx)));
  return success();
}

LogicalResult UnscaleCheckOp::verify() { return needGrads(*this, getGrads().size()); }

//===----------------------------------------------------------------------===//
// global_norm, clip_grads
//===----------------------------------------------------------------------===//

LogicalResult GlobalNormOp::verify() { return needGrads(*this, getGrads().size()); }

LogicalResult ClipGradsOp::inferReturnTypes(MLIRContext*, std::optional<Location> loc, Adaptor a,
                                            SmallVectorImpl<Type>& out) {
  return copyTensorTypes(loc, "clip_grads", a.getGrads(), out);
}

LogicalResult ClipGradsOp::verify() {
  return needGrads(*this, getGrads().size());
}

//===----------------------------------------------------------------------===//
// grad_stats
//===----------------------------------------------------------------------===//

LogicalResult GradStatsOp::verify() { return needGrads(*this, getGrads().size()); }

//===----------------------------------------------------------------------===//
// lr_schedule
//===----------------------------------------------------------------------===//

LogicalResult LrScheduleOp::verify() {
  double base = getBaseLr().convertToDouble(), minLr = getMinLr().convertToDouble();
  int64_t warmup = static_cast<int64_t>(getWarmupSteps());
  int64_t total = static_cast<int64_t>(getTotalSteps());
  if (getKind() == LrScheduleKind::Cosine) {
    if (!(minLr >= 0.0 && minLr <= base))
      return emitOpError("min_lr must be in [0, base_lr = ") << base << "], got " << minLr;
    if (total <= warmup)
      return emitOpError("cosine schedule needs total_steps > warmup_steps, got total_steps = ")
             << total << ", warmup_steps = " << warmup;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// sgd_update, adam_update
//===----------------------------------------------------------------------===//

namespace {

// grad (any float type) and every state tensor have the param's shape; states are f32 (ODS).
LogicalResult verifyLikeParam(Operation* op, Value param,
                              std::initializer_list<std::pair<StringRef, Value>> others) {
  auto pt = cast<RankedTensorType>(param.getType());
  for (auto [name, v] : others) {
    if (!v) continue;
    auto t = cast<RankedTensorType>(v.getType());
    if (t.getShape() != pt.getShape())
      return op->emitOpError() << name << " must have the param's shape (" << pt << "), got " << t;
  }
  return success();
}

// The optional operands and attributes of a fused update (amp-fuse-grad-pipeline): a clip needs
// both the norm and max_norm; a weight copy is a 16-bit float type.
LogicalResult verifyFusedUpdate(Operation* op, Value norm, std::optional<APFloat> maxNorm,
                                std::optional<Type> copy) {
  if (static_cast<bool>(norm) != maxNorm.has_value())
    return op->emitOpError(norm ? "clips by a norm but has no max_norm" : "has a max_norm but no clip(norm) operand");
  if (copy && !copy->isBF16() && !copy->isF16())
    return op->emitOpError("weight_copy must be bf16 or f16, got ") << *copy;
  return success();
}

// The weight copy result's type: the param's shape in the copy's element type.
void addWeightCopyType(Value param, std::optional<Type> copy, SmallVectorImpl<Type>& out) {
  if (copy) out.push_back(cast<RankedTensorType>(param.getType()).clone(*copy));
}

}  // namespace

LogicalResult SgdUpdateOp::inferReturnTypes(MLIRContext*, std::optional<Location> loc, Adaptor a,
                                            SmallVectorImpl<Type>& out) {
  if (!tensorOf(a.getParam()))
    return emitOptionalError(loc, "'amp.sgd_update' op param must be a ranked tensor");
  out.push_back(a.getParam().getType());
  if (Value buf = a.getMomentumBuffer()) out.push_back(buf.getType());
  addWeightCopyType(a.getParam(), a.getWeightCopy(), out);
  return success();
}

LogicalResult SgdUpdateOp::verify() {
  if (failed(verifyLikeParam(*this, getParam(),
                             {{"grad", getGrad()}, {"momentum_buffer", getMomentumBuffer()}})))
    return failure();
  double momentum = getMomentum().convertToDouble();
  if (getNesterov() && momentum == 0.0)
    return emitOpError("nesterov requires momentum > 0 (PyTorch raises the same)");
  bool hasBuffer = static_cast<bool>(getMomentumBuffer());
  if (hasBuffer != (momentum != 0.0))
    return emitOpError(hasBuffer ? "has a momentum_buffer but momentum = 0"
                                 : "needs a momentum_buffer operand when momentum != 0");
  return verifyFusedUpdate(*this, getNorm(), getMaxNorm(), getWeightCopy());
}

LogicalResult AdamUpdateOp::inferReturnTypes(MLIRContext*, std::optional<Location> loc, Adaptor a,
                                             SmallVectorImpl<Type>& out) {
  if (!tensorOf(a.getParam()) || !tensorOf(a.getExpAvg()) || !tensorOf(a.getExpAvgSq()))
    return emitOptionalError(loc, "'amp.adam_update' op param and moments must be ranked tensors");
  out.push_back(a.getParam().getType());
  out.push_back(a.getExpAvg().getType());
  out.push_back(a.getExpAvgSq().getType());
  addWeightCopyType(a.getParam(), a.getWeightCopy(), out);
  return success();
}

LogicalResult AdamUpdateOp::verify() {
  if (failed(verifyLikeParam(*this, getParam(),
                             {{"grad", getGrad()}, {"exp_avg", getExpAvg()},
                              {"exp_avg_sq", getExpAvgSq()}})))
    return failure();
  return verifyFusedUpdate(*this, getNorm(), getMaxNorm(), getWeightCopy());
}

namespace mlir::amp {

// adam_update's moment types: the param's (f32) unless `moments(bf16)` follows the types.
ParseResult parseMomentTypes(OpAsmParser& parser, Type paramType, Type& expAvg, Type& expAvgSq) {
  expAvg = expAvgSq = paramType;
  if (failed(parser.parseOptionalKeyword("moments"))) return success();
  Type element;
  if (parser.parseLParen() || parser.parseType(element) || parser.parseRParen()) return failure();
  auto param = dyn_cast<RankedTensorType>(paramType);
  if (!param) return parser.emitError(parser.getCurrentLocation(), "param must be a ranked tensor");
  expAvg = expAvgSq = param.clone(element);
  return success();
}

void printMomentTypes(OpAsmPrinter& printer, Operation*, Type paramType, Type expAvg, Type) {
  auto moments = cast<RankedTensorType>(expAvg);
  if (moments == paramType) return;
  printer << "moments(" << moments.getElementType() << ")";
}

}  // namespace mlir::amp
