// ampc: the compiler driver's command-line tool (tools/ampc/Driver.h does the work).
#include "llvm/Support/InitLLVM.h"
#include "tools/ampc/Driver.h"

int main(int argc, char** argv) {
  llvm::InitLLVM init(argc, argv);
  return mlir::amp::runAmpc(argc, argv, llvm::errs());
}
