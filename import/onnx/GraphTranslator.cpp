#include "import/onnx/GraphTranslator.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "import/onnx/LossSpec.h"
#include "import/onnx/ModelLoader.h"
#include "ir/AmpDialect.h"
#include "ir/AmpOps.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Path.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectResourceBlobManager.h"

namespace mlir::amp::onnx_import {

std::string sanitizeName(llvm::StringRef name) {
  std::string out;
  for (char c : name) out += (llvm::isAlnum(c) || c == '_' || c == '.' || c == '-' || c == '/') ? c : '_';
  return out.empty() ? "_" : out;
}

std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

GraphTranslator::GraphTranslator(const onnx::ModelProto& model, llvm::StringRef filename, MLIRContext* context)
    : model_(model), graph_(model.graph()), filename_(filename.str()), context_(context), builder_(context),
      loc_(FileLineColLoc::get(context, filename, 0, 0)) {
  for (const auto& info : graph_.input()) inferred_[info.name()] = &info.type();
  for (const auto& info : graph_.value_info()) inferred_[info.name()] = &info.type();
  for (const auto& info : graph_.output()) inferred_[info.name()] = &info.type();
  for (const auto& node : graph_.node())
    for (const auto& in : node.input()) ++useCounts_[in];
  for (const auto& out : graph_.output()) ++useCounts_[out.name()];
}

std::string GraphTranslator::nodeDescription() const { return describeNode(*node_, nodeIndex_); }

InFlightDiagnostic GraphTranslator::refuse() { return emitError(loc_) << nodeDescription() << ": "; }

const HostTensor* GraphTranslator::constantInput(unsigned i) const {
  if (!hasInput(i)) return nullptr;
  auto it = values_.find(node_->input(i));
  return it != values_.end() && it->second.constant ? &*it->second.constant : nullptr;
}

Value GraphTranslator::constant(const HostTensor& value) {
  DenseElementsAttr attr = toElementsAttr(value, context_);
  if (!attr) return {};
  return create<ConstantOp>(attr);
}

FailureOr<Value> GraphTranslator::input(unsigned i) {
  if (!hasInput(i)) return refuse() << "input " << i << " is missing", failure();
  auto it = values_.find(node_->input(i));
  if (it == values_.end()) return refuse() << "input '" << node_->input(i) << "' is not defined before it", failure();
  Known& known = it->second;
  if (known.value) return known.value;
  Value v = constant(*known.constant);
  if (!v)
    return refuse() << "the constant input '" << node_->input(i) << "' is " << dataTypeName(known.constant->dataType)
                    << ", which the amp dialect has no type for (float, float16, bfloat16, int64, int32 and bool)",
           failure();
  return v;
}

RankedTensorType GraphTranslator::inputType(unsigned i) const {
  if (!hasInput(i)) return {};
  auto it = values_.find(node_->input(i));
  if (it == values_.end()) return {};
  if (it->second.value) return dyn_cast<RankedTensorType>(it->second.value.getType());
  auto element = elementTypeFor(it->second.constant->dataType, context_);
  if (!element) element = Float64Type::get(context_);  // only its shape is of use then
  return RankedTensorType::get(it->second.constant->shape, *element);
}

FailureOr<std::vector<int64_t>> GraphTranslator::constantInts(unsigned i, llvm::StringRef what) {
  const HostTensor* c = constantInput(i);
  if (!c)
    return refuse() << what << " (input " << i << ", '" << (hasInput(i) ? node_->input(i) : "")
                    << "') must be known at import time (a constant, an initializer or shape arithmetic on them)",
           failure();
  if (c->isFloat()) return refuse() << what << " must be an integer tensor", failure();
  return c->ints;
}

LogicalResult GraphTranslator::sliceAxesAndSteps(size_t count, std::vector<int64_t>& axes,
                                                std::vector<int64_t>& steps) {
  axes.resize(count);
  std::iota(axes.begin(), axes.end(), 0);
  steps.assign(count, 1);
  if (hasInput(3)) {
    auto given = constantInts(3, "axes");
    if (failed(given)) return failure();
    axes = *given;
  }
  if (hasInput(4)) {
    auto given = constantInts(4, "steps");
    if (failed(given)) return failure();
    steps = *given;
  }
  return success();
}

bool GraphTranslator::outputUsed(unsigned i) const {
  if (i >= numOutputs() || node_->output(i).empty()) return false;
  auto it = useCounts_.find(node_->output(i));
  return it != useCounts_.end() && it->second > 0;
}

std::optional<RankedTensorType> GraphTranslator::inferredType(const std::string& name) const {
  auto it = inferred_.find(name);
  if (it == inferred_.end() || !it->second->has_tensor_type()) return std::nullopt;
  const auto& tensor = it->second->tensor_type();
  auto element = elementTypeFor(tensor.elem_type(), context_);
  if (!element || !tensor.has_shape()) return std::nullopt;
  llvm::SmallVector<int64_t> shape;
  for (const auto& d : tensor.shape().dim()) {
    if (!d.has_dim_value()) return std::nullopt;
    shape.push_back(d.dim_value());
  }
  return RankedTensorType::get(shape, *element);
}

LogicalResult GraphTranslator::setOutput(unsigned i, Value value) {
  if (i >= numOutputs() || node_->output(i).empty()) return success();
  const std::string& name = node_->output(i);
  // Shapes come from the model's known values (Expand's, Pad's, Reshape's): a negative one is the
  // model's error, and must not reach a type (a negative dim is no size any later stage checks).
  if (auto type = dyn_cast<RankedTensorType>(value.getType()))
    if (llvm::any_of(type.getShape(), [](int64_t d) { return d < 0; }))
      return refuse() << "output '" << name << "' would have the negative dims " << type
                      << " (the shape the model gives is negative)";
  // ONNX's shape inference is the second opinion: a translation that disagrees is a bug in
  // ampc, and must not become a silently different graph.
  if (auto expected = inferredType(name); expected && *expected != value.getType())
    return refuse() << "ampc's translation gives output '" << name << "' the type " << value.getType()
                    << ", but ONNX infers " << *expected << " (an importer bug; please report it)";
  values_[name] = Known{value, std::nullopt};
  return success();
}

void GraphTranslator::setOutputConstant(unsigned i, HostTensor value) {
  if (i >= numOutputs() || node_->output(i).empty()) return;
  values_[node_->output(i)] = Known{Value(), std::move(value)};
}

const onnx::AttributeProto* GraphTranslator::attribute(llvm::StringRef name) const {
  for (const auto& a : node_->attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

int64_t GraphTranslator::intAttribute(llvm::StringRef name, int64_t fallback) const {
  const auto* a = attribute(name);
  return a ? a->i() : fallback;
}

float GraphTranslator::floatAttribute(llvm::StringRef name, float fallback) const {
  const auto* a = attribute(name);
  return a ? a->f() : fallback;
}

std::string GraphTranslator::stringAttribute(llvm::StringRef name, llvm::StringRef fallback) const {
  const auto* a = attribute(name);
  return a ? a->s() : fallback.str();
}

std::optional<std::vector<int64_t>> GraphTranslator::intsAttribute(llvm::StringRef name) const {
  const auto* a = attribute(name);
  if (!a) return std::nullopt;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

LogicalResult GraphTranslator::onlyAttributes(std::initializer_list<llvm::StringRef> supported) {
  for (const auto& a : node_->attribute()) {
    if (llvm::is_contained(supported, llvm::StringRef(a.name()))) continue;
    auto diag = refuse();
    diag << "attribute '" << a.name() << "' is not supported";
    if (supported.size() == 0) {
      diag << " (ampc reads no attribute of this op)";
    } else {
      diag << " (supported: ";
      llvm::interleaveComma(supported, diag, [&](llvm::StringRef s) { diag << s; });
      diag << ")";
    }
    return failure();
  }
  return success();
}

std::string GraphTranslator::uniqueArgName(llvm::StringRef onnxName) {
  std::string base = sanitizeName(onnxName), name = base;
  for (int n = 1; argNames_.count(name); ++n) name = base + "_" + std::to_string(n);
  argNames_[name] = true;
  return name;
}

std::string GraphTranslator::displayName(const onnx::NodeProto& node) const {
  // A layer is known by its weight's module path ("layer1.0.conv1" for "layer1.0.conv1.weight"),
  // as PyTorch names it; other nodes by their ONNX name, else their first output.
  for (const auto& in : node.input()) {
    auto it = paramNames_.find(in);
    if (it != paramNames_.end() && llvm::StringRef(it->first).ends_with(".weight"))
      return llvm::StringRef(it->first).drop_back(strlen(".weight")).str();
  }
  if (!node.name().empty()) return node.name();
  return node.output_size() ? node.output(0) : node.op_type();
}

LogicalResult GraphTranslator::declareArguments(func::FuncOp func) {
  Location fileLoc = FileLineColLoc::get(context_, filename_, 0, 0);
  std::set<std::string> initializerNames;
  for (const auto& init : graph_.initializer()) initializerNames.insert(init.name());
  Block& body = func.getBody().front();
  auto addArgument = [&](Type type, llvm::StringRef role, const std::string& onnxName) {
    std::string name = uniqueArgName(onnxName);
    Location argLoc = NameLoc::get(StringAttr::get(context_, onnxName), fileLoc);
    const unsigned index = func.getNumArguments();
    func.insertArgument(index, type,
                        builder_.getDictionaryAttr({builder_.getNamedAttr(AmpDialect::kRoleAttr, builder_.getStringAttr(role)),
                                                    builder_.getNamedAttr(AmpDialect::kNameAttr, builder_.getStringAttr(name))}),
                        argLoc);
    return std::make_pair(body.getArgument(index), name);
  };
  for (const auto& input : graph_.input()) {
    if (initializerNames.count(input.name())) continue;
    const auto& tensor = input.type().tensor_type();
    auto element = elementTypeFor(tensor.elem_type(), context_);
    if (!element)
      return emitError(fileLoc) << "graph input '" << input.name() << "' is " << dataTypeName(tensor.elem_type())
                                << "; ampc takes float, float16, bfloat16, int64, int32 and bool inputs";
    llvm::SmallVector<int64_t> shape;
    for (const auto& d : tensor.shape().dim()) shape.push_back(d.dim_value());
    values_[input.name()] = Known{addArgument(RankedTensorType::get(shape, *element), "input", input.name()).first,
                                  std::nullopt};
  }
  for (const auto& init : graph_.initializer()) {
    std::string error;
    auto value = decodeTensor(init, &error);
    if (!value) return emitError(fileLoc) << "initializer '" << init.name() << "': " << error;
    // Float tensors are the trainable weights; integer ones (shapes, indices) and float scalars
    // (a Dropout ratio, a Pow exponent) are constants of the graph.
    const bool trainable = value->dataType == onnx::TensorProto::FLOAT && !value->shape.empty();
    if (!trainable || !useCounts_.count(init.name())) {
      values_[init.name()] = Known{Value(), std::move(*value)};
      continue;
    }
    auto type = RankedTensorType::get(value->shape, Float32Type::get(context_));
    auto [arg, name] = addArgument(type, "param", init.name());
    paramNames_[init.name()] = name;
    values_[init.name()] = Known{arg, std::nullopt};
    auto stored = storedInitialValues(type, name, value->floats);
    if (failed(stored)) return emitError(fileLoc) << "initializer '" << init.name() << "' holds a non-finite value";
    func.setArgAttr(arg.getArgNumber(), AmpDialect::kInitAttr, *stored);
  }
  return success();
}

FailureOr<ElementsAttr> GraphTranslator::storedInitialValues(RankedTensorType type, llvm::StringRef name,
                                                             const std::vector<double>& values) {
  // A dense_resource blob: the weights are not uniqued into the context, and --emit=mlir prints
  // them once, in the file's resource section.
  std::vector<float> floats(values.begin(), values.end());
  if (!llvm::all_of(floats, [](float v) { return std::isfinite(v); })) return failure();
  std::string key = name.str();
  for (char& c : key)
    if (!llvm::isAlnum(c) && c != '_' && c != '.') c = '_';
  llvm::ArrayRef<char> bytes(reinterpret_cast<const char*>(floats.data()), floats.size() * sizeof(float));
  return ElementsAttr(DenseResourceElementsAttr::get(
      type, key, HeapAsmResourceBlob::allocateAndCopyWithAlign(bytes, alignof(float))));
}

LogicalResult GraphTranslator::translateNode(int index) {
  node_ = &graph_.node(index);
  nodeIndex_ = index;
  loc_ = NameLoc::get(StringAttr::get(context_, displayName(*node_)),
                      FileLineColLoc::get(context_, filename_, index + 1, 0));
  if (!node_->domain().empty() && node_->domain() != "ai.onnx")
    return refuse() << "ops of domain '" << node_->domain() << "' are not supported (only the default ONNX domain)";
  if (absorbed_.count(index)) return success();
  if (auto gelu = exactGeluInput_.find(index); gelu != exactGeluInput_.end()) return translateExactGelu(gelu->second);
  if (auto linear = linearLayers_.find(index); linear != linearLayers_.end())
    return translateLinearLayer(linear->second);
  if (auto folded = foldNode(*this)) return *folded;
  const auto& converters = opConverters();
  auto it = converters.find(node_->op_type());
  if (it != converters.end()) return it->second(*this);
  return refuse() << unsupportedOpMessage();
}

bool isImportedOpType(llvm::StringRef opType) {
  return opConverters().count(opType) || llvm::is_contained({"Shape", "Constant", "ConstantOfShape", "Range", "Not", "And",
                                                             "Or", "Xor", "Mod", "ScatterND"},
                                                            opType);
}

std::string unsupportedOpMessage() {
  std::vector<std::string> names;
  for (const auto& entry : opConverters()) names.push_back(entry.getKey().str());
  llvm::sort(names);
  return "this op is not supported yet; ampc imports " + llvm::join(names, ", ") +
         " (and folds Shape, Gather, Squeeze, Unsqueeze, Concat, Cast, Slice, Range, ConstantOfShape, Trilu, Where, "
         "comparisons, Not, And, Or, Xor, Mod, ScatterND and arithmetic on known values)";
}

LogicalResult GraphTranslator::translateNodes(Location fileLoc) {
  // Every node is tried, so that one compile names every node ampc refuses (each error located at
  // its node), then sums them up by reason. A node that reads a refused node's output is not
  // tried: its operands have no type.
  std::vector<std::string> nodeErrors;  // the current node's errors, its description cut off
  ScopedDiagnosticHandler capture(context_, [&](Diagnostic& diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error) {
      std::string text = diag.str();
      if (llvm::StringRef(text).starts_with(nodeDescription() + ": ")) text = text.substr(nodeDescription().size() + 2);
      nodeErrors.push_back(node_->op_type() + ": " + text);
    }
    return failure();  // not handled here: the driver's handler prints it
  });
  std::vector<std::pair<std::string, int>> reasons;  // in the order first seen, with their node counts
  llvm::StringSet<> unavailable;
  int refused = 0, untried = 0;
  for (int i = 0; i < graph_.node_size(); ++i) {
    const onnx::NodeProto& node = graph_.node(i);
    if (llvm::any_of(node.input(), [&](const std::string& in) { return unavailable.contains(in); })) {
      for (const auto& out : node.output()) unavailable.insert(out);
      ++untried;
      continue;
    }
    nodeErrors.clear();
    if (succeeded(translateNode(i))) continue;
    ++refused;
    for (const auto& out : node.output()) unavailable.insert(out);
    if (nodeErrors.empty()) nodeErrors.push_back(node.op_type() + ": refused");
    llvm::sort(nodeErrors);
    nodeErrors.erase(std::unique(nodeErrors.begin(), nodeErrors.end()), nodeErrors.end());
    for (const std::string& text : nodeErrors) {
      auto it = llvm::find_if(reasons, [&](const auto& r) { return r.first == text; });
      if (it == reasons.end()) reasons.emplace_back(text, 1);
      else ++it->second;
    }
  }
  if (refused == 0) return success();
  std::string summary;
  llvm::raw_string_ostream os(summary);
  os << "ampc refuses " << refused << " of the model's " << graph_.node_size() << " nodes (each named above)";
  if (untried) os << "; " << untried << " more read what those compute and were not tried";
  os << ". By reason:";
  for (const auto& [text, nodes] : reasons) os << "\n  " << nodes << " x " << text;
  emitError(fileLoc) << summary;
  return failure();
}

std::optional<ImportedModel> GraphTranslator::translate(const ImportOptions& options) {
  ImportedModel result;
  Location fileLoc = FileLineColLoc::get(context_, filename_, 0, 0);
  std::optional<LossSpec> loss;
  if (options.loss.empty()) {
    emitError(fileLoc) << "an ONNX model needs --loss to become a trainable model (its first result is the scalar "
                          "loss): --loss=OUTPUT, --loss=cross_entropy:OUTPUT[,label=NAME] or "
                          "--loss=mse:OUTPUT[,target=NAME]";
    return std::nullopt;
  }
  std::string error;
  loss = parseLossSpec(options.loss, &error);
  if (!loss) return emitError(fileLoc) << error, std::nullopt;
  if (!llvm::any_of(graph_.output(), [&](const auto& o) { return o.name() == loss->output; })) {
    std::vector<std::string> outputs;
    for (const auto& o : graph_.output()) outputs.push_back("'" + o.name() + "'");
    emitError(fileLoc) << "--loss names '" << loss->output << "', which is not a graph output (the outputs: "
                       << llvm::join(outputs, ", ") << ")";
    return std::nullopt;
  }

  result.module = ModuleOp::create(fileLoc);
  builder_.setInsertionPointToEnd(result.module->getBody());
  std::string funcName = graph_.name().empty() ? llvm::sys::path::stem(filename_).str() : graph_.name();
  for (char& c : funcName)
    if (!llvm::isAlnum(c)) c = '_';
  auto func = builder_.create<func::FuncOp>(fileLoc, funcName, FunctionType::get(context_, {}, {}));
  Block* body = func.addEntryBlock();
  if (failed(declareArguments(func))) return std::nullopt;
  recognizeExactGelu();
  recognizeLinearLayers();
  builder_.setInsertionPointToEnd(body);

  if (failed(translateNodes(fileLoc))) return std::nullopt;

  // Results: the loss first (the model convention), then every graph output by name.
  llvm::SmallVector<Value> results;
  llvm::SmallVector<std::string> resultNames;
  Value lossOutput;
  for (const auto& output : graph_.output()) {
    auto it = values_.find(output.name());
    if (it == values_.end()) {
      emitError(fileLoc) << "graph output '" << output.name() << "' is not produced by any node";
      return std::nullopt;
    }
    Value v = it->second.value;
    if (!v) {
      builder_.setInsertionPointToEnd(body);
      loc_ = NameLoc::get(StringAttr::get(context_, output.name()), fileLoc);
      v = constant(*it->second.constant);
      if (!v) {
        emitError(fileLoc) << "graph output '" << output.name() << "' is a constant of a type ampc has no type for";
        return std::nullopt;
      }
    }
    if (output.name() == loss->output) lossOutput = v;
    results.push_back(v);
    resultNames.push_back(sanitizeName(output.name()));
  }
  Value label;
  Location lossLoc = NameLoc::get(StringAttr::get(context_, "loss"), fileLoc);
  if (loss->kind != LossSpec::Kind::Scalar) {
    Type type = labelType(*loss, lossOutput.getType(), &error);
    if (!type) return emitError(fileLoc) << "--loss=" << options.loss << ": " << error, std::nullopt;
    if (argNames_.count(loss->label)) {
      emitError(fileLoc) << "--loss=" << options.loss << ": the label argument '" << loss->label
                         << "' would have the name of another argument; choose another with "
                         << (loss->kind == LossSpec::Kind::Mse ? "target=NAME" : "label=NAME");
      return std::nullopt;
    }
    unsigned index = 0;
    while (index < func.getNumArguments() &&
           func.getArgAttrOfType<StringAttr>(index, AmpDialect::kRoleAttr).getValue() == "input")
      ++index;
    auto roleAttrs = builder_.getDictionaryAttr(
        {builder_.getNamedAttr(AmpDialect::kRoleAttr, builder_.getStringAttr("label")),
         builder_.getNamedAttr(AmpDialect::kNameAttr, builder_.getStringAttr(sanitizeName(loss->label)))});
    func.insertArgument(index, type, roleAttrs, lossLoc);
    label = func.getArgument(index);
  }
  builder_.setInsertionPointToEnd(body);
  auto lossValue = buildLoss(*loss, lossOutput, label, builder_, lossLoc);
  if (failed(lossValue)) return std::nullopt;
  results.insert(results.begin(), *lossValue);
  resultNames.insert(resultNames.begin(), "loss");
  builder_.create<func::ReturnOp>(fileLoc, results);
  func.setFunctionType(FunctionType::get(context_, body->getArgumentTypes(), ValueRange(results).getTypes()));
  for (unsigned r = 0; r < resultNames.size(); ++r)
    func.setResultAttr(r, AmpDialect::kNameAttr, builder_.getStringAttr(resultNames[r]));
  return result;
}

}  // namespace mlir::amp::onnx_import
