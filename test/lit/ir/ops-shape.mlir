// RUN: amp-opt %s --split-input-file | amp-opt --split-input-file | FileCheck %s
// RUN: amp-opt %s --split-input-file --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @reshape
// CHECK-SAME: (%[[X:.*]]: tensor<8x1x28x28xf32>, %[[I:.*]]: tensor<2x3xi64>, %[[S:.*]]: tensor<1x1xbf16>)
func.func @reshape(%x: tensor<8x1x28x28xf32>, %i: tensor<2x3xi64>, %s: tensor<1x1xbf16>)
    -> (tensor<8x784xf32>, tensor<6xi64>, tensor<bf16>) {
  // CHECK: %[[R0:.*]] = amp.reshape %[[X]] : tensor<8x1x28x28xf32> -> tensor<8x784xf32>
  %0 = amp.reshape %x : tensor<8x1x28x28xf32> -> tensor<8x784xf32>
  // CHECK: %[[R1:.*]] = amp.reshape %[[I]] : tensor<2x3xi64> -> tensor<6xi64>
  %1 = amp.reshape %i : tensor<2x3xi64> -> tensor<6xi64>
  // CHECK: %[[R2:.*]] = amp.reshape %[[S]] : tensor<1x1xbf16> -> tensor<bf16>
  %2 = amp.reshape %s : tensor<1x1xbf16> -> tensor<bf16>
  // CHECK: return %[[R0]], %[[R1]], %[[R2]]
  return %0, %1, %2 : tensor<8x784xf32>, tensor<6xi64>, tensor<bf16>
}

// -----

// CHECK-LABEL: func.func @transpose
func.func @transpose(%x: tensor<8x16x4x32xf32>, %m: tensor<2x3xi1>, %s: tensor<f16>)
    -> (tensor<8x4x16x32xf32>, tensor<32x4x16x8xf32>, tensor<3x2xi1>, tensor<f16>) {
  // CHECK: %[[T0:.*]] = amp.transpose %{{.*}} permutation = [0, 2, 1, 3] : tensor<8x16x4x32xf32>
  %0 = amp.transpose %x permutation = [0, 2, 1, 3] : tensor<8x16x4x32xf32>
  // CHECK: %[[T1:.*]] = amp.transpose %{{.*}} permutation = [3, 2, 1, 0] : tensor<8x16x4x32xf32>
  %1 = amp.transpose %x permutation = [3, 2, 1, 0] : tensor<8x16x4x32xf32>
  // CHECK: %[[T2:.*]] = amp.transpose %{{.*}} permutation = [1, 0] : tensor<2x3xi1>
  %2 = amp.transpose %m permutation = [1, 0] : tensor<2x3xi1>
  // CHECK: %[[T3:.*]] = amp.transpose %{{.*}} permutation = [] : tensor<f16>
  %3 = amp.transpose %s permutation = [] : tensor<f16>
  // CHECK: return %[[T0]], %[[T1]], %[[T2]], %[[T3]] : tensor<8x4x16x32xf32>, tensor<32x4x16x8xf32>, tensor<3x2xi1>, tensor<f16>
  return %0, %1, %2, %3 : tensor<8x4x16x32xf32>, tensor<32x4x16x8xf32>, tensor<3x2xi1>, tensor<f16>
}
// GENERIC-LABEL: sym_name = "transpose"
// GENERIC: "amp.transpose"(%{{.*}}) <{permutation = array<i64: 0, 2, 1, 3>}> : (tensor<8x16x4x32xf32>) -> tensor<8x4x16x32xf32>
// GENERIC: "amp.transpose"(%{{.*}}) <{permutation = array<i64: 3, 2, 1, 0>}> : (tensor<8x16x4x32xf32>) -> tensor<32x4x16x8xf32>

// -----

