// The translation of one ONNX graph into one amp model function, node by node. It owns the map
// from ONNX value names to what they are at import time (an SSA value, or a constant known on the
// host), and offers the op converters (ConvertOps.cpp, FoldShapeOps.cpp) what every one needs:
// operands, attributes, located refusals, and results checked against ONNX's inferred types.
#ifndef AMP_IMPORT_ONNX_GRAPHTRANSLATOR_H
#define AMP_IMPORT_ONNX_GRAPHTRANSLATOR_H

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "import/onnx/HostTensor.h"
#include "import/onnx/OnnxImport.h"
#include "llvm/ADT/StringMap.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "onnx/onnx_pb.h"

namespace mlir::amp::onnx_import {

class GraphTranslator {
 public:
  GraphTranslator(const onnx::ModelProto& model, llvm::StringRef filename, MLIRContext* context);

  std::optional<ImportedModel> translate(const ImportOptions& options);

  // --- For the converters of the current node ---------------------------------------------
  MLIRContext* context() { return context_; }
  OpBuilder& builder() { return builder_; }
  const onnx::NodeProto& node() const { return *node_; }
  int nodeIndex() const { return nodeIndex_; }
  Location loc() const { return loc_; }
  // "node 'NAME' (op_type OP, domain D)": every refusal starts with it.
  std::string nodeDescription() const;
  // A located error about the current node; the caller appends what is wrong and what works.
  InFlightDiagnostic refuse();

  unsigned numInputs() const { return node_->input_size(); }
  // Optional inputs are absent when missing or named "".
  bool hasInput(unsigned i) const { return i < numInputs() && !node_->input(i).empty(); }
  // The input's value when it is known at import time, else null.
  const HostTensor* constantInput(unsigned i) const;
  // The input as an SSA value (a known constant becomes an amp.constant); failure is reported.
  FailureOr<Value> input(unsigned i);
  // The input's type, whether it is an SSA value or a known constant; null when unknown.
  RankedTensorType inputType(unsigned i) const;
  // The input's known constant as integers (shapes, axes); failure is reported.
  FailureOr<std::vector<int64_t>> constantInts(unsigned i, llvm::StringRef what);
  // Slice's optional inputs 3 (axes) and 4 (steps) for `count` starts, defaulted as ONNX does:
  // axes 0..count-1, steps 1. Failure is reported.
  LogicalResult sliceAxesAndSteps(size_t count, std::vector<int64_t>& axes, std::vector<int64_t>& steps);

  unsigned numOutputs() const { return node_->output_size(); }
  bool outputUsed(unsigned i) const;
  // Binds output `i` of the current node, after checking `value`'s type against ONNX's.
  LogicalResult setOutput(unsigned i, Value value);
  void setOutputConstant(unsigned i, HostTensor value);

  const onnx::AttributeProto* attribute(llvm::StringRef name) const;
  int64_t intAttribute(llvm::StringRef name, int64_t fallback) const;
  float floatAttribute(llvm::StringRef name, float fallback) const;
  std::string stringAttribute(llvm::StringRef name, llvm::StringRef fallback) const;
  std::optional<std::vector<int64_t>> intsAttribute(llvm::StringRef name) const;
  // Refuses any attribute of the node outside `supported`, so none is ignored silently.
  LogicalResult onlyAttributes(std::initializer_list<llvm::StringRef> supported);

  // amp ops at the current node's location.
  template <typename OpT, typename... Args>
  Value create(Args&&... args) {
    return builder_.create<OpT>(loc_, std::forward<Args>(args)...)->getResult(0);
  }
  Value constant(const HostTensor& value);

 private:
  struct Known {
    Value value;                        // an SSA value, or
    std::optional<HostTensor> constant;  // a value known at import time
  };

