// RUN: amp-opt %s --split-input-file --verify-diagnostics

func.func @constant_f8(%x: tensor<4xf32>) {
  // expected-error @+1 {{result #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 32-bit signless integer or 64-bit signless integer or 1-bit signless integer values, but got 'tensor<2xf8E4M3FN>'}}
  %0 = amp.constant dense<1.0> : tensor<2xf8E4M3FN>
  return
}

// -----

func.func @constant_not_elements() {
  // expected-error @+1 {{invalid properties {value = 1.000000e+00 : f32} for op amp.constant: Invalid attribute `value` in property conversion}}
  %0 = "amp.constant"() <{value = 1.0 : f32}> : () -> tensor<f32>
  return
}

// -----

func.func @constant_type_mismatch() {
  // expected-error @+1 {{failed to verify that all of {value, result} have same type}}
  %0 = "amp.constant"() <{value = dense<1.0> : tensor<2xf32>}> : () -> tensor<2xf16>
  return
}

// -----

func.func @unary_integer(%x: tensor<4xi32>) {
  // expected-error @+1 {{'amp.exp' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<4xi32>'}}
  %0 = amp.exp %x : tensor<4xi32>
  return
}

// -----

func.func @unary_f8(%x: tensor<4xf8E4M3FN>) {
  // expected-error @+1 {{'amp.relu' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<4xf8E4M3FN>'}}
  %0 = amp.relu %x : tensor<4xf8E4M3FN>
  return
}

// -----

func.func @unary_dynamic(%x: tensor<?x4xf32>) {
  // expected-error @+1 {{'amp.neg' op operand #0 must be statically shaped tensor}}
  %0 = amp.neg %x : tensor<?x4xf32>
  return
}

// -----

func.func @unary_unranked(%x: tensor<*xf32>) {
  // The custom syntax names a ranked tensor type.
  // expected-error @+1 {{custom op 'amp.tanh' invalid kind of type specified}}
  %0 = amp.tanh %x : tensor<*xf32>
  return
}

// -----

func.func @unary_result_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{'amp.sigmoid' op failed to verify that all of {input, result} have same type}}
  %0 = "amp.sigmoid"(%x) : (tensor<4xf32>) -> tensor<4xf16>
  return
}

// -----

func.func @binary_f8(%x: tensor<4xf8E4M3FN>) {
  // expected-error @+1 {{'amp.add' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<4xf8E4M3FN>'}}
  %0 = amp.add %x, %x : tensor<4xf8E4M3FN>, tensor<4xf8E4M3FN>
  return
}

// -----

func.func @binary_integer(%x: tensor<4xi64>) {
  // expected-error @+1 {{'amp.mul' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<4xi64>'}}
  %0 = amp.mul %x, %x : tensor<4xi64>, tensor<4xi64>
  return
}

// -----

func.func @binary_dynamic(%x: tensor<?xf32>) {
  // expected-error @+1 {{'amp.sub' op operand #0 must be statically shaped tensor}}
  %0 = amp.sub %x, %x : tensor<?xf32>, tensor<?xf32>
  return
}

// -----

func.func @binary_element_types(%x: tensor<4xf32>, %y: tensor<4xbf16>) {
  // expected-error @+1 {{'amp.add' op operands must have the same element type, got 'f32' and 'bf16' (insert an amp.cast)}}
  %0 = amp.add %x, %y : tensor<4xf32>, tensor<4xbf16>
  return
}

// -----

func.func @binary_not_broadcastable(%x: tensor<4x8xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{'amp.div' op shapes [4, 8] and [4] are not broadcast-compatible}}
  %0 = amp.div %x, %y : tensor<4x8xf32>, tensor<4xf32>
  return
}

// -----

func.func @binary_not_broadcastable_leading(%x: tensor<2x3x8xf32>, %y: tensor<4x1x8xf32>) {
  // expected-error @+1 {{'amp.pow' op shapes [2, 3, 8] and [4, 1, 8] are not broadcast-compatible}}
  %0 = amp.pow %x, %y : tensor<2x3x8xf32>, tensor<4x1x8xf32>
  return
}

// -----

// The generic form checks the declared result type against the inferred one.
func.func @binary_wrong_result(%x: tensor<4x8xf32>, %y: tensor<8xf32>) {
  // expected-error @+2 {{'amp.maximum' op inferred type(s) 'tensor<4x8xf32>' are incompatible with return type(s) of operation 'tensor<8xf32>'}}
  // expected-error @+1 {{'amp.maximum' op failed to infer returned types}}
  %0 = "amp.maximum"(%x, %y) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @compare_element_types(%x: tensor<4xf32>, %y: tensor<4xf16>) {
  // expected-error @+1 {{'amp.compare' op operands must have the same element type, got 'f32' and 'f16'}}
  %0 = amp.compare lt, %x, %y : tensor<4xf32>, tensor<4xf16>
  return
}

// -----

func.func @compare_not_broadcastable(%x: tensor<4xf32>, %y: tensor<3xf32>) {
  // expected-error @+1 {{'amp.compare' op shapes [4] and [3] are not broadcast-compatible}}
  %0 = amp.compare eq, %x, %y : tensor<4xf32>, tensor<3xf32>
  return
}

// -----

func.func @compare_integer(%x: tensor<4xi64>) {
  // expected-error @+1 {{'amp.compare' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<4xi64>'}}
  %0 = amp.compare eq, %x, %x : tensor<4xi64>, tensor<4xi64>
  return
}

// -----

func.func @compare_missing_predicate(%x: tensor<4xf32>) {
  // expected-error @+1 {{'amp.compare' op requires attribute 'predicate'}}
  %0 = "amp.compare"(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  return
}

// -----

func.func @select_cond_type(%c: tensor<4xf32>, %x: tensor<4xf32>) {
  // expected-error @+1 {{'amp.select' op operand #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<4xf32>'}}
  %0 = amp.select %c, %x, %x : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @select_value_types(%c: tensor<4xi1>, %x: tensor<4xf32>, %y: tensor<4xbf16>) {
  // expected-error @+1 {{'amp.select' op operands must have the same element type, got 'f32' and 'bf16'}}
  %0 = amp.select %c, %x, %y : tensor<4xi1>, tensor<4xf32>, tensor<4xbf16>
  return
}

// -----

func.func @select_values_not_broadcastable(%c: tensor<4xi1>, %x: tensor<4xf32>, %y: tensor<2xf32>) {
  // expected-error @+1 {{'amp.select' op shapes [4] and [2] are not broadcast-compatible}}
  %0 = amp.select %c, %x, %y : tensor<4xi1>, tensor<4xf32>, tensor<2xf32>
  return
}

// -----

func.func @select_cond_not_broadcastable(%c: tensor<3xi1>, %x: tensor<4xf32>) {
  // expected-error @+1 {{'amp.select' op condition shape [3] is not broadcast-compatible with value shape [4]}}
  %0 = amp.select %c, %x, %x : tensor<3xi1>, tensor<4xf32>, tensor<4xf32>
  return
}
