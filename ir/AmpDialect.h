// The amp dialect: registration entry points and its attributes.
#ifndef AMP_IR_AMPDIALECT_H
#define AMP_IR_AMPDIALECT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"

// The attribute classes come first: the dialect's discardable-attribute helpers name them.
#include "ir/AmpEnums.h"
#define GET_ATTRDEF_CLASSES
#include "ir/AmpAttrs.h.inc"

#include "ir/AmpDialect.h.inc"

namespace mlir::amp {
inline const ::llvm::StringLiteral AmpDialect::kRoleAttr = RoleAttrHelper::getNameStr();
inline const ::llvm::StringLiteral AmpDialect::kNameAttr = NameAttrHelper::getNameStr();
inline const ::llvm::StringLiteral AmpDialect::kInitAttr = InitAttrHelper::getNameStr();
inline const ::llvm::StringLiteral AmpDialect::kPrecisionAttr = PrecisionAttrHelper::getNameStr();
inline const ::llvm::StringLiteral AmpDialect::kReasonAttr = ReasonAttrHelper::getNameStr();
inline const ::llvm::StringLiteral AmpDialect::kTargetAttr = TargetAttrHelper::getNameStr();
inline const ::llvm::StringLiteral AmpDialect::kAutocastAttr = AutocastAttrHelper::getNameStr();
inline const ::llvm::StringLiteral AmpDialect::kEntryAttr = EntryAttrHelper::getNameStr();
inline const ::llvm::StringLiteral AmpDialect::kGradOfAttr = GradOfAttrHelper::getNameStr();
inline const ::llvm::StringLiteral AmpDialect::kUpdatesAttr = UpdatesAttrHelper::getNameStr();
inline const ::llvm::StringLiteral AmpDialect::kDataParallelAttr = DataParallelAttrHelper::getNameStr();
inline const ::llvm::StringLiteral AmpDialect::kShardOfAttr = ShardOfAttrHelper::getNameStr();
inline const ::llvm::StringLiteral AmpDialect::kAutocastInsertedAttr =
    AutocastInsertedAttrHelper::getNameStr();
inline const ::llvm::StringLiteral AmpDialect::kOriginAttr = OriginAttrHelper::getNameStr();
inline const ::llvm::StringLiteral AmpDialect::kLossScalingAttr = LossScalingAttrHelper::getNameStr();
inline const ::llvm::StringLiteral AmpDialect::kOptimizerAttr = OptimizerAttrHelper::getNameStr();
}  // namespace mlir::amp

#endif  // AMP_IR_AMPDIALECT_H
