// The amp dialect through its C++ API: result types inferred by the builders, inference and
// verifier failures with their diagnostics, and the model convention (verifyModel) on models
// built programmatically and parsed from text.
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/AmpDialect.h"
#include "ir/AmpOps.h"
#include "ir/ModelConvention.h"
#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

using namespace mlir;
using namespace mlir::amp;

namespace {

// Collects every diagnostic emitted while it is alive, with its location.
struct Diagnostics {
  explicit Diagnostics(MLIRContext* ctx)
      : handler(ctx, [this](Diagnostic& d) {
          messages.push_back(d.str());
          locations.push_back(d.getLocation());
          return success();
        }) {}
  bool contains(const std::string& needle) const {
    for (const auto& m : messages)
      if (m.find(needle) != std::string::npos) return true;
    return false;
  }
  std::string all() const {
    std::string s;
    for (const auto& m : messages) s += m + "\n";
    return s;
  }
  std::vector<std::string> messages;
  std::vector<Location> locations;
  ScopedDiagnosticHandler handler;
};

class AmpIrTest : public ::testing::Test {
 protected:
  AmpIrTest() : builder(&ctx) {
    DialectRegistry registry;
    registry.insert<AmpDialect, func::FuncDialect>();
    ctx.appendDialectRegistry(registry);
    ctx.loadAllAvailableDialects();
    loc = builder.getUnknownLoc();
    module = ModuleOp::create(loc);
  }
  ~AmpIrTest() override { module->erase(); }

  RankedTensorType t(ArrayRef<int64_t> shape, Type elt = nullptr) {
    return RankedTensorType::get(shape, elt ? elt : builder.getF32Type());
  }

  // A function whose arguments have the given types; the builder inserts into its body.
  func::FuncOp makeFunc(StringRef name, TypeRange args, TypeRange results = {}) {
    builder.setInsertionPointToEnd(module.getBody());
    auto func = builder.create<func::FuncOp>(loc, name, builder.getFunctionType(args, results));
    Block* entry = func.addEntryBlock();
    builder.setInsertionPointToStart(entry);
    return func;
  }

  // Arguments of a fresh function with the given types.
  SmallVector<Value> values(TypeRange types) {
    auto func = makeFunc("f" + std::to_string(counter++), types);
    return SmallVector<Value>(func.getArguments().begin(), func.getArguments().end());
  }

