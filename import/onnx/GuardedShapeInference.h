// ONNX shape inference, guarded node by node, stopping at the first node it cannot type.
//
// libonnx's InferShapes goes on after a node's inference fails, so the node's consumers run their
// inference functions on inputs without a type, or with ranks those functions never check (a
// Conv of a rank-5 value with a rank-7 weight read past a vector, found by fuzz-onnx). Here libonnx
// runs with a schema registry whose every inference function is wrapped: before a node's function
// runs, its inputs must be typed tensors that keep ampc's rank rules (RankRules.h); after it, its
// outputs must be within kMaxRank and the per-tensor limit; the first failure stops inference.
#ifndef AMP_IMPORT_ONNX_GUARDEDSHAPEINFERENCE_H
#define AMP_IMPORT_ONNX_GUARDEDSHAPEINFERENCE_H

#include <optional>

#include "import/onnx/ModelLoader.h"
#include "onnx/onnx_pb.h"

namespace mlir::amp::onnx_import {

// Infers every value's type of `model`'s graph into its value_info, with data propagation, as
// onnx::shape_inference::InferShapes does. The error names the node it stops at.
std::optional<LoadError> inferShapesGuarded(onnx::ModelProto& model);

}  // namespace mlir::amp::onnx_import

#endif  // AMP_IMPORT_ONNX_GUARDEDSHAPEINFERENCE_H
