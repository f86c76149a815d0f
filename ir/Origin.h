// amp.origin, typed: the training pass that inserted an op. The IR spells it as a string
// ({amp.origin = "optimizer"}); C++ reads and writes it as the Origin enum (ir/AmpEnums.td).
// It carries the meaning that later stages need, so that a plan does not depend on locations:
// stripping debug information changes no plan.
#ifndef AMP_IR_ORIGIN_H
#define AMP_IR_ORIGIN_H

#include <optional>

#include "ir/AmpEnums.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Operation.h"

namespace mlir::amp {

// The op's amp.origin; nullopt for the model's own ops and those of autodiff and autocast.
std::optional<Origin> getOrigin(Operation* op);
void setOrigin(Operation* op, Origin origin);

// Stamps every op a builder inserts (clones' nested ops included) with one origin. A pass attaches
// it to each builder it creates ops with: `OriginStamp stamp(Origin::Optimizer); b.setListener(&stamp);`
class OriginStamp : public OpBuilder::Listener {
 public:
  explicit OriginStamp(Origin origin) : origin_(origin) {}
  void notifyOperationInserted(Operation* op, OpBuilder::InsertPoint) override { setOrigin(op, origin_); }

 private:
  Origin origin_;
};

}  // namespace mlir::amp

#endif  // AMP_IR_ORIGIN_H
