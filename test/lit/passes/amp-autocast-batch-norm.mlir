// amp.batch_norm under autocast: it runs in its input's precision (PyTorch: on no autocast list;
// TensorFlow: FusedBatchNormV3 is infer, painted between allow ops) while its scale, bias and
// running statistics stay f32 operands and the new running statistics f32 results: no cast is
// inserted on them.
//
// RUN: amp-opt --amp-autocast="dtype=bf16 policy=pytorch" %s | FileCheck %s --check-prefix=PT
// RUN: amp-opt --amp-autocast="dtype=f16 policy=tensorflow" %s | FileCheck %s --check-prefix=TF
// RUN: amp-opt --amp-autocast="dtype=f32" %s | FileCheck %s --check-prefix=OFF

// PT-LABEL: func.func @conv_bn
// PT-SAME: (%{{.*}}: tensor<2x3x8x8xf32>, %{{.*}}: tensor<4x3x3x3xf32>, %[[G:.*]]: tensor<4xf32>, %[[B:.*]]: tensor<4xf32>, %[[RM:.*]]: tensor<4xf32>, %[[RV:.*]]: tensor<4xf32>,
// PT: %[[C:.*]] = amp.conv2d {{.*}} : tensor<2x3x8x8xbf16>, tensor<4x3x3x3xbf16>
// PT-NEXT: %[[Y:.*]], %[[M:.*]], %[[V:.*]] = amp.batch_norm %[[C]], %[[G]], %[[B]] running(%[[RM]], %[[RV]]) training {amp.precision = "bf16", amp.reason = #amp.reason<policy, policy = "pytorch", category = "fallthrough", detail = "not autocast, runs in its input dtype bf16">} : tensor<2x4x6x6xbf16>, tensor<4xf32>
// PT-NEXT: amp.relu %[[Y]] {{.*}} : tensor<2x4x6x6xbf16>
// PT: return %{{.*}}, %[[M]], %[[V]] : tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>

// TF: %[[Y:.*]], %{{.*}}, %{{.*}} = amp.batch_norm %{{.*}}, %arg2, %arg3 running(%arg4, %arg5) training {amp.precision = "f16", amp.reason = #amp.reason<policy, policy = "tensorflow", category = "infer", rule = "painted allow", {{.*}}} : tensor<2x4x6x6xf16>, tensor<4xf32>

// OFF-NOT: amp.cast
// OFF: amp.batch_norm {{.*}} : tensor<2x4x6x6xf32>, tensor<4xf32>
func.func @conv_bn(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>,
                   %rm: tensor<4xf32>, %rv: tensor<4xf32>, %w2: tensor<4x4x3x3xf32>)
    -> (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %c = amp.conv2d %x, %w : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>
  %y, %m, %v = amp.batch_norm %c, %g, %b running(%rm, %rv) training : tensor<2x4x6x6xf32>, tensor<4xf32>
  %r = amp.relu %y : tensor<2x4x6x6xf32>
  %c2 = amp.conv2d %r, %w2 : tensor<2x4x6x6xf32>, tensor<4x4x3x3xf32>
  return %c2, %m, %v : tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>
}
