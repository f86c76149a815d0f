// RUN: amp-opt %s --split-input-file --verify-diagnostics

func.func @empty() {
  // expected-error @+1 {{'amp.all_reduce' op needs at least one tensor}}
  "amp.all_reduce"() <{kind = #amp<reduce_kind sum>}> : () -> ()
  return
}

// -----

func.func @mixed(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+1 {{'amp.all_reduce' op operand #1 has element type 'f16', operand #0 'f32': one all-reduce is one collective over one element type}}
  %r:2 = amp.all_reduce mean %a, %b : tensor<4xf32>, tensor<4xf16>
  return
}

// -----

func.func @mean_of_ids(%a: tensor<4xi64>) {
  // expected-error @+1 {{'amp.all_reduce' op operand #0 has element type 'i64': sum and mean take f32, f16 or bf16}}
  %r = amp.all_reduce mean %a : tensor<4xi64>
  return
}

// -----

func.func @max_of_f16(%a: tensor<4xf16>) {
  // expected-error @+1 {{'amp.all_reduce' op operand #0 has element type 'f16': max takes f32, i32 or i64}}
  %r = amp.all_reduce max %a : tensor<4xf16>
  return
}

// -----

func.func @bad_kind(%a: tensor<4xf32>) {
  // expected-error @+2 {{custom op 'amp.all_reduce' expected ::mlir::amp::ReduceKind to be one of: sum, mean, max}}
  // expected-error @+1 {{failed to parse Amp_ReduceKindAttr parameter 'value'}}
  %r = amp.all_reduce min %a : tensor<4xf32>
  return
}

// -----

func.func @scatter_max(%a: tensor<4xf32>) {
  // expected-error @+1 {{'amp.reduce_scatter' op takes sum or mean, not max}}
  %r = amp.reduce_scatter max ranks(2) %a : tensor<4xf32>
  return
}

// -----

func.func @scatter_ids(%a: tensor<4xi32>) {
  // expected-error @+1 {{'amp.reduce_scatter' op operand #0 has element type 'i32': sum and mean take f32, f16 or bf16}}
  %r = amp.reduce_scatter sum ranks(2) %a : tensor<4xi32>
  return
}

// -----

func.func @scatter_mixed(%a: tensor<4xf32>, %b: tensor<4xbf16>) {
  // expected-error @+1 {{'amp.reduce_scatter' op operand #1 has element type 'bf16', operand #0 'f32': one reduce-scatter is one collective over one element type}}
  %r:2 = amp.reduce_scatter sum ranks(2) %a, %b : tensor<4xf32>, tensor<4xbf16>
  return
}

// -----

func.func @zero_ranks(%a: tensor<4xf32>) {
  // expected-error @+1 {{'amp.rank_chunk' op attribute 'ranks' failed to satisfy constraint: 64-bit signless integer attribute in [1, inf)}}
  %r = amp.rank_chunk ranks(0) %a : tensor<4xf32>
  return
}

// -----

func.func @gather_wrong_chunk(%c: tensor<3xf32>) {
  // expected-error @+1 {{'amp.all_gather' op operand #0 is 'tensor<3xf32>', but the chunk of result #0 ('tensor<4x3xf32>') over 2 ranks is 'tensor<6xf32>'}}
  %a = amp.all_gather ranks(2) %c : tensor<3xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @gather_count(%c: tensor<6xf32>) {
  // expected-error @+1 {{'amp.all_gather' op has 1 chunk(s) but 2 result(s)}}
  %a:2 = amp.all_gather ranks(2) %c : tensor<6xf32> -> tensor<4x3xf32>, tensor<4x3xf32>
  return
}
