// RUN: amp-opt %s --amp-autodiff --amp-loss-scaling="mode=dynamic" --amp-optimizer="kind=adamw clip-grad-norm=1.0" --amp-data-parallel --amp-shard-optimizer="world-size=5" --amp-verify | FileCheck %s
// RUN: amp-opt %s --amp-autodiff --amp-loss-scaling="mode=dynamic" --amp-optimizer="kind=sgd momentum=0.9" --amp-data-parallel="bucket-bytes=100 reduce-precision=bf16" --amp-shard-optimizer="world-size=2" --amp-verify | FileCheck %s --check-prefix=SMALL
// RUN: not amp-opt %s --amp-autodiff --amp-loss-scaling="mode=dynamic" --amp-optimizer="kind=sgd" --amp-shard-optimizer="world-size=2" 2>&1 | FileCheck %s --check-prefix=NODP
// RUN: not amp-opt %s --amp-autodiff --amp-loss-scaling="mode=dynamic" --amp-optimizer="kind=sgd" --amp-data-parallel --amp-shard-optimizer 2>&1 | FileCheck %s --check-prefix=NOSIZE
// RUN: not amp-opt %s --amp-autodiff --amp-loss-scaling="mode=dynamic" --amp-optimizer="kind=sgd" --amp-data-parallel --amp-shard-optimizer="world-size=2" --amp-shard-optimizer="world-size=2" 2>&1 | FileCheck %s --check-prefix=TWICE
// bf16 moments round by the element's place in the whole tensor: not sharded.
// RUN: not amp-opt %s --amp-autodiff --amp-loss-scaling="mode=dynamic" --amp-optimizer="kind=adamw state=bf16" --amp-data-parallel --amp-shard-optimizer="world-size=2" 2>&1 | FileCheck %s --check-prefix=BF16
// BF16: amp-shard-optimizer: bf16 optimizer state (optimizer-state=bf16) is not sharded
// NODP: error: amp-shard-optimizer: needs a data-parallel @train_step; run amp-data-parallel first
// NOSIZE: error: amp-shard-optimizer: world-size must be >= 1, got 0
// TWICE: error: amp-shard-optimizer: @train_step is already sharded

// The module's data-parallel recipe gains the ranks the state was split for.
// CHECK: module attributes {amp.data_parallel = #amp.data_parallel<reduce = f32, shard_world_size = 5>
// SMALL: module attributes {amp.data_parallel = #amp.data_parallel<reduce = bf16, shard_world_size = 2>

// Over 5 ranks: fc1.weight (48) in chunks of 10, fc1.bias (6) of 2, fc2.weight (18) of 4, the
// last ones zero-padded. The bucket's all-reduce became a reduce-scatter of the same tensors; the
// check, the norm and the clipping run on the chunks; the norm is sqrt of the all-reduced sum of
// the squared chunk norms; each AdamW update reads its master's chunk, and its moments are
// chunk-sized state marked amp.shard_of; one all-gather rebuilds the whole params.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %{{.*}}: tensor<10xf32> {amp.init = #amp.init<zeros>, amp.name = "fc1.weight.exp_avg", amp.role = "state", amp.shard_of = "fc1.weight"}
// CHECK-SAME: %{{.*}}: tensor<10xf32> {amp.init = #amp.init<zeros>, amp.name = "fc1.weight.exp_avg_sq", amp.role = "state", amp.shard_of = "fc1.weight"}
// CHECK-SAME: %{{.*}}: tensor<2xf32> {amp.init = #amp.init<zeros>, amp.name = "fc1.bias.exp_avg", amp.role = "state", amp.shard_of = "fc1.bias"}
// CHECK-SAME: %{{.*}}: tensor<4xf32> {amp.init = #amp.init<zeros>, amp.name = "fc2.weight.exp_avg_sq", amp.role = "state", amp.shard_of = "fc2.weight"}
// CHECK-NOT: amp.all_reduce mean %{{.*}}, %{{.*}}, %{{.*}} :
// CHECK: %[[C:.*]]:3 = amp.reduce_scatter mean ranks(5) %{{.*}}, %{{.*}}, %{{.*}} {amp.origin = "shard_optimizer", amp.precision = "f32", amp.reason = #amp.reason<pass, rule = "ZeRO-1", detail = "each rank receives its chunk of the mean gradient">} : tensor<6x3xf32>, tensor<8x6xf32>, tensor<6xf32>
// CHECK-NEXT: %[[U:.*]]:3, %[[F:.*]] = amp.unscale_check %[[C]]#1, %[[C]]#2, %[[C]]#0 scale(%{{.*}}) {amp.origin = "loss_scaling"} : tensor<10xf32>, tensor<2xf32>, tensor<4xf32>
// CHECK-NEXT: %[[FR:.*]] = amp.all_reduce max %[[F]]
// CHECK-NEXT: %[[LOCAL:.*]] = amp.global_norm %[[U]]#0, %[[U]]#1, %[[U]]#2 {amp.origin = "optimizer"} : tensor<10xf32>, tensor<2xf32>, tensor<4xf32>
// CHECK-NEXT: %[[SQ:.*]] = amp.mul %[[LOCAL]], %[[LOCAL]] {amp.origin = "shard_optimizer"}
// CHECK-NEXT: %[[SUM:.*]] = amp.all_reduce sum %[[SQ]] {{.*}} : tensor<f32>
// CHECK-NEXT: %[[NORM:.*]] = amp.sqrt %[[SUM]]
// CHECK-NEXT: %[[CL:.*]]:3 = amp.clip_grads %[[U]]#0, %[[U]]#1, %[[U]]#2 norm(%[[NORM]]) {amp.origin = "optimizer", max_norm = 1.000000e+00 : f64} : tensor<10xf32>, tensor<2xf32>, tensor<4xf32>
// CHECK: %[[W1:.*]] = amp.rank_chunk ranks(5) %arg2 {amp.origin = "shard_optimizer"} : tensor<8x6xf32>
// CHECK-NEXT: %[[NW1:.*]], %{{.*}}, %{{.*}} = amp.adam_update %[[W1]], %[[CL]]#0, {{.*}} : tensor<10xf32>, tensor<10xf32>
// CHECK: %[[NB1:.*]], %{{.*}}, %{{.*}} = amp.adam_update {{.*}} : tensor<2xf32>, tensor<2xf32>
// CHECK: %[[NW2:.*]], %{{.*}}, %{{.*}} = amp.adam_update {{.*}} : tensor<4xf32>, tensor<4xf32>
// CHECK-NEXT: %[[G:.*]]:3 = amp.all_gather ranks(5) %[[NW1]], %[[NB1]], %[[NW2]] {amp.origin = "shard_optimizer", amp.precision = "f32", {{.*}}} : tensor<10xf32>, tensor<2xf32>, tensor<4xf32> -> tensor<8x6xf32>, tensor<6xf32>, tensor<6x3xf32>
// CHECK: return {{.*}}%[[G]]#0, {{.*}}%[[G]]#1, {{.*}}%[[G]]#2,
// CHECK-NOT: amp.all_reduce mean %{{.*}} : tensor<8x6xf32>

