// The amp dialect: registration entry points and its attributes.
#ifndef AMP_IR_AMPDIALECT_H
#define AMP_IR_AMPDIALECT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"

#include "ir/AmpDialect.h.inc"
#include "ir/AmpEnums.h"

#define GET_ATTRDEF_CLASSES
#include "ir/AmpAttrs.h.inc"

#endif  // AMP_IR_AMPDIALECT_H
