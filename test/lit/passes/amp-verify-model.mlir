// RUN: amp-opt %s --split-input-file --allow-unregistered-dialect --amp-verify-model --verify-diagnostics
// RUN: amp-opt %s --split-input-file --allow-unregistered-dialect --amp-verify-model --verify-diagnostics | FileCheck %s

// A model that follows the convention passes unchanged.
// CHECK-LABEL: func.func @valid
// CHECK: amp.cross_entropy
// CHECK: return
func.func @valid(
    %x: tensor<8x4xf32> {amp.role = "input", amp.name = "x"},
    %y: tensor<8xi64> {amp.role = "label", amp.name = "y"},
    %w: tensor<4x3xf32> {amp.role = "param", amp.name = "w", amp.init = #amp.init<xavier_uniform, seed = 1>},
    %b: tensor<3xf32> {amp.role = "param", amp.name = "b"},
    %m: tensor<8x4xbf16> {amp.role = "input", amp.name = "x_bf16"})
    -> (tensor<f32>, tensor<8x3xf32>) {
  %h = amp.matmul %x, %w : tensor<8x4xf32>, tensor<4x3xf32>
  %logits = amp.add %h, %b : tensor<8x3xf32>, tensor<3xf32>
  %loss = amp.cross_entropy %logits, %y : tensor<8x3xf32>, tensor<8xi64>
  return %loss, %logits : tensor<f32>, tensor<8x3xf32>
}

// Private functions are helpers, not models: the convention does not apply.
// CHECK-LABEL: func.func private @helper
func.func private @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "test.anything"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @missing_role(
    // expected-error @+1 {{model 'missing_role': argument #0 has no amp.role}}
    %x: tensor<4xf32> {amp.name = "x"}) -> tensor<f32> {
  %0 = amp.mse_loss %x, %x : tensor<4xf32>, tensor<4xf32>
  return %0 : tensor<f32>
}

// -----

func.func @missing_name(
    %x: tensor<4xf32> {amp.role = "input", amp.name = "x"},
    // expected-error @+1 {{model 'missing_name': argument #1 has no amp.name (names bind inputs, parameter files and checkpoints)}}
    %t: tensor<4xf32> {amp.role = "label"}) -> tensor<f32> {
  %0 = amp.mse_loss %x, %t : tensor<4xf32>, tensor<4xf32>
  return %0 : tensor<f32>
}

// -----

// An argument without any attribute breaks both rules; each is reported.
func.func @bare_argument(
    // expected-error @+2 {{model 'bare_argument': argument #0 has no amp.role}}
    // expected-error @+1 {{model 'bare_argument': argument #0 has no amp.name}}
    %x: tensor<4xf32>) -> tensor<f32> {
  %0 = amp.mse_loss %x, %x : tensor<4xf32>, tensor<4xf32>
  return %0 : tensor<f32>
}

// -----

func.func @duplicate_name(
    %w1: tensor<4xf32> {amp.role = "param", amp.name = "fc.weight"},
    %x: tensor<4xf32> {amp.role = "input", amp.name = "x"},
    // expected-error @+1 {{model 'duplicate_name': argument #2 reuses the name 'fc.weight' of argument #0}}
    %w2: tensor<4xf32> {amp.role = "param", amp.name = "fc.weight"}) -> tensor<f32> {
  %0 = amp.mse_loss %w1, %w2 : tensor<4xf32>, tensor<4xf32>
  return %0 : tensor<f32>
}

// -----

func.func @dynamic_argument(
    %x: tensor<4xf32> {amp.role = "input", amp.name = "x"},
    // expected-error @+1 {{model 'dynamic_argument': argument #1 must be a statically shaped tensor, got 'tensor<?x4xf32>'}}
    %d: tensor<?x4xf32> {amp.role = "input", amp.name = "d"}) -> tensor<f32> {
  %0 = amp.mse_loss %x, %x : tensor<4xf32>, tensor<4xf32>
  return %0 : tensor<f32>
}

// -----

func.func @scalar_argument(
    %x: tensor<4xf32> {amp.role = "input", amp.name = "x"},
    // expected-error @+1 {{model 'scalar_argument': argument #1 must be a statically shaped tensor, got 'f32'}}
    %lr: f32 {amp.role = "input", amp.name = "lr"}) -> tensor<f32> {
  %0 = amp.mse_loss %x, %x : tensor<4xf32>, tensor<4xf32>
  return %0 : tensor<f32>
}

// -----

func.func @bf16_param(
    %x: tensor<4xbf16> {amp.role = "input", amp.name = "x"},
    // expected-error @+1 {{model 'bf16_param': param 'w' must be f32 (master weights are f32; autocast derives the low-precision copies), got 'tensor<4xbf16>'}}
    %w: tensor<4xbf16> {amp.role = "param", amp.name = "w"}) -> tensor<f32> {
  %0 = amp.mse_loss %x, %w : tensor<4xbf16>, tensor<4xbf16>
  %1 = amp.cast %0 : tensor<bf16> to tensor<f32>
  return %1 : tensor<f32>
}

// -----

func.func @integer_param(
    // expected-error @+1 {{model 'integer_param': param 'steps' must be f32}}
    %s: tensor<4xi64> {amp.role = "param", amp.name = "steps"},
    %x: tensor<4xf32> {amp.role = "input", amp.name = "x"}) -> tensor<f32> {
  %0 = amp.mse_loss %x, %x : tensor<4xf32>, tensor<4xf32>
  return %0 : tensor<f32>
}

// -----

func.func @init_on_input(
    // expected-error @+1 {{model 'init_on_input': argument #0 has amp.init but only params}}
    %x: tensor<4xf32> {amp.role = "input", amp.name = "x", amp.init = #amp.init<zeros>}) -> tensor<f32> {
  %0 = amp.mse_loss %x, %x : tensor<4xf32>, tensor<4xf32>
  return %0 : tensor<f32>
}

// -----

func.func @init_on_label(
    %x: tensor<4x3xf32> {amp.role = "input", amp.name = "x"},
    // expected-error @+1 {{model 'init_on_label': argument #1 has amp.init but only params}}
    %y: tensor<4xi64> {amp.role = "label", amp.name = "y", amp.init = #amp.init<ones>}) -> tensor<f32> {
  %0 = amp.cross_entropy %x, %y : tensor<4x3xf32>, tensor<4xi64>
  return %0 : tensor<f32>
}

// -----

// expected-error @+1 {{model 'no_results': the first result must be the scalar f32 loss, but there are no results}}
func.func @no_results(%x: tensor<4xf32> {amp.role = "input", amp.name = "x"}) {
  return
}

// -----

// expected-error @+1 {{model 'loss_not_scalar': the first result must be the scalar loss tensor<f32>, got 'tensor<4xf32>'}}
func.func @loss_not_scalar(%x: tensor<4xf32> {amp.role = "input", amp.name = "x"}) -> (tensor<4xf32>, tensor<f32>) {
  %0 = amp.mse_loss %x, %x : tensor<4xf32>, tensor<4xf32>
  return %x, %0 : tensor<4xf32>, tensor<f32>
}

// -----

// expected-error @+1 {{model 'loss_bf16': the first result must be the scalar loss tensor<f32>, got 'tensor<bf16>'}}
func.func @loss_bf16(%x: tensor<4xbf16> {amp.role = "input", amp.name = "x"}) -> tensor<bf16> {
  %0 = amp.mse_loss %x, %x : tensor<4xbf16>, tensor<4xbf16>
  return %0 : tensor<bf16>
}

// -----

// expected-error @+1 {{model 'loss_not_tensor': the first result must be the scalar loss tensor<f32>, got 'f32'}}
func.func @loss_not_tensor(%x: tensor<4xf32> {amp.role = "input", amp.name = "x"}) -> f32 {
  // expected-error @+1 {{model 'loss_not_tensor': op 'test.extract' is not an amp op}}
  %0 = "test.extract"(%x) : (tensor<4xf32>) -> f32
  return %0 : f32
}

// -----

// amp-opt registers only the amp and func dialects: func.call is the registered non-amp op.
func.func private @helper(%x: tensor<4xf32>) -> tensor<4xf32>

func.func @call_in_body(%x: tensor<4xf32> {amp.role = "input", amp.name = "x"}) -> tensor<f32> {
  // expected-error @+1 {{model 'call_in_body': op 'func.call' is not an amp op; a model body holds only amp ops}}
  %0 = func.call @helper(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = amp.mse_loss %0, %x : tensor<4xf32>, tensor<4xf32>
  return %1 : tensor<f32>
}

// -----

func.func @foreign_op_in_body(%x: tensor<4xf32> {amp.role = "input", amp.name = "x"}) -> tensor<f32> {
  // expected-error @+1 {{model 'foreign_op_in_body': op 'arith.addf' is not an amp op; a model body holds only amp ops}}
  %0 = "arith.addf"(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = amp.mse_loss %0, %x : tensor<4xf32>, tensor<4xf32>
  return %1 : tensor<f32>
}

// -----

// Every violation in a model is reported, not just the first.
// expected-error @+1 {{model 'many': the first result must be the scalar loss tensor<f32>, got 'tensor<4xf32>'}}
func.func @many(
    // expected-error @+1 {{model 'many': argument #0 has no amp.role}}
    %x: tensor<4xf32> {amp.name = "x"},
    // expected-error @+1 {{model 'many': argument #1 reuses the name 'x' of argument #0}}
    %w: tensor<4xf32> {amp.role = "param", amp.name = "x"}) -> tensor<4xf32> {
  // expected-error @+1 {{model 'many': op 'test.op' is not an amp op}}
  %0 = "test.op"(%x, %w) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A derived copy (on an entry the training passes built) must be a float state shaped like its param.
func.func @copy_shape_mismatch(
    %w: tensor<4x4xf32> {amp.role = "param", amp.name = "w"},
    // expected-error @+1 {{model 'copy_shape_mismatch': argument #1: #amp.init<cast, from = "w"> needs a float state argument shaped like the param 'w'}}
    %c: tensor<4xbf16> {amp.role = "state", amp.name = "w.bf16", amp.init = #amp.init<cast, from = "w">}) -> tensor<f32>
    attributes {amp.entry = "train_step"} {
  %l = amp.reduce_sum %w dims = [0, 1] : tensor<4x4xf32>
  return %l : tensor<f32>
}

// -----

// State is what the training passes add to the entries they build; a user's model has none
// (nothing would update it, and its name could collide with the passes' amp.loss_scale).
func.func @user_state(
    %x: tensor<4xf32> {amp.role = "input", amp.name = "x"},
    // expected-error @+1 {{model 'user_state': argument #1 has amp.role "state", which only the training passes create}}
    %s: tensor<f32> {amp.role = "state", amp.name = "amp.loss_scale", amp.init = #amp.init<constant, scale = 65536.0>})
    -> tensor<f32> {
  %0 = amp.mse_loss %x, %x : tensor<4xf32>, tensor<4xf32>
  return %0 : tensor<f32>
}

// -----

// The entries the passes build keep their state.
// CHECK-LABEL: func.func @built_entry
func.func @built_entry(
    %x: tensor<4xf32> {amp.role = "input", amp.name = "x"},
    %s: tensor<f32> {amp.role = "state", amp.name = "amp.loss_scale", amp.init = #amp.init<constant, scale = 65536.0>})
    -> tensor<f32> attributes {amp.entry = "train_step"} {
  %0 = amp.mse_loss %x, %x : tensor<4xf32>, tensor<4xf32>
  return %0 : tensor<f32>
}

// -----

// Results are named by amp.name; two results cannot share a name (files are written by name).
// expected-error @+1 {{model 'duplicate_result_names': result #1 reuses the name 'out' of result #0}}
func.func @duplicate_result_names(%x: tensor<4xf32> {amp.role = "input", amp.name = "x"})
    -> (tensor<f32> {amp.name = "out"}, tensor<4xf32> {amp.name = "out"}) {
  %0 = amp.mse_loss %x, %x : tensor<4xf32>, tensor<4xf32>
  return %0, %x : tensor<f32>, tensor<4xf32>
}

// -----

// Empty tensors (a zero batch, an empty embedding table) are refused at the argument.
func.func @zero_batch(
    // expected-error @+1 {{model 'zero_batch': argument #0 has a zero-sized dimension ('tensor<0x4xf32>'); empty tensors are not supported}}
    %x: tensor<0x4xf32> {amp.role = "input", amp.name = "x"},
    // expected-error @+1 {{model 'zero_batch': argument #1 has a zero-sized dimension ('tensor<0x8xf32>'); empty tensors are not supported}}
    %table: tensor<0x8xf32> {amp.role = "param", amp.name = "table"}) -> tensor<f32> {
  %0 = amp.mse_loss %x, %x : tensor<0x4xf32>, tensor<0x4xf32>
  return %0 : tensor<f32>
}

// -----

// Found by fuzz/pipeline.cpp (UBSan: signed overflow sizing a constant in codegen): tensors above
// the runtime's 2^36-byte limit per buffer, or whose size overflows 64 bits, are refused at the
// argument, and at the op for results computed from small inputs.
func.func @huge(
    // expected-error @+1 {{model 'huge': argument #0 ('tensor<9223372036854775807x4xf32>') is larger than the runtime's limit of 68719476736 bytes per tensor}}
    %x: tensor<9223372036854775807x4xf32> {amp.role = "input", amp.name = "x"},
    // expected-error @+1 {{model 'huge': argument #1 ('tensor<4294967296x8xf32>') is larger than the runtime's limit of 68719476736 bytes per tensor}}
    %w: tensor<4294967296x8xf32> {amp.role = "param", amp.name = "w"},
    %v: tensor<16777216xf32> {amp.role = "param", amp.name = "v"}) -> tensor<f32> {
  // expected-error @+1 {{model 'huge': op 'amp.broadcast_to' produces 'tensor<4096x16777216xf32>', larger than the runtime's limit of 68719476736 bytes per tensor}}
  %b = amp.broadcast_to %v : tensor<16777216xf32> -> tensor<4096x16777216xf32>
  %0 = amp.mse_loss %x, %x : tensor<9223372036854775807x4xf32>, tensor<9223372036854775807x4xf32>
  return %0 : tensor<f32>
}

// -----

// A module without a model (an empty file, or only private helpers) is an error, not a no-op.
// expected-error @+1 {{amp-verify-model: the module defines no model (a public func.func)}}
module {
  func.func private @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}
