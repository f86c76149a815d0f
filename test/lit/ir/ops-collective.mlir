// RUN: amp-opt %s --split-input-file | amp-opt --split-input-file | FileCheck %s
// RUN: amp-opt %s --split-input-file --verify-diagnostics

// CHECK-LABEL: func.func @buckets
// CHECK: %[[R:.*]]:2 = amp.all_reduce mean %{{.*}}, %{{.*}} : tensor<4x3xf32>, tensor<3xf32>
// CHECK: amp.all_reduce sum %{{.*}} : tensor<8xbf16>
// CHECK: amp.all_reduce max %{{.*}} : tensor<f32>
// CHECK: amp.all_reduce max %{{.*}} : tensor<2xi64>
func.func @buckets(%g1: tensor<4x3xf32>, %g2: tensor<3xf32>, %h: tensor<8xbf16>, %f: tensor<f32>, %n: tensor<2xi64>)
    -> (tensor<4x3xf32>, tensor<3xf32>, tensor<8xbf16>, tensor<f32>, tensor<2xi64>) {
  %r:2 = amp.all_reduce mean %g1, %g2 : tensor<4x3xf32>, tensor<3xf32>
  %s = amp.all_reduce sum %h : tensor<8xbf16>
  %m = amp.all_reduce max %f : tensor<f32>
  %k = amp.all_reduce max %n : tensor<2xi64>
  return %r#0, %r#1, %s, %m, %k : tensor<4x3xf32>, tensor<3xf32>, tensor<8xbf16>, tensor<f32>, tensor<2xi64>
}

// -----

// Collectives are not pure: an unused one stays (every rank must make the same calls).
// CHECK-LABEL: func.func @unused
// CHECK: amp.all_reduce sum
func.func @unused(%g: tensor<4xf32>) {
  %r = amp.all_reduce sum %g : tensor<4xf32>
  return
}

// -----

// ZeRO-1: chunks of ceil(numel / ranks) elements (12 over 5 ranks: 3; 3 over 5: 1).
// CHECK-LABEL: func.func @zero1
// CHECK: %[[C:.*]]:2 = amp.reduce_scatter mean ranks(5) %{{.*}}, %{{.*}} : tensor<4x3xf32>, tensor<3xf32>
// CHECK: amp.rank_chunk ranks(5) %{{.*}} : tensor<4x3xf32>
// CHECK: amp.all_gather ranks(5) %{{.*}}, %{{.*}} : tensor<3xf32>, tensor<1xf32> -> tensor<4x3xf32>, tensor<3xf32>
func.func @zero1(%g1: tensor<4x3xf32>, %g2: tensor<3xf32>, %w: tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>) {
  %c:2 = amp.reduce_scatter mean ranks(5) %g1, %g2 : tensor<4x3xf32>, tensor<3xf32>
  %mine = amp.rank_chunk ranks(5) %w : tensor<4x3xf32>
  %u = amp.add %mine, %c#0 : tensor<3xf32>, tensor<3xf32>
  %n:2 = amp.all_gather ranks(5) %u, %c#1 : tensor<3xf32>, tensor<1xf32> -> tensor<4x3xf32>, tensor<3xf32>
  return %n#0, %n#1, %mine : tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>
}

// -----

// A reduce-scatter and an all-gather are collectives, kept when unused; rank_chunk is local.
// CHECK-LABEL: func.func @unused_zero1
// CHECK: amp.reduce_scatter sum
// CHECK: amp.all_gather
func.func @unused_zero1(%g: tensor<4xf32>, %c: tensor<2xf32>) {
  %r = amp.reduce_scatter sum ranks(2) %g : tensor<4xf32>
  %a = amp.all_gather ranks(2) %c : tensor<2xf32> -> tensor<4xf32>
  return
}

// -----

// Found by fuzz/pipeline.cpp: ceil(numel / ranks) as (numel + ranks - 1) / ranks overflowed
// (UBSan) for a tensor of 2^63 - 1 elements; so would ranks near 2^63.
// CHECK-LABEL: func.func @huge_chunks
// CHECK: amp.reduce_scatter mean ranks(2) %{{.*}} : tensor<9223372036854775807xf32>
// CHECK: amp.reduce_scatter mean ranks(9223372036854775807) %{{.*}} : tensor<4x3xf32>
func.func @huge_chunks(%h: tensor<9223372036854775807xf32>, %g: tensor<4x3xf32>)
    -> (tensor<4611686018427387904xf32>, tensor<1xf32>) {
  %a = amp.reduce_scatter mean ranks(2) %h : tensor<9223372036854775807xf32>
  %c = amp.reduce_scatter mean ranks(9223372036854775807) %g : tensor<4x3xf32>
  return %a, %c : tensor<4611686018427387904xf32>, tensor<1xf32>
}
