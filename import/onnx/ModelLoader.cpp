// Compiled with -fexceptions: libonnx's checker, shape inference and version converter throw.
#include "import/onnx/ModelLoader.h"

#include <exception>
#include <limits>
#include <map>
#include <set>

#include "llvm/ADT/StringExtras.h"
#include "onnx/checker.h"
#include "onnx/defs/schema.h"
#include "onnx/shape_inference/implementation.h"
#include "onnx/version_converter/convert.h"

namespace mlir::amp::onnx_import {
namespace {

bool isDefaultDomain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

std::string shapeText(const std::vector<int64_t>& dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "x" : "") + std::to_string(dims[i]);
  return s.empty() ? "scalar" : s;
}

std::string dimText(const onnx::TensorShapeProto::Dimension& d) {
  if (d.has_dim_value()) return std::to_string(d.dim_value());
  if (d.has_dim_param() && !d.dim_param().empty()) return "'" + d.dim_param() + "'";
  return "?";
}

// Makes every graph input static: --input-shape first, then --batch for dim 0, and a dim_param
// bound once (e.g. "batch") takes that value in every input and output that names it.
bool bindInputShapes(onnx::GraphProto& graph, const ImportOptions& options, std::string* error) {
  std::set<std::string> initializers;
  for (const auto& init : graph.initializer()) initializers.insert(init.name());
  std::map<std::string, const std::vector<int64_t>*> given;
  for (const auto& [name, dims] : options.inputShapes) given[name] = &dims;
  std::set<std::string> inputNames;
  for (const auto& input : graph.input()) inputNames.insert(input.name());
  for (const auto& [name, dims] : given)
    if (!inputNames.count(name) || initializers.count(name)) {
      std::string known;
      for (const auto& input : graph.input())
        if (!initializers.count(input.name())) known += (known.empty() ? "" : ", ") + ("'" + input.name() + "'");
      *error = "--input-shape names '" + name + "', which is not a graph input of the model (its inputs: " + known + ")";
      return false;
    }

  std::map<std::string, int64_t> boundParams;
  for (auto& input : *graph.mutable_input()) {
    if (initializers.count(input.name())) continue;  // an initializer listed as input (IR < 4)
    if (!input.type().has_tensor_type()) {
      *error = "graph input '" + input.name() + "' is not a tensor (sequences, maps and optionals are not supported)";
      return false;
    }
    auto* tensorType = input.mutable_type()->mutable_tensor_type();
    auto it = given.find(input.name());
    if (!tensorType->has_shape()) {
      if (it == given.end()) {
        *error = "graph input '" + input.name() + "' has no shape (not even a rank); give it with --input-shape " +
                 input.name() + "=D0xD1x...";
        return false;
      }
      tensorType->mutable_shape();
      for (size_t i = 0; i < it->second->size(); ++i) tensorType->mutable_shape()->add_dim();
    }
    auto* shape = tensorType->mutable_shape();
    if (it != given.end() && static_cast<size_t>(shape->dim_size()) != it->second->size()) {
      *error = "--input-shape " + input.name() + "=" + shapeText(*it->second) + " has rank " +
               std::to_string(it->second->size()) + ", but the input has rank " + std::to_string(shape->dim_size());
      return false;
    }
    for (int d = 0; d < shape->dim_size(); ++d) {
      auto* dim = shape->mutable_dim(d);
      std::optional<int64_t> value;
      if (it != given.end()) {
        value = (*it->second)[d];
        if (dim->has_dim_value() && dim->dim_value() != *value) {
          *error = "--input-shape " + input.name() + "=" + shapeText(*it->second) + " gives dim " + std::to_string(d) +
                   " as " + std::to_string(*value) + ", but the model fixes it to " + std::to_string(dim->dim_value());
          return false;
        }
      } else if (dim->has_dim_value()) {
        value = dim->dim_value();
      } else if (dim->has_dim_param() && boundParams.count(dim->dim_param())) {
        value = boundParams[dim->dim_param()];
      } else if (d == 0 && options.batch) {
        value = *options.batch;
      }
      if (!value) {
        *error = "graph input '" + input.name() + "' has the symbolic dim " + std::to_string(d) + " (" + dimText(*dim) +
                 "); bind it with --input-shape " + input.name() + "=D0xD1x..." +
                 (d == 0 ? " or --batch=N" : "") + " (every shape must be static)";
        return false;
      }
      if (*value <= 0) {
        *error = "graph input '" + input.name() + "': dim " + std::to_string(d) + " must be positive, got " +
                 std::to_string(*value);
        return false;
      }
      if (dim->has_dim_param() && !dim->dim_param().empty()) {
        auto [bound, inserted] = boundParams.emplace(dim->dim_param(), *value);
        if (!inserted && bound->second != *value) {
          *error = "the symbolic dim '" + dim->dim_param() + "' is bound to both " + std::to_string(bound->second) +
                   " and " + std::to_string(*value) + " (graph input '" + input.name() + "')";
          return false;
        }
      }
      dim->set_dim_value(*value);
    }
  }
  // Outputs and intermediate values: bound params become values, others are left to inference.
  auto rebind = [&](onnx::ValueInfoProto& info) {
    if (!info.type().has_tensor_type() || !info.type().tensor_type().has_shape()) return;
    for (auto& dim : *info.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim()) {
      if (dim.has_dim_value()) continue;
      auto bound = dim.has_dim_param() ? boundParams.find(dim.dim_param()) : boundParams.end();
      if (bound != boundParams.end())
        dim.set_dim_value(bound->second);
      else
        dim.clear_dim_param();
    }
  };
  for (auto& output : *graph.mutable_output()) rebind(output);
  for (auto& info : *graph.mutable_value_info()) rebind(info);
  return true;
}

}  // namespace