  MLIRContext ctx;
  OpBuilder builder;
  Location loc = UnknownLoc::get(&ctx);
  ModuleOp module;
  int counter = 0;
};

//===----------------------------------------------------------------------===//
// Builders infer result types
//===----------------------------------------------------------------------===//

TEST_F(AmpIrTest, MatmulTwoD) {
  auto v = values({t({32, 784}), t({784, 256})});
  auto mm = builder.create<MatmulOp>(loc, v[0], v[1]);
  EXPECT_EQ(mm.getType(), t({32, 256}));
  EXPECT_TRUE(succeeded(verify(mm)));
}

TEST_F(AmpIrTest, MatmulBroadcastBatch) {
  auto v = values({t({2, 1, 16, 8}), t({3, 8, 32}), t({16, 8})});
  auto a = builder.create<MatmulOp>(loc, v[0], v[1]);
  EXPECT_EQ(a.getType(), t({2, 3, 16, 32}));
  // A 2-D operand broadcasts against any batch.
  auto b = builder.create<MatmulOp>(loc, v[2], v[1]);
  EXPECT_EQ(b.getType(), t({3, 16, 32}));
}

TEST_F(AmpIrTest, MatmulTransposes) {
  Type bf16 = builder.getBF16Type();
  auto v = values({t({4, 64, 16}, bf16), t({8, 16}), t({4, 8})});
  auto scores = builder.create<MatmulOp>(loc, v[0], v[0], /*transpose_a=*/false, /*transpose_b=*/true);
  EXPECT_EQ(scores.getType(), t({4, 64, 64}, bf16));
  EXPECT_TRUE(scores.getTransposeB());
  auto both = builder.create<MatmulOp>(loc, v[1], v[2], true, true);
  EXPECT_EQ(both.getType(), t({16, 4}));
}

TEST_F(AmpIrTest, Conv2D) {
  auto v = values({t({8, 3, 32, 32}), t({16, 3, 3, 3}), t({16}), t({2, 8, 10, 10}), t({4, 2, 3, 3})});
  auto plain = builder.create<Conv2DOp>(loc, v[0], v[1], Value());
  EXPECT_EQ(plain.getType(), t({8, 16, 30, 30}));
  auto strided = builder.create<Conv2DOp>(loc, v[0], v[1], v[2], ArrayRef<int64_t>{2, 2},
                                          ArrayRef<int64_t>{1, 1});
  EXPECT_EQ(strided.getType(), t({8, 16, 16, 16}));
  auto dilated = builder.create<Conv2DOp>(loc, v[0], v[1], Value(), ArrayRef<int64_t>{1, 1},
                                          ArrayRef<int64_t>{0, 0}, ArrayRef<int64_t>{2, 2});
  EXPECT_EQ(dilated.getType(), t({8, 16, 28, 28}));
  auto grouped = builder.create<Conv2DOp>(loc, v[3], v[4], Value(), ArrayRef<int64_t>{1, 1},
                                          ArrayRef<int64_t>{0, 0}, ArrayRef<int64_t>{1, 1}, 4);
  EXPECT_EQ(grouped.getType(), t({2, 4, 8, 8}));
  for (Operation* op : {plain.getOperation(), strided.getOperation(), dilated.getOperation(),
                        grouped.getOperation()})
    EXPECT_TRUE(succeeded(verify(op)));
}

TEST_F(AmpIrTest, Pooling) {
  auto v = values({t({8, 16, 32, 32})});
  auto mp = builder.create<MaxPool2DOp>(loc, v[0], builder.getDenseI64ArrayAttr({2, 2}),
                                        DenseI64ArrayAttr(), DenseI64ArrayAttr());
  EXPECT_EQ(mp.getType(), t({8, 16, 16, 16}));
  auto ap = builder.create<AvgPool2DOp>(loc, v[0], builder.getDenseI64ArrayAttr({3, 3}),
                                        builder.getDenseI64ArrayAttr({1, 1}),
                                        builder.getDenseI64ArrayAttr({1, 1}));
  EXPECT_EQ(ap.getType(), t({8, 16, 32, 32}));
}

TEST_F(AmpIrTest, ReduceWithAndWithoutKeepdim) {
  auto v = values({t({4, 8, 16})});
  auto sum = builder.create<ReduceSumOp>(loc, v[0], ArrayRef<int64_t>{1});
  EXPECT_EQ(sum.getType(), t({4, 16}));
  auto kept = builder.create<ReduceSumOp>(loc, v[0], ArrayRef<int64_t>{1}, /*keepdim=*/true);
  EXPECT_EQ(kept.getType(), t({4, 1, 16}));
  auto mean = builder.create<ReduceMeanOp>(loc, v[0], ArrayRef<int64_t>{0, 2});
  EXPECT_EQ(mean.getType(), t({8}));
  auto all = builder.create<ReduceMaxOp>(loc, v[0], ArrayRef<int64_t>{0, 1, 2});
  EXPECT_EQ(all.getType(), t({}));
  auto allKept = builder.create<ReduceMaxOp>(loc, v[0], ArrayRef<int64_t>{0, 1, 2}, true);
  EXPECT_EQ(allKept.getType(), t({1, 1, 1}));
}

TEST_F(AmpIrTest, Embedding) {
  auto v = values({t({256, 64}), t({8, 32}, builder.getI64Type()), t({16}, builder.getI32Type()),
                   t({}, builder.getI32Type())});
  EXPECT_EQ(builder.create<EmbeddingOp>(loc, v[0], v[1]).getType(), t({8, 32, 64}));
  EXPECT_EQ(builder.create<EmbeddingOp>(loc, v[0], v[2]).getType(), t({16, 64}));
  EXPECT_EQ(builder.create<EmbeddingOp>(loc, v[0], v[3]).getType(), t({64}));
}

TEST_F(AmpIrTest, Concat) {
  auto v = values({t({4, 8}), t({4, 2}), t({1, 8}), t({3, 8})});
  auto c1 = builder.create<ConcatOp>(loc, ValueRange{v[0], v[1]}, 1);
  EXPECT_EQ(c1.getType(), t({4, 10}));
  auto c0 = builder.create<ConcatOp>(loc, ValueRange{v[0], v[2], v[3]}, 0);
  EXPECT_EQ(c0.getType(), t({8, 8}));
}

TEST_F(AmpIrTest, Slice) {
  auto v = values({t({4, 8})});
  auto s = builder.create<SliceOp>(loc, v[0], ArrayRef<int64_t>{0, 2}, ArrayRef<int64_t>{4, 8},
                                   DenseI64ArrayAttr());
  EXPECT_EQ(s.getType(), t({4, 6}));
  auto strided = builder.create<SliceOp>(loc, v[0], ArrayRef<int64_t>{1, 0},
                                         ArrayRef<int64_t>{4, 8},
                                         builder.getDenseI64ArrayAttr({2, 3}));
  EXPECT_EQ(strided.getType(), t({2, 3}));
}

// Found by fuzz/ir.cpp (UBSan: signed overflow in SliceOp::inferReturnTypes): the result size
// of a slice that ends near 2^63 was computed as (limit - start + stride - 1) / stride.
TEST_F(AmpIrTest, SliceOfAHugeDimension) {
  const int64_t huge = std::numeric_limits<int64_t>::max();
  auto v = values({t({huge, 2})});
  auto s = builder.create<SliceOp>(loc, v[0], ArrayRef<int64_t>{0, 0}, ArrayRef<int64_t>{huge, 2},
                                   builder.getDenseI64ArrayAttr({2, 1}));
  EXPECT_EQ(s.getType(), t({int64_t{1} << 62, 2}));
  auto empty = builder.create<SliceOp>(loc, v[0], ArrayRef<int64_t>{huge, 0}, ArrayRef<int64_t>{huge, 2},
                                       builder.getDenseI64ArrayAttr({3, 1}));
  EXPECT_EQ(empty.getType(), t({0, 2}));
}

TEST_F(AmpIrTest, TransposeAndBroadcastingOps) {
  auto v = values({t({8, 16, 4, 32}), t({4, 8}), t({8}), t({4, 1}), t({8})});
  auto tr = builder.create<TransposeOp>(loc, v[0], ArrayRef<int64_t>{0, 2, 1, 3});
  EXPECT_EQ(tr.getType(), t({8, 4, 16, 32}));
  EXPECT_EQ(builder.create<AddOp>(loc, v[1], v[2]).getType(), t({4, 8}));
  EXPECT_EQ(builder.create<MulOp>(loc, v[3], v[4]).getType(), t({4, 8}));
  auto cmp = builder.create<CompareOp>(loc, ComparePredicate::Lt, v[3], v[4]);
  EXPECT_EQ(cmp.getType(), t({4, 8}, builder.getI1Type()));
}

TEST_F(AmpIrTest, Losses) {
  Type bf16 = builder.getBF16Type();
  auto v = values({t({32, 10}), t({32}, builder.getI64Type()), t({32, 10}, bf16),
                   t({32}, builder.getI32Type())});
  auto ce = builder.create<CrossEntropyOp>(loc, v[0], v[1], IntegerAttr(), FloatAttr());
  EXPECT_EQ(ce.getType(), t({}));
  // Unset default-valued attributes read as their defaults.
  EXPECT_EQ(static_cast<int64_t>(ce.getIgnoreIndex()), -100);
  EXPECT_EQ(ce.getLabelSmoothing().convertToDouble(), 0.0);
  auto ceBf16 = builder.create<CrossEntropyOp>(loc, v[2], v[3], static_cast<uint64_t>(-1),
                                               APFloat(0.1));
  EXPECT_EQ(ceBf16.getType(), t({}, bf16));
  EXPECT_TRUE(succeeded(verify(ceBf16)));
  auto mse = builder.create<MseLossOp>(loc, v[0], v[0]);
  EXPECT_EQ(mse.getType(), t({}));
}

//===----------------------------------------------------------------------===//
// Inference failures return failure with the rule's diagnostic
//===----------------------------------------------------------------------===//

class AmpInferenceFailureTest : public AmpIrTest {
 protected:
  // Runs OpT's inference on `operands` with `attrs` given as properties, as builders do.
  template <typename OpT>
  LogicalResult infer(ValueRange operands, ArrayRef<NamedAttribute> attrs,
                      SmallVectorImpl<Type>& out) {
    OperationState state(loc, OpT::getOperationName());
    state.addOperands(operands);
    state.addAttributes(attrs);
    typename OpT::Properties props;
    auto dict = state.attributes.getDictionary(&ctx);
    EXPECT_TRUE(succeeded(OpT::setPropertiesFromAttr(props, dict, nullptr)));
    return OpT::inferReturnTypes(&ctx, loc, operands, dict, OpaqueProperties(&props), {}, out);
  }
};

TEST_F(AmpInferenceFailureTest, MatmulContraction) {
  Diagnostics diags(&ctx);
  auto v = values({t({4, 8}), t({7, 4})});
  SmallVector<Type> out;
  EXPECT_TRUE(failed(infer<MatmulOp>(v, {}, out)));
  EXPECT_TRUE(diags.contains("contraction dimensions differ: lhs [4, 8] gives K = 8, rhs [7, 4] gives K = 7"))
      << diags.all();
  EXPECT_TRUE(out.empty());
}

TEST_F(AmpInferenceFailureTest, MatmulBatch) {
  Diagnostics diags(&ctx);
  auto v = values({t({2, 4, 8}), t({3, 8, 4})});
  SmallVector<Type> out;
  EXPECT_TRUE(failed(infer<MatmulOp>(v, {}, out)));
  EXPECT_TRUE(diags.contains("batch dimensions [2] and [3] are not broadcast-compatible")) << diags.all();
}

TEST_F(AmpInferenceFailureTest, Conv2DGroups) {
  Diagnostics diags(&ctx);
  auto v = values({t({1, 6, 8, 8}), t({8, 1, 3, 3})});
  SmallVector<Type> out;
  EXPECT_TRUE(failed(infer<Conv2DOp>(v, {builder.getNamedAttr("groups", builder.getI64IntegerAttr(4))}, out)));
  EXPECT_TRUE(diags.contains("groups = 4 must be >= 1 and divide input channels 6")) << diags.all();
}

// Found by fuzz/ir.cpp (UBSan: signed overflow in ConcatOp::inferReturnTypes), with the rest of
// the channel and window arithmetic of shape inference near 2^63 (the same class of overflow).
TEST_F(AmpInferenceFailureTest, ShapeArithmeticNearInt64Max) {
  const int64_t big = std::numeric_limits<int64_t>::max(), quarter = int64_t{1} << 62;
  Diagnostics diags(&ctx);
  SmallVector<Type> out;
  auto c = values({t({big, 2}), t({1, 2})});
  EXPECT_TRUE(failed(infer<ConcatOp>(c, {builder.getNamedAttr("axis", builder.getI64IntegerAttr(0))}, out)));
  EXPECT_TRUE(diags.contains("the size of the concatenated dimension 0 overflows 64 bits")) << diags.all();
  // 5 * 2^62 wraps to 2^62, the input's channel count.
  auto g = values({t({1, quarter, 1, 1}), t({quarter, 5, 1, 1})});
  EXPECT_TRUE(failed(infer<Conv2DOp>(g, {builder.getNamedAttr("groups", builder.getI64IntegerAttr(quarter))}, out)));
  EXPECT_TRUE(diags.contains("weight has 5 input channels per group")) << diags.all();
  // padding * 2 wraps negative.
  auto p = values({t({1, 1, 4, 4})});
  EXPECT_TRUE(failed(infer<MaxPool2DOp>(p, {builder.getNamedAttr("kernel", builder.getDenseI64ArrayAttr({2, 2})),
                                            builder.getNamedAttr("padding", builder.getDenseI64ArrayAttr({big, 0}))},
                                        out)));
  EXPECT_TRUE(diags.contains("must be at most half the kernel")) << diags.all();
  // 4 + 2 * 2^62 - 1 rows of padded input, every other one: 2^62 + 2 output rows.
  auto w = values({t({1, 1, 4, 4}), t({1, 1, 1, 1})});
  out.clear();
  EXPECT_TRUE(succeeded(infer<Conv2DOp>(w, {builder.getNamedAttr("padding", builder.getDenseI64ArrayAttr({quarter, 0})),
                                            builder.getNamedAttr("stride", builder.getDenseI64ArrayAttr({2, 1}))},
                                        out)))
      << diags.all();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], t({1, 1, quarter + 2, 4}));
}

