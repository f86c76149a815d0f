// RUN: amp-opt %s --split-input-file | amp-opt --split-input-file | FileCheck %s
// RUN: amp-opt %s --split-input-file --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC
// The generic form parses back to the same custom form.
// RUN: amp-opt %s --split-input-file --mlir-print-op-generic | amp-opt --split-input-file | FileCheck %s

// CHECK-LABEL: func.func @constant
func.func @constant() -> (tensor<2xf32>, tensor<2x2xbf16>, tensor<3xi64>, tensor<4xi1>, tensor<f16>) {
  // CHECK: %[[F:.*]] = amp.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
  %f = amp.constant dense<[1.0, 2.0]> : tensor<2xf32>
  // CHECK: %[[B:.*]] = amp.constant dense<5.000000e-01> : tensor<2x2xbf16>
  %b = amp.constant dense<0.5> : tensor<2x2xbf16>
  // CHECK: %[[I:.*]] = amp.constant dense<[0, 1, 2]> : tensor<3xi64>
  %i = amp.constant dense<[0, 1, 2]> : tensor<3xi64>
  // CHECK: %[[M:.*]] = amp.constant dense<[true, false, true, true]> : tensor<4xi1>
  %m = amp.constant dense<[true, false, true, true]> : tensor<4xi1>
  // CHECK: %[[S:.*]] = amp.constant dense<-6.550400e+04> : tensor<f16>
  %s = amp.constant dense<-65504.0> : tensor<f16>
  // CHECK: return %[[F]], %[[B]], %[[I]], %[[M]], %[[S]]
  return %f, %b, %i, %m, %s : tensor<2xf32>, tensor<2x2xbf16>, tensor<3xi64>, tensor<4xi1>, tensor<f16>
}

// -----

// CHECK-LABEL: func.func @unary
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[H:.*]]: tensor<4x8xf16>, %[[B:.*]]: tensor<8xbf16>)
func.func @unary(%x: tensor<4x8xf32>, %h: tensor<4x8xf16>, %b: tensor<8xbf16>) -> tensor<4x8xf32> {
  // CHECK: amp.neg %[[X]] : tensor<4x8xf32>
  %0 = amp.neg %x : tensor<4x8xf32>
  // CHECK: amp.abs %[[H]] : tensor<4x8xf16>
  %1 = amp.abs %h : tensor<4x8xf16>
  // CHECK: amp.exp %[[B]] : tensor<8xbf16>
  %2 = amp.exp %b : tensor<8xbf16>
  // CHECK: amp.log %[[X]] : tensor<4x8xf32>
  %3 = amp.log %x : tensor<4x8xf32>
  // CHECK: amp.sqrt %[[X]] : tensor<4x8xf32>
  %4 = amp.sqrt %x : tensor<4x8xf32>
  // CHECK: amp.rsqrt %[[H]] : tensor<4x8xf16>
  %5 = amp.rsqrt %h : tensor<4x8xf16>
  // CHECK: amp.reciprocal %[[X]] : tensor<4x8xf32>
  %6 = amp.reciprocal %x : tensor<4x8xf32>
  // CHECK: amp.tanh %[[B]] : tensor<8xbf16>
  %7 = amp.tanh %b : tensor<8xbf16>
  // CHECK: amp.erf %[[B]] : tensor<8xbf16>
  %erf = amp.erf %b : tensor<8xbf16>
  // CHECK: amp.sigmoid %[[X]] : tensor<4x8xf32>
  %8 = amp.sigmoid %x : tensor<4x8xf32>
  // CHECK: amp.relu %[[H]] : tensor<4x8xf16>
  %9 = amp.relu %h : tensor<4x8xf16>
  // CHECK: %[[R:.*]] = amp.silu %[[X]] : tensor<4x8xf32>
  %10 = amp.silu %x : tensor<4x8xf32>
  // CHECK: return %[[R]] : tensor<4x8xf32>
  return %10 : tensor<4x8xf32>
}

// -----

// The default approximation is not printed; "tanh" is.
// CHECK-LABEL: func.func @gelu
func.func @gelu(%x: tensor<4x8xf32>, %b: tensor<4x8xbf16>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xbf16>) {
  // CHECK: %[[A:.*]] = amp.gelu %{{.*}} : tensor<4x8xf32>
  %0 = amp.gelu %x : tensor<4x8xf32>
  // CHECK: %[[N:.*]] = amp.gelu %{{.*}} : tensor<4x8xf32>
  %1 = amp.gelu %x approximate = none : tensor<4x8xf32>
  // CHECK: %[[T:.*]] = amp.gelu %{{.*}} approximate = tanh : tensor<4x8xbf16>
  %2 = amp.gelu %b approximate = tanh : tensor<4x8xbf16>
  // CHECK: return %[[A]], %[[N]], %[[T]]
  return %0, %1, %2 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xbf16>
}
// GENERIC-LABEL: sym_name = "gelu"
// GENERIC: "amp.gelu"(%{{.*}}) <{approximate = #amp<gelu_approximation none>}> : (tensor<4x8xf32>) -> tensor<4x8xf32>
// GENERIC: "amp.gelu"(%{{.*}}) <{approximate = #amp<gelu_approximation none>}> : (tensor<4x8xf32>) -> tensor<4x8xf32>
// GENERIC: "amp.gelu"(%{{.*}}) <{approximate = #amp<gelu_approximation tanh>}> : (tensor<4x8xbf16>) -> tensor<4x8xbf16>

