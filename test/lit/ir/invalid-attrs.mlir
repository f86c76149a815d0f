// RUN: amp-opt %s --split-input-file --verify-diagnostics

// expected-error @+1 {{unknown initialiser kind 'gaussian' (expected zeros, ones, constant, normal, uniform, xavier_uniform, xavier_normal, kaiming_uniform, kaiming_normal or cast)}}
func.func @init_unknown_kind(%w: tensor<4xf32> {amp.role = "param", amp.name = "w", amp.init = #amp.init<gaussian>}) {
  return
}

// -----

// expected-error @+1 {{unknown #amp.init field 'mean' (expected scale, seed or from)}}
func.func @init_unknown_field(%w: tensor<4xf32> {amp.role = "param", amp.name = "w", amp.init = #amp.init<normal, mean = 0.0>}) {
  return
}

// -----

// expected-error @+1 {{initialiser seed must be non-negative, got -1}}
func.func @init_negative_seed(%w: tensor<4xf32> {amp.role = "param", amp.name = "w", amp.init = #amp.init<normal, seed = -1>}) {
  return
}

// -----

// expected-error @+2 {{unexpected decimal integer literal for a floating point value}}
// expected-note @+1 {{add a trailing dot to make the literal a float}}
func.func @init_integer_scale(%w: tensor<4xf32> {amp.role = "param", amp.name = "w", amp.init = #amp.init<constant, scale = 2>}) {
  return
}

// -----

// expected-error @+1 {{initialiser scale must be finite}}
func.func @init_infinite_scale(%w: tensor<4xf32> {amp.role = "param", amp.name = "w", amp.init = #amp.init<constant, scale = 0x7FF0000000000000>}) {
  return
}

// -----

// expected-error @+1 {{expected valid keyword or string}}
func.func @init_no_kind(%w: tensor<4xf32> {amp.role = "param", amp.name = "w", amp.init = #amp.init<>}) {
  return
}

// -----

// expected-error @+1 {{argument #0: amp.init must be an #amp.init<...> or f32 values of the argument's type}}
func.func @init_not_init_attr(%w: tensor<4xf32> {amp.role = "param", amp.name = "w", amp.init = "zeros"}) {
  return
}

// -----

// expected-error-re @+1 {{argument #1: amp.role must be "param", "input"{{.*}}, got "weight"}}
func.func @role_value(%x: tensor<4xf32> {amp.role = "input", amp.name = "x"}, %w: tensor<4xf32> {amp.role = "weight", amp.name = "w"}) {
  return
}

// -----

// expected-error-re @+1 {{argument #0: amp.role must be "param", "input"{{.*}}, got 1 : i64}}
func.func @role_not_string(%x: tensor<4xf32> {amp.role = 1 : i64, amp.name = "x"}) {
  return
}

// -----

// expected-error @+1 {{argument #0: amp.name must be a non-empty string of letters, digits and '_', '.', '-', '/', got ""}}
func.func @name_empty(%x: tensor<4xf32> {amp.role = "input", amp.name = ""}) {
  return
}

// -----

// expected-error @+1 {{argument #0: amp.name must be a non-empty string of letters, digits and '_', '.', '-', '/', got "fc1 weight"}}
func.func @name_space(%x: tensor<4xf32> {amp.role = "param", amp.name = "fc1 weight"}) {
  return
}

// -----

// expected-error @+1 {{argument #0: amp.name must be a non-empty string of letters, digits and '_', '.', '-', '/', got 3 : i64}}
func.func @name_not_string(%x: tensor<4xf32> {amp.role = "input", amp.name = 3 : i64}) {
  return
}

// -----

// expected-error @+1 {{argument #0: unknown amp argument attribute 'amp.precision' (expected amp.role, amp.name, amp.init or amp.shard_of)}}
func.func @unknown_arg_attr(%x: tensor<4xf32> {amp.role = "input", amp.name = "x", amp.precision = "f16"}) {
  return
}

// -----

// expected-error @+1 {{argument #0: unknown amp argument attribute 'amp.names' (expected amp.role, amp.name, amp.init or amp.shard_of)}}
func.func @misspelt_arg_attr(%x: tensor<4xf32> {amp.role = "input", amp.names = "x"}) {
  return
}

// -----

func.func @precision_value(%x: tensor<4xf32>) {
  // expected-error @+1 {{amp.precision must be "f32", "f16" or "bf16", got "fp8"}}
  %0 = amp.relu %x {amp.precision = "fp8"} : tensor<4xf32>
  return
}

// -----

func.func @precision_not_string(%x: tensor<4xf32>) {
  // expected-error @+1 {{amp.precision must be "f32", "f16" or "bf16", got 16 : i64}}
  %0 = amp.relu %x {amp.precision = 16 : i64} : tensor<4xf32>
  return
}

// -----

func.func @reason_not_typed(%x: tensor<4xf32>) {
  // expected-error @+1 {{amp.reason must be an #amp.reason (e.g. #amp.reason<override, detail = "...">), got "override: by hand"}}
  %0 = amp.relu %x {amp.precision = "f32", amp.reason = "override: by hand"} : tensor<4xf32>
  return
}

// -----

func.func @reason_backward_without_source(%x: tensor<4xf32>) {
  // expected-error @+1 {{#amp.reason<backward> needs a non-empty source}}
  %0 = amp.relu %x {amp.precision = "f32", amp.reason = #amp.reason<backward, detail = "of relu">} : tensor<4xf32>
  return
}

// -----

func.func @reason_backward_of_non_op(%x: tensor<4xf32>) {
  // expected-error @+1 {{#amp.reason<backward> source must name an amp op, got "relu"}}
  %0 = amp.relu %x {amp.precision = "f32", amp.reason = #amp.reason<backward, source = "relu">} : tensor<4xf32>
  return
}

// -----

func.func @reason_policy_without_policy(%x: tensor<4xf32>) {
  // expected-error @+1 {{#amp.reason<policy> needs a non-empty policy}}
  %0 = amp.relu %x {amp.precision = "f32", amp.reason = #amp.reason<policy, category = "fp32", detail = "x">} : tensor<4xf32>
  return
}

// -----

func.func @reason_override_with_rule(%x: tensor<4xf32>) {
  // expected-error @+1 {{#amp.reason<override> takes no rule}}
  %0 = amp.relu %x {amp.precision = "f32", amp.reason = #amp.reason<override, rule = "r", detail = "x">} : tensor<4xf32>
  return
}

// -----

func.func @reason_unknown_kind(%x: tensor<4xf32>) {
  // expected-error @+2 {{expected ::mlir::amp::ReasonKind to be one of: policy, override, off, backward, pass}}
  // expected-error @+1 {{failed to parse Amp_ReasonAttr parameter 'kind'}}
  %0 = amp.relu %x {amp.precision = "f32", amp.reason = #amp.reason<because, detail = "x">} : tensor<4xf32>
  return
}

// -----

// expected-error @+1 {{amp.target must be a string such as "cpu" or "cuda:sm_90"}}
func.func @target_not_string(%x: tensor<4xf32>) attributes {amp.target = 90 : i64} {
  return
}

// -----

// expected-error @+1 {{amp.autocast must be a boolean (false disables autocast for the function or region)}}
func.func @autocast_not_bool(%x: tensor<4xf32>) attributes {amp.autocast = "off"} {
  return
}

// -----

func.func @unknown_op_attr(%x: tensor<4xf32>) {
  // expected-error @+1 {{unknown amp attribute 'amp.role'}}
  %0 = amp.relu %x {amp.role = "param"} : tensor<4xf32>
  return
}

// -----

func.func @origin_not_a_pass(%x: tensor<4xf32>) {
  // expected-error @+1 {{amp.origin must name the training pass that inserted the op ("loss_scaling", "optimizer", "accumulate", "data_parallel", "shard_optimizer" or "remat"), got "autodiff"}}
  %0 = amp.relu %x {amp.origin = "autodiff"} : tensor<4xf32>
  return
}

// -----

func.func @origin_not_a_string(%x: tensor<4xf32>) {
  // expected-error @+1 {{amp.origin must name the training pass that inserted the op}}
  %0 = amp.relu %x {amp.origin = 1 : i64} : tensor<4xf32>
  return
}

// -----

// expected-error @+1 {{unknown amp attribute 'amp.fast_math'}}
func.func @unknown_func_attr(%x: tensor<4xf32>) attributes {amp.fast_math = true} {
  return
}

// -----

// expected-error @+1 {{initialiser kind 'cast' needs from = "PARAM", and only it takes one}}
func.func @cast_init_without_source(%s: tensor<4xbf16> {amp.role = "state", amp.name = "w.bf16", amp.init = #amp.init<cast>}) {
  return
}

// -----

// expected-error @+1 {{initialiser kind 'cast' needs from = "PARAM", and only it takes one}}
func.func @source_on_other_kind(%w: tensor<4xf32> {amp.role = "param", amp.name = "w", amp.init = #amp.init<zeros, from = "x">}) {
  return
}

// -----

// Stored initial values must have the argument's type.
// expected-error @+1 {{argument #0: amp.init must be an #amp.init<...> or f32 values of the argument's type}}
func.func @init_values_of_another_shape(%w: tensor<4xf32> {amp.role = "param", amp.name = "w", amp.init = dense<1.0> : tensor<2xf32>}) {
  return
}

// -----

// expected-error @+1 {{argument #0: amp.init must be an #amp.init<...> or f32 values of the argument's type}}
func.func @init_values_not_f32(%w: tensor<4xf32> {amp.role = "param", amp.name = "w", amp.init = dense<1> : tensor<4xi32>}) {
  return
}

// -----

// The recipe attributes (set by the training passes) hold GradScaler's ranges and their shape.
// expected-error @+1 {{growth-factor must be finite and > 1 (as torch's GradScaler), got 0.5}}
module attributes {amp.loss_scaling = #amp.loss_scaling<kind = dynamic, init_scale = 8.0 : f64, growth_factor = 0.5 : f64, backoff_factor = 0.5 : f64, growth_interval = 10>} {
}

// -----

// expected-error @+1 {{#amp.loss_scaling<kind = none> takes no init_scale}}
module attributes {amp.loss_scaling = #amp.loss_scaling<kind = none, init_scale = 8.0 : f64>} {
}

// -----

// expected-error @+1 {{growth_factor, backoff_factor and growth_interval configure dynamic scaling; kind = static takes none of them}}
module attributes {amp.loss_scaling = #amp.loss_scaling<kind = static, init_scale = 8.0 : f64, growth_interval = 10>} {
}

// -----

// expected-error @+1 {{accumulate must be in [1, 2^20], got 0}}
module attributes {amp.optimizer = #amp.optimizer<kind = sgd, lr = 0.1 : f64, accumulate = 0>} {
}

// -----

// expected-error @+1 {{amp.optimizer is a #amp.optimizer<...> attribute of the module (set by amp-optimizer)}}
module attributes {amp.optimizer = "adamw"} {
}

// -----

// expected-error @+1 {{amp.data_parallel is a #amp.data_parallel<...> attribute of the module}}
func.func @data_parallel_on_a_function() attributes {amp.data_parallel = #amp.data_parallel<reduce = f32>} {
  return
}