TEST_F(AmpInferenceFailureTest, Conv2DWindow) {
  Diagnostics diags(&ctx);
  auto v = values({t({1, 3, 4, 4}), t({4, 3, 5, 5})});
  SmallVector<Type> out;
  EXPECT_TRUE(failed(infer<Conv2DOp>(v, {}, out)));
  EXPECT_TRUE(diags.contains("kernel [5, 5] does not fit the padded input [4, 4]")) << diags.all();
}

TEST_F(AmpInferenceFailureTest, ReduceDims) {
  Diagnostics diags(&ctx);
  auto v = values({t({4, 8})});
  SmallVector<Type> out;
  EXPECT_TRUE(failed(infer<ReduceSumOp>(v, {builder.getNamedAttr("dims", builder.getDenseI64ArrayAttr({1, 1}))}, out)));
  EXPECT_TRUE(diags.contains("dims entry 1 is repeated")) << diags.all();
  EXPECT_TRUE(failed(infer<ReduceSumOp>(v, {builder.getNamedAttr("dims", builder.getDenseI64ArrayAttr({}))}, out)));
  EXPECT_TRUE(diags.contains("dims must name at least one dimension")) << diags.all();
  EXPECT_TRUE(failed(infer<ReduceSumOp>(v, {}, out)));
  EXPECT_TRUE(diags.contains("requires attribute 'dims'")) << diags.all();
}

