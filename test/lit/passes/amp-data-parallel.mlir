// RUN: amp-opt %s --split-input-file --amp-autodiff --amp-loss-scaling="mode=dynamic" --amp-optimizer="kind=sgd" --amp-data-parallel --amp-verify | FileCheck %s
// RUN: amp-opt %s --split-input-file --amp-autodiff --amp-loss-scaling="mode=dynamic" --amp-optimizer="kind=sgd" --amp-data-parallel="bucket-bytes=100 reduce-precision=bf16" --amp-verify | FileCheck %s --check-prefix=SMALL
// RUN: amp-opt %s --split-input-file --amp-autodiff --amp-loss-scaling="mode=dynamic" --amp-optimizer="kind=sgd accumulate=4" --amp-data-parallel --amp-verify | FileCheck %s --check-prefix=ACC
// RUN: not amp-opt %s --split-input-file --amp-autodiff --amp-loss-scaling="mode=dynamic" --amp-optimizer="kind=sgd" --amp-data-parallel="reduce-precision=f8" 2>&1 | FileCheck %s --check-prefix=BADPREC
// BADPREC: for the --reduce-precision option: 'f8' is not one of: f32, bf16, f16

// The module records the data parallelism and its reduction precision (the plan's metadata).
// CHECK: module attributes {amp.data_parallel = #amp.data_parallel<reduce = f32>
// SMALL: module attributes {amp.data_parallel = #amp.data_parallel<reduce = bf16>

// Default buckets (25 MiB): the three gradients form one bucket, reduced as a mean right after
// the last of them is ready; found_inf is reduced as a max before anything reads it, and every
// consumer (counters, updates, scale update, the returned flag) reads the reduced one; the
// returned loss is the mean over ranks.
// CHECK-LABEL: func.func @train_step
// CHECK: %[[GW2:.*]] = amp.matmul %{{.*}}, %{{.*}} transpose_a : tensor<4x6xf32>, tensor<4x3xf32>
// CHECK: %[[GW1:.*]] = amp.matmul %{{.*}}, %{{.*}} transpose_a : tensor<4x8xf32>, tensor<4x6xf32>
// CHECK-NEXT: %[[GB1:.*]] = amp.reduce_sum
// CHECK-NEXT: %[[R:.*]]:3 = amp.all_reduce mean %[[GW2]], %[[GW1]], %[[GB1]] {amp.origin = "data_parallel", amp.precision = "f32", amp.reason = #amp.reason<pass, rule = "data-parallel", detail = "gradient mean across ranks in f32, the master gradients' precision">} : tensor<6x3xf32>, tensor<8x6xf32>, tensor<6xf32>
// CHECK-NEXT: %[[U:.*]]:3, %[[F:.*]] = amp.unscale_check %[[R]]#1, %[[R]]#2, %[[R]]#0 scale
// CHECK-NEXT: %[[FR:.*]] = amp.all_reduce max %[[F]] {amp.origin = "data_parallel", amp.precision = "f32", {{.*}}} : tensor<f32>
// CHECK-NEXT: amp.step_counters %{{.*}}, %{{.*}}, %[[FR]]
// CHECK: amp.sgd_update %{{.*}}, %[[U]]#0, %{{.*}}, %[[FR]]
// CHECK: amp.sgd_update %{{.*}}, %[[U]]#1, %{{.*}}, %[[FR]]
// CHECK: amp.sgd_update %{{.*}}, %[[U]]#2, %{{.*}}, %[[FR]]
// CHECK: amp.update_scale %{{.*}}, %{{.*}}, %[[FR]]
// CHECK-NEXT: %[[L:.*]] = amp.all_reduce mean %{{.*}} {amp.origin = "data_parallel", amp.precision = "f32", amp.reason = #amp.reason<pass, rule = "data-parallel", detail = "the logged loss is the mean over ranks">} : tensor<f32>
// CHECK-NEXT: return %[[L]], %[[FR]],
// CHECK-NOT: amp.all_reduce
// 100-byte buckets: each gradient is its own bucket, reduced as soon as it is ready (fc2's weight
// gradient first), in bf16 with the casts around it.
// SMALL-LABEL: func.func @train_step
// SMALL: %[[GW2:.*]] = amp.matmul %{{.*}}, %{{.*}} transpose_a : tensor<4x6xf32>, tensor<4x3xf32>
// SMALL-NEXT: %[[C:.*]] = amp.cast %[[GW2]] {amp.origin = "data_parallel"} : tensor<6x3xf32> to tensor<6x3xbf16>
// SMALL-NEXT: %[[R:.*]] = amp.all_reduce mean %[[C]] {amp.origin = "data_parallel", amp.precision = "bf16", {{.*}}} : tensor<6x3xbf16>
// SMALL-NEXT: amp.cast %[[R]] {amp.origin = "data_parallel"} : tensor<6x3xbf16> to tensor<6x3xf32>
// SMALL-COUNT-2: amp.all_reduce mean %{{.*}} {amp.origin = "data_parallel", amp.precision = "bf16"
// SMALL: amp.unscale_check
// SMALL-NEXT: amp.all_reduce max
// Accumulation: @train_step reduces the window's mean gradients and the window's loss; @accumulate
// communicates nothing.
// ACC-LABEL: func.func @train_step
// ACC: %[[M:.*]] = amp.div
// ACC: amp.all_reduce mean
// ACC: amp.unscale_check
// ACC-NEXT: amp.all_reduce max
// ACC: %[[WL:.*]] = amp.div
// ACC: %[[L:.*]] = amp.all_reduce mean %[[WL]]
// ACC: return %[[L]],
// ACC-LABEL: func.func @accumulate
// ACC-NOT: amp.all_reduce
// ACC: return
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
