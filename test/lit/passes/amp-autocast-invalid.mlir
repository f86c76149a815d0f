// amp-autocast: conflicting overrides are located errors.
//
// RUN: amp-opt --split-input-file --verify-diagnostics --amp-autocast="dtype=bf16" %s
// RUN: not amp-opt --split-input-file --amp-autocast="dtype=bf16 override=attn.*=f32 override=op:amp.softmax=bf16" %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=PATTERNS

func.func @precision_and_disabled(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{conflicting overrides: amp.precision = "bf16" asks for bf16 but amp.autocast = false disables autocast for this op}}
  %0 = amp.relu %x {amp.precision = "bf16", amp.autocast = false} : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @precision_on_cast(%x: tensor<4x8xf32>) -> tensor<4x8xbf16> {
  // expected-error @+1 {{amp.precision has no effect on 'amp.cast' (casts and constants keep their types; cast the value instead)}}
  %0 = amp.cast %x {amp.precision = "f32"} : tensor<4x8xf32> to tensor<4x8xbf16>
  return %0 : tensor<4x8xbf16>
}

// -----

func.func @bad_precision_value(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{amp.precision must be "f32", "f16" or "bf16", got "fp8"}}
  %0 = amp.relu %x {amp.precision = "fp8"} : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @inserted_marker_on_non_cast(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{amp.autocast_inserted is a unit attribute of amp.cast}}
  %0 = amp.relu %x {amp.autocast_inserted} : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Two pattern overrides that match one op with different precisions (second RUN line only; a
// per-op amp.precision beats patterns, so the first op is not a conflict).
// PATTERNS: error: {{.*}}conflicting overrides for 'amp.softmax' at attn.softmax: loc 'attn.*' -> f32 (option override=attn.*=f32) and op 'amp.softmax' -> bf16 (option override=op:amp.softmax=bf16)
func.func @patterns(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = amp.softmax %x axis = 1 {amp.precision = "f32"} : tensor<4x8xf32> loc("attn.softmax0")
  %1 = amp.softmax %x axis = 1 : tensor<4x8xf32> loc("attn.softmax")
  return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}