// 100-byte bf16 buckets over 2 ranks: one reduce-scatter per gradient, each in bf16 and widened
// after; one all-gather per bucket, after its update; the momentum buffers are chunks.
// SMALL-LABEL: func.func @train_step
// SMALL-SAME: tensor<24xf32> {amp.init = #amp.init<zeros>, amp.name = "fc1.weight.momentum_buffer", amp.role = "state", amp.shard_of = "fc1.weight"}
// SMALL: %[[N:.*]] = amp.cast %{{.*}} : tensor<6x3xf32> to tensor<6x3xbf16>
// SMALL-NEXT: %[[R:.*]] = amp.reduce_scatter mean ranks(2) %[[N]] {amp.origin = "shard_optimizer", amp.precision = "bf16", {{.*}}} : tensor<6x3xbf16>
// SMALL-NEXT: amp.cast %[[R]] {amp.origin = "shard_optimizer"} : tensor<9xbf16> to tensor<9xf32>
// SMALL-COUNT-2: amp.reduce_scatter mean ranks(2)
// SMALL: amp.unscale_check
// SMALL-NOT: amp.all_reduce mean %{{.*}} : tensor<{{.*}}bf16>
// SMALL: amp.sgd_update
// SMALL-NEXT: amp.all_gather ranks(2) %{{.*}} : tensor<24xf32> -> tensor<8x6xf32>
// SMALL: amp.sgd_update
// SMALL-NEXT: amp.all_gather ranks(2) %{{.*}} : tensor<3xf32> -> tensor<6xf32>
// SMALL: amp.sgd_update
// SMALL-NEXT: amp.all_gather ranks(2) %{{.*}} : tensor<9xf32> -> tensor<6x3xf32>
func.func @mlp(
    %x: tensor<4x8xf32> {amp.role = "input", amp.name = "image"},
    %y: tensor<4xi64> {amp.role = "label", amp.name = "label"},
    %w1: tensor<8x6xf32> {amp.role = "param", amp.name = "fc1.weight"},
    %b1: tensor<6xf32> {amp.role = "param", amp.name = "fc1.bias"},
    %w2: tensor<6x3xf32> {amp.role = "param", amp.name = "fc2.weight"})
    -> (tensor<f32> {amp.name = "loss"}) {
  %h = amp.linear %x, %w1, %b1 transpose_w = false : tensor<4x8xf32>, tensor<8x6xf32>, tensor<6xf32>
  %a = amp.relu %h : tensor<4x6xf32>
  %z = amp.matmul %a, %w2 : tensor<4x6xf32>, tensor<6x3xf32>
  %loss = amp.cross_entropy %z, %y : tensor<4x3xf32>, tensor<4xi64>
  return %loss : tensor<f32>
}
