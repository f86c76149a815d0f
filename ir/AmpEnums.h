// The amp dialect's enums (generated from AmpEnums.td) without the rest of the dialect: code
// that reads the execution plan's spellings (the kernel emitter) needs only these.
#ifndef AMP_IR_AMPENUMS_H
#define AMP_IR_AMPENUMS_H

#include <cstdint>
#include <optional>

#include "llvm/ADT/DenseMapInfo.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"
#include "mlir/Support/LLVM.h"
#include "mlir/Support/LogicalResult.h"

#include "ir/AmpEnums.h.inc"

#endif  // AMP_IR_AMPENUMS_H
