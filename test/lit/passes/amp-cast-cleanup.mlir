// amp-cast-cleanup: identity casts disappear, exact cast chains fold, inexact ones stay, casts of
// constants fold into constants, equal casts are shared (CSE).
//
// RUN: amp-opt --split-input-file --amp-cast-cleanup %s | FileCheck %s
// The pipeline autocast -> cleanup leaves no identity or foldable casts.
// RUN: amp-opt --amp-autocast="dtype=bf16 policy=tensorflow" --amp-cast-cleanup %S/Inputs/cleanup-pipeline.mlir | FileCheck %s --check-prefix=PIPE

// CHECK-LABEL: func.func @identity
// CHECK-NEXT: return %arg0
func.func @identity(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = amp.cast %x : tensor<4xf32> to tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// f16 -> f32 -> f16 is exact: the value itself. bf16 -> f32 -> bf16 likewise.
// CHECK-LABEL: func.func @exact_round_trip
// CHECK-NOT: amp.cast
// CHECK: return %arg0, %arg1
func.func @exact_round_trip(%x: tensor<4xf16>, %y: tensor<4xbf16>) -> (tensor<4xf16>, tensor<4xbf16>) {
  %0 = amp.cast %x : tensor<4xf16> to tensor<4xf32>
  %1 = amp.cast %0 : tensor<4xf32> to tensor<4xf16>
  %2 = amp.cast %y : tensor<4xbf16> to tensor<4xf32>
  %3 = amp.cast %2 : tensor<4xf32> to tensor<4xbf16>
  return %1, %3 : tensor<4xf16>, tensor<4xbf16>
}

// -----

// f32 -> f16 -> f32 rounds: never folded. f32 -> bf16 -> f16 rounds twice: kept.
// CHECK-LABEL: func.func @inexact_chains
// CHECK-NEXT: %[[A:.*]] = amp.cast %arg0 : tensor<4xf32> to tensor<4xf16>
// CHECK-NEXT: %[[B:.*]] = amp.cast %[[A]] : tensor<4xf16> to tensor<4xf32>
// CHECK-NEXT: %[[C:.*]] = amp.cast %arg0 : tensor<4xf32> to tensor<4xbf16>
// CHECK-NEXT: %[[D:.*]] = amp.cast %[[C]] : tensor<4xbf16> to tensor<4xf16>
// CHECK-NEXT: return %[[B]], %[[D]]
func.func @inexact_chains(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf16>) {
  %0 = amp.cast %x : tensor<4xf32> to tensor<4xf16>
  %1 = amp.cast %0 : tensor<4xf16> to tensor<4xf32>
  %2 = amp.cast %x : tensor<4xf32> to tensor<4xbf16>
  %3 = amp.cast %2 : tensor<4xbf16> to tensor<4xf16>
  return %1, %3 : tensor<4xf32>, tensor<4xf16>
}

// -----

// An exact first step folds into one cast: f16 -> f32 -> bf16 is f16 -> bf16 (one rounding of
// the same value); fp8 -> f16 is exact too. The marker of inserted casts is kept.
// CHECK-LABEL: func.func @exact_prefix
// CHECK-NEXT: %[[A:.*]] = amp.cast %arg0 {amp.autocast_inserted} : tensor<4xf16> to tensor<4xbf16>
// CHECK-NEXT: %[[B:.*]] = amp.cast %arg1 : tensor<4xf8E4M3FN> to tensor<4xf32>
// CHECK-NEXT: return %[[A]], %[[B]]
func.func @exact_prefix(%x: tensor<4xf16>, %q: tensor<4xf8E4M3FN>) -> (tensor<4xbf16>, tensor<4xf32>) {
  %0 = amp.cast %x : tensor<4xf16> to tensor<4xf32>
  %1 = amp.cast %0 {amp.autocast_inserted} : tensor<4xf32> to tensor<4xbf16>
  %2 = amp.cast %q : tensor<4xf8E4M3FN> to tensor<4xf16>
  %3 = amp.cast %2 : tensor<4xf16> to tensor<4xf32>
  return %1, %3 : tensor<4xbf16>, tensor<4xf32>
}

// -----

// Casts of constants become constants (round to nearest even; f16 overflow gives inf).
// CHECK-LABEL: func.func @constants
// CHECK-DAG: amp.constant dense<2.500000e-01> : tensor<bf16>
// CHECK-DAG: amp.constant dense<[1.000000e+00, 0x7C00, 3.332520e-01]> : tensor<3xf16>
// CHECK-NOT: amp.cast
func.func @constants() -> (tensor<bf16>, tensor<3xf16>) {
  %c = amp.constant dense<0.25> : tensor<f32>
  %0 = amp.cast %c : tensor<f32> to tensor<bf16>
  %d = amp.constant dense<[1.0, 1.0e+06, 0.33333333]> : tensor<3xf32>
  %1 = amp.cast %d : tensor<3xf32> to tensor<3xf16>
  return %0, %1 : tensor<bf16>, tensor<3xf16>
}

// -----

// Equal casts of one value are shared; dead casts disappear.
// CHECK-LABEL: func.func @cse
// CHECK-NEXT: %[[A:.*]] = amp.cast %arg0 : tensor<4xf32> to tensor<4xf16>
// CHECK-NEXT: %[[S:.*]] = amp.add %[[A]], %[[A]]
// CHECK-NEXT: return %[[S]]
func.func @cse(%x: tensor<4xf32>) -> tensor<4xf16> {
  %0 = amp.cast %x : tensor<4xf32> to tensor<4xf16>
  %1 = amp.cast %x : tensor<4xf32> to tensor<4xf16>
  %2 = amp.cast %x : tensor<4xf32> to tensor<4xbf16>
  %3 = amp.add %0, %1 : tensor<4xf16>, tensor<4xf16>
  return %3 : tensor<4xf16>
}

// PIPE-LABEL: func.func @pipeline
// PIPE-NOT: tensor<4x8xf16> to tensor<4x8xf16>
// PIPE-DAG: %[[C:.*]] = amp.cast %arg0 {amp.reason = #amp.reason<policy, policy = "tensorflow", rule = "explicit cast absorbed{{.*}}">} : tensor<4x8xf16> to tensor<4x8xbf16>
// PIPE-DAG: %[[S:.*]] = amp.constant dense<2.500000e-01> : tensor<bf16>
// PIPE: %[[M:.*]] = amp.matmul %[[C]]
// PIPE: amp.mul %[[M]], %[[S]]
// PIPE-NOT: amp.cast {{.*}} to tensor<bf16>
