// Dispatcher of the reference kernels and the helpers they share.
#include "runtime/reference/ReferenceKernels.h"

#include "runtime/plan/Plan.h"

#include "runtime/plan/OpCode.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "runtime/reference/ReferenceCommon.h"
#include "runtime/reference/ReferenceGemmEpilogue.h"
#include "runtime/reference/ReferenceGrad.h"
#include "runtime/reference/ReferenceTrain.h"
#include "runtime/numerics/Convert.h"

namespace amp::rt {
namespace ref {

std::string typeString(DType dtype, const Shape& shape) {
  return absl::StrCat(alpha(dtypeName(dtype)), shapeToString(shape));
}
std::string typeString(const Tensor& t) { return typeString(t.dtype(), t.shape()); }

bool isComputeFloat(DType t) { return isFloat(t) && t != DType::F64; }
bool isIndexType(DType t) { return t == DType::I32 || t == DType::I64; }

absl::Status expectOperands(const OpCall& c, size_t lo, size_t hi) {
  size_t n = c.numOperands();
  if (n >= lo && n <= hi) return absl::OkStatus();
  if (lo == hi) return c.error("expected ", lo, " operand(s), got ", n);
  return c.error("expected ", lo, " to ", hi, " operands, got ", n);
}

absl::Status expectFloatOperand(const OpCall& c, size_t i) {
  if (isComputeFloat(c.in(i).dtype())) return absl::OkStatus();
  return c.error("operand ", i, " has element type ", dtypeName(c.in(i).dtype()),
                 "; expected f32, f16, bf16 or f8");
}

absl::Status expectRank(const OpCall& c, size_t i, int64_t rank) {
  if (c.in(i).rank() == rank) return absl::OkStatus();
  return c.error("operand ", i, " must have rank ", rank, ", got ", typeString(c.in(i)));
}

absl::Status expectSameDType(const OpCall& c, size_t i, size_t j) {
  if (c.in(i).dtype() == c.in(j).dtype()) return absl::OkStatus();
  return c.error("operands ", i, " and ", j, " must have the same element type, got ",
                 dtypeName(c.in(i).dtype()), " and ", dtypeName(c.in(j).dtype()));
}

std::vector<float> widen(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = loadAsF32(t.dtype(), t.data(), i);
  return v;
}

Tensor narrow(DType dtype, const Shape& shape, const std::vector<float>& values) {
  Tensor t(dtype, shape);
  for (int64_t i = 0; i < t.numel(); ++i) storeFromF32(dtype, t.data(), i, values[i]);
  return t;
}

int64_t loadIndex(const Tensor& t, int64_t i) {
  if (t.dtype() == DType::I64) return t.as<int64_t>()[i];
  return t.as<int32_t>()[i];
}

std::vector<int64_t> rowMajorStrides(const Shape& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d) s[d] = s[d + 1] * shape[d + 1];
  return s;
}

std::string indexString(const Shape& shape, int64_t i) {
  Shape idx(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    idx[d] = shape[d] ? i % shape[d] : 0;
    i = shape[d] ? i / shape[d] : 0;
  }
  return shapeToString(idx);
}

absl::StatusOr<Shape> broadcastShapes(const OpCall& c, const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (const Shape& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const Shape& s : shapes) {
    size_t off = rank - s.size();
    for (size_t d = 0; d < s.size(); ++d) {
      int64_t& o = out[off + d];
      if (s[d] == o || s[d] == 1) continue;
      if (o != 1) {
        std::string all;
        for (const Shape& t : shapes) absl::StrAppend(&all, all.empty() ? "" : ", ", shapeToString(t));
        return c.error("operand shapes ", all, " are not broadcast-compatible");
      }
      o = s[d];
    }
  }
  return out;
}

std::vector<int64_t> stridedIndexMap(const Shape& out, const std::vector<int64_t>& strides,
                                     int64_t offset) {
  int64_t n = numElements(out);
  std::vector<int64_t> map(static_cast<size_t>(n));
  Shape idx(out.size(), 0);
  int64_t pos = offset;
  for (int64_t i = 0; i < n; ++i) {
    map[i] = pos;
    for (int64_t d = static_cast<int64_t>(out.size()) - 1; d >= 0; --d) {  // odometer increment
      pos += strides[d];
      if (++idx[d] < out[d]) break;
      pos -= strides[d] * idx[d];
      idx[d] = 0;
    }
  }
  return map;
}

std::vector<int64_t> broadcastIndexMap(const Shape& in, const Shape& out) {
  size_t off = out.size() - in.size();
  std::vector<int64_t> inStrides = rowMajorStrides(in);
  // Stride of each output dim in the input: 0 where the input dim is missing or broadcast.
  std::vector<int64_t> st(out.size(), 0);
  for (size_t d = 0; d < in.size(); ++d) st[off + d] = in[d] == 1 ? 0 : inStrides[d];
  return stridedIndexMap(out, st, 0);
}

Tensor gatherElements(const Tensor& in, const Shape& outShape, const std::vector<int64_t>& map) {
  Tensor out(in.dtype(), outShape);
  const size_t es = dtypeSize(in.dtype());
  for (size_t i = 0; i < map.size(); ++i) std::memcpy(out.data() + i * es, in.data() + map[i] * es, es);
  return out;
}

absl::StatusOr<std::vector<int64_t>> checkPair(const OpCall& c, std::string_view attr, std::vector<int64_t> v,
                                               int64_t minValue) {
  if (v.size() != 2)
    return c.error("attribute '", attr, "' must have 2 entries, got ", v.size());
  for (int64_t x : v)
    if (x < minValue) return c.error("attribute '", attr, "' entries must be >= ", minValue, ", got ", x);
  return v;
}

}  // namespace ref