// CHECK-LABEL: func.func @broadcast_to
func.func @broadcast_to(%b: tensor<64xf32>, %c: tensor<1x64xbf16>, %m: tensor<8x1xi1>, %s: tensor<i32>)
    -> (tensor<8x64xf32>, tensor<4x8x64xbf16>, tensor<8x8xi1>, tensor<2x2xi32>, tensor<64xf32>) {
  // CHECK: %[[B0:.*]] = amp.broadcast_to %{{.*}} : tensor<64xf32> -> tensor<8x64xf32>
  %0 = amp.broadcast_to %b : tensor<64xf32> -> tensor<8x64xf32>
  // CHECK: %[[B1:.*]] = amp.broadcast_to %{{.*}} : tensor<1x64xbf16> -> tensor<4x8x64xbf16>
  %1 = amp.broadcast_to %c : tensor<1x64xbf16> -> tensor<4x8x64xbf16>
  // CHECK: %[[B2:.*]] = amp.broadcast_to %{{.*}} : tensor<8x1xi1> -> tensor<8x8xi1>
  %2 = amp.broadcast_to %m : tensor<8x1xi1> -> tensor<8x8xi1>
  // CHECK: %[[B3:.*]] = amp.broadcast_to %{{.*}} : tensor<i32> -> tensor<2x2xi32>
  %3 = amp.broadcast_to %s : tensor<i32> -> tensor<2x2xi32>
  // CHECK: %[[B4:.*]] = amp.broadcast_to %{{.*}} : tensor<64xf32> -> tensor<64xf32>
  %4 = amp.broadcast_to %b : tensor<64xf32> -> tensor<64xf32>
  // CHECK: return %[[B0]], %[[B1]], %[[B2]], %[[B3]], %[[B4]]
  return %0, %1, %2, %3, %4 : tensor<8x64xf32>, tensor<4x8x64xbf16>, tensor<8x8xi1>, tensor<2x2xi32>, tensor<64xf32>
}

// -----

// CHECK-LABEL: func.func @slice
func.func @slice(%x: tensor<4x8xf32>, %i: tensor<10xi64>)
    -> (tensor<4x6xf32>, tensor<2x3xf32>, tensor<0x8xf32>, tensor<4xi64>, tensor<4x8xf32>) {
  // CHECK: %[[S0:.*]] = amp.slice %{{.*}} starts = [0, 2] limits = [4, 8] : tensor<4x8xf32>
  %0 = amp.slice %x starts = [0, 2] limits = [4, 8] : tensor<4x8xf32>
  // ceil((4 - 1) / 2) = 2, ceil(8 / 3) = 3
  // CHECK: %[[S1:.*]] = amp.slice %{{.*}} starts = [1, 0] limits = [4, 8] strides = [2, 3] : tensor<4x8xf32>
  %1 = amp.slice %x starts = [1, 0] limits = [4, 8] strides = [2, 3] : tensor<4x8xf32>
  // An empty slice (start = limit) is allowed.
  // CHECK: %[[S2:.*]] = amp.slice %{{.*}} starts = [2, 0] limits = [2, 8] : tensor<4x8xf32>
  %2 = amp.slice %x starts = [2, 0] limits = [2, 8] : tensor<4x8xf32>
  // CHECK: %[[S3:.*]] = amp.slice %{{.*}} starts = [3] limits = [10] strides = [2] : tensor<10xi64>
  %3 = amp.slice %i starts = [3] limits = [10] strides = [2] : tensor<10xi64>
  // The full tensor.
  // CHECK: %[[S4:.*]] = amp.slice %{{.*}} starts = [0, 0] limits = [4, 8] strides = [1, 1] : tensor<4x8xf32>
  %4 = amp.slice %x starts = [0, 0] limits = [4, 8] strides = [1, 1] : tensor<4x8xf32>
  // CHECK: return %[[S0]], %[[S1]], %[[S2]], %[[S3]], %[[S4]] : tensor<4x6xf32>, tensor<2x3xf32>, tensor<0x8xf32>, tensor<4xi64>, tensor<4x8xf32>
  return %0, %1, %2, %3, %4 : tensor<4x6xf32>, tensor<2x3xf32>, tensor<0x8xf32>, tensor<4xi64>, tensor<4x8xf32>
}
// GENERIC-LABEL: sym_name = "slice"
// GENERIC: "amp.slice"(%{{.*}}) <{limits = array<i64: 4, 8>, starts = array<i64: 0, 2>}> : (tensor<4x8xf32>) -> tensor<4x6xf32>
// GENERIC: "amp.slice"(%{{.*}}) <{limits = array<i64: 4, 8>, starts = array<i64: 1, 0>, strides = array<i64: 2, 3>}> : (tensor<4x8xf32>) -> tensor<2x3xf32>

// -----