TEST_F(AmpInferenceFailureTest, ConcatShapes) {
  Diagnostics diags(&ctx);
  auto v = values({t({4, 8}), t({3, 2})});
  SmallVector<Type> out;
  EXPECT_TRUE(failed(infer<ConcatOp>(v, {builder.getNamedAttr("axis", builder.getI64IntegerAttr(1))}, out)));
  EXPECT_TRUE(diags.contains("input #1 differs from input #0 in dimension 0 (3 vs 4)")) << diags.all();
}

TEST_F(AmpInferenceFailureTest, SliceBounds) {
  Diagnostics diags(&ctx);
  auto v = values({t({4, 8})});
  SmallVector<Type> out;
  EXPECT_TRUE(failed(infer<SliceOp>(v, {builder.getNamedAttr("starts", builder.getDenseI64ArrayAttr({0, 0})),
                                        builder.getNamedAttr("limits", builder.getDenseI64ArrayAttr({5, 8}))},
                                    out)));
  EXPECT_TRUE(diags.contains("dimension 0: need 0 <= start (0) <= limit (5) <= size (4)")) << diags.all();
}

TEST_F(AmpInferenceFailureTest, CrossEntropyLabels) {
  Diagnostics diags(&ctx);
  auto v = values({t({32, 10}), t({16}, builder.getI64Type())});
  SmallVector<Type> out;
  EXPECT_TRUE(failed(infer<CrossEntropyOp>(v, {}, out)));
  EXPECT_TRUE(diags.contains("labels must be [32] to match logits [N, C]")) << diags.all();
}

