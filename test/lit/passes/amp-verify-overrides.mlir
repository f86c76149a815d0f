// amp-verify exempts an op the user forced to low precision, and the backward ops built for it
// (which take its precision), from AMP003: the override is the documented fix for AMP003, so a
// valid override must compile under --train. One RUN per op the pytorch policy keeps in f32
// (fp32 and fp32_set_opt_dtype, the losses aside: rule 3 keeps them in f32 regardless), each
// forced to bf16; the forward op and its backward ops run in bf16 and the pipeline succeeds.
//
// RUN: amp-opt %s --amp-pipeline="train=true precision=bf16 target=cpu fuse=false override=op:amp.exp=bf16" | FileCheck %s --check-prefix=EXP
// RUN: amp-opt %s --amp-pipeline="train=true precision=bf16 target=cpu fuse=false override=op:amp.log=bf16" | FileCheck %s --check-prefix=LOG
// RUN: amp-opt %s --amp-pipeline="train=true precision=bf16 target=cpu fuse=false override=op:amp.rsqrt=bf16" | FileCheck %s --check-prefix=RSQRT
// RUN: amp-opt %s --amp-pipeline="train=true precision=bf16 target=cpu fuse=false override=op:amp.reciprocal=bf16" | FileCheck %s --check-prefix=RECIPROCAL
// RUN: amp-opt %s --amp-pipeline="train=true precision=bf16 target=cpu fuse=false override=op:amp.pow=bf16" | FileCheck %s --check-prefix=POW
// RUN: amp-opt %s --amp-pipeline="train=true precision=bf16 target=cpu fuse=false override=op:amp.layer_norm=bf16" | FileCheck %s --check-prefix=LAYER_NORM
// RUN: amp-opt %s --amp-pipeline="train=true precision=bf16 target=cpu fuse=false override=op:amp.rms_norm=bf16" | FileCheck %s --check-prefix=RMS_NORM
// RUN: amp-opt %s --amp-pipeline="train=true precision=bf16 target=cpu fuse=false override=op:amp.softmax=bf16" | FileCheck %s --check-prefix=SOFTMAX
// RUN: amp-opt %s --amp-pipeline="train=true precision=bf16 target=cpu fuse=false override=op:amp.log_softmax=bf16" | FileCheck %s --check-prefix=LOG_SOFTMAX
// RUN: amp-opt %s --amp-pipeline="train=true precision=bf16 target=cpu fuse=false override=op:amp.reduce_sum=bf16" | FileCheck %s --check-prefix=REDUCE_SUM
//
// Without the override the same model compiles with every one of them in f32 (no backward op of
// theirs in bf16), so the checks above see the override's effect.
// RUN: amp-opt %s --amp-pipeline="train=true precision=bf16 target=cpu fuse=false" | FileCheck %s --check-prefix=NONE
//
// The pass-level cases (a forced op exempts its backward ops; an unforced one does not) are
// in amp-verify.mlir.

// EXP-LABEL: func.func @train_step
// EXP: amp.exp {{.*}}amp.reason = #amp.reason<override{{.*}}tensor<4x8xbf16>
// EXP: amp.reason = #amp.reason<backward, source = "amp.exp">{{.*}}bf16
// LOG-LABEL: func.func @train_step
// LOG: amp.log {{.*}}amp.reason = #amp.reason<override{{.*}}tensor<4x8xbf16>
// LOG: amp.reason = #amp.reason<backward, source = "amp.log">{{.*}}bf16
// RSQRT-LABEL: func.func @train_step
// RSQRT: amp.rsqrt {{.*}}amp.reason = #amp.reason<override{{.*}}tensor<4x8xbf16>
// RSQRT: amp.reason = #amp.reason<backward, source = "amp.rsqrt">{{.*}}bf16
// RECIPROCAL-LABEL: func.func @train_step
// RECIPROCAL: amp.reciprocal {{.*}}amp.reason = #amp.reason<override{{.*}}tensor<4x8xbf16>
// RECIPROCAL: amp.reason = #amp.reason<backward, source = "amp.reciprocal">{{.*}}bf16
// POW-LABEL: func.func @train_step
// POW: amp.pow {{.*}}amp.reason = #amp.reason<override{{.*}}bf16
// POW: amp.reason = #amp.reason<backward, source = "amp.pow">{{.*}}bf16
// LAYER_NORM-LABEL: func.func @train_step
// LAYER_NORM: amp.layer_norm {{.*}}amp.reason = #amp.reason<override{{.*}}tensor<4x8xbf16>
// LAYER_NORM: amp.layer_norm_grad {{.*}}amp.reason = #amp.reason<backward, source = "amp.layer_norm">{{.*}}bf16
// RMS_NORM-LABEL: func.func @train_step
// RMS_NORM: amp.rms_norm {{.*}}amp.reason = #amp.reason<override{{.*}}tensor<4x8xbf16>
// RMS_NORM: amp.rms_norm_grad {{.*}}amp.reason = #amp.reason<backward, source = "amp.rms_norm">{{.*}}bf16
// SOFTMAX-LABEL: func.func @train_step
// SOFTMAX: amp.softmax {{.*}}amp.reason = #amp.reason<override{{.*}}tensor<4x8xbf16>
// SOFTMAX: amp.reason = #amp.reason<backward, source = "amp.softmax">{{.*}}bf16
// LOG_SOFTMAX-LABEL: func.func @train_step
// LOG_SOFTMAX: amp.log_softmax {{.*}}amp.reason = #amp.reason<override{{.*}}tensor<4x8xbf16>
// LOG_SOFTMAX: amp.reason = #amp.reason<backward, source = "amp.log_softmax">{{.*}}bf16
// REDUCE_SUM-LABEL: func.func @train_step
// REDUCE_SUM: amp.reduce_sum {{.*}}amp.reason = #amp.reason<override{{.*}}bf16
// REDUCE_SUM: amp.reason = #amp.reason<backward, source = "amp.reduce_sum">{{.*}}bf16
// NONE-LABEL: func.func @train_step
// NONE-NOT: #amp.reason<backward, source = "amp.{{(exp|log|rsqrt|reciprocal|pow|layer_norm|rms_norm|softmax|log_softmax|reduce_sum)}}">{{.*}}bf16

func.func @chain(
    %x: tensor<4x8xf32> {amp.role = "input", amp.name = "x"},
    %y: tensor<4xf32> {amp.role = "label", amp.name = "y"},
    %w: tensor<8x8xf32> {amp.role = "param", amp.name = "w", amp.init = #amp.init<xavier_uniform, seed = 1>})
    -> tensor<f32> {
  %h = amp.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32>
  %e = amp.exp %h : tensor<4x8xf32>
  %l = amp.log %e : tensor<4x8xf32>
  %r = amp.rsqrt %e : tensor<4x8xf32>
  %c = amp.reciprocal %r : tensor<4x8xf32>
  %p = amp.pow %c, %l : tensor<4x8xf32>, tensor<4x8xf32>
  %s = amp.softmax %p axis = 1 : tensor<4x8xf32>
  %ls = amp.log_softmax %s axis = 1 : tensor<4x8xf32>
  %n = amp.layer_norm %ls : tensor<4x8xf32>
  %rn = amp.rms_norm %n : tensor<4x8xf32>
  %sum = amp.reduce_sum %rn dims = [1] : tensor<4x8xf32>
  %loss = amp.mse_loss %sum, %y : tensor<4xf32>, tensor<4xf32>
  return %loss : tensor<f32>
}