// CHECK-LABEL: func.func @concat
// CHECK-SAME: (%[[A:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<4x2xf32>, %[[P:.*]]: tensor<1x8xf32>, %[[Q:.*]]: tensor<3x8xf32>, %[[I:.*]]: tensor<3xi64>, %[[J:.*]]: tensor<5xi64>)
func.func @concat(%a: tensor<4x8xf32>, %b: tensor<4x2xf32>, %p: tensor<1x8xf32>, %q: tensor<3x8xf32>,
                  %i: tensor<3xi64>, %j: tensor<5xi64>)
    -> (tensor<4x10xf32>, tensor<8x8xf32>, tensor<8xi64>, tensor<4x8xf32>) {
  // CHECK: %[[C0:.*]] = amp.concat %[[A]], %[[B]] axis = 1 : tensor<4x8xf32>, tensor<4x2xf32>
  %0 = amp.concat %a, %b axis = 1 : tensor<4x8xf32>, tensor<4x2xf32>
  // CHECK: %[[C1:.*]] = amp.concat %[[A]], %[[P]], %[[Q]] axis = 0 : tensor<4x8xf32>, tensor<1x8xf32>, tensor<3x8xf32>
  %1 = amp.concat %a, %p, %q axis = 0 : tensor<4x8xf32>, tensor<1x8xf32>, tensor<3x8xf32>
  // CHECK: %[[C2:.*]] = amp.concat %[[I]], %[[J]] axis = 0 : tensor<3xi64>, tensor<5xi64>
  %2 = amp.concat %i, %j axis = 0 : tensor<3xi64>, tensor<5xi64>
  // CHECK: %[[C3:.*]] = amp.concat %[[A]] axis = 1 : tensor<4x8xf32>
  %3 = amp.concat %a axis = 1 : tensor<4x8xf32>
  // CHECK: return %[[C0]], %[[C1]], %[[C2]], %[[C3]] : tensor<4x10xf32>, tensor<8x8xf32>, tensor<8xi64>, tensor<4x8xf32>
  return %0, %1, %2, %3 : tensor<4x10xf32>, tensor<8x8xf32>, tensor<8xi64>, tensor<4x8xf32>
}
// GENERIC-LABEL: sym_name = "concat"
// GENERIC: "amp.concat"(%{{.*}}, %{{.*}}) <{axis = 1 : i64}> : (tensor<4x8xf32>, tensor<4x2xf32>) -> tensor<4x10xf32>
// GENERIC: "amp.concat"(%{{.*}}, %{{.*}}, %{{.*}}) <{axis = 0 : i64}> : (tensor<4x8xf32>, tensor<1x8xf32>, tensor<3x8xf32>) -> tensor<8x8xf32>

// -----

// CHECK-LABEL: func.func @embedding
// CHECK-SAME: (%[[T:.*]]: tensor<256x64xf32>, %[[I64:.*]]: tensor<8x32xi64>, %[[I32:.*]]: tensor<16xi32>, %[[S:.*]]: tensor<i32>, %[[TB:.*]]: tensor<10x4xbf16>)
func.func @embedding(%table: tensor<256x64xf32>, %ids64: tensor<8x32xi64>, %ids32: tensor<16xi32>,
                     %id: tensor<i32>, %tb: tensor<10x4xbf16>)
    -> (tensor<8x32x64xf32>, tensor<16x64xf32>, tensor<64xf32>, tensor<16x4xbf16>) {
  // CHECK: %[[E0:.*]] = amp.embedding %[[T]][%[[I64]]] : tensor<256x64xf32>, tensor<8x32xi64>
  %0 = amp.embedding %table[%ids64] : tensor<256x64xf32>, tensor<8x32xi64>
  // CHECK: %[[E1:.*]] = amp.embedding %[[T]][%[[I32]]] : tensor<256x64xf32>, tensor<16xi32>
  %1 = amp.embedding %table[%ids32] : tensor<256x64xf32>, tensor<16xi32>
  // A rank-0 id gathers one row.
  // CHECK: %[[E2:.*]] = amp.embedding %[[T]][%[[S]]] : tensor<256x64xf32>, tensor<i32>
  %2 = amp.embedding %table[%id] : tensor<256x64xf32>, tensor<i32>
  // CHECK: %[[E3:.*]] = amp.embedding %[[TB]][%[[I32]]] : tensor<10x4xbf16>, tensor<16xi32>
  %3 = amp.embedding %tb[%ids32] : tensor<10x4xbf16>, tensor<16xi32>
  // CHECK: return %[[E0]], %[[E1]], %[[E2]], %[[E3]] : tensor<8x32x64xf32>, tensor<16x64xf32>, tensor<64xf32>, tensor<16x4xbf16>
  return %0, %1, %2, %3 : tensor<8x32x64xf32>, tensor<16x64xf32>, tensor<64xf32>, tensor<16x4xbf16>
}
// GENERIC-LABEL: sym_name = "embedding"
// GENERIC: "amp.embedding"(%{{.*}}, %{{.*}}) : (tensor<256x64xf32>, tensor<8x32xi64>) -> tensor<8x32x64xf32>
// GENERIC: "amp.embedding"(%{{.*}}, %{{.*}}) : (tensor<256x64xf32>, tensor<16xi32>) -> tensor<16x64xf32>

