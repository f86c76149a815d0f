// amp.precision, typed: the attribute is a string in the IR ({amp.precision = "bf16"}, what users
// write as a per-op override), read and written here as the Precision enum (ir/AmpEnums.td).
#ifndef AMP_IR_PRECISION_H
#define AMP_IR_PRECISION_H

#include <optional>

#include "ir/AmpEnums.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/Types.h"

namespace mlir::amp {

// The op's (or module's) amp.precision; nullopt when absent.
std::optional<Precision> getPrecision(Operation* op);
void setPrecision(Operation* op, Precision p);
// The precision of a float element type (f32, f16, bf16), or nullopt for any other type.
std::optional<Precision> precisionOfType(Type elementType);
// The element type a precision computes in.
Type typeOfPrecision(MLIRContext* ctx, Precision p);

}  // namespace mlir::amp

#endif  // AMP_IR_PRECISION_H
