// ONNX has no Gelu before opset 20, so exporters write the exact (erf) GELU as five nodes:
//   Div(x, sqrt(2)) -> Erf -> Add(_, 1) -> Mul(x, _) -> Mul(_, 0.5)
// (PyTorch's nn.GELU()). The importer recognises that chain and emits one `amp.gelu` (approximate
// = none), which has a kernel, a VJP and an autocast category of its own, instead of refusing Erf.
// An Erf anywhere else is still refused, naming the pattern it supports.
#include <cmath>
#include <map>

#include "import/onnx/Dataflow.h"
#include "import/onnx/GraphTranslator.h"
#include "ir/AmpOps.h"

namespace mlir::amp::onnx_import {
namespace {

// The value of a one-element float constant (an initializer or a Constant node's value).
std::optional<double> scalarConstant(const onnx::GraphProto& graph, const Dataflow& flow, const std::string& name) {
  const onnx::TensorProto* proto = nullptr;
  for (const auto& init : graph.initializer())
    if (init.name() == name) proto = &init;
  if (auto p = flow.producer.find(name); !proto && p != flow.producer.end()) {
    const onnx::NodeProto& node = graph.node(p->second);
    if (node.op_type() != "Constant") return std::nullopt;
    for (const auto& a : node.attribute())
      if (a.name() == "value") proto = &a.t();
      else if (a.name() == "value_float") return a.f();
  }
  if (!proto) return std::nullopt;
  std::string error;
  auto value = decodeTensor(*proto, &error);
  if (!value || !value->isFloat() || value->numel() != 1) return std::nullopt;
  return value->floats[0];
}

// The input of binary node `node` that is not `known`, when the other one is `known`.
std::optional<std::string> otherInput(const onnx::NodeProto& node, const std::string& known) {
  if (node.input_size() != 2) return std::nullopt;
  if (node.input(0) == known) return node.input(1);
  if (node.input(1) == known) return node.input(0);
  return std::nullopt;
}

bool near(std::optional<double> v, double want) { return v && std::abs(*v - want) <= 1e-6 * want; }

}  // namespace

void GraphTranslator::recognizeExactGelu() {
  Dataflow flow(graph_);
  for (int e = 0; e < graph_.node_size(); ++e) {
    const onnx::NodeProto& erf = graph_.node(e);
    if (erf.op_type() != "Erf" || erf.input_size() != 1 || erf.output_size() != 1) continue;
    auto d = flow.producer.find(erf.input(0));
    if (d == flow.producer.end()) continue;
    const onnx::NodeProto& div = graph_.node(d->second);
    if (div.op_type() != "Div" || div.input_size() != 2 || !flow.onlyReader(graph_, div.output(0), "Erf") ||
        !near(scalarConstant(graph_, flow, div.input(1)), std::sqrt(2.0)))
      continue;
    const std::string& x = div.input(0);
    auto add = flow.onlyReader(graph_, erf.output(0), "Add");
    if (!add) continue;
    auto one = otherInput(graph_.node(*add), erf.output(0));
    if (!one || !near(scalarConstant(graph_, flow, *one), 1.0)) continue;
    auto times = flow.onlyReader(graph_, graph_.node(*add).output(0), "Mul");
    if (!times || otherInput(graph_.node(*times), graph_.node(*add).output(0)) != x) continue;
    auto half = flow.onlyReader(graph_, graph_.node(*times).output(0), "Mul");
    if (!half) continue;
    auto h = otherInput(graph_.node(*half), graph_.node(*times).output(0));
    if (!h || !near(scalarConstant(graph_, flow, *h), 0.5)) continue;
    for (int absorbed : {d->second, e, *add, *times}) absorbed_.insert(absorbed);
    exactGeluInput_[*half] = x;
  }
}

LogicalResult GraphTranslator::translateExactGelu(const std::string& x) {
  auto it = values_.find(x);
  if (it == values_.end()) return refuse() << "the GELU input '" << x << "' is not defined before it";
  Value input = it->second.value ? it->second.value : constant(*it->second.constant);
  if (!input || !isa<FloatType>(cast<RankedTensorType>(input.getType()).getElementType()))
    return refuse() << "the GELU input '" << x << "' must be a float tensor";
  return setOutput(0, create<GeluOp>(input, GeluApproximation::None));
}

}  // namespace mlir::amp::onnx_import
