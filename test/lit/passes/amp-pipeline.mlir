// amp-pipeline: the pipeline ampc runs, registered, so amp-opt reproduces each ampc stage.
// Identical output, op for op, for training and inference compiles of both examples.
//
// RUN: amp-opt --amp-pipeline="train=true precision=bf16 target=cpu optimizer=adamw lr=0.002" %amp_src_root/examples/mlp.mlir > %t.opt
// RUN: ampc %amp_src_root/examples/mlp.mlir --train --precision=bf16 --target=cpu --optimizer=adamw --lr=0.002 --emit=fused-ir > %t.ampc
// RUN: diff %t.opt %t.ampc
// RUN: FileCheck %s --input-file=%t.opt --check-prefix=TRAIN-CHECK
//
// f16 with dynamic loss scaling, clipping and accumulation:
// RUN: amp-opt --amp-pipeline="train=true precision=f16 target=cpu clip-grad-norm=1 accumulate=2" %amp_src_root/examples/transformer_lm.mlir > %t.lm.opt
// RUN: ampc %amp_src_root/examples/transformer_lm.mlir --train --precision=f16 --target=cpu --clip-grad-norm=1 --accumulate=2 --emit=fused-ir > %t.lm.ampc
// RUN: diff %t.lm.opt %t.lm.ampc
//
// Inference, unfused: the autocast stage alone.
// RUN: amp-opt --amp-pipeline="precision=bf16 target=cpu fuse=false" %amp_src_root/examples/mlp.mlir > %t.eval.opt
// RUN: ampc %amp_src_root/examples/mlp.mlir --precision=bf16 --target=cpu --emit=autocast-ir > %t.eval.ampc
// RUN: diff %t.eval.opt %t.eval.ampc
// RUN: FileCheck %s --input-file=%t.eval.opt --check-prefix=EVAL-CHECK
// With precision overrides (a list option):
// RUN: amp-opt --amp-pipeline="precision=bf16 target=cpu override=op:amp.linear=f32,op:amp.relu=bf16" %amp_src_root/examples/mlp.mlir > %t.ovr.opt
// RUN: ampc %amp_src_root/examples/mlp.mlir --precision=bf16 --target=cpu --precision-override=op:amp.linear=f32 --precision-override=op:amp.relu=bf16 --emit=fused-ir > %t.ovr.ampc
// RUN: diff %t.ovr.opt %t.ovr.ampc
// RUN: FileCheck %s --input-file=%t.ovr.opt --check-prefix=OVERRIDE-CHECK
//
// Stage by stage: the pipeline is the passes in order, so running them one by one gives the same.
// RUN: amp-opt --amp-pipeline="precision=bf16 target=cpu fuse=false" %amp_src_root/examples/mlp.mlir | amp-opt --amp-autodiff --amp-loss-scaling --amp-grads-entry --amp-optimizer="kind=adamw lr=0.002 weight-copies=auto" --amp-cast-cleanup --amp-remat-weight-casts --amp-verify | amp-opt --amp-fuse-grad-pipeline --amp-fuse > %t.staged
// RUN: diff %t.staged %t.opt
//
// The enum-typed options take the passes' spellings and reject others with the accepted ones.
// RUN: not amp-opt --amp-pipeline="loss-scaling=dyn" %amp_src_root/examples/mlp.mlir 2>&1 | FileCheck %s --check-prefix=BADSCALING-CHECK
// BADSCALING-CHECK: for the --loss-scaling option: 'dyn' is not one of: dynamic, static, none, auto
// RUN: not amp-opt --amp-pipeline="precision=fp8" %amp_src_root/examples/mlp.mlir 2>&1 | FileCheck %s --check-prefix=BADPRECISION-CHECK
// BADPRECISION-CHECK: for the --precision option: 'fp8' is not one of: f32, f16, bf16, auto, fp16, fp32

// TRAIN-CHECK: func.func @train_step
// TRAIN-CHECK: amp.fused
// TRAIN-CHECK: amp.adam_update
// EVAL-CHECK-NOT: amp.fused
// EVAL-CHECK: amp.linear {{.*}}tensor<128x784xbf16>
// OVERRIDE-CHECK: amp.linear {{.*}}amp.precision = "f32"
