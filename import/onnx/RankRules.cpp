#include "import/onnx/RankRules.h"

#include <algorithm>
#include <vector>

#include "import/onnx/HostTensor.h"

namespace mlir::amp::onnx_import {
namespace {

// The operand of `opType` whose element count becomes a rank (or adds to one), if any.
std::optional<int> rankOperand(const std::string& opType) {
  if (opType == "Expand" || opType == "Reshape" || opType == "Unsqueeze") return 1;
  if (opType == "ConstantOfShape") return 0;
  return std::nullopt;
}

}  // namespace

std::optional<std::string> checkInputRanks(const onnx::NodeProto& node, InputRank rank, InputLength length) {
  const std::string& type = node.op_type();
  auto rankOf = [&](int k) { return k < node.input_size() && !node.input(k).empty() ? rank(k) : std::nullopt; };
  if (type == "Conv" || type == "ConvTranspose" || type == "MaxPool" || type == "AveragePool") {
    const std::optional<int64_t> x = rankOf(0);
    if (x && *x < 3)
      return "its input '" + node.input(0) + "' has rank " + std::to_string(*x) + "; " + type +
             " needs [N, C, spatial...] (rank 3 or more)";
    if (type == "Conv" || type == "ConvTranspose") {
      const std::optional<int64_t> w = rankOf(1), b = rankOf(2);
      if (x && w && *w != *x)
        return "its weight '" + node.input(1) + "' has rank " + std::to_string(*w) + ", not its input's rank " +
               std::to_string(*x);
      if (b && *b != 1) return "its bias '" + node.input(2) + "' has rank " + std::to_string(*b) + ", not 1";
    }
  }
  const std::optional<int> operand = rankOperand(type);
  if (!operand || *operand >= node.input_size() || node.input(*operand).empty()) return std::nullopt;
  const std::optional<int64_t> n = length(*operand);
  if (n && *n > kMaxRank)
    return "its shape operand '" + node.input(*operand) + "' has " + std::to_string(*n) +
           " elements, a rank above the most ampc imports (" + std::to_string(kMaxRank) + ")";
  return std::nullopt;
}

std::optional<std::string> checkTensorTypeSize(const onnx::TypeProto_Tensor& type) {
  std::vector<int64_t> dims;
  for (const auto& d : type.shape().dim())
    if (d.has_dim_value()) dims.push_back(d.dim_value());
  const std::optional<int64_t> count = checkedNumel(dims);
  const int64_t bytes = std::max<int64_t>(1, elementBytes(type.elem_type()));
  if (count && *count <= kMaxTensorBytes / bytes) return std::nullopt;
  std::string text;
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? "x" : "") + std::to_string(dims[i]);
  return text + (count ? ", more than the runtime's limit of " + std::to_string(kMaxTensorBytes) + " bytes per tensor"
                       : ", whose product is negative or overflows int64");
}

}  // namespace mlir::amp::onnx_import
