// amp-autodiff: the @train_step entry (docs/training-ir.md, "After amp-autodiff"), a few VJP
// rules in detail (softmax's amp.softmax_grad among them), the cast VJP under a bf16 forward, fan-out accumulation and the error for an
// op without a rule. Numeric gradient checks of every rule: test/unit/autodiff.
//
// RUN: amp-opt --split-input-file --verify-diagnostics --amp-autodiff %s | FileCheck %s

// The model stays as it is (the eval entry); @train_step copies every argument with its
// attributes, appends the seed, returns the loss and one f32 gradient per param in argument
// order; the model's logits are not returned.
// CHECK-LABEL: func.func @mlp(
// CHECK-SAME:    -> (tensor<f32>, tensor<4x6xf32>) {
// CHECK-NOT:     _grad
// CHECK:         return
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<4x8xf32> {amp.name = "image", amp.role = "input"}
// CHECK-SAME:    %[[Y:[a-z0-9]+]]: tensor<4xi64> {amp.name = "label", amp.role = "label"}
// CHECK-SAME:    %[[W:[a-z0-9]+]]: tensor<8x6xf32> {amp.init = #amp.init<kaiming_uniform, seed = 1>, amp.name = "fc1.weight", amp.role = "param"}
// CHECK-SAME:    %[[B:[a-z0-9]+]]: tensor<6xf32> {amp.init = #amp.init<zeros>, amp.name = "fc1.bias", amp.role = "param"}
// CHECK-SAME:    %[[U:[a-z0-9]+]]: tensor<3xf32> {amp.init = #amp.init<zeros>, amp.name = "unused", amp.role = "param"}
// CHECK-SAME:    %[[SEED:[a-z0-9]+]]: tensor<f32> {amp.init = #amp.init<ones>, amp.name = "amp.grad_seed", amp.role = "state"})
// CHECK-SAME:    -> (tensor<f32> {amp.name = "loss"}, tensor<8x6xf32> {amp.grad_of = "fc1.weight"}, tensor<6xf32> {amp.grad_of = "fc1.bias"}, tensor<3xf32> {amp.grad_of = "unused"})
// CHECK-SAME:    attributes {amp.entry = "train_step"}
// CHECK:         %[[H:.*]] = amp.matmul %[[X]], %[[W]]
// CHECK:         %[[HB:.*]] = amp.add %[[H]], %[[B]]
// CHECK:         %[[A:.*]] = amp.relu %[[HB]]
// CHECK:         %[[LOSS:.*]] = amp.cross_entropy %[[A]], %[[Y]]
// Seeding: d loss = %seed.
// CHECK:         %[[DA:.*]] = amp.cross_entropy_grad %[[A]], %[[Y]], %[[SEED]] : tensor<4x6xf32>, tensor<4xi64>, tensor<f32>
// relu: dx = relu(x) > 0 ? dy : 0 (the output's mask: the input need not be kept).
// CHECK:         %[[ZERO:.*]] = amp.constant dense<0.000000e+00> : tensor<f32>
// CHECK:         %[[POS:.*]] = amp.compare gt, %[[A]], %[[ZERO]]
// CHECK:         %[[DHB:.*]] = amp.select %[[POS]], %[[DA]], %[[ZERO]]
// Broadcast bias: the gradient is summed over the broadcast dimension.
// CHECK:         %[[DB:.*]] = amp.reduce_sum %[[DHB]] dims = [0] : tensor<4x6xf32>
// Weight: x^T @ dh; no gradient for the input x.
// CHECK:         %[[DW:.*]] = amp.matmul %[[X]], %[[DHB]] transpose_a : tensor<4x8xf32>, tensor<4x6xf32>
// CHECK-NOT:     transpose_b
// A param the loss does not read gets zeros (a scalar broadcast, not a param-sized constant).
// CHECK:         %[[DU0:.*]] = amp.constant dense<0.000000e+00> : tensor<f32>
// CHECK:         %[[DU:.*]] = amp.broadcast_to %[[DU0]] : tensor<f32> -> tensor<3xf32>
// CHECK:         return %[[LOSS]], %[[DW]], %[[DB]], %[[DU]] : tensor<f32>, tensor<8x6xf32>, tensor<6xf32>, tensor<3xf32>
func.func @mlp(
    %x: tensor<4x8xf32> {amp.role = "input", amp.name = "image"},
    %y: tensor<4xi64> {amp.role = "label", amp.name = "label"},
    %w: tensor<8x6xf32> {amp.role = "param", amp.name = "fc1.weight", amp.init = #amp.init<kaiming_uniform, seed = 1>},
    %b: tensor<6xf32> {amp.role = "param", amp.name = "fc1.bias", amp.init = #amp.init<zeros>},
    %u: tensor<3xf32> {amp.role = "param", amp.name = "unused", amp.init = #amp.init<zeros>})
    -> (tensor<f32>, tensor<4x6xf32>) {
  %h = amp.matmul %x, %w : tensor<4x8xf32>, tensor<8x6xf32>
  %hb = amp.add %h, %b : tensor<4x6xf32>, tensor<6xf32>
  %a = amp.relu %hb : tensor<4x6xf32>
  %loss = amp.cross_entropy %a, %y : tensor<4x6xf32>, tensor<4xi64>
  return %loss, %a : tensor<f32>, tensor<4x6xf32>
}

// -----

// A bf16 forward (as amp-autocast writes it): the backward matmuls run in bf16 with the forward
// op's amp.precision and a "backward of" reason; the cast's VJP casts the bf16 cotangent back,
// so the f32 param receives an f32 gradient.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<2x4xf32>
// CHECK-SAME:    %[[W:[a-z0-9]+]]: tensor<4x3xf32>
// CHECK-SAME:    %[[SEED:[a-z0-9]+]]: tensor<f32>
// CHECK-SAME:    -> (tensor<f32> {amp.name = "loss"}, tensor<4x3xf32> {amp.grad_of = "w"})
// CHECK:         %[[XL:.*]] = amp.cast %[[X]] {amp.autocast_inserted} : tensor<2x4xf32> to tensor<2x4xbf16>
// CHECK:         %[[WL:.*]] = amp.cast %[[W]] {amp.autocast_inserted} : tensor<4x3xf32> to tensor<4x3xbf16>
// CHECK:         amp.mse_loss
// CHECK:         %[[DO:.*]] = amp.div {{.*}} {amp.precision = "f32", amp.reason = #amp.reason<backward, source = "amp.mse_loss">}
// CHECK:         %[[DOL:.*]] = amp.cast %[[DO]] : tensor<2x3xf32> to tensor<2x3xbf16>
// CHECK:         %[[DWL:.*]] = amp.matmul %[[XL]], %[[DOL]] transpose_a {amp.precision = "bf16", amp.reason = #amp.reason<backward, source = "amp.matmul">} : tensor<2x4xbf16>, tensor<2x3xbf16>
// CHECK:         %[[DW:.*]] = amp.cast %[[DWL]] : tensor<4x3xbf16> to tensor<4x3xf32>
// CHECK:         return %{{.*}}, %[[DW]] : tensor<f32>, tensor<4x3xf32>
func.func @bf16_linear(
    %x: tensor<2x4xf32> {amp.role = "input", amp.name = "x"},
    %t: tensor<2x3xf32> {amp.role = "label", amp.name = "t"},
    %w: tensor<4x3xf32> {amp.role = "param", amp.name = "w"}) -> tensor<f32> {
  %xl = amp.cast %x {amp.autocast_inserted} : tensor<2x4xf32> to tensor<2x4xbf16>
  %wl = amp.cast %w {amp.autocast_inserted} : tensor<4x3xf32> to tensor<4x3xbf16>
  %o = amp.matmul %xl, %wl {amp.precision = "bf16", amp.reason = #amp.reason<policy, policy = "pytorch", category = "lower_precision_fp", detail = "test input">} : tensor<2x4xbf16>, tensor<4x3xbf16>
  %of = amp.cast %o {amp.autocast_inserted} : tensor<2x3xbf16> to tensor<2x3xf32>
  %loss = amp.mse_loss %of, %t {amp.precision = "f32", amp.reason = #amp.reason<policy, policy = "pytorch", category = "fp32", detail = "test input">} : tensor<2x3xf32>, tensor<2x3xf32>
  return %loss : tensor<f32>
}

// -----

// amp.linear (weight [out, in]) on a batched input, bf16 like autocast writes it: dx = dy·W,
// dW = dyᵀ·x over the flattened rows [B*T, ...], db = reduce_sum of dy over the batch dims; all
// in bf16 with the forward op's precision, cast back to f32 for the f32 params.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<2x3x4xf32>
// CHECK-SAME:    %[[W:[a-z0-9]+]]: tensor<5x4xf32>
// CHECK-SAME:    %[[B:[a-z0-9]+]]: tensor<5xf32>
// CHECK-SAME:    -> (tensor<f32> {amp.name = "loss"}, tensor<2x3x4xf32> {amp.grad_of = "x"}, tensor<5x4xf32> {amp.grad_of = "w"}, tensor<5xf32> {amp.grad_of = "b"})
// CHECK:         %[[XL:.*]] = amp.cast %[[X]] {amp.autocast_inserted} : tensor<2x3x4xf32> to tensor<2x3x4xbf16>
// CHECK:         %[[WL:.*]] = amp.cast %[[W]] {amp.autocast_inserted} : tensor<5x4xf32> to tensor<5x4xbf16>
// CHECK:         %[[BL:.*]] = amp.cast %[[B]] {amp.autocast_inserted} : tensor<5xf32> to tensor<5xbf16>
// CHECK:         %[[Y:.*]] = amp.linear %[[XL]], %[[WL]], %[[BL]] {amp.precision = "bf16", amp.reason = #amp.reason<policy, policy = "pytorch", category = "lower_precision_fp", detail = "test input">}
// CHECK:         %[[DY:.*]] = amp.cast %{{.*}} : tensor<2x3x5xf32> to tensor<2x3x5xbf16>
// CHECK:         %[[DX:.*]] = amp.matmul %[[DY]], %[[WL]] {amp.precision = "bf16", amp.reason = #amp.reason<backward, source = "amp.linear">} : tensor<2x3x5xbf16>, tensor<5x4xbf16>
// CHECK:         %[[X2:.*]] = amp.reshape %[[XL]] {amp.precision = "bf16", amp.reason = #amp.reason<backward, source = "amp.linear">} : tensor<2x3x4xbf16> -> tensor<6x4xbf16>
// CHECK:         %[[DY2:.*]] = amp.reshape %[[DY]] {{.*}} : tensor<2x3x5xbf16> -> tensor<6x5xbf16>
// CHECK:         %[[DW:.*]] = amp.matmul %[[DY2]], %[[X2]] transpose_a {amp.precision = "bf16", amp.reason = #amp.reason<backward, source = "amp.linear">} : tensor<6x5xbf16>, tensor<6x4xbf16>
// CHECK:         %[[DB:.*]] = amp.reduce_sum %[[DY]] dims = [0, 1] {amp.precision = "bf16", amp.reason = #amp.reason<backward, source = "amp.linear">} : tensor<2x3x5xbf16>
// CHECK-DAG:     %[[DBF:.*]] = amp.cast %[[DB]] : tensor<5xbf16> to tensor<5xf32>
// CHECK-DAG:     %[[DWF:.*]] = amp.cast %[[DW]] : tensor<5x4xbf16> to tensor<5x4xf32>
// CHECK-DAG:     %[[DXF:.*]] = amp.cast %[[DX]] : tensor<2x3x4xbf16> to tensor<2x3x4xf32>
// CHECK:         return %{{.*}}, %[[DXF]], %[[DWF]], %[[DBF]]
func.func @bf16_linear_op(
    %x: tensor<2x3x4xf32> {amp.role = "param", amp.name = "x"},
    %t: tensor<2x3x5xf32> {amp.role = "label", amp.name = "t"},
    %w: tensor<5x4xf32> {amp.role = "param", amp.name = "w"},
    %b: tensor<5xf32> {amp.role = "param", amp.name = "b"}) -> tensor<f32> {
  %xl = amp.cast %x {amp.autocast_inserted} : tensor<2x3x4xf32> to tensor<2x3x4xbf16>
  %wl = amp.cast %w {amp.autocast_inserted} : tensor<5x4xf32> to tensor<5x4xbf16>
  %bl = amp.cast %b {amp.autocast_inserted} : tensor<5xf32> to tensor<5xbf16>
  %y = amp.linear %xl, %wl, %bl {amp.precision = "bf16", amp.reason = #amp.reason<policy, policy = "pytorch", category = "lower_precision_fp", detail = "test input">} : tensor<2x3x4xbf16>, tensor<5x4xbf16>, tensor<5xbf16>
  %yf = amp.cast %y {amp.autocast_inserted} : tensor<2x3x5xbf16> to tensor<2x3x5xf32>
  %loss = amp.mse_loss %yf, %t {amp.precision = "f32", amp.reason = #amp.reason<policy, policy = "pytorch", category = "fp32", detail = "test input">} : tensor<2x3x5xf32>, tensor<2x3x5xf32>
  return %loss : tensor<f32>
}

// -----

// Softmax: one amp.softmax_grad of the output and the cotangent (not the mul, reduce_sum, sub,
// mul chain). Under an f32 softmax whose output is cast to bf16 (attention probabilities), the
// cotangent is read as the bf16 value the backward matmul produced: no f32 copy of it.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME:    %[[S:[a-z0-9]+]]: tensor<2x4xf32>
// CHECK:         %[[P:.*]] = amp.softmax %[[S]] axis = 1
// CHECK:         %[[DP:.*]] = amp.matmul %{{.*}}, %{{.*}} transpose_b {{.*}} : tensor<2x3xbf16>, tensor<4x3xbf16>
// CHECK-NOT:     amp.cast %[[DP]]
// CHECK:         %[[DS:.*]] = amp.softmax_grad %[[P]], %[[DP]] axis = 1 {amp.precision = "f32", amp.reason = #amp.reason<backward, source = "amp.softmax">} : tensor<2x4xf32>, tensor<2x4xbf16>
// CHECK:         return %{{.*}}, %[[DS]], %{{.*}} : tensor<f32>, tensor<2x4xf32>, tensor<4x3xf32>
func.func @attention_softmax(
    %s: tensor<2x4xf32> {amp.role = "param", amp.name = "s"},
    %t: tensor<2x3xf32> {amp.role = "label", amp.name = "t"},
    %v: tensor<4x3xf32> {amp.role = "param", amp.name = "v"}) -> tensor<f32> {
  %p = amp.softmax %s axis = 1 {amp.precision = "f32", amp.reason = #amp.reason<policy, policy = "pytorch", category = "fp32", detail = "test input">} : tensor<2x4xf32>
  %pl = amp.cast %p {amp.autocast_inserted} : tensor<2x4xf32> to tensor<2x4xbf16>
  %vl = amp.cast %v {amp.autocast_inserted} : tensor<4x3xf32> to tensor<4x3xbf16>
  %o = amp.matmul %pl, %vl {amp.precision = "bf16", amp.reason = #amp.reason<policy, policy = "pytorch", category = "lower_precision_fp", detail = "test input">} : tensor<2x4xbf16>, tensor<4x3xbf16>
  %of = amp.cast %o {amp.autocast_inserted} : tensor<2x3xbf16> to tensor<2x3xf32>
  %loss = amp.mse_loss %of, %t {amp.precision = "f32", amp.reason = #amp.reason<policy, policy = "pytorch", category = "fp32", detail = "test input">} : tensor<2x3xf32>, tensor<2x3xf32>
  return %loss : tensor<f32>
}

// -----

// A bf16 softmax: its gradient is computed in bf16 from the bf16 cotangent (the same roundings
// as the chain it replaces), along the forward op's axis.
// CHECK-LABEL: func.func @train_step(
// CHECK:         %[[P:.*]] = amp.softmax %{{.*}} axis = 0 : tensor<2x4xbf16>
// CHECK:         %[[DP:.*]] = amp.mul %{{.*}}, %{{.*}} : tensor<2x4xbf16>, tensor<2x4xbf16>
// CHECK:         %[[DS:.*]] = amp.softmax_grad %[[P]], %[[DP]] axis = 0 : tensor<2x4xbf16>, tensor<2x4xbf16>
// CHECK:         amp.cast %[[DS]] : tensor<2x4xbf16> to tensor<2x4xf32>
func.func @bf16_softmax(%s: tensor<2x4xf32> {amp.role = "param", amp.name = "s"}) -> tensor<f32> {
  %sl = amp.cast %s {amp.autocast_inserted} : tensor<2x4xf32> to tensor<2x4xbf16>
  %p = amp.softmax %sl axis = 0 : tensor<2x4xbf16>
  %e = amp.exp %p : tensor<2x4xbf16>
  %pf = amp.cast %e : tensor<2x4xbf16> to tensor<2x4xf32>
  %loss = amp.reduce_sum %pf dims = [0, 1] : tensor<2x4xf32>
  return %loss : tensor<f32>
}

// -----

// Fan-out: the cotangents of %w's two users are summed with amp.add in %w's type.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME:    %[[W:[a-z0-9]+]]: tensor<3xf32>
// CHECK-SAME:    %[[SEED:[a-z0-9]+]]: tensor<f32>
// CHECK:         %[[E:.*]] = amp.exp %[[W]]
// CHECK:         %[[DE:.*]] = amp.mul %{{.*}}, %[[E]] : tensor<3xf32>, tensor<3xf32>
// CHECK:         %[[DW:.*]] = amp.add %{{.*}}, %[[DE]] : tensor<3xf32>, tensor<3xf32>
// CHECK:         return %{{.*}}, %[[DW]]
func.func @fanout(%w: tensor<3xf32> {amp.role = "param", amp.name = "w"}) -> tensor<f32> {
  %e = amp.exp %w : tensor<3xf32>
  %s = amp.add %w, %e : tensor<3xf32>, tensor<3xf32>
  %loss = amp.reduce_sum %s dims = [0] : tensor<3xf32>
  return %loss : tensor<f32>
}

// -----

// An op on the param-to-loss path without a VJP rule is an error at that op.
func.func @no_rule(%w: tensor<4xf32> {amp.role = "param", amp.name = "w"}) -> tensor<f32> {
  // expected-error@+1 {{amp-autodiff: no VJP rule for 'amp.global_norm'}}
  %n = amp.global_norm %w : tensor<4xf32>
  return %n : tensor<f32>
}

// -----

// expected-error@+1 {{amp-autodiff: the module already has a train_step entry}}
func.func @train_step(%w: tensor<4xf32> {amp.role = "param", amp.name = "w"}) -> tensor<f32>
    attributes {amp.entry = "train_step"} {
  %n = amp.reduce_sum %w dims = [0] : tensor<4xf32>
  return %n : tensor<f32>
}