TEST_F(AmpInferenceFailureTest, BroadcastAndElementTypes) {
  Diagnostics diags(&ctx);
  auto v = values({t({4, 8}), t({4}), t({4, 8}, builder.getBF16Type())});
  SmallVector<Type> out;
  // The binary ops have no properties.
  EXPECT_TRUE(failed(AddOp::inferReturnTypes(&ctx, loc, ValueRange{v[0], v[1]}, DictionaryAttr(),
                                             OpaqueProperties(nullptr), {}, out)));
  EXPECT_TRUE(diags.contains("shapes [4, 8] and [4] are not broadcast-compatible")) << diags.all();
  EXPECT_TRUE(failed(SubOp::inferReturnTypes(&ctx, loc, ValueRange{v[0], v[2]}, DictionaryAttr(),
                                             OpaqueProperties(nullptr), {}, out)));
  EXPECT_TRUE(diags.contains("operands must have the same element type, got 'f32' and 'bf16'")) << diags.all();
}

// What the parser does: inherent attributes written in the attr-dict are still in the
// dictionary (not the properties) when it infers result types.
TEST_F(AmpInferenceFailureTest, InferenceReadsAttributeDictionary) {
  auto v = values({t({1, 1, 4, 4}), t({1, 1, 4, 4})});
  SmallVector<Type> out;
  auto dict = builder.getDictionaryAttr(
      {builder.getNamedAttr("padding", builder.getDenseI64ArrayAttr({2, 2}))});
  Conv2DOp::Properties empty;
  ASSERT_TRUE(succeeded(
      Conv2DOp::inferReturnTypes(&ctx, loc, v, dict, OpaqueProperties(&empty), {}, out)));
  EXPECT_EQ(out.front(), t({1, 1, 5, 5}));
}

