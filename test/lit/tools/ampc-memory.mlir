// ampc --emit=memory-report: persistent buffers and the peak of live temporaries, f32 vs the
// chosen precision, for the model and for its training step.

// RUN: ampc %amp_src_root/examples/transformer_lm.mlir --train --precision=bf16 --policy=tensorflow --emit=memory-report | FileCheck %s --check-prefix=TRAIN-CHECK
// TRAIN-CHECK: Memory report: entry 'train_step', f32 vs bf16
// TRAIN-CHECK: params (f32 masters) 0.23 MiB 0.23 MiB 100%
// TRAIN-CHECK: low-precision weight copies 0.00 MiB 0.10 MiB
// TRAIN-CHECK: optimizer moments 0.46 MiB 0.46 MiB 100%
// TRAIN-CHECK: temporaries, peak live 1.70 MiB 0.92 MiB 54%
// TRAIN-CHECK: total 2.40 MiB 1.72 MiB 72%

// Without --train the eval entry is measured; an f32 model measures the same on both sides.
// RUN: ampc %amp_src_root/examples/mlp.mlir --precision=f32 --emit=memory-report | FileCheck %s --check-prefix=EVAL-CHECK
// EVAL-CHECK: Memory report: entry 'eval', f32 vs f32
// EVAL-CHECK-NOT: weight copies
// EVAL-CHECK: params (f32 masters) 1.03 MiB 1.03 MiB 100%
// EVAL-CHECK: total {{.*}} 100%
