// amp-opt: mlir-opt with the amp dialect and every ampc pass registered (for lit tests).
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "tools/Registration.h"

int main(int argc, char** argv) {
  mlir::DialectRegistry registry;
  mlir::amp::registerAmpDialects(registry);
  mlir::amp::registerAmpToolPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "amp-opt: ampc's pass driver for tests\n", registry));
}