//===----------------------------------------------------------------------===//
// Verifiers
//===----------------------------------------------------------------------===//

TEST_F(AmpIrTest, VerifierRejectsBadAttributes) {
  Diagnostics diags(&ctx);
  auto v = values({t({4, 10}), t({8, 64})});
  auto sm = builder.create<SoftmaxOp>(loc, v[0].getType(), v[0], builder.getI64IntegerAttr(2));
  EXPECT_TRUE(failed(verify(sm)));
  EXPECT_TRUE(diags.contains("axis 2 is out of range for rank 2")) << diags.all();

  auto dr = builder.create<DropoutOp>(loc, v[1].getType(), v[1], builder.getF64FloatAttr(1.0),
                                      builder.getI64IntegerAttr(0));
  EXPECT_TRUE(failed(verify(dr)));
  EXPECT_TRUE(diags.contains("rate must be in [0, 1)")) << diags.all();

  auto ln = builder.create<LayerNormOp>(loc, v[1].getType(), v[1], Value(), Value(),
                                        builder.getI64IntegerAttr(3), builder.getF64FloatAttr(1e-5));
  EXPECT_TRUE(failed(verify(ln)));
  EXPECT_TRUE(diags.contains("normalized_ndim must be in [1, 2], got 3")) << diags.all();

  auto rs = builder.create<ReshapeOp>(loc, t({30}), v[0]);
  EXPECT_TRUE(failed(verify(rs)));
  EXPECT_TRUE(diags.contains("element count must not change")) << diags.all();
}

TEST_F(AmpIrTest, EnumAttributes) {
  auto x = values({t({4, 8})})[0];
  auto cmp = builder.create<CompareOp>(loc, ComparePredicate::Ge, x, x);
  EXPECT_EQ(cmp.getPredicate(), ComparePredicate::Ge);
  // Left out, gelu's approximation is the ODS default; the plan spelling is the keyword.
  auto gelu = builder.create<GeluOp>(loc, x.getType(), x, GeluApproximationAttr());
  EXPECT_EQ(gelu.getApproximate(), GeluApproximation::None);
  EXPECT_EQ(stringifyEnum(GeluApproximation::Tanh), "tanh");
  EXPECT_EQ(symbolizeLrScheduleKind("cosine"), LrScheduleKind::Cosine);
  EXPECT_FALSE(symbolizeComparePredicate("neq"));

  std::string printed;
  llvm::raw_string_ostream os(printed);
  os << Attribute(builder.getAttr<ComparePredicateAttr>(ComparePredicate::Le));
  EXPECT_EQ(os.str(), "#amp<compare_predicate le>");
  EXPECT_EQ(parseAttribute(printed, &ctx), builder.getAttr<ComparePredicateAttr>(ComparePredicate::Le));
}

TEST_F(AmpIrTest, InitAttribute) {
  Diagnostics diags(&ctx);
  auto init = InitAttr::get(&ctx, "kaiming_uniform", APFloat(1.0), 3);
  std::string printed;
  llvm::raw_string_ostream os(printed);
  os << Attribute(init);
  EXPECT_EQ(os.str(), "#amp.init<kaiming_uniform, seed = 3>");
  EXPECT_EQ(parseAttribute(printed, &ctx), init);

  auto emit = [&] { return emitError(loc); };
  EXPECT_FALSE(InitAttr::getChecked(emit, &ctx, StringRef("gaussian"), APFloat(1.0), int64_t(0), StringRef()));
  EXPECT_TRUE(diags.contains("unknown initialiser kind 'gaussian'")) << diags.all();
  EXPECT_FALSE(InitAttr::getChecked(emit, &ctx, StringRef("normal"), APFloat(1.0), int64_t(-1), StringRef()));
  EXPECT_TRUE(diags.contains("initialiser seed must be non-negative, got -1")) << diags.all();
}

