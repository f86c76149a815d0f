// The runtime's op catalogue (runtime/plan/OpCatalog.inc) is the dialect's op list: the runtime is
// keyed by it (OpCode), and the reference kernels switch over every OpCode with -Werror=switch, so
// an op the dialect defines cannot lack a reference kernel without failing the build. This test
// keeps the checked-in catalogue current (`ninja amp-op-catalog` regenerates it).
#include <string>

#include "gtest/gtest.h"
#include "ir/AmpOps.h"
#include "mlir/IR/MLIRContext.h"
#include "runtime/reference/ReferenceKernels.h"
#include "runtime/plan/OpCode.h"
#include "runtime/plan/Plan.h"

TEST(OpCatalog, MatchesTheDialect) {
  mlir::MLIRContext context;
  context.loadDialect<mlir::amp::AmpDialect>();
  size_t dialectOps = 0;
  for (mlir::RegisteredOperationName op : context.getRegisteredOperations()) {
    if (op.getDialectNamespace() != "amp") continue;
    ++dialectOps;
    auto code = amp::rt::opCodeOf(op.getStringRef());
    ASSERT_TRUE(code.has_value()) << op.getStringRef().str()
                                  << " is missing from runtime/plan/OpCatalog.inc: run `ninja amp-op-catalog`";
    EXPECT_EQ(amp::rt::opName(*code), op.getStringRef().str());
  }
  EXPECT_EQ(amp::rt::kOpCodeCount, dialectOps)
      << "runtime/plan/OpCatalog.inc lists ops the dialect does not define: run `ninja amp-op-catalog`";
  EXPECT_FALSE(amp::rt::opCodeOf("amp.frobnicate").has_value());
}

// Every op but the fused region's structure (amp.fused, amp.yield: an executor runs a fused step
// as a whole) has a reference kernel.
TEST(OpCatalog, EveryComputingOpHasAReferenceKernel) {
  EXPECT_EQ(amp::rt::referenceOpNames().size(), amp::rt::kOpCodeCount - 2);
}

// The runtime's step kinds (runtime/plan/OpSchema.inc) are the dialect's Amp_*Step traits.
TEST(OpCatalog, StepKindsAreTheDialectsTraits) {
  mlir::MLIRContext context;
  context.loadDialect<mlir::amp::AmpDialect>();
  for (mlir::RegisteredOperationName op : context.getRegisteredOperations()) {
    if (op.getDialectNamespace() != "amp") continue;
    auto code = amp::rt::opCodeOf(op.getStringRef());
    ASSERT_TRUE(code.has_value());
    amp::rt::StepKind want = amp::rt::StepKind::Op;
    if (op.hasTrait<mlir::amp::LibraryStep>()) want = amp::rt::StepKind::Library;
    if (op.hasTrait<mlir::amp::MultiTensorStep>()) want = amp::rt::StepKind::MultiTensor;
    if (op.hasTrait<mlir::amp::FusedStep>()) want = amp::rt::StepKind::Fused;
    if (op.hasTrait<mlir::amp::AliasStep>()) want = amp::rt::StepKind::Alias;
    EXPECT_EQ(amp::rt::stepKindOf(*code), want) << op.getStringRef().str();
  }
}
