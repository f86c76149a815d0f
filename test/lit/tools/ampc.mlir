// The driver: prints a verified model, fails with located diagnostics on bad input.
//
// RUN: ampc %amp_src_root/examples/mlp.mlir | FileCheck %s --check-prefix=MLP
// RUN: ampc --emit=ir %amp_src_root/examples/mlp.mlir -o %t.mlir && FileCheck %s --check-prefix=MLP < %t.mlir
// The printed IR is valid input again (stdin as "-").
// RUN: ampc %amp_src_root/examples/mlp.mlir | ampc - | FileCheck %s --check-prefix=MLP
//
// This file itself is malformed: ampc exits non-zero with a diagnostic located in it.
// RUN: not ampc %s 2>&1 | FileCheck %s --check-prefix=MALFORMED
//
// A model that parses but breaks the model convention.
// RUN: sed -e 's/amp.name = "fc1.bias", //' %amp_src_root/examples/mlp.mlir > %t.noname.mlir
// RUN: not ampc %t.noname.mlir 2>&1 | FileCheck %s --check-prefix=CONVENTION
//
// RUN: not ampc %t.does-not-exist.mlir 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: ampc --help | FileCheck %s --check-prefix=HELP

// MLP: func.func @mlp(
// MLP-SAME: {amp.name = "image", amp.role = "input"}
// MLP-SAME: {amp.init = #amp.init<kaiming_uniform, seed = 1>, amp.name = "fc1.weight", amp.role = "param"}
// MLP-SAME: -> (tensor<f32>, tensor<128x10xf32>)
// MLP: %[[H1:.*]] = amp.matmul %{{.*}}, %{{.*}} : tensor<128x784xf32>, tensor<784x256xf32>
// MLP: %[[B1:.*]] = amp.add %[[H1]], %{{.*}} : tensor<128x256xf32>, tensor<256xf32>
// MLP: amp.relu %[[B1]] : tensor<128x256xf32>
// MLP: %[[LOGITS:.*]] = amp.add %{{.*}}, %{{.*}} : tensor<128x10xf32>, tensor<10xf32>
// MLP: %[[LOSS:.*]] = amp.cross_entropy %[[LOGITS]], %{{.*}} : tensor<128x10xf32>, tensor<128xi64>
// MLP: return %[[LOSS]], %[[LOGITS]] : tensor<f32>, tensor<128x10xf32>

// MALFORMED: ampc.mlir:[[@LINE+4]]:{{[0-9]+}}: error: 'amp.add' op shapes [4, 8] and [4] are not broadcast-compatible
func.func @malformed(%x: tensor<4x8xf32> {amp.role = "input", amp.name = "x"},
                     %b: tensor<4xf32> {amp.role = "param", amp.name = "b"})
    -> tensor<f32> {
  %0 = amp.add %x, %b : tensor<4x8xf32>, tensor<4xf32>
  %1 = amp.mse_loss %0, %0 : tensor<4x8xf32>, tensor<4x8xf32>
  return %1 : tensor<f32>
}

// CONVENTION: noname.mlir:7:{{[0-9]+}}: error: model 'mlp': argument #3 has no amp.name
// CONVENTION-NEXT: %b1: tensor<256xf32>

// MISSING: ampc: cannot read '{{.*}}does-not-exist.mlir'
// MISSING-SAME: No such file or directory

// HELP: USAGE: ampc [options] <model.mlir>
// HELP: ampc options:
// HELP: --emit=<value>
// HELP: =ir
// HELP: -o <file>