//===----------------------------------------------------------------------===//
// The model convention
//===----------------------------------------------------------------------===//

class ModelConventionTest : public AmpIrTest {
 protected:
  // loss = cross_entropy(x @ w + b, y): the smallest model the convention accepts.
  func::FuncOp buildModel(Type paramElt) {
    Type i64 = builder.getI64Type();
    auto func = makeFunc("model", {t({8, 4}), t({8}, i64), t({4, 3}, paramElt), t({3}, paramElt)},
                         {t({})});
    auto setArg = [&](unsigned i, StringRef role, StringRef name) {
      func.setArgAttr(i, AmpDialect::kRoleAttr, builder.getStringAttr(role));
      func.setArgAttr(i, AmpDialect::kNameAttr, builder.getStringAttr(name));
      func.getArgument(i).setLoc(FileLineColLoc::get(&ctx, "model.mlir", 10 + i, 5));
    };
    setArg(0, "input", "x");
    setArg(1, "label", "y");
    setArg(2, "param", "w");
    setArg(3, "param", "b");
    func.setArgAttr(2, AmpDialect::kInitAttr, InitAttr::get(&ctx, "xavier_uniform", APFloat(1.0), 1));
    Value x = func.getArgument(0), w = func.getArgument(2), b = func.getArgument(3);
    if (paramElt != builder.getF32Type()) {
      w = builder.create<CastOp>(loc, t({4, 3}), w);
      b = builder.create<CastOp>(loc, t({3}), b);
    }
    auto h = builder.create<MatmulOp>(loc, x, w);
    auto logits = builder.create<AddOp>(loc, h, b);
    auto loss = builder.create<CrossEntropyOp>(loc, logits, func.getArgument(1), IntegerAttr(),
                                               FloatAttr());
    builder.create<func::ReturnOp>(loc, ValueRange{loss});
    return func;
  }

  OwningOpRef<ModuleOp> parseFile(StringRef path) {
    return parseSourceFile<ModuleOp>(path, ParserConfig(&ctx));
  }
};

TEST_F(ModelConventionTest, ProgrammaticModelVerifies) {
  Diagnostics diags(&ctx);
  auto func = buildModel(builder.getF32Type());
  ASSERT_TRUE(succeeded(verify(module))) << diags.all();
  EXPECT_TRUE(succeeded(verifyModel(func))) << diags.all();
  EXPECT_TRUE(diags.messages.empty());
  EXPECT_EQ(getArgRole(func, 0), ArgRole::Input);
  EXPECT_EQ(getArgRole(func, 1), ArgRole::Label);
  EXPECT_EQ(getArgRole(func, 2), ArgRole::Param);
  EXPECT_EQ(getArgName(func, 3), "b");
}

TEST_F(ModelConventionTest, ProgrammaticBf16ParamIsLocated) {
  Diagnostics diags(&ctx);
  auto func = buildModel(builder.getBF16Type());
  ASSERT_TRUE(succeeded(verify(module))) << diags.all();
  EXPECT_TRUE(failed(verifyModel(func)));
  ASSERT_EQ(diags.messages.size(), 2u) << diags.all();
  EXPECT_EQ(diags.messages[0],
            "model 'model': param 'w' must be f32 (master weights are f32; autocast derives the "
            "low-precision copies), got 'tensor<4x3xbf16>'");
  auto at = dyn_cast<FileLineColLoc>(diags.locations[0]);
  ASSERT_TRUE(at);
  EXPECT_EQ(at.getFilename(), "model.mlir");
  EXPECT_EQ(at.getLine(), 12u);
  EXPECT_TRUE(diags.contains("param 'b' must be f32")) << diags.all();
}

