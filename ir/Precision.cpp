#include "ir/Precision.h"

#include "ir/AmpDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mlir::amp {

std::optional<Precision> getPrecision(Operation* op) {
  auto s = op->getAttrOfType<StringAttr>(AmpDialect::kPrecisionAttr);
  return s ? symbolizePrecision(s.getValue()) : std::nullopt;
}

void setPrecision(Operation* op, Precision p) {
  op->setAttr(AmpDialect::kPrecisionAttr, StringAttr::get(op->getContext(), stringifyPrecision(p)));
}

std::optional<Precision> precisionOfType(Type t) {
  if (t.isF32()) return Precision::F32;
  if (t.isF16()) return Precision::F16;
  if (t.isBF16()) return Precision::BF16;
  return std::nullopt;
}

Type typeOfPrecision(MLIRContext* ctx, Precision p) {
  Builder b(ctx);
  switch (p) {
    case Precision::F32: return b.getF32Type();
    case Precision::F16: return b.getF16Type();
    case Precision::BF16: return b.getBF16Type();
  }
  return b.getF32Type();
}

}  // namespace mlir::amp
