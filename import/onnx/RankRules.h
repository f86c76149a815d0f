// The rank rules ampc applies to a node's inputs before libonnx infers its shapes: the same rules
// for ranks a model declares (screening, before libonnx sees the model) and for ranks libonnx has
// inferred (guarded shape inference, before each node's inference function runs). libonnx's
// inference functions trust these ranks; each rule below was found violated by fuzz-onnx.
#ifndef AMP_IMPORT_ONNX_RANKRULES_H
#define AMP_IMPORT_ONNX_RANKRULES_H

#include <cstdint>
#include <optional>
#include <string>

#include "llvm/ADT/STLFunctionalExtras.h"
#include "onnx/onnx_pb.h"

namespace mlir::amp::onnx_import {

// The highest rank a value may have. libonnx's shape inference builds an output of rank L from a
// shape operand of L elements (Expand, Reshape, ConstantOfShape, Unsqueeze's axes) before knowing
// its values: a shape operand of 2^40 elements exhausted memory there.
inline constexpr int64_t kMaxRank = 32;

// The rank of the node's input k, and the element count of a rank-1 input k, where known.
using InputRank = llvm::function_ref<std::optional<int64_t>(int input)>;
using InputLength = llvm::function_ref<std::optional<int64_t>(int input)>;

// Why `node`'s inputs break a rank rule (a sentence to follow describeNode), or nullopt:
// - convolution and pooling: the input [N, C, spatial...] of rank >= 3, Conv's weight of the
//   input's rank, its bias a vector (libonnx's convPoolShapeInference indexes them unchecked);
// - a shape operand (Expand, Reshape, Unsqueeze, ConstantOfShape) at most kMaxRank long.
std::optional<std::string> checkInputRanks(const onnx::NodeProto& node, InputRank rank, InputLength length);

// Why a tensor type's known dims are too large (the dims and a reason: "AxB, more than the
// runtime's limit of ... bytes per tensor"), or nullopt. libonnx sizes buffers by declared shapes,
// and ampc by inferred ones; symbolic dims are skipped.
std::optional<std::string> checkTensorTypeSize(const onnx::TypeProto_Tensor& type);

}  // namespace mlir::amp::onnx_import

#endif  // AMP_IMPORT_ONNX_RANKRULES_H