TEST_F(ModelConventionTest, ProgrammaticViolationsAreAllReported) {
  Diagnostics diags(&ctx);
  auto func = buildModel(builder.getF32Type());
  func.removeArgAttr(0, AmpDialect::kRoleAttr);
  func.setArgAttr(3, AmpDialect::kNameAttr, builder.getStringAttr("w"));
  func.setArgAttr(1, AmpDialect::kInitAttr, InitAttr::get(&ctx, "zeros", APFloat(1.0), 0));
  EXPECT_TRUE(failed(verifyModel(func)));
  EXPECT_EQ(diags.messages.size(), 3u) << diags.all();
  EXPECT_TRUE(diags.contains("argument #0 has no amp.role")) << diags.all();
  EXPECT_TRUE(diags.contains("argument #3 reuses the name 'w' of argument #2")) << diags.all();
  EXPECT_TRUE(diags.contains("argument #1 has amp.init but only params")) << diags.all();
}

TEST_F(ModelConventionTest, ExamplesVerify) {
  for (const char* name : {"mlp.mlir", "transformer_lm.mlir"}) {
    Diagnostics diags(&ctx);
    std::string path = std::string(AMP_EXAMPLES_DIR) + "/" + name;
    auto parsed = parseFile(path);
    ASSERT_TRUE(parsed) << path << "\n" << diags.all();
    int models = 0;
    for (auto func : parsed->getOps<func::FuncOp>()) {
      EXPECT_TRUE(succeeded(verifyModel(func))) << name << "\n" << diags.all();
      ++models;
    }
    EXPECT_EQ(models, 1) << name;
  }
}

TEST_F(ModelConventionTest, ParsedBf16ParamFailsWithLocation) {
  Diagnostics diags(&ctx);
  const char* text = R"mlir(func.func @m(
    %x: tensor<4x8xbf16> {amp.role = "input", amp.name = "x"},
    %w: tensor<8x2xbf16> {amp.role = "param", amp.name = "w"},
    %y: tensor<4xi64> {amp.role = "label", amp.name = "y"}) -> tensor<f32> {
  %h = amp.matmul %x, %w : tensor<4x8xbf16>, tensor<8x2xbf16>
  %f = amp.cast %h : tensor<4x2xbf16> to tensor<4x2xf32>
  %loss = amp.cross_entropy %f, %y : tensor<4x2xf32>, tensor<4xi64>
  return %loss : tensor<f32>
}
)mlir";
  auto parsed = parseSourceString<ModuleOp>(text, ParserConfig(&ctx), "bf16_param.mlir");
  ASSERT_TRUE(parsed) << diags.all();
  auto func = *parsed->getOps<func::FuncOp>().begin();
  EXPECT_TRUE(failed(verifyModel(func)));
  ASSERT_EQ(diags.messages.size(), 1u) << diags.all();
  EXPECT_EQ(diags.messages[0],
            "model 'm': param 'w' must be f32 (master weights are f32; autocast derives the "
            "low-precision copies), got 'tensor<8x2xbf16>'");
  auto at = dyn_cast<FileLineColLoc>(diags.locations[0]);
  ASSERT_TRUE(at) << "diagnostic has no file location";
  EXPECT_EQ(at.getFilename(), "bf16_param.mlir");
  EXPECT_EQ(at.getLine(), 3u);
  EXPECT_EQ(at.getColumn(), 5u);
}

TEST_F(ModelConventionTest, ParsedResultAndBodyRules) {
  Diagnostics diags(&ctx);
  const char* text = R"mlir(func.func private @helper(tensor<4xf32>) -> tensor<4xf32>
func.func @m(%x: tensor<4xf32> {amp.role = "input", amp.name = "x"}) -> tensor<4xf32> {
  %0 = func.call @helper(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
)mlir";
  auto parsed = parseSourceString<ModuleOp>(text, ParserConfig(&ctx), "rules.mlir");
  ASSERT_TRUE(parsed) << diags.all();
  func::FuncOp model = parsed->lookupSymbol<func::FuncOp>("m");
  EXPECT_TRUE(failed(verifyModel(model)));
  EXPECT_TRUE(diags.contains("the first result must be the scalar loss tensor<f32>, got 'tensor<4xf32>'"))
      << diags.all();
  EXPECT_TRUE(diags.contains("op 'func.call' is not an amp op")) << diags.all();
}

}  // namespace
