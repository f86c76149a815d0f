//===- Passes.td - ampc passes ---------------------------------------------===//
#ifndef AMP_PASSES_TD
#define AMP_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Verification
//===----------------------------------------------------------------------===//

def AmpVerifyModelPass : Pass<"amp-verify-model", "::mlir::ModuleOp"> {
  let summary = "Checks every public function against the model convention";
  let description = [{
    Each public `func.func` of the module is a model: every argument carries `amp.role`
    (`param`, `input` or `label`) and a unique `amp.name`; params are f32 master weights and
    only params carry `amp.init`; the first result is the scalar loss `tensor<f32>`; the body
    holds only `amp` ops. Violations are reported at the argument or op they concern.

    ```mlir
    // error: model 'f': argument #0 has no amp.role (param, input or label)
    func.func @f(%x: tensor<4xf32>) -> tensor<f32> { ... }
    ```
  }];
  let dependentDialects = ["::mlir::amp::AmpDialect"];
}

#endif // AMP_PASSES_TD
