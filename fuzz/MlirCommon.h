// Shared by the compiler targets (fuzz/ir.cpp, fuzz/pipeline.cpp, fuzz/policy.cpp): an MLIR
// context with the amp dialects, single-threaded and silent (diagnostics are expected on most
// inputs; what the fuzzer looks for is a crash, a sanitizer report, a leak or a hang).
#ifndef AMP_FUZZ_MLIRCOMMON_H
#define AMP_FUZZ_MLIRCOMMON_H

#include <memory>
#include <string>
#include <vector>

#include "llvm/ADT/StringExtras.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "tools/Registration.h"

// LLVM's BumpPtrAllocator poisons its slabs under ASan from header code and unpoisons them in
// Allocate. Here the headers are instrumented but Debian's libMLIR is not, so memory that an
// uninstrumented Allocate handed out stays poisoned, and the first instrumented read of it is a
// false use-after-poison (in mlir::Dialect::addType, at context creation). allow_user_poisoning=0
// turns that manual poisoning off; heap, stack and global checks are unaffected. Each compiler
// target includes this header from its one source file, which defines the hook once.
extern "C" const char* __asan_default_options() { return "allow_user_poisoning=0"; }

namespace amp::fuzz {

class FuzzContext {
 public:
  // A context accumulates every type and attribute it ever uniqued; a fresh one every
  // `renewEvery` inputs keeps the fuzzer's memory flat without paying for a context per input.
  explicit FuzzContext(int renewEvery) : renewEvery_(renewEvery) {}

  mlir::MLIRContext& get() {
    if (!ctx_ || ++uses_ >= renewEvery_) {
      handler_.reset();
      ctx_.reset();
      mlir::DialectRegistry registry;
      mlir::amp::registerAmpDialects(registry);
      ctx_ = std::make_unique<mlir::MLIRContext>(registry, mlir::MLIRContext::Threading::DISABLED);
      ctx_->loadAllAvailableDialects();
      ctx_->printOpOnDiagnostic(false);
      ctx_->printStackTraceOnDiagnostic(false);
      handler_ = std::make_unique<mlir::ScopedDiagnosticHandler>(ctx_.get(), [](mlir::Diagnostic&) {
        return mlir::success();
      });
      uses_ = 0;
    }
    return *ctx_;
  }

 private:
  int renewEvery_;
  int uses_ = 0;
  std::unique_ptr<mlir::MLIRContext> ctx_;
  std::unique_ptr<mlir::ScopedDiagnosticHandler> handler_;
};

// Inputs that crash MLIR 19 itself (libMLIR, upstream - not ours, and not fixable here); the
// targets skip them so that fuzzing can go on, and docs/reliability.md records them:
//  - a use of result number N (`%0#N`) makes the parser size a vector of N forward references
//    before anything checks N against the op's result count: `%0#2147483648` asks for 32 GiB
//    ("LLVM ERROR: out of memory", in ampc too);
//  - a scalar literal splat into a complex tensor (`dense<0.0> : tensor<complex<f32>>`) parses,
//    and printing it (in a diagnostic, or the module) reads out of bounds
//    (llvm/llvm-project#131323, fixed after 19). amp has no complex types.
inline bool hitsKnownMlirBug(llvm::StringRef text) {
  if (text.contains("complex<")) return true;
  for (size_t p = text.find('#'); p != llvm::StringRef::npos; p = text.find('#', p + 1)) {
    size_t digits = 0;
    while (p + 1 + digits < text.size() && llvm::isDigit(text[p + 1 + digits])) ++digits;
    if (digits >= 6) return true;  // no op of a model has 100000 results
  }
  return false;
}

// The registered amp op names ("amp.matmul", ...), for mutators.
inline std::vector<std::string> ampOpNames(mlir::MLIRContext& ctx) {
  std::vector<std::string> out;
  for (mlir::RegisteredOperationName op : ctx.getRegisteredOperations()) {
    llvm::StringRef name = op.getStringRef();
    if (name.starts_with("amp.")) out.push_back(name.str());
  }
  return out;
}

}  // namespace amp::fuzz

#endif  // AMP_FUZZ_MLIRCOMMON_H
