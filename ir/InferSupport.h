// Reading inherent attributes during type inference (AmpOps.cpp, AmpGradOps.cpp).
#ifndef AMP_IR_INFERSUPPORT_H
#define AMP_IR_INFERSUPPORT_H

#include "llvm/ADT/StringRef.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"

namespace mlir::amp {

// The custom syntax lets any inherent attribute be written in the attr-dict (the printer puts
// conv2d's stride/padding/dilation/groups, pool padding and cross_entropy's attributes there).
// When the parser infers result types, such attributes are still in the attribute dictionary and
// not yet in the properties, and default-valued ones left out are not populated yet. So inference
// reads the property, then the dictionary, then `fallback` (an ODS default, odsDefaults below).
template <typename AttrT, typename AdaptorT>
AttrT inherent(AdaptorT& a, AttrT fromProperties, llvm::StringRef name, AttrT fallback = {}) {
  if (fromProperties) return fromProperties;
  DictionaryAttr dict = a.getAttributes();
  auto written = dict ? llvm::dyn_cast_or_null<AttrT>(dict.get(name)) : AttrT();
  return written ? written : fallback;
}

// OpT's properties holding only the defaults ODS declares: what the op gets for an attribute left
// out, without restating the values here.
template <typename OpT>
typename OpT::Properties odsDefaults(MLIRContext* ctx) {
  typename OpT::Properties properties;
  OpT::populateDefaultProperties(OperationName(OpT::getOperationName(), ctx), properties);
  return properties;
}

}  // namespace mlir::amp

#endif  // AMP_IR_INFERSUPPORT_H
