// The driver: prints a verified model, fails with located diagnostics on bad input.
//
// RUN: ampc %amp_src_root/examples/mlp.mlir | FileCheck %s --check-prefix=MLP-CHECK
// RUN: ampc --emit=ir %amp_src_root/examples/mlp.mlir -o %t.mlir && FileCheck %s --check-prefix=MLP-CHECK < %t.mlir
// The printed IR is valid input again (stdin as "-").
// RUN: ampc %amp_src_root/examples/mlp.mlir | ampc - | FileCheck %s --check-prefix=MLP-CHECK
//
// This file itself is malformed: ampc exits non-zero with a diagnostic located in it.
// RUN: not ampc %s 2>&1 | FileCheck %s --check-prefix=MALFORMED-CHECK
//
// A model that parses but breaks the model convention.
// RUN: sed -e 's/amp.name = "fc1.bias", //' %amp_src_root/examples/mlp.mlir > %t.noname.mlir
// RUN: not ampc %t.noname.mlir 2>&1 | FileCheck %s --check-prefix=CONVENTION-CHECK
//
// RUN: not ampc %t.does-not-exist.mlir 2>&1 | FileCheck %s --check-prefix=MISSING-CHECK
//
// A bool array written with integers, which MLIR 19 parses into a corrupt attribute that crashes
// whoever prints it (found by fuzz/pipeline.cpp): refused, located, before anything prints it.
// RUN: sed -e 's/amp.relu %h1 :/amp.relu %h1 {flags = array<i1: 0, 1>} :/' %amp_src_root/examples/mlp.mlir > %t.i1.mlir
// RUN: not ampc %t.i1.mlir 2>&1 | FileCheck %s --check-prefix=I1ARRAY-CHECK
// I1ARRAY-CHECK: i1.mlir:{{[0-9]+}}:{{[0-9]+}}: error: 'amp.relu': an array<i1: ...> attribute must list true/false, not integers
// RUN: ampc --help | FileCheck %s --check-prefix=HELP-CHECK

// MLP-CHECK: func.func @mlp(
// MLP-CHECK-SAME: {amp.name = "image", amp.role = "input"}
// MLP-CHECK-SAME: {amp.init = #amp.init<kaiming_uniform, seed = 1>, amp.name = "fc1.weight", amp.role = "param"}
// MLP-CHECK-SAME: -> (tensor<f32> {amp.name = "loss"}, tensor<128x10xf32> {amp.name = "logits"})
// MLP-CHECK: %[[H1:.*]] = amp.linear %{{.*}}, %{{.*}}, %{{.*}} transpose_w = false : tensor<128x784xf32>, tensor<784x256xf32>, tensor<256xf32>
// MLP-CHECK: amp.relu %[[H1]] : tensor<128x256xf32>
// MLP-CHECK: %[[LOGITS:.*]] = amp.linear %{{.*}}, %{{.*}}, %{{.*}} transpose_w = false : tensor<128x256xf32>, tensor<256x10xf32>, tensor<10xf32>
// MLP-CHECK: %[[LOSS:.*]] = amp.cross_entropy %[[LOGITS]], %{{.*}} : tensor<128x10xf32>, tensor<128xi64>
// MLP-CHECK: return %[[LOSS]], %[[LOGITS]] : tensor<f32>, tensor<128x10xf32>

// MALFORMED-CHECK: ampc.mlir:[[@LINE+4]]:{{[0-9]+}}: error: 'amp.add' op shapes [4, 8] and [4] are not broadcast-compatible
func.func @malformed(%x: tensor<4x8xf32> {amp.role = "input", amp.name = "x"},
                     %b: tensor<4xf32> {amp.role = "param", amp.name = "b"})
    -> tensor<f32> {
  %0 = amp.add %x, %b : tensor<4x8xf32>, tensor<4xf32>
  %1 = amp.mse_loss %0, %0 : tensor<4x8xf32>, tensor<4x8xf32>
  return %1 : tensor<f32>
}

// CONVENTION-CHECK: noname.mlir:7:{{[0-9]+}}: error: model 'mlp': argument #3 has no amp.name
// CONVENTION-CHECK-NEXT: %b1: tensor<256xf32>

// MISSING-CHECK: ampc: cannot read '{{.*}}does-not-exist.mlir'
// MISSING-CHECK-SAME: No such file or directory

// HELP-CHECK: USAGE: ampc [options] <model.mlir>
// HELP-CHECK: ampc options:
// HELP-CHECK: --emit=<value>
// HELP-CHECK: =ir
// HELP-CHECK: -o <file>

// An empty file is not a model.
// RUN: not ampc /dev/null 2>&1 | FileCheck %s --check-prefix=EMPTY-CHECK
// EMPTY-CHECK: error: amp-verify-model: the module defines no model (a public func.func)
