#include "import/onnx/GuardedShapeInference.h"

#include <exception>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "import/onnx/RankRules.h"
#include "onnx/defs/schema.h"
#include "onnx/shape_inference/implementation.h"

namespace mlir::amp::onnx_import {
namespace {

const onnx::ShapeInferenceOptions kOptions(/*check_type=*/true, /*error_mode=*/1, /*data_prop=*/true);

// Thrown by a guarded inference function. Not a std::exception: libonnx catches InferenceError to
// collect it and go on, and must not catch this.
struct NodeStop {
  std::string what;
};

std::string dimsText(const onnx::TensorShapeProto& shape) {
  std::string text;
  for (int i = 0; i < shape.dim_size(); ++i)
    text += (i ? "x" : "") + (shape.dim(i).has_dim_value() ? std::to_string(shape.dim(i).dim_value()) : "?");
  return text;
}

// The registry libonnx's InferShapes asks for schemas: the default registry's, each copied once
// with its inference and data-propagation functions wrapped by the guard. It also knows which
// graph node libonnx is inferring: libonnx visits the nodes in graph order and calls an inference
// function for exactly those whose schema has one (`visits_`); calls made from inside a function
// body (depth > 0) belong to the node being inferred.
class GuardedRegistry final : public onnx::ISchemaRegistry {
 public:
  explicit GuardedRegistry(onnx::ModelProto& model) : graph_(*model.mutable_graph()) {
    std::unordered_map<std::string, int> opsets;
    for (const auto& opset : model.opset_import()) opsets[opset.domain()] = static_cast<int>(opset.version());
    for (int i = 0; i < graph_.node_size(); ++i) {
      const onnx::NodeProto& node = graph_.node(i);
      auto opset = opsets.find(node.domain());
      if (opset == opsets.end() && node.domain().empty()) opset = opsets.find("ai.onnx");
      if (opset == opsets.end()) continue;
      const onnx::OpSchema* schema = GetSchema(node.op_type(), opset->second, node.domain());
      if (schema && schema->has_type_and_shape_inference_function()) visits_.push_back(i);
    }
  }

  const onnx::OpSchema* GetSchema(const std::string& key, const int maxInclusiveVersion,
                                  const std::string& domain) const override {
    const onnx::OpSchema* original = onnx::OpSchemaRegistry::Schema(key, maxInclusiveVersion, domain);
    if (!original || (!original->has_type_and_shape_inference_function() && !original->HasFunction()))
      return original;
    std::unique_ptr<onnx::OpSchema>& guarded = guarded_[original];
    if (!guarded) guarded = wrap(*original);
    return guarded.get();
  }

  // The graph index of the node being inferred (-1 before the first).
  int current() const { return current_; }

 private:
  std::unique_ptr<onnx::OpSchema> wrap(const onnx::OpSchema& original) const {
    auto copy = std::make_unique<onnx::OpSchema>(original);
    copy->TypeAndShapeInferenceFunction([this, &original](onnx::InferenceContext& ctx) { infer(original, ctx); });
    if (original.has_data_propagation_function())
      copy->PartialDataPropagationFunction([this, &original](onnx::DataPropagationContext& ctx) {
        guarded([&] { original.GetDataPropagationFunction()(ctx); });
      });
    return copy;
  }

  void infer(const onnx::OpSchema& original, onnx::InferenceContext& ctx) const {
    const bool topLevel = depth_ == 0;
    if (topLevel) {
      if (visits_.size() <= static_cast<size_t>(visited_))
        throw NodeStop{"ONNX shape inference visited more nodes than the graph has"};
      current_ = visits_[visited_++];
      checkInputs(graph_.node(current_), ctx);
    }
    ++depth_;
    struct Leave {
      int& depth;
      ~Leave() { --depth; }
    } leave{depth_};
    guarded([&] {
      if (original.has_type_and_shape_inference_function()) {
        original.GetTypeAndShapeInferenceFunction()(ctx);
      } else {
        std::unordered_map<std::string, onnx::TensorShapeProto> shapeData;
        onnx::shape_inference::InferShapeForFunctionNode(*original.GetFunction(), this, ctx, kOptions, {}, nullptr,
                                                         &shapeData);
      }
    });
    if (topLevel) checkOutputs(graph_.node(current_), ctx);
  }