// -----

// Every binary op on equal shapes.
// CHECK-LABEL: func.func @binary_same_shape
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[Y:.*]]: tensor<4x8xf32>)
func.func @binary_same_shape(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK: %[[A:.*]] = amp.add %[[X]], %[[Y]] : tensor<4x8xf32>, tensor<4x8xf32>
  %0 = amp.add %x, %y : tensor<4x8xf32>, tensor<4x8xf32>
  // CHECK: %[[S:.*]] = amp.sub %[[A]], %[[Y]] : tensor<4x8xf32>, tensor<4x8xf32>
  %1 = amp.sub %0, %y : tensor<4x8xf32>, tensor<4x8xf32>
  // CHECK: %[[M:.*]] = amp.mul %[[S]], %[[Y]]
  %2 = amp.mul %1, %y : tensor<4x8xf32>, tensor<4x8xf32>
  // CHECK: %[[D:.*]] = amp.div %[[M]], %[[Y]]
  %3 = amp.div %2, %y : tensor<4x8xf32>, tensor<4x8xf32>
  // CHECK: %[[MX:.*]] = amp.maximum %[[D]], %[[Y]]
  %4 = amp.maximum %3, %y : tensor<4x8xf32>, tensor<4x8xf32>
  // CHECK: %[[MN:.*]] = amp.minimum %[[MX]], %[[Y]]
  %5 = amp.minimum %4, %y : tensor<4x8xf32>, tensor<4x8xf32>
  // CHECK: %[[P:.*]] = amp.pow %[[MN]], %[[Y]]
  %6 = amp.pow %5, %y : tensor<4x8xf32>, tensor<4x8xf32>
  // CHECK: return %[[P]] : tensor<4x8xf32>
  return %6 : tensor<4x8xf32>
}

// -----

// numpy broadcasting: the inferred result type is the broadcast shape.
// CHECK-LABEL: func.func @binary_broadcast
func.func @binary_broadcast(%a: tensor<4x8xf32>, %bias: tensor<8xf32>, %col: tensor<4x1xf32>,
                            %s: tensor<f32>, %p: tensor<2x1x8xbf16>, %q: tensor<3x1xbf16>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<2x3x8xbf16>, tensor<f32>) {
  // CHECK: %[[R0:.*]] = amp.add %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8xf32>
  %0 = amp.add %a, %bias : tensor<4x8xf32>, tensor<8xf32>
  // CHECK: %[[R1:.*]] = amp.sub %{{.*}}, %{{.*}} : tensor<8xf32>, tensor<4x8xf32>
  %1 = amp.sub %bias, %a : tensor<8xf32>, tensor<4x8xf32>
  // [4, 1] with [8] stretches both ways.
  // CHECK: %[[R2:.*]] = amp.mul %{{.*}}, %{{.*}} : tensor<4x1xf32>, tensor<8xf32>
  %2 = amp.mul %col, %bias : tensor<4x1xf32>, tensor<8xf32>
  // CHECK: %[[R3:.*]] = amp.div %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<f32>
  %3 = amp.div %a, %s : tensor<4x8xf32>, tensor<f32>
  // CHECK: %[[R4:.*]] = amp.maximum %{{.*}}, %{{.*}} : tensor<2x1x8xbf16>, tensor<3x1xbf16>
  %4 = amp.maximum %p, %q : tensor<2x1x8xbf16>, tensor<3x1xbf16>
  // CHECK: %[[R5:.*]] = amp.pow %{{.*}}, %{{.*}} : tensor<f32>, tensor<f32>
  %5 = amp.pow %s, %s : tensor<f32>, tensor<f32>
  // CHECK: return %[[R0]], %[[R1]], %[[R2]], %[[R3]], %[[R4]], %[[R5]] : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<2x3x8xbf16>, tensor<f32>
  return %0, %1, %2, %3, %4, %5 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<2x3x8xbf16>, tensor<f32>
}
// GENERIC-LABEL: sym_name = "binary_broadcast"
// GENERIC: "amp.add"(%{{.*}}, %{{.*}}) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// GENERIC: "amp.sub"(%{{.*}}, %{{.*}}) : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// GENERIC: "amp.mul"(%{{.*}}, %{{.*}}) : (tensor<4x1xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// GENERIC: "amp.div"(%{{.*}}, %{{.*}}) : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
// GENERIC: "amp.maximum"(%{{.*}}, %{{.*}}) : (tensor<2x1x8xbf16>, tensor<3x1xbf16>) -> tensor<2x3x8xbf16>
// GENERIC: "amp.pow"(%{{.*}}, %{{.*}}) : (tensor<f32>, tensor<f32>) -> tensor<f32>

// -----

