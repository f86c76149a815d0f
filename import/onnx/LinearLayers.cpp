// PyTorch exports nn.Linear on an input of rank 3 or more not as Gemm but as
//   Transpose(W) -> MatMul(x, _) [-> Add(_, b)]
// with W [out, in] and b [out] initializers. Translated node by node, that transposes the f32
// master weight on every step and, under autocast, adds the bias to the low-precision product in
// f32 (PyTorch's promotion rule). The importer recognises the pattern and emits one amp.linear
// (transpose_w = true, the bias in the GEMM's epilogue: added in f32 before the one rounding), as
// it does for Gemm.
#include <cstring>

#include "import/onnx/ConvertHelpers.h"
#include "import/onnx/Dataflow.h"
#include "import/onnx/GraphTranslator.h"
#include "ir/AmpOps.h"

namespace mlir::amp::onnx_import {
namespace {

const onnx::TensorProto* initializer(const onnx::GraphProto& graph, const std::string& name) {
  for (const auto& init : graph.initializer())
    if (init.name() == name) return &init;
  return nullptr;
}

bool isFloatMatrixOrVector(const onnx::TensorProto* t, int rank) {
  return t && t->dims_size() == rank && t->data_type() == onnx::TensorProto::FLOAT;
}

// A Transpose that swaps the two dims of a rank-2 tensor (perm [1, 0], or the default reversal).
bool swapsMatrix(const onnx::NodeProto& node) {
  if (node.op_type() != "Transpose" || node.input_size() != 1) return false;
  for (const auto& a : node.attribute()) {
    if (a.name() != "perm") return false;
    if (a.ints_size() != 2 || a.ints(0) != 1 || a.ints(1) != 0) return false;
  }
  return true;
}

}  // namespace

void GraphTranslator::recognizeLinearLayers() {
  Dataflow flow(graph_);
  for (int m = 0; m < graph_.node_size(); ++m) {
    const onnx::NodeProto& matmul = graph_.node(m);
    if (matmul.op_type() != "MatMul" || matmul.input_size() != 2 || absorbed_.count(m)) continue;
    auto t = flow.producer.find(matmul.input(1));
    if (t == flow.producer.end() || !swapsMatrix(graph_.node(t->second)) ||
        flow.onlyReader(graph_, matmul.input(1), "MatMul") != m)
      continue;
    const std::string& weight = graph_.node(t->second).input(0);
    const onnx::TensorProto* w = initializer(graph_, weight);
    // amp.linear's input is [..., K]: a 1-D x is numpy's vector product, which stays a MatMul.
    auto x = inferredType(matmul.input(0));
    if (!isFloatMatrixOrVector(w, 2) || !x || x->getRank() < 2) continue;
    LinearLayer layer{matmul.input(0), weight, ""};
    int last = m;
    if (auto add = flow.onlyReader(graph_, matmul.output(0), "Add")) {
      const onnx::NodeProto& node = graph_.node(*add);
      const std::string& other = node.input(0) == matmul.output(0) ? node.input(1) : node.input(0);
      const onnx::TensorProto* b = initializer(graph_, other);
      if (node.input_size() == 2 && isFloatMatrixOrVector(b, 1) && b->dims(0) == w->dims(0)) {
        layer.bias = other;
        absorbed_.insert(m);
        last = *add;
      }
    }
    absorbed_.insert(t->second);
    linearLayers_[last] = layer;
  }
}

LogicalResult GraphTranslator::translateLinearLayer(const LinearLayer& layer) {
  // Known by its weight's module path, as a Gemm layer is (displayName), not by the Add's name.
  if (llvm::StringRef(layer.weight).ends_with(".weight"))
    loc_ = NameLoc::get(StringAttr::get(context_, llvm::StringRef(layer.weight).drop_back(strlen(".weight"))),
                        cast<NameLoc>(loc_).getChildLoc());
  std::vector<Value> operands;
  for (const std::string* name : {&layer.input, &layer.weight, &layer.bias}) {
    if (name->empty()) continue;
    auto it = values_.find(*name);
    if (it == values_.end()) return refuse() << "'" << *name << "' is not defined before the linear layer";
    Value v = it->second.value ? it->second.value : constant(*it->second.constant);
    if (!v || !isa<FloatType>(cast<RankedTensorType>(v.getType()).getElementType()))
      return refuse() << "the linear layer's '" << *name << "' must be a float tensor";
    operands.push_back(v);
  }
  auto y = build<LinearOp>(*this, operands, {named(*this, "transpose_w", builder().getBoolAttr(true))});
  return failed(y) ? failure() : setOutput(0, *y);
}

}  // namespace mlir::amp::onnx_import