// -----

// CHECK-LABEL: func.func @dropout
func.func @dropout(%x: tensor<8x64xf32>, %h: tensor<8x64xf16>) -> (tensor<8x64xf32>, tensor<8x64xf16>, tensor<8x64xf32>) {
  // CHECK: %[[D0:.*]] = amp.dropout %{{.*}} rate = 1.000000e-01 seed = 7 : tensor<8x64xf32>
  %0 = amp.dropout %x rate = 0.1 seed = 7 : tensor<8x64xf32>
  // CHECK: %[[D1:.*]] = amp.dropout %{{.*}} rate = 5.000000e-01 seed = 0 : tensor<8x64xf16>
  %1 = amp.dropout %h rate = 0.5 seed = 0 : tensor<8x64xf16>
  // rate 0 keeps everything.
  // CHECK: %[[D2:.*]] = amp.dropout %{{.*}} rate = 0.000000e+00 seed = 3 : tensor<8x64xf32>
  %2 = amp.dropout %x rate = 0.0 seed = 3 : tensor<8x64xf32>
  // CHECK: return %[[D0]], %[[D1]], %[[D2]]
  return %0, %1, %2 : tensor<8x64xf32>, tensor<8x64xf16>, tensor<8x64xf32>
}

// -----

// CHECK-LABEL: func.func @cast
// CHECK-SAME: (%[[X:.*]]: tensor<32x784xf32>, %[[H:.*]]: tensor<4xf16>, %[[E5:.*]]: tensor<4xf8E5M2>)
func.func @cast(%x: tensor<32x784xf32>, %h: tensor<4xf16>, %e5: tensor<4xf8E5M2>)
    -> (tensor<32x784xbf16>, tensor<4xf32>, tensor<32x784xf8E4M3FN>, tensor<4xf8E5M2>, tensor<4xf16>, tensor<4xf8E4M3FN>) {
  // CHECK: %[[C0:.*]] = amp.cast %[[X]] : tensor<32x784xf32> to tensor<32x784xbf16>
  %0 = amp.cast %x : tensor<32x784xf32> to tensor<32x784xbf16>
  // CHECK: %[[C1:.*]] = amp.cast %[[H]] : tensor<4xf16> to tensor<4xf32>
  %1 = amp.cast %h : tensor<4xf16> to tensor<4xf32>
  // CHECK: %[[C2:.*]] = amp.cast %[[X]] : tensor<32x784xf32> to tensor<32x784xf8E4M3FN>
  %2 = amp.cast %x : tensor<32x784xf32> to tensor<32x784xf8E4M3FN>
  // CHECK: %[[C3:.*]] = amp.cast %[[H]] : tensor<4xf16> to tensor<4xf8E5M2>
  %3 = amp.cast %h : tensor<4xf16> to tensor<4xf8E5M2>
  // CHECK: %[[C4:.*]] = amp.cast %[[E5]] : tensor<4xf8E5M2> to tensor<4xf16>
  %4 = amp.cast %e5 : tensor<4xf8E5M2> to tensor<4xf16>
  // CHECK: %[[C5:.*]] = amp.cast %[[E5]] : tensor<4xf8E5M2> to tensor<4xf8E4M3FN>
  %5 = amp.cast %e5 : tensor<4xf8E5M2> to tensor<4xf8E4M3FN>
  // CHECK: return %[[C0]], %[[C1]], %[[C2]], %[[C3]], %[[C4]], %[[C5]]
  return %0, %1, %2, %3, %4, %5 : tensor<32x784xbf16>, tensor<4xf32>, tensor<32x784xf8E4M3FN>, tensor<4xf8E5M2>, tensor<4xf16>, tensor<4xf8E4M3FN>
}
// GENERIC-LABEL: sym_name = "cast"
// GENERIC: "amp.cast"(%{{.*}}) : (tensor<32x784xf32>) -> tensor<32x784xbf16>
// GENERIC: "amp.cast"(%{{.*}}) : (tensor<32x784xf32>) -> tensor<32x784xf8E4M3FN>