// Every predicate; the result is an i1 mask of the broadcast shape.
// CHECK-LABEL: func.func @compare
func.func @compare(%x: tensor<4x8xf32>, %y: tensor<8xf32>, %h: tensor<2x1xf16>, %g: tensor<1x3xf16>)
    -> (tensor<4x8xi1>, tensor<4x8xi1>, tensor<4x8xi1>, tensor<4x8xi1>, tensor<4x8xi1>, tensor<2x3xi1>) {
  // CHECK: %[[EQ:.*]] = amp.compare eq, %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8xf32>
  %0 = amp.compare eq, %x, %y : tensor<4x8xf32>, tensor<8xf32>
  // CHECK: %[[NE:.*]] = amp.compare ne, %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8xf32>
  %1 = amp.compare ne, %x, %y : tensor<4x8xf32>, tensor<8xf32>
  // CHECK: %[[LT:.*]] = amp.compare lt, %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<4x8xf32>
  %2 = amp.compare lt, %x, %x : tensor<4x8xf32>, tensor<4x8xf32>
  // CHECK: %[[LE:.*]] = amp.compare le, %{{.*}}, %{{.*}} : tensor<8xf32>, tensor<4x8xf32>
  %3 = amp.compare le, %y, %x : tensor<8xf32>, tensor<4x8xf32>
  // CHECK: %[[GT:.*]] = amp.compare gt, %{{.*}}, %{{.*}}
  %4 = amp.compare gt, %x, %y : tensor<4x8xf32>, tensor<8xf32>
  // CHECK: %[[GE:.*]] = amp.compare ge, %{{.*}}, %{{.*}} : tensor<2x1xf16>, tensor<1x3xf16>
  %5 = amp.compare ge, %h, %g : tensor<2x1xf16>, tensor<1x3xf16>
  // CHECK: return %[[EQ]], %[[NE]], %[[LT]], %[[LE]], %[[GT]], %[[GE]] : tensor<4x8xi1>, tensor<4x8xi1>, tensor<4x8xi1>, tensor<4x8xi1>, tensor<4x8xi1>, tensor<2x3xi1>
  return %0, %1, %2, %3, %4, %5 : tensor<4x8xi1>, tensor<4x8xi1>, tensor<4x8xi1>, tensor<4x8xi1>, tensor<4x8xi1>, tensor<2x3xi1>
}
// GENERIC-LABEL: sym_name = "compare"
// GENERIC: "amp.compare"(%{{.*}}, %{{.*}}) <{predicate = #amp<compare_predicate eq>}> : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
// GENERIC: "amp.compare"(%{{.*}}, %{{.*}}) <{predicate = #amp<compare_predicate ge>}> : (tensor<2x1xf16>, tensor<1x3xf16>) -> tensor<2x3xi1>

// -----

// CHECK-LABEL: func.func @select
// CHECK-SAME: (%[[M:.*]]: tensor<1x8x8xi1>, %[[X:.*]]: tensor<4x8x8xf32>, %[[NEG:.*]]: tensor<f32>, %[[C:.*]]: tensor<8x1xi1>, %[[Y:.*]]: tensor<8xbf16>)
func.func @select(%m: tensor<1x8x8xi1>, %x: tensor<4x8x8xf32>, %neg: tensor<f32>, %c: tensor<8x1xi1>,
                  %y: tensor<8xbf16>) -> (tensor<4x8x8xf32>, tensor<8x8xbf16>, tensor<4x8x8xf32>) {
  // CHECK: %[[S0:.*]] = amp.select %[[M]], %[[X]], %[[NEG]] : tensor<1x8x8xi1>, tensor<4x8x8xf32>, tensor<f32>
  %0 = amp.select %m, %x, %neg : tensor<1x8x8xi1>, tensor<4x8x8xf32>, tensor<f32>
  // The condition alone widens the result: [8, 1] x [8] x [8] -> [8, 8].
  // CHECK: %[[S1:.*]] = amp.select %[[C]], %[[Y]], %[[Y]] : tensor<8x1xi1>, tensor<8xbf16>, tensor<8xbf16>
  %1 = amp.select %c, %y, %y : tensor<8x1xi1>, tensor<8xbf16>, tensor<8xbf16>
  // CHECK: %[[S2:.*]] = amp.select %[[M]], %[[NEG]], %[[X]]
  %2 = amp.select %m, %neg, %x : tensor<1x8x8xi1>, tensor<f32>, tensor<4x8x8xf32>
  // CHECK: return %[[S0]], %[[S1]], %[[S2]] : tensor<4x8x8xf32>, tensor<8x8xbf16>, tensor<4x8x8xf32>
  return %0, %1, %2 : tensor<4x8x8xf32>, tensor<8x8xbf16>, tensor<4x8x8xf32>
}
// GENERIC-LABEL: sym_name = "select"
// GENERIC: "amp.select"(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<1x8x8xi1>, tensor<4x8x8xf32>, tensor<f32>) -> tensor<4x8x8xf32>
// GENERIC: "amp.select"(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<8x1xi1>, tensor<8xbf16>, tensor<8xbf16>) -> tensor<8x8xbf16>
