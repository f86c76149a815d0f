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
// update_scale
//===----------------------------------------------------------------------===//

LogicalResult UpdateScaleOp::verify() {
  double growth = getGrowthFactor().convertToDouble();
  double backoff = getBackoffFactor().convertToDouble();
  int64_t interval = static_cast<int64_t>(getGrowthInterval());
  if (!(growth > 1.0) || !std::isfinite(growth))
    return emitOpError("growth_factor must be finite and > 1.0 (GradScaler asserts it), got ") << growth;
  if (!(backoff > 0.0 && backoff < 1.0))
    return emitOpError("backoff_factor must be in (0, 1) (GradScaler asserts < 1.0), got ") << backoff;
  if (interval < 1 || interval > INT32_MAX)
    return emitOpError("growth_interval must be in [1, 2^31 - 1] (the growth tracker is i32), got ")
           << interval;
  return success();
}

//===----------------------------------------------------------------------===//
// global_norm, clip_grads
//===----------------------------------------------------------------------===//

LogicalResult GlobalNormOp::verify() { return needGrads(*this, getGrads().size()); }

LogicalResult ClipGradsOp::inferReturnTypes(MLIRContext*, std::optional<Location> loc, Adaptor a,
                                            SmallVectorImpl<Type>& out) {
  return copyTensorTypes(loc, "clip_grads", a.getGrads(), out);
}

LogicalResult ClipGradsOp::verify() {
  if (failed(needGrads(*this, getGrads().size()))) return failure();
  double maxNorm = getMaxNorm().convertToDouble();
  if (!(maxNorm > 0.0) || !std::isfinite(maxNorm))
    return emitOpError("max_norm must be finite and > 0, got ") << maxNorm;
  return success();
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
  if (!(base >= 0.0) || !std::isfinite(base))
    return emitOpError("base_lr must be finite and >= 0, got ") << base;
  if (warmup < 0) return emitOpError("warmup_steps must be >= 0, got ") << warmup;
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
  if (maxNorm && (!(maxNorm->convertToDouble() > 0.0) || !std::isfinite(maxNorm->convertToDouble())))
    return op->emitOpError("max_norm must be finite and > 0, got ") << maxNorm->convertToDouble();
  if (copy && !copy->isBF16() && !copy->isF16())
    return op->emitOpError("weight_copy must be bf16 or f16, got ") << *copy;
  return success();
}

// The weight copy result's type: the param's shape in the copy's element type.
void addWeightCopyType(Value param, std::optional<Type> copy, SmallVectorImpl<Type>& out) {
  if (copy) out.push_back(cast<RankedTensorType>(param.getType()).clone(*copy));
}

LogicalResult checkUnit(Operation* op, StringRef name, double v, bool allowOne = false) {
  if (!(v >= 0.0 && (allowOne ? v <= 1.0 : v < 1.0)))
    return op->emitOpError() << name << " must be in [0, 1" << (allowOne ? "]" : ")") << ", got " << v;
  return success();
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
  double wd = getWeightDecay().convertToDouble();
  if (!(momentum >= 0.0) || !std::isfinite(momentum))
    return emitOpError("momentum must be finite and >= 0, got ") << momentum;
  if (!(wd >= 0.0) || !std::isfinite(wd))
    return emitOpError("weight_decay must be finite and >= 0, got ") << wd;
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
  if (failed(checkUnit(*this, "beta1", getBeta1().convertToDouble())) ||
      failed(checkUnit(*this, "beta2", getBeta2().convertToDouble())))
    return failure();
  double eps = getEps().convertToDouble(), wd = getWeightDecay().convertToDouble();
  if (!(eps > 0.0) || !std::isfinite(eps)) return emitOpError("eps must be finite and > 0, got ") << eps;
  if (!(wd >= 0.0) || !std::isfinite(wd))
    return emitOpError("weight_decay must be finite and >= 0, got ") << wd;
  return verifyFusedUpdate(*this, getNorm(), getMaxNorm(), getWeightCopy());
}
