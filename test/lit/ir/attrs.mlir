// RUN: amp-opt %s --split-input-file | amp-opt --split-input-file | FileCheck %s
// RUN: amp-opt %s --split-input-file --mlir-print-op-generic | amp-opt --split-input-file | FileCheck %s

// Every initialiser kind. scale = 1 and seed = 0 are the defaults and are not printed.
// CHECK-LABEL: func.func @init_kinds
// CHECK-SAME: amp.init = #amp.init<zeros>
// CHECK-SAME: amp.init = #amp.init<ones>
// CHECK-SAME: amp.init = #amp.init<constant, scale = 5.000000e-01>
// CHECK-SAME: amp.init = #amp.init<normal, scale = 2.000000e-02, seed = 1>
// CHECK-SAME: amp.init = #amp.init<uniform, scale = 1.000000e-01, seed = 2>
// CHECK-SAME: amp.init = #amp.init<xavier_uniform, seed = 3>
// CHECK-SAME: amp.init = #amp.init<xavier_normal, scale = 2.000000e+00, seed = 4>
// CHECK-SAME: amp.init = #amp.init<kaiming_uniform, seed = 5>
// CHECK-SAME: amp.init = #amp.init<kaiming_normal, seed = 9223372036854775807>
func.func @init_kinds(
    %a: tensor<4xf32> {amp.role = "param", amp.name = "a", amp.init = #amp.init<zeros>},
    %b: tensor<4xf32> {amp.role = "param", amp.name = "b", amp.init = #amp.init<ones>},
    %c: tensor<4xf32> {amp.role = "param", amp.name = "c", amp.init = #amp.init<constant, scale = 0.5>},
    %d: tensor<4x4xf32> {amp.role = "param", amp.name = "d", amp.init = #amp.init<normal, scale = 0.02, seed = 1>},
    %e: tensor<4x4xf32> {amp.role = "param", amp.name = "e", amp.init = #amp.init<uniform, seed = 2, scale = 0.1>},
    %f: tensor<4x4xf32> {amp.role = "param", amp.name = "f", amp.init = #amp.init<xavier_uniform, seed = 3>},
    %g: tensor<4x4xf32> {amp.role = "param", amp.name = "g", amp.init = #amp.init<xavier_normal, scale = 2.0, seed = 4>},
    %h: tensor<4x4xf32> {amp.role = "param", amp.name = "h", amp.init = #amp.init<kaiming_uniform, scale = 1.0, seed = 5>},
    %i: tensor<4x4xf32> {amp.role = "param", amp.name = "i", amp.init = #amp.init<kaiming_normal, seed = 9223372036854775807>}) {
  return
}

// -----

// The kind may be a string; scale keeps full double precision through a round trip.
// CHECK-LABEL: func.func @init_spelling
// CHECK-SAME: amp.init = #amp.init<normal, scale = 0.30000000000000004, seed = 7>
// CHECK-SAME: amp.init = #amp.init<constant, scale = -2.500000e-01>
// CHECK-SAME: amp.init = #amp.init<zeros>
func.func @init_spelling(
    %a: tensor<4xf32> {amp.role = "param", amp.name = "a", amp.init = #amp.init<"normal", scale = 0.30000000000000004, seed = 7>},
    %b: tensor<4xf32> {amp.role = "param", amp.name = "b", amp.init = #amp.init<constant, scale = -0.25>},
    %c: tensor<4xf32> {amp.role = "param", amp.name = "c", amp.init = #amp.init<zeros, seed = 0>}) {
  return
}

// -----

// Roles and names; names may contain letters, digits, '_', '.', '-' and '/'.
// CHECK-LABEL: func.func @roles_and_names
// CHECK-SAME: {amp.name = "image", amp.role = "input"}
// CHECK-SAME: {amp.name = "label", amp.role = "label"}
// CHECK-SAME: {amp.name = "blocks/0.attn-q_proj.weight", amp.role = "param"}
// CHECK-SAME: {amp.name = "x"}
func.func @roles_and_names(
    %x: tensor<8x4xf32> {amp.role = "input", amp.name = "image"},
    %y: tensor<8xi64> {amp.role = "label", amp.name = "label"},
    %w: tensor<4x4xf32> {amp.role = "param", amp.name = "blocks/0.attn-q_proj.weight"},
    %z: tensor<4xf32> {amp.name = "x"}) {
  return
}

// -----

// Operation attributes: precision annotations on ops, target and autocast on functions.
// CHECK-LABEL: func.func @op_attrs
// CHECK-SAME: attributes {amp.autocast = false, amp.target = "cuda:sm_90"}
func.func @op_attrs(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32>
    attributes {amp.target = "cuda:sm_90", amp.autocast = false} {
  // CHECK: amp.matmul %{{.*}}, %{{.*}} {amp.precision = "bf16", amp.reason = #amp.reason<pass, detail = "matmul runs in bf16">} : tensor<4x8xf32>, tensor<8x8xf32>
  %0 = amp.matmul %x, %w {amp.precision = "bf16", amp.reason = #amp.reason<pass, detail = "matmul runs in bf16">} : tensor<4x8xf32>, tensor<8x8xf32>
  // CHECK: amp.softmax %{{.*}} axis = 1 {amp.precision = "f32"} : tensor<4x8xf32>
  %1 = amp.softmax %0 axis = 1 {amp.precision = "f32"} : tensor<4x8xf32>
  // CHECK: amp.relu %{{.*}} {amp.precision = "f16"} : tensor<4x8xf32>
  %2 = amp.relu %1 {amp.precision = "f16"} : tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}

// -----

// Stored initial values (an imported model's weights): dense values or a dense_resource blob of
// the argument's type, kept through a round trip.
// CHECK-LABEL: func.func @init_stored
// CHECK-SAME: amp.init = dense<[5.000000e-01, -2.000000e+00]> : tensor<2xf32>
// CHECK-SAME: amp.init = dense_resource<blob_w> : tensor<2xf32>
// CHECK: dialect_resources
// CHECK: blob_w: "0x040000000000803F00000040"
func.func @init_stored(
    %a: tensor<2xf32> {amp.role = "param", amp.name = "a", amp.init = dense<[0.5, -2.0]> : tensor<2xf32>},
    %b: tensor<2xf32> {amp.role = "param", amp.name = "b", amp.init = dense_resource<blob_w> : tensor<2xf32>}) {
  return
}

{-#
  dialect_resources: {
    builtin: {
      blob_w: "0x040000000000803F00000040"
    }
  }
#-}
