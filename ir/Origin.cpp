#include "ir/Origin.h"

#include "ir/AmpDialect.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace mlir::amp {

std::optional<Origin> getOrigin(Operation* op) {
  auto s = op->getAttrOfType<StringAttr>(AmpDialect::kOriginAttr);
  return s ? symbolizeOrigin(s.getValue()) : std::nullopt;
}

void setOrigin(Operation* op, Origin origin) {
  op->setAttr(AmpDialect::kOriginAttr, StringAttr::get(op->getContext(), stringifyOrigin(origin)));
}

}  // namespace mlir::amp