namespace {

// Every op's kernel, by op type. No default: the compiler checks (-Werror=switch) that each op of
// the dialect (runtime/plan/OpCatalog.inc) is listed, so an op without a kernel does not build.
struct Kernels {
  ref::Kernel single = nullptr;     // one result
  ref::MultiKernel multi = nullptr;  // several results (one tensor per result type, in order)
};

Kernels kernelFor(OpCode op) {
  using namespace ref;
  switch (op) {
    case OpCode::Constant: return {evalConstant};
    case OpCode::Neg: case OpCode::Abs: case OpCode::Exp: case OpCode::Log: case OpCode::Sqrt:
    case OpCode::Rsqrt: case OpCode::Reciprocal: case OpCode::Tanh: case OpCode::Erf:
    case OpCode::Sigmoid: case OpCode::Relu: case OpCode::Silu: case OpCode::Gelu:
      return {evalUnary};
    case OpCode::Add: case OpCode::Sub: case OpCode::Mul: case OpCode::Div: case OpCode::Maximum:
    case OpCode::Minimum: case OpCode::Pow:
      return {evalBinary};
    case OpCode::Compare: return {evalCompare};
    case OpCode::Select: return {evalSelect};
    case OpCode::Matmul: return {evalMatmul};
    case OpCode::Linear: return {evalLinear};
    case OpCode::Conv2D: return {evalConv2d};
    case OpCode::MaxPool2D: case OpCode::AvgPool2D: return {evalPool2d};
    case OpCode::ReduceSum: case OpCode::ReduceMean: case OpCode::ReduceMax: return {evalReduce};
    case OpCode::Softmax: case OpCode::LogSoftmax: return {evalSoftmax};
    case OpCode::LayerNorm: return {evalLayerNorm};
    case OpCode::RmsNorm: return {evalRmsNorm};
    case OpCode::BatchNorm: return {nullptr, evalBatchNorm};
    case OpCode::Embedding: return {evalEmbedding};
    case OpCode::Dropout: return {evalDropout};
    case OpCode::Reshape: return {evalReshape};
    case OpCode::Transpose: return {evalTranspose};
    case OpCode::BroadcastTo: return {evalBroadcastTo};
    case OpCode::Slice: return {evalSlice};
    case OpCode::Concat: return {evalConcat};
    case OpCode::CrossEntropy: return {evalCrossEntropy};
    case OpCode::MseLoss: return {evalMseLoss};
    case OpCode::Cast: return {evalCast};
    // Gradient ops (amp-autodiff).
    case OpCode::GeluGrad: return {evalGeluGrad};
    case OpCode::SoftmaxGrad: return {evalSoftmaxGrad};
    case OpCode::Conv2DGradInput: return {evalConv2dGradInput};
    case OpCode::Conv2DGradWeight: return {evalConv2dGradWeight};
    case OpCode::MaxPool2DGrad: return {evalMaxPool2dGrad};
    case OpCode::AvgPool2DGrad: return {evalAvgPool2dGrad};
    case OpCode::EmbeddingGrad: return {evalEmbeddingGrad};
    case OpCode::CrossEntropyGrad: return {evalCrossEntropyGrad};
    case OpCode::SliceGrad: return {evalSliceGrad};
    case OpCode::LayerNormGrad: return {nullptr, evalLayerNormGrad};
    case OpCode::RmsNormGrad: return {nullptr, evalRmsNormGrad};
    case OpCode::BatchNormGrad: return {nullptr, evalBatchNormGrad};
    // Loss scaling, clipping and optimizer steps (amp-loss-scaling, amp-optimizer).
    case OpCode::GlobalNorm: return {evalGlobalNorm};
    case OpCode::LrSchedule: return {evalLrSchedule};
    case OpCode::UnscaleCheck: return {nullptr, evalUnscaleCheck};
    case OpCode::GradStats: return {nullptr, evalGradStats};
    case OpCode::UpdateScale: return {nullptr, evalUpdateScale};
    case OpCode::ClipGrads: return {nullptr, evalClipGrads};
    case OpCode::StepCounters: return {nullptr, evalStepCounters};
    case OpCode::SgdUpdate: return {nullptr, evalSgdUpdate};
    case OpCode::AdamUpdate: return {nullptr, evalAdamUpdate};
    // Data-parallel collectives (amp-data-parallel).
    case OpCode::AllReduce: return {nullptr, evalAllReduce};
    case OpCode::ReduceScatter: return {nullptr, evalReduceScatter};
    case OpCode::AllGather: return {nullptr, evalAllGather};
    case OpCode::RankChunk: return {evalRankChunk};
    // A GEMM with a cuBLASLt epilogue (amp-select-gemm-epilogues): the unfused ops it replaces.
    case OpCode::GemmEpilogue: return {nullptr, evalGemmEpilogue};
    // Structure, not kernels: an executor runs a fused step as a whole (the reference device runs
    // its body op by op), and amp.yield ends the body.
    case OpCode::Fused: case OpCode::Yield:
      return {};
  }
  return {};
}

bool hasValidDims(const Shape& s) {
  return std::all_of(s.begin(), s.end(), [](int64_t d) { return d >= 0; });
}

}  // namespace

