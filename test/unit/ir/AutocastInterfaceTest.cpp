// The built-in precision policies come from the model ops themselves (AutocastOpInterface): every
// model op but amp.cast and amp.constant states its categories, and the three built-in policies
// are exactly those statements (TensorFlow's bf16 lists differ from its f16 lists only where the
// oneDNN lists do: Sum, Mean and Rsqrt move to infer).
#include <set>
#include <string>

#include "gtest/gtest.h"
#include "ir/AmpOps.h"
#include "mlir/IR/MLIRContext.h"
#include "passes/PrecisionPolicy.h"

namespace {

using mlir::amp::Category;

TEST(AutocastInterface, EveryModelOpButCastAndConstantIsPlaced) {
  mlir::MLIRContext ctx;
  ctx.loadDialect<mlir::amp::AmpDialect>();
  std::set<std::string> placed, unplaced;
  for (mlir::RegisteredOperationName op : ctx.getRegisteredOperations()) {
    if (op.getDialectNamespace() != "amp") continue;
    auto* model = op.getInterface<mlir::amp::AutocastOpInterface>();
    EXPECT_EQ(model != nullptr, op.hasInterface<mlir::amp::DifferentiableOpInterface>())
        << op.getStringRef().str() << ": model ops declare both interfaces";
    if (!model) continue;
    (model->getAutocastCategories() ? placed : unplaced).insert(op.getStringRef().str());
  }
  EXPECT_EQ(unplaced, (std::set<std::string>{"amp.cast", "amp.constant"}));
  EXPECT_EQ(placed.size(), 45u);  // 44 in ir/AmpOps.td and conv2d_grad_input (a transposed conv)
}

TEST(AutocastInterface, BuiltinPoliciesAreTheOpsStatements) {
  mlir::MLIRContext ctx;
  ctx.loadDialect<mlir::amp::AmpDialect>();
  std::string error;
  auto torch = mlir::amp::PrecisionPolicy::builtin(&ctx, "pytorch", false, error);
  auto fp16 = mlir::amp::PrecisionPolicy::builtin(&ctx, "tensorflow-fp16", false, error);
  auto bf16 = mlir::amp::PrecisionPolicy::builtin(&ctx, "tensorflow-bf16", true, error);
  ASSERT_TRUE(succeeded(torch) && succeeded(fp16) && succeeded(bf16)) << error;
  EXPECT_EQ(torch->categoryOf("amp.matmul"), Category::LowerPrecisionFp);
  EXPECT_EQ(torch->categoryOf("amp.softmax"), Category::Fp32SetOptDtype);
  EXPECT_EQ(torch->categoryOf("amp.relu"), Category::Fallthrough);
  EXPECT_EQ(fp16->categoryOf("amp.linear"), Category::Allow);
  EXPECT_EQ(fp16->categoryOf("amp.cross_entropy"), Category::Deny);
  EXPECT_EQ(fp16->categoryOf("amp.rsqrt"), Category::Unlisted);
  std::set<std::string> differ;
  for (const char* op : {"amp.reduce_sum", "amp.reduce_mean", "amp.rsqrt", "amp.add", "amp.exp", "amp.relu"})
    if (fp16->categoryOf(op) != bf16->categoryOf(op)) differ.insert(op);
  EXPECT_EQ(differ, (std::set<std::string>{"amp.reduce_mean", "amp.reduce_sum", "amp.rsqrt"}));
  EXPECT_EQ(bf16->categoryOf("amp.rsqrt"), Category::Infer);
}

}  // namespace
