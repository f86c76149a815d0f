// The dataflow of an ONNX graph by value name, for the importer's recognisers of multi-node
// patterns (ExactGelu.cpp, LinearLayers.cpp): which node produces a value, which nodes read it.
#ifndef AMP_IMPORT_ONNX_DATAFLOW_H
#define AMP_IMPORT_ONNX_DATAFLOW_H

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "llvm/ADT/StringRef.h"
#include "onnx/onnx_pb.h"

namespace mlir::amp::onnx_import {

// The graph's dataflow by ONNX value name.
struct Dataflow {
  std::map<std::string, int> producer;
  std::map<std::string, std::vector<int>> readers;

  explicit Dataflow(const onnx::GraphProto& graph) {
    for (int i = 0; i < graph.node_size(); ++i) {
      for (const auto& out : graph.node(i).output()) producer[out] = i;
      for (const auto& in : graph.node(i).input()) readers[in].push_back(i);
    }
    for (const auto& out : graph.output()) readers[out.name()].push_back(-1);  // read by the caller
  }
  // The node that is the only reader of `value`, when it has op_type `op`.
  std::optional<int> onlyReader(const onnx::GraphProto& graph, const std::string& value, llvm::StringRef op) const {
    auto it = readers.find(value);
    if (it == readers.end() || it->second.size() != 1 || it->second[0] < 0) return std::nullopt;
    if (graph.node(it->second[0]).op_type() != op) return std::nullopt;
    return it->second[0];
  }
};

}  // namespace mlir::amp::onnx_import

#endif  // AMP_IMPORT_ONNX_DATAFLOW_H
