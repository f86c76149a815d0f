// amp.gemm_epilogue on the reference: the unfused ops it stands for (the table in
// ir/AmpFusedOps.td), each evaluated by its own reference kernel, so the results are their bits.
#include "runtime/reference/ReferenceGemmEpilogue.h"

#include "runtime/numerics/Convert.h"
#include "runtime/schema/CublasLtEpilogue.h"

namespace amp::rt::ref {
namespace {

// One unfused op's single result.
absl::StatusOr<Tensor> unfused(const OpCall& c, OpCode code, std::vector<const Tensor*> operands,
                               const AttrMap& attrs, TensorType type) {
  const std::string_view op = opName(code);
  auto out = evalReferenceOp(op, operands, attrs, {type}, c.ctx);
  if (!out.ok()) return c.error("as ", alpha(op), ": ", alpha(out.status().message()));
  return std::move((*out)[0]);
}

Tensor positiveZero(DType dtype) {
  Tensor zero(dtype, Shape{});
  storeFromF32(dtype, zero.data(), 0, 0.0f);
  return zero;
}

// reduce_sum over every dim but the last (a bias gradient).
absl::StatusOr<Tensor> rowSum(const OpCall& c, const Tensor& x, TensorType type) {
  AttrMap attrs;
  std::vector<int64_t> dims;
  for (int64_t d = 0; d + 1 < x.rank(); ++d) dims.push_back(d);
  attrs.set("dims", dims);
  return unfused(c, OpCode::ReduceSum, {&x}, attrs, std::move(type));
}

}  // namespace

absl::StatusOr<std::vector<Tensor>> evalGemmEpilogue(const OpCall& c) {
  REF_RETURN_IF_ERROR(expectOperands(c, 2, 3));
  const GemmEpilogueAttrs& attrs = c.attrsOf<GemmEpilogueAttrs>();
  const std::string_view kindName = gemmEpilogueKindKeyword(attrs.kind);
  const std::optional<cuda::EpilogueKind> kind = cuda::parseEpilogueKind(kindName);
  if (!kind) return c.error("unknown kind '", kindName, "'");
  const bool ta = attrs.transposeA, tb = attrs.transposeB;
  using K = cuda::EpilogueKind;
  const K k = *kind;
  const bool third = k == K::ReluAuxBias || k == K::GeluAuxBias || k == K::GeluBias || k == K::DRelu ||
                     k == K::DReluBgrad || k == K::DGelu || k == K::DGeluBgrad;
  const bool twoResults = k != K::GeluBias && k != K::DRelu && k != K::DGelu;
  if (c.numOperands() != (third ? 3u : 2u)) return c.error(kindName, " takes ", third ? 3 : 2, " operands");
  if (c.results.size() != (twoResults ? 2u : 1u)) return c.error(kindName, " gives ", twoResults ? 2 : 1, " results");
  const TensorType& dType = c.results[0];
  std::vector<Tensor> out;
  switch (k) {
    case K::ReluAux:
    case K::ReluAuxBias:
    case K::GeluAux:
    case K::GeluAuxBias:
    case K::GeluBias: {
      // amp.linear's layer: lhs the input, rhs the weight (transpose_b is its transpose_w).
      if (ta) return c.error(kindName, " is a linear layer: lhs is not transposed");
      const bool relu = k == K::ReluAux || k == K::ReluAuxBias;
      AttrMap linear;
      linear.set("transpose_w", tb);
      linear.set("activation", std::string(relu ? "relu" : "none"));
      std::vector<const Tensor*> operands = {&c.in(0), &c.in(1)};
      if (third) operands.push_back(&c.in(2));
      REF_ASSIGN_OR_RETURN(Tensor pre, unfused(c, OpCode::Linear, operands, linear, dType));
      if (relu) {
        const Tensor zero = positiveZero(pre.dtype());
        AttrMap gt;
        gt.set("predicate", std::string("gt"));
        REF_ASSIGN_OR_RETURN(Tensor mask, unfused(c, OpCode::Compare, {&pre, &zero}, gt, c.results[1]));
        out.push_back(std::move(pre));
        out.push_back(std::move(mask));
        break;
      }
      AttrMap tanh;
      tanh.set("approximate", std::string("tanh"));
      REF_ASSIGN_OR_RETURN(Tensor d, unfused(c, OpCode::Gelu, {&pre}, tanh, dType));
      out.push_back(std::move(d));
      if (twoResults) out.push_back(std::move(pre));
      break;
    }
    case K::DRelu:
    case K::DReluBgrad:
    case K::DGelu:
    case K::DGeluBgrad:
    case K::BgradA:
    case K::BgradB: {
      AttrMap matmul;
      matmul.set("transpose_a", ta);
      matmul.set("transpose_b", tb);
      REF_ASSIGN_OR_RETURN(Tensor product, unfused(c, OpCode::Matmul, {&c.in(0), &c.in(1)}, matmul, dType));
      if (k == K::BgradA || k == K::BgradB) {
        // The summed operand is a [K, *] matrix (lhs transposed, rhs not): its rows are K.
        const Tensor& summed = c.in(k == K::BgradA ? 0 : 1);
        if (summed.rank() != 2 || (k == K::BgradA ? !ta : tb))
          return c.error(kindName, " sums a [K, *] operand over K");
        REF_ASSIGN_OR_RETURN(Tensor db, rowSum(c, summed, c.results[1]));
        out.push_back(std::move(product));
        out.push_back(std::move(db));
        break;
      }
      Tensor dx;
      if (k == K::DRelu || k == K::DReluBgrad) {
        const Tensor zero = positiveZero(product.dtype());
        REF_ASSIGN_OR_RETURN(dx, unfused(c, OpCode::Select, {&c.in(2), &product, &zero}, AttrMap(), dType));
      } else {
        AttrMap tanh;
        tanh.set("approximate", std::string("tanh"));
        REF_ASSIGN_OR_RETURN(dx, unfused(c, OpCode::GeluGrad, {&c.in(2), &product}, tanh, dType));
      }
      if (twoResults) {
        REF_ASSIGN_OR_RETURN(Tensor db, rowSum(c, dx, c.results[1]));
        out.push_back(std::move(dx));
        out.push_back(std::move(db));
      } else {
        out.push_back(std::move(dx));
      }
      break;
    }
  }
  return out;
}

}  // namespace amp::rt::ref
