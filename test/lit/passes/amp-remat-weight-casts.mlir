// amp-remat-weight-casts: every later user of a param's low-precision cast gets its
// own cast right before it, so no copy lives from the forward to the backward. Casts of other
// values, widening casts and casts with a single user stay as they are.
//
// RUN: amp-opt --split-input-file --amp-remat-weight-casts %s | FileCheck %s
// Through the training pipeline: recast copies (the cpu default) leave no `w.bf16` state, and the
// backward's matmul reads a cast made just before it; stored copies (cuda) keep the state.
// RUN: amp-opt --amp-pipeline="train=true precision=bf16 target=cpu fuse=false" %amp_src_root/examples/mlp.mlir | FileCheck %s --check-prefix=RECAST
// RUN: amp-opt --amp-pipeline="train=true precision=bf16 target=cuda:sm_90 fuse=false" %amp_src_root/examples/mlp.mlir | FileCheck %s --check-prefix=STORED
// RUN: amp-opt --amp-pipeline="train=true precision=bf16 target=cpu fuse=false weight-copies=stored" %amp_src_root/examples/mlp.mlir | FileCheck %s --check-prefix=STORED
// RUN: not amp-opt --amp-pipeline="train=true weight-copies=cached" %amp_src_root/examples/mlp.mlir 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: for the --weight-copies option: 'cached' is not one of: auto, stored, recast

// CHECK-LABEL: func.func @forward_and_backward
// CHECK-SAME: (%[[X:[a-z0-9]+]]: {{.*}}, %[[W:[a-z0-9]+]]:
// CHECK:      %[[C1:.*]] = amp.cast %[[W]] {amp.autocast_inserted} : tensor<4x4xf32> to tensor<4x4xbf16>
// CHECK-NEXT: %[[Y:.*]] = amp.matmul %[[X]], %[[C1]]
// CHECK-NEXT: %[[Z:.*]] = amp.relu %[[Y]]
// CHECK-NEXT: %[[C2:.*]] = amp.cast %[[W]] {amp.autocast_inserted} : tensor<4x4xf32> to tensor<4x4xbf16>
// CHECK-NEXT: amp.matmul %[[Z]], %[[C2]] transpose_b
func.func @forward_and_backward(%x: tensor<2x4xbf16> {amp.role = "input", amp.name = "x"},
                                %w: tensor<4x4xf32> {amp.role = "param", amp.name = "w"}) -> tensor<2x4xbf16> {
  %wb = amp.cast %w {amp.autocast_inserted} : tensor<4x4xf32> to tensor<4x4xbf16>
  %y = amp.matmul %x, %wb : tensor<2x4xbf16>, tensor<4x4xbf16>
  %z = amp.relu %y : tensor<2x4xbf16>
  %dx = amp.matmul %z, %wb transpose_b : tensor<2x4xbf16>, tensor<4x4xbf16>
  return %dx : tensor<2x4xbf16>
}

// -----

// One user (even reading it twice), a widening cast and a cast of a computed value: unchanged.
// CHECK-LABEL: func.func @left_alone
// CHECK-COUNT-3: amp.cast
// CHECK-NOT: amp.cast
func.func @left_alone(%w: tensor<4x4xf32> {amp.role = "param", amp.name = "w"},
                      %h: tensor<4x4xbf16> {amp.role = "input", amp.name = "h"})
    -> (tensor<4x4xbf16>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xbf16>) {
  %wb = amp.cast %w : tensor<4x4xf32> to tensor<4x4xbf16>
  %sq = amp.matmul %wb, %wb : tensor<4x4xbf16>, tensor<4x4xbf16>
  %hw = amp.cast %h : tensor<4x4xbf16> to tensor<4x4xf32>
  %a = amp.add %hw, %hw : tensor<4x4xf32>, tensor<4x4xf32>
  %e = amp.exp %w : tensor<4x4xf32>
  %eb = amp.cast %e : tensor<4x4xf32> to tensor<4x4xbf16>
  %n = amp.neg %eb : tensor<4x4xbf16>
  %m = amp.mul %eb, %n : tensor<4x4xbf16>, tensor<4x4xbf16>
  return %sq, %a, %hw, %m : tensor<4x4xbf16>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xbf16>
}

// RECAST-LABEL: func.func @train_step
// RECAST-NOT: weight.bf16
// RECAST-COUNT-3: amp.linear
// RECAST: %[[W2B:.*]] = amp.cast %{{.*}} {amp.autocast_inserted} : tensor<256x10xf32> to tensor<256x10xbf16>
// RECAST-NEXT: amp.matmul %{{.*}}, %[[W2B]] transpose_b
// STORED-LABEL: func.func @train_step
// STORED-SAME: amp.name = "fc1.weight.bf16"
