// The structure-aware mutator of the onnx target: most mutations parse the input as an
// onnx.ModelProto, change what a hostile model would (a dim of an initializer, a Constant or a
// graph input; an integer attribute; an initializer's data, its size or one of its int64 values;
// an op_type; a node's input; a node deleted or duplicated) and serialize it again. Byte-level
// mutations stop at protobuf's parser; these reach the screening, libonnx's checker and shape
// inference, the folds and the converters.
#ifndef AMP_FUZZ_ONNXMUTATOR_H
#define AMP_FUZZ_ONNXMUTATOR_H

#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "onnx/onnx_pb.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t maxSize);

namespace amp::fuzz {

namespace onnx_detail {

// Values that break size and index arithmetic, and ordinary small ones.
inline int64_t edgeInt(std::mt19937_64& rng) {
  static const int64_t kEdges[] = {0,
                                   1,
                                   -1,
                                   2,
                                   3,
                                   -2,
                                   7,
                                   64,
                                   int64_t{1} << 20,
                                   int64_t{1} << 24,
                                   (int64_t{1} << 24) + 1,
                                   int64_t{1} << 31,
                                   int64_t{1} << 32,
                                   int64_t{1} << 40,
                                   int64_t{1} << 62,
                                   std::numeric_limits<int64_t>::max(),
                                   std::numeric_limits<int64_t>::min(),
                                   std::numeric_limits<int32_t>::max(),
                                   std::numeric_limits<int32_t>::min()};
  if (rng() % 3 == 0) return static_cast<int64_t>(rng() % 9) - 2;
  return kEdges[rng() % (sizeof(kEdges) / sizeof(kEdges[0]))];
}

inline double edgeFloat(std::mt19937_64& rng) {
  static const double kEdges[] = {0.0, -0.0, 1.0, -1.0, 0.5, 1e30, -1e30, 3e38, 1e-45,
                                  std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                                  std::numeric_limits<double>::quiet_NaN(), 9.3e18, -9.3e18};
  return kEdges[rng() % (sizeof(kEdges) / sizeof(kEdges[0]))];
}

// Every tensor of the model a mutation may change: initializers and attribute values.
inline std::vector<onnx::TensorProto*> tensorsOf(onnx::ModelProto& model) {
  std::vector<onnx::TensorProto*> out;
  auto* graph = model.mutable_graph();
  for (auto& t : *graph->mutable_initializer()) out.push_back(&t);
  for (auto& node : *graph->mutable_node())
    for (auto& a : *node.mutable_attribute()) {
      if (a.has_t()) out.push_back(a.mutable_t());
      for (auto& t : *a.mutable_tensors()) out.push_back(&t);
    }
  return out;
}

// The ops ampc imports, for op_type mutations (and a few it refuses).
inline const std::vector<std::string>& opTypes() {
  static const std::vector<std::string> ops = {
      "Abs", "Add", "AveragePool", "BatchNormalization", "Cast", "Clip", "Concat", "Constant", "ConstantOfShape",
      "Conv", "Div", "Dropout", "Equal", "Erf", "Exp", "Expand", "Flatten", "Gather", "Gemm", "GlobalAveragePool",
      "Greater", "HardSigmoid", "HardSwish", "Identity", "LayerNormalization", "LeakyRelu", "Less", "Log",
      "LogSoftmax", "MatMul", "Max", "MaxPool", "Mean", "Min", "Mul", "Neg", "Pad", "Pow", "Range", "Reciprocal",
      "ReduceMax", "ReduceMean", "ReduceSum", "Relu", "Reshape", "Shape", "Sigmoid", "Slice", "Softmax", "Split",
      "Sqrt", "Squeeze", "Sub", "Sum", "Tanh", "Transpose", "Trilu", "Unsqueeze", "Where", "Tile", "TopK", "Resize"};
  return ops;
}

// One mutation of a parsed model; false when the chosen kind had nothing to change.
inline bool mutateOnce(onnx::ModelProto& model, std::mt19937_64& rng) {
  auto* graph = model.mutable_graph();
  auto pick = [&](size_t n) { return static_cast<int>(rng() % n); };
  switch (rng() % 10) {
    case 0: {  // a dim of a tensor (initializer or attribute value)
      auto tensors = tensorsOf(model);
      if (tensors.empty()) return false;
      onnx::TensorProto* t = tensors[pick(tensors.size())];
      if (t->dims_size() == 0 || rng() % 4 == 0) {
        t->add_dims(edgeInt(rng));
      } else {
        t->set_dims(pick(t->dims_size()), edgeInt(rng));
      }
      return true;
    }
    case 1: {  // an integer attribute, or one entry of an ints attribute
      std::vector<onnx::AttributeProto*> attrs;
      for (auto& node : *graph->mutable_node())
        for (auto& a : *node.mutable_attribute())
          if (a.type() == onnx::AttributeProto::INT || a.ints_size()) attrs.push_back(&a);
      if (attrs.empty()) return false;
      onnx::AttributeProto* a = attrs[pick(attrs.size())];
      if (a->ints_size()) {
        if (rng() % 5 == 0)
          a->add_ints(edgeInt(rng));
        else
          a->set_ints(pick(a->ints_size()), edgeInt(rng));
      } else {
        a->set_i(edgeInt(rng));
      }
      return true;
    }
    case 2: {  // a float attribute
      std::vector<onnx::AttributeProto*> attrs;
      for (auto& node : *graph->mutable_node())
        for (auto& a : *node.mutable_attribute())
          if (a.type() == onnx::AttributeProto::FLOAT) attrs.push_back(&a);
      if (attrs.empty()) return false;
      attrs[pick(attrs.size())]->set_f(static_cast<float>(edgeFloat(rng)));
      return true;
    }
    case 3: {  // a tensor's data: one int64 or float value, or its size
      auto tensors = tensorsOf(model);
      if (tensors.empty()) return false;
      onnx::TensorProto* t = tensors[pick(tensors.size())];
      std::string* raw = t->mutable_raw_data();
      if (t->int64_data_size()) {
        t->set_int64_data(pick(t->int64_data_size()), edgeInt(rng));
      } else if (t->float_data_size()) {
        t->set_float_data(pick(t->float_data_size()), static_cast<float>(edgeFloat(rng)));
      } else if (raw->size() >= 8 && t->data_type() == onnx::TensorProto::INT64) {
        int64_t v = edgeInt(rng);
        std::memcpy(raw->data() + 8 * pick(raw->size() / 8), &v, 8);
      } else if (raw->size() >= 4 && t->data_type() == onnx::TensorProto::FLOAT) {
        float v = static_cast<float>(edgeFloat(rng));
        std::memcpy(raw->data() + 4 * pick(raw->size() / 4), &v, 4);
      } else if (!raw->empty()) {
        raw->resize(rng() % 2 ? raw->size() / 2 : raw->size() + 1 + rng() % 8);
      } else {
        return false;
      }
      return true;
    }
    case 4: {  // a graph input's dim
      if (graph->input_size() == 0) return false;
      auto* type = graph->mutable_input(pick(graph->input_size()))->mutable_type();
      if (!type->has_tensor_type()) return false;
      auto* shape = type->mutable_tensor_type()->mutable_shape();
      if (shape->dim_size() == 0 || rng() % 5 == 0)
        shape->add_dim()->set_dim_value(edgeInt(rng));
      else
        shape->mutable_dim(pick(shape->dim_size()))->set_dim_value(edgeInt(rng));
      return true;
    }
    case 5: {  // an op_type
      if (graph->node_size() == 0) return false;
      graph->mutable_node(pick(graph->node_size()))->set_op_type(opTypes()[pick(opTypes().size())]);
      return true;
    }
    case 6: {  // a node's input, to another value of the graph
      if (graph->node_size() == 0) return false;
      std::vector<std::string> names;
      for (const auto& i : graph->input()) names.push_back(i.name());
      for (const auto& i : graph->initializer()) names.push_back(i.name());
      for (const auto& n : graph->node())
        for (const auto& o : n.output()) names.push_back(o);
      auto* node = graph->mutable_node(pick(graph->node_size()));
      if (names.empty()) return false;
      if (node->input_size() == 0 || rng() % 4 == 0)
        node->add_input(names[pick(names.size())]);
      else
        node->set_input(pick(node->input_size()), names[pick(names.size())]);
      return true;
    }
    case 7: {  // a node deleted or duplicated
      if (graph->node_size() == 0) return false;
      const int i = pick(graph->node_size());
      if (rng() % 2) {
        graph->mutable_node()->DeleteSubrange(i, 1);
      } else {
        *graph->add_node() = graph->node(i);
      }
      return true;
    }
    case 8: {  // an element type
      auto tensors = tensorsOf(model);
      static const int kTypes[] = {onnx::TensorProto::FLOAT, onnx::TensorProto::INT64, onnx::TensorProto::INT32,
                                   onnx::TensorProto::BOOL,  onnx::TensorProto::FLOAT16, onnx::TensorProto::DOUBLE,
                                   onnx::TensorProto::UINT8, onnx::TensorProto::STRING, 0, 99};
      const int type = kTypes[pick(sizeof(kTypes) / sizeof(kTypes[0]))];
      if (!tensors.empty() && rng() % 2) {
        tensors[pick(tensors.size())]->set_data_type(type);
      } else if (graph->input_size()) {
        graph->mutable_input(pick(graph->input_size()))->mutable_type()->mutable_tensor_type()->set_elem_type(type);
      } else {
        return false;
      }
      return true;
    }
    default: {  // an attribute's string (Cast's to, a pad mode), or the opset
      if (rng() % 2 && model.opset_import_size()) {
        model.mutable_opset_import(0)->set_version(static_cast<int64_t>(rng() % 20));
        return true;
      }
      std::vector<onnx::AttributeProto*> attrs;
      for (auto& node : *graph->mutable_node())
        for (auto& a : *node.mutable_attribute()) attrs.push_back(&a);
      if (attrs.empty()) return false;
      onnx::AttributeProto* a = attrs[pick(attrs.size())];
      static const char* kNames[] = {"strides", "pads", "dilations", "kernel_shape", "group", "axis", "axes", "perm",
                                     "to", "value", "upper", "keepdims", "allowzero", "transB", "epsilon"};
      a->set_name(kNames[pick(sizeof(kNames) / sizeof(kNames[0]))]);
      return true;
    }
  }
}

}  // namespace onnx_detail

// libFuzzer's custom mutator for ONNX models; one mutation in five is byte-level.
inline size_t mutateOnnxModel(uint8_t* data, size_t size, size_t maxSize, unsigned int seed) {
  std::mt19937_64 rng(seed);
  onnx::ModelProto model;
  if (rng() % 5 == 0 || size > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !model.ParseFromArray(data, static_cast<int>(size)) || !model.has_graph())
    return LLVMFuzzerMutate(data, size, maxSize);
  bool changed = false;
  for (int n = 1 + static_cast<int>(rng() % 3), tries = 0; n > 0 && tries < 16; ++tries)
    if (onnx_detail::mutateOnce(model, rng)) {
      changed = true;
      --n;
    }
  std::string out;
  if (!changed || !model.SerializeToString(&out) || out.size() > maxSize) return LLVMFuzzerMutate(data, size, maxSize);
  std::memcpy(data, out.data(), out.size());
  return out.size();
}

}  // namespace amp::fuzz

#endif  // AMP_FUZZ_ONNXMUTATOR_H