  LogicalResult declareArguments(func::FuncOp func);
  // An initializer's values as a param's amp.init (f32, finite; failure otherwise).
  FailureOr<ElementsAttr> storedInitialValues(RankedTensorType type, llvm::StringRef name,
                                              const std::vector<double>& values);
  LogicalResult translateNode(int index);
  // Translates every node, reporting each refused one and then every reason with its count.
  LogicalResult translateNodes(Location fileLoc);
  // The exact GELU chain Div -> Erf -> Add -> Mul -> Mul (ExactGelu.cpp): its first four nodes are
  // absorbed, and the last becomes one amp.gelu of the chain's input.
  void recognizeExactGelu();
  LogicalResult translateExactGelu(const std::string& x);
  // PyTorch's linear layer on a rank >= 3 input, Transpose(W) -> MatMul [-> Add(b)]
  // (LinearLayers.cpp): the Transpose (and the MatMul) are absorbed, the last node becomes one
  // amp.linear with transpose_w.
  struct LinearLayer {
    std::string input, weight, bias;  // ONNX value names; bias empty when there is none
  };
  void recognizeLinearLayers();
  LogicalResult translateLinearLayer(const LinearLayer& layer);
  std::string displayName(const onnx::NodeProto& node) const;
  std::string uniqueArgName(llvm::StringRef onnxName);
  std::optional<RankedTensorType> inferredType(const std::string& name) const;

  const onnx::ModelProto& model_;
  const onnx::GraphProto& graph_;
  std::string filename_;
  MLIRContext* context_;
  OpBuilder builder_;
  std::map<std::string, Known> values_;
  std::map<std::string, std::string> paramNames_;  // ONNX initializer name -> amp.name
  llvm::StringMap<bool> argNames_;
  std::map<std::string, int> useCounts_;             // ONNX value name -> readers (nodes, outputs)
  std::map<std::string, const onnx::TypeProto*> inferred_;
  std::set<int> absorbed_;                     // node indices translated as part of a later node
  std::map<int, LinearLayer> linearLayers_;    // a linear layer's last node -> the layer
  std::map<int, std::string> exactGeluInput_;  // the chain's last node -> the GELU's input

  const onnx::NodeProto* node_ = nullptr;
  int nodeIndex_ = 0;
  Location loc_;
};

// The converters: one per supported ONNX op_type of the default domain.
using Converter = LogicalResult (*)(GraphTranslator&);
const llvm::StringMap<Converter>& opConverters();
// The converters of ConvertComposite.cpp: ops spelled as a few amp ops (comparisons, Where, Trilu,
// Clip, LeakyRelu, HardSigmoid, HardSwish, Split, Sum, Mean).
void addCompositeConverters(llvm::StringMap<Converter>& converters);
// BatchNormalization (BatchNorm.cpp).
void addBatchNormConverter(llvm::StringMap<Converter>& converters);
// Conv, MaxPool and AveragePool, 1-D and 2-D, any padding (WindowOps.cpp).
void addWindowConverters(llvm::StringMap<Converter>& converters);
void addResizeConverters(llvm::StringMap<Converter>& converters);
// LSTM, GRU and RNN, unrolled over their static sequence length (RecurrentLayers.cpp).
void addRecurrentConverters(llvm::StringMap<Converter>& converters);
// Whether ampc imports nodes of this default-domain op_type: it has a converter, or it is one of
// the ops only folded (Shape, Constant, ConstantOfShape, Range, Not, And, Or, Xor, Mod,
// ScatterND). The loader refuses any other
// op_type before libonnx's shape inference sees the node.
bool isImportedOpType(llvm::StringRef opType);
// What a node of any other op_type is told: the ops ampc imports and folds.
std::string unsupportedOpMessage();
// Folding of shape arithmetic on known values. Returns nullopt when the node's inputs are not
// all known (the converter then translates it), else whether folding succeeded.
std::optional<LogicalResult> foldNode(GraphTranslator& t);
// The comparisons, boolean logic, Mod and ScatterND on known values (FoldLogicOps.cpp), as
// foldNode: nullopt when the node is none of them or an input is not known.
std::optional<LogicalResult> foldLogicNode(GraphTranslator& t, const std::vector<const HostTensor*>& in);

// ONNX Reshape's target shape for an input of shape `in`: 0 copies the input's dim (unless the
// node has allowzero=1) and one -1 is inferred. Failure is reported.
FailureOr<std::vector<int64_t>> reshapeTarget(GraphTranslator& t, const std::vector<int64_t>& in,
                                              const std::vector<int64_t>& target);

// The ONNX value's name as an amp.name (letters, digits, '_', '.', '-', '/'; others become '_').
std::string sanitizeName(llvm::StringRef name);
// An axis in [-rank, rank) as an index in [0, rank); nullopt when out of range.
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank);

}  // namespace mlir::amp::onnx_import

#endif  // AMP_IMPORT_ONNX_GRAPHTRANSLATOR_H