std::vector<std::string_view> referenceOpNames() {
  std::vector<std::string_view> names;
  for (size_t i = 0; i < kOpCodeCount; ++i) {
    const Kernels k = kernelFor(static_cast<OpCode>(i));
    if (k.single || k.multi) names.push_back(kOpNames[i]);
  }
  return names;  // the catalogue is sorted by name
}

absl::StatusOr<std::vector<Tensor>> evalReferenceOp(std::string_view opName,
                                                    absl::Span<const Tensor* const> operands,
                                                    const AttrMap& attrs,
                                                    absl::Span<const TensorType> resultTypes,
                                                    const EvalContext& ctx, const OpAttrs* decoded) {
  const std::optional<OpCode> code = opCodeOf(opName);
  const Kernels kernels = code ? kernelFor(*code) : Kernels{};
  if (!kernels.single && !kernels.multi)
    return absl::InvalidArgumentError(absl::StrCat("reference executor: unknown op '", ref::alpha(opName), "'"));
  OpAttrs decodedHere;
  if (!decoded || !attrsDecodedFor(*decoded, *code)) {
    auto d = decodeOpAttrs(*code, attrs);
    if (!d.ok()) return d.status();
    decodedHere = *std::move(d);
    decoded = &decodedHere;
  }
  ref::OpCall call{opName, *code, operands, attrs, resultTypes, ctx, *decoded};
  for (size_t i = 0; i < operands.size(); ++i) {
    const Tensor* t = operands[i];
    if (!t) return call.error("operand ", i, " is null");
    if (!hasValidDims(t->shape())) return call.error("operand ", i, " has a negative dimension");
    if (t->numel() > 0 && !t->data()) return call.error("operand ", i, " has no storage");
  }
  if (kernels.multi) {
    for (const TensorType& t : resultTypes)
      if (!hasValidDims(t.shape))
        return call.error("result type ", ref::typeString(t.dtype, t.shape), " has a negative dimension");
    REF_ASSIGN_OR_RETURN(std::vector<Tensor> outs, kernels.multi(call));
    if (outs.size() != resultTypes.size())
      return call.error("expected ", outs.size(), " result types, got ", resultTypes.size());
    for (size_t r = 0; r < outs.size(); ++r)
      if (outs[r].dtype() != resultTypes[r].dtype || outs[r].shape() != resultTypes[r].shape)
        return call.error("result type #", r, " ", ref::typeString(resultTypes[r].dtype, resultTypes[r].shape),
                          " does not match the computed type ", ref::typeString(outs[r]));
    return outs;
  }
  if (resultTypes.size() != 1) return call.error("expected 1 result type, got ", resultTypes.size());
  if (!hasValidDims(resultTypes[0].shape))
    return call.error("result type ", ref::typeString(resultTypes[0].dtype, resultTypes[0].shape),
                      " has a negative dimension");

  REF_ASSIGN_OR_RETURN(Tensor out, kernels.single(call));
  // The compiler's inferred type must be what the op computes: a mismatch is a compiler bug.
  const TensorType& want = resultTypes[0];
  if (out.dtype() != want.dtype || out.shape() != want.shape)
    return call.error("result type ", ref::typeString(want.dtype, want.shape),
                      " does not match the computed type ", ref::typeString(out));
  std::vector<Tensor> results;
  results.push_back(std::move(out));
  return results;
}

}  // namespace amp::rt
