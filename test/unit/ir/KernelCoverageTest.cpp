// Every op the amp dialect registers (forward, gradient and training ops) has a reference kernel,
// so anything the compiler can emit, the oracle can run.
#include <algorithm>
#include <string>

#include "gtest/gtest.h"
#include "ir/AmpOps.h"
#include "mlir/IR/MLIRContext.h"
#include "runtime/exec/ReferenceKernels.h"

TEST(KernelCoverage, EveryDialectOpHasAReferenceKernel) {
  mlir::MLIRContext context;
  context.loadDialect<mlir::amp::AmpDialect>();
  std::vector<std::string_view> kernels = amp::rt::referenceOpNames();
  int checked = 0;
  for (mlir::RegisteredOperationName op : context.getRegisteredOperations()) {
    if (op.getDialectNamespace() != "amp") continue;
    // amp.fused and its terminator amp.yield are structure, not kernels: an executor runs a fused
    // step as a whole (the reference device runs its body op by op; FusedKernelTest compares the
    // two devices on it), so neither needs a kernel of its own.
    if (op.hasTrait<mlir::OpTrait::IsTerminator>() || op.hasTrait<mlir::OpTrait::IsIsolatedFromAbove>()) continue;
    std::string name = op.getStringRef().str();
    EXPECT_TRUE(std::binary_search(kernels.begin(), kernels.end(), std::string_view(name)))
        << name << " has no reference kernel";
    ++checked;
  }
  EXPECT_GE(checked, 60);
  // And no kernel is orphaned (a name the dialect does not define).
  for (std::string_view k : kernels)
    EXPECT_TRUE(mlir::RegisteredOperationName::lookup(k, &context).has_value()) << k;
}
