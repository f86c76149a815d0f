// RUN: amp-opt %s --split-input-file --verify-diagnostics
// RUN: not amp-opt %s --split-input-file 2>&1 | FileCheck %s

// Enum attributes are keywords: any other word, or the old quoted spelling, is a parse error at
// the word (the checks below match its column, then the source line) that lists the accepted
// keywords.

func.func @compare_unknown_predicate(%x: tensor<4xf32>) {
  // CHECK: :{{[0-9]+}}:20: error: custom op 'amp.compare' expected ::mlir::amp::ComparePredicate to be one of: eq, ne, lt, le, gt, ge
  // CHECK-NEXT: {{^}}  %0 = amp.compare foo, %x, %x : tensor<4xf32>, tensor<4xf32>
  // expected-error @+2 {{custom op 'amp.compare' expected ::mlir::amp::ComparePredicate to be one of: eq, ne, lt, le, gt, ge}}
  // expected-error @+1 {{failed to parse Amp_ComparePredicateAttr parameter 'value'}}
  %0 = amp.compare foo, %x, %x : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @compare_quoted_predicate(%x: tensor<4xf32>) {
  // CHECK: :{{[0-9]+}}:20: error: custom op 'amp.compare' expected valid keyword
  // CHECK-NEXT: {{^}}  %0 = amp.compare "gt", %x, %x : tensor<4xf32>, tensor<4xf32>
  // expected-error @+2 {{custom op 'amp.compare' expected valid keyword}}
  // expected-error @+1 {{failed to parse Amp_ComparePredicateAttr parameter 'value'}}
  %0 = amp.compare "gt", %x, %x : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @compare_generic_string(%x: tensor<4xf32>) {
  // expected-error @+1 {{invalid properties {predicate = "gt"} for op amp.compare: Invalid attribute `predicate` in property conversion: "gt"}}
  %0 = "amp.compare"(%x, %x) <{predicate = "gt"}> : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  return
}

// -----

func.func @compare_generic_unknown(%x: tensor<4xf32>) {
  // expected-error @+2 {{expected ::mlir::amp::ComparePredicate to be one of: eq, ne, lt, le, gt, ge}}
  // expected-error @+1 {{failed to parse Amp_ComparePredicateAttr parameter 'value'}}
  %0 = "amp.compare"(%x, %x) <{predicate = #amp<compare_predicate neq>}> : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  return
}

// -----

func.func @gelu_unknown_approximation(%x: tensor<4xf32>) {
  // CHECK: :{{[0-9]+}}:34: error: custom op 'amp.gelu' expected ::mlir::amp::GeluApproximation to be one of: none, tanh
  // CHECK-NEXT: {{^}}  %0 = amp.gelu %x approximate = erf : tensor<4xf32>
  // expected-error @+2 {{custom op 'amp.gelu' expected ::mlir::amp::GeluApproximation to be one of: none, tanh}}
  // expected-error @+1 {{failed to parse Amp_GeluApproximationAttr parameter 'value'}}
  %0 = amp.gelu %x approximate = erf : tensor<4xf32>
  return
}

// -----

func.func @gelu_grad_unknown_approximation(%x: tensor<4xf32>) {
  // expected-error @+2 {{custom op 'amp.gelu_grad' expected ::mlir::amp::GeluApproximation to be one of: none, tanh}}
  // expected-error @+1 {{failed to parse Amp_GeluApproximationAttr parameter 'value'}}
  %0 = amp.gelu_grad %x, %x approximate = fast : tensor<4xf32>
  return
}

// -----

func.func @linear_unknown_activation(%x: tensor<2x8xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+2 {{custom op 'amp.linear' expected ::mlir::amp::LinearActivation to be one of: none, relu}}
  // expected-error @+1 {{failed to parse Amp_LinearActivationAttr parameter 'value'}}
  %0 = amp.linear %x, %w activation = gelu : tensor<2x8xf32>, tensor<4x8xf32>
  return
}

// -----

func.func @lr_schedule_unknown_kind(%t: tensor<i64>) -> tensor<f32> {
  // CHECK: :{{[0-9]+}}:25: error: custom op 'amp.lr_schedule' expected ::mlir::amp::LrScheduleKind to be one of: constant, cosine
  // CHECK-NEXT: {{^}}  %lr = amp.lr_schedule linear %t {base_lr = 0.1 : f64}
  // expected-error @+2 {{custom op 'amp.lr_schedule' expected ::mlir::amp::LrScheduleKind to be one of: constant, cosine}}
  // expected-error @+1 {{failed to parse Amp_LrScheduleKindAttr parameter 'value'}}
  %lr = amp.lr_schedule linear %t {base_lr = 0.1 : f64}
  return %lr : tensor<f32>
}
