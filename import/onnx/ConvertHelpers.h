// What the op converters (ConvertOps.cpp and its siblings) share: building an amp op with its
// inferred type or a located refusal, attributes, float inputs, reshapes and scalar constants.
#ifndef AMP_IMPORT_ONNX_CONVERTHELPERS_H
#define AMP_IMPORT_ONNX_CONVERTHELPERS_H

#include <vector>

#include "import/onnx/GraphTranslator.h"
#include "ir/AmpOps.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mlir::amp::onnx_import {

using Shape = std::vector<int64_t>;

// Builds OpT with its inferred result type, refusing (instead of aborting, as the generated
// inferring builder would) when inference rejects the operands.
template <typename OpT>
FailureOr<Value> build(GraphTranslator& t, ValueRange operands, llvm::ArrayRef<NamedAttribute> attrs = {}) {
  OperationState state(t.loc(), OpT::getOperationName());
  state.addOperands(operands);
  state.addAttributes(attrs);
  llvm::SmallVector<Type, 1> types;
  if (failed(OpT::inferReturnTypes(t.context(), state.location, operands, state.attributes.getDictionary(t.context()),
                                   state.getRawProperties(), state.regions, types)))
    return t.refuse() << "the operands do not fit " << OpT::getOperationName(), failure();
  return t.builder().create<OpT>(t.loc(), types, operands, attrs)->getResult(0);
}

inline NamedAttribute named(GraphTranslator& t, llvm::StringRef name, Attribute value) {
  return t.builder().getNamedAttr(name, value);
}
inline NamedAttribute i64Array(GraphTranslator& t, llvm::StringRef name, llvm::ArrayRef<int64_t> v) {
  return named(t, name, t.builder().getDenseI64ArrayAttr(v));
}
inline NamedAttribute i64(GraphTranslator& t, llvm::StringRef name, int64_t v) {
  return named(t, name, t.builder().getI64IntegerAttr(v));
}

// A float (f32, f16, bf16) input; integer data has no amp computation.
inline FailureOr<Value> floatInput(GraphTranslator& t, unsigned i) {
  auto v = t.input(i);
  if (failed(v)) return failure();
  auto type = cast<RankedTensorType>(v->getType());
  if (!isa<FloatType>(type.getElementType()))
    return t.refuse() << "input " << i << " is " << type << "; this op is supported on float tensors only", failure();
  return v;
}

inline LogicalResult bind(GraphTranslator& t, FailureOr<Value> v) { return failed(v) ? failure() : t.setOutput(0, *v); }

inline Value reshape(GraphTranslator& t, Value v, llvm::ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getShape() == shape) return v;
  return t.create<ReshapeOp>(RankedTensorType::get(shape, type.getElementType()), v);
}

inline Value scalarConstant(GraphTranslator& t, double value, Type element) {
  HostTensor c;
  c.dataType = element.isF16() ? onnx::TensorProto::FLOAT16
               : element.isBF16() ? onnx::TensorProto::BFLOAT16
                                  : onnx::TensorProto::FLOAT;
  c.floats = {value};
  return t.constant(c);
}

}  // namespace mlir::amp::onnx_import

#endif  // AMP_IMPORT_ONNX_CONVERTHELPERS_H