int64_t defaultOpsetVersion(const onnx::ModelProto& model) {
  for (const auto& opset : model.opset_import())
    if (isDefaultDomain(opset.domain())) return opset.version();
  return 0;
}

std::optional<onnx::ModelProto> loadOnnxModel(llvm::StringRef bytes, const ImportOptions& options,
                                              std::string* error) {
  onnx::ModelProto model;
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())) || !model.has_graph()) {
    *error = "not a valid ONNX model (the file does not parse as an onnx.ModelProto with a graph)";
    return std::nullopt;
  }
  try {
    int64_t opset = defaultOpsetVersion(model);
    if (opset == 0) {
      *error = "the model imports no opset of the default ONNX domain";
      return std::nullopt;
    }
    if (opset > kTargetOpset) {
      *error = "the model uses opset " + std::to_string(opset) + "; ampc imports opsets " +
               std::to_string(kMinOpset) + " to " + std::to_string(kTargetOpset) +
               " (re-export with opset_version=" + std::to_string(kTargetOpset) + ")";
      return std::nullopt;
    }
    onnx::checker::check_model(model);
    if (opset < kMinOpset) {
      try {
        model = onnx::version_conversion::ConvertVersion(model, static_cast<int>(kTargetOpset));
      } catch (const std::exception& e) {
        *error = "the model uses opset " + std::to_string(opset) + ", and ONNX's version converter could not " +
                 "bring it to opset " + std::to_string(kTargetOpset) + ": " + e.what();
        return std::nullopt;
      }
    }
    if (!bindInputShapes(*model.mutable_graph(), options, error)) return std::nullopt;
    onnx::ShapeInferenceOptions inference(/*check_type=*/true, /*error_mode=*/1, /*data_prop=*/true);
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), inference);
  } catch (const onnx::checker::ValidationError& e) {
    *error = std::string("the ONNX checker refuses the model: ") + e.what();
    return std::nullopt;
  } catch (const std::exception& e) {
    *error = std::string("ONNX shape inference failed: ") + e.what();
    return std::nullopt;
  }
  return model;
}

}  // namespace mlir::amp::onnx_import