  // Runs `f`, turning what libonnx throws into a stop at the current node.
  template <typename F>
  static void guarded(F&& f) {
    try {
      f();
    } catch (const NodeStop&) {
      throw;
    } catch (const std::exception& e) {
      throw NodeStop{std::string("ONNX shape inference: ") + e.what()};
    }
  }

  static void checkInputs(const onnx::NodeProto& node, onnx::InferenceContext& ctx) {
    for (int k = 0; k < node.input_size() && k < static_cast<int>(ctx.getNumInputs()); ++k) {
      if (node.input(k).empty()) continue;
      const onnx::TypeProto* type = ctx.getInputType(k);
      // An initializer of a model below IR version 4 that is not also a graph input has data but
      // no type (libonnx types those from IR 4 on); ONNX's version converter writes such
      // initializers (Pad's pads), and inference functions read their data.
      if ((!type || type->value_case() == onnx::TypeProto::VALUE_NOT_SET) && ctx.getInputData(k)) continue;
      if (!type || type->value_case() == onnx::TypeProto::VALUE_NOT_SET)
        throw NodeStop{"its input '" + node.input(k) + "' has no type (ONNX shape inference could not infer one)"};
      if (!type->has_tensor_type())
        throw NodeStop{"its input '" + node.input(k) + "' is not a tensor; ampc imports tensors only"};
    }
    auto shapeOf = [&](int k) -> const onnx::TensorShapeProto* {
      const onnx::TypeProto* type = ctx.getInputType(k);
      return type && type->has_tensor_type() && type->tensor_type().has_shape() ? &type->tensor_type().shape()
                                                                                : nullptr;
    };
    auto rank = [&](int k) -> std::optional<int64_t> {
      const onnx::TensorShapeProto* shape = shapeOf(k);
      return shape ? std::optional<int64_t>(shape->dim_size()) : std::nullopt;
    };
    auto length = [&](int k) -> std::optional<int64_t> {
      const onnx::TensorShapeProto* shape = shapeOf(k);
      if (!shape || shape->dim_size() != 1 || !shape->dim(0).has_dim_value()) return std::nullopt;
      return shape->dim(0).dim_value();
    };
    if (auto broken = checkInputRanks(node, rank, length)) throw NodeStop{*broken};
  }

  static void checkOutputs(const onnx::NodeProto& node, onnx::InferenceContext& ctx) {
    for (int k = 0; k < node.output_size() && k < static_cast<int>(ctx.getNumOutputs()); ++k) {
      const onnx::TypeProto* type = ctx.getOutputType(k);
      if (!type->has_tensor_type() || !type->tensor_type().has_shape()) continue;
      const onnx::TensorShapeProto& shape = type->tensor_type().shape();
      if (shape.dim_size() > kMaxRank)
        throw NodeStop{"its output '" + node.output(k) + "' would have rank " + std::to_string(shape.dim_size()) +
                       "; ampc imports values of rank at most " + std::to_string(kMaxRank)};
      for (const auto& d : shape.dim())
        if (d.has_dim_value() && d.dim_value() < 0)
          throw NodeStop{"its output '" + node.output(k) + "' would have the negative dim " +
                         std::to_string(d.dim_value()) + " (shape " + dimsText(shape) + ")"};
      if (auto tooLarge = checkTensorTypeSize(type->tensor_type()))
        throw NodeStop{"its output '" + node.output(k) + "' would have shape " + *tooLarge};
    }
  }

  onnx::GraphProto& graph_;
  std::vector<int> visits_;  // graph indices of the nodes libonnx calls an inference function for
  mutable std::map<const onnx::OpSchema*, std::unique_ptr<onnx::OpSchema>> guarded_;
  mutable int visited_ = 0;
  mutable int current_ = -1;
  mutable int depth_ = 0;
};

}  // namespace

std::optional<LoadError> inferShapesGuarded(onnx::ModelProto& model) {
  GuardedRegistry registry(model);
  auto atNode = [&](const std::string& what) -> LoadError {
    const int node = registry.current();
    if (node < 0) return LoadError{what, -1};
    return LoadError{describeNode(model.graph().node(node), node) + ": " + what, node};
  };
  try {
    onnx::shape_inference::InferShapes(model, &registry, kOptions);
  } catch (const NodeStop& stop) {
    return atNode(stop.what);
  } catch (const std::exception& e) {
    // Raised by libonnx between inference functions: merging the node's result with a declared
    // type, or checking its input and output types.
    return atNode(std::string("ONNX shape inference: ") + e.what());
  }
  return std::nullopt;
}

}  // namespace mlir::amp::onnx_import
