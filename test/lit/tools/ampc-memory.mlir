// ampc --emit=memory-report: persistent buffers and the planned arena of the temporaries (runtime/plan/MemoryPlan), f32 vs the
// chosen precision, for the model and for its training step.

// Without recompute (--remat=off; the default, auto, is below):
// RUN: ampc %amp_src_root/examples/transformer_lm.mlir --train --precision=bf16 --policy=tensorflow --remat=off --emit=memory-report | FileCheck %s --check-prefix=TRAIN-CHECK
// TRAIN-CHECK: Memory report: entry 'train_step', f32 vs bf16
// TRAIN-CHECK: params (f32 masters) 0.23 MiB 0.23 MiB 100%
// TRAIN-CHECK-NOT: weight copies 0.00
// TRAIN-CHECK: optimizer moments 0.46 MiB 0.46 MiB 100%
// TRAIN-CHECK: temporaries, planned arena 1.52 MiB 0.85 MiB 56%
// TRAIN-CHECK: total 2.21 MiB 1.55 MiB 70%
// The arena at its fullest, split by the phase that made each live temporary: bf16 halves the
// gradients, but most saved activations stay f32 under the tensorflow policy (softmax, norms and
// the residual stream run in f32).
// TRAIN-CHECK: Temporaries at the arena's peak, by the phase that made them (f32 at step {{[0-9]+}}/{{[0-9]+}} (backward), bf16 at step {{[0-9]+}}/{{[0-9]+}} (backward)):
// TRAIN-CHECK: activations saved for the backward 0.88 MiB 0.78 MiB 89%
// TRAIN-CHECK: gradients and backward values 0.64 MiB 0.06 MiB 10%
// TRAIN-CHECK: live at the peak 1.52 MiB 0.84 MiB 56%
// TRAIN-CHECK: arena (live + placement gaps) 1.52 MiB 0.85 MiB 56%
// TRAIN-CHECK: Weight copies: recast {{.*}}: 17 casts of the f32 masters
// TRAIN-CHECK: stored copies would keep 0.10 MiB more

// Stored weight copies (the cuda targets' default) are state the optimizer writes: 0.10 MiB more.
// RUN: ampc %amp_src_root/examples/transformer_lm.mlir --train --precision=bf16 --policy=tensorflow --weight-copies=stored --remat=off --emit=memory-report | FileCheck %s --check-prefix=STORED-CHECK
// STORED-CHECK: low-precision weight copies 0.00 MiB 0.10 MiB
// STORED-CHECK: temporaries, planned arena 1.52 MiB 0.85 MiB 56%
// STORED-CHECK: total 2.21 MiB 1.65 MiB 75%
// STORED-CHECK: Weight copies: stored {{.*}}: 10 low-precision copies are state

// The PyTorch policy: every nn.Linear is one bf16 amp.linear (bias in the epilogue), so the
// activations between layers are bf16 and the step's temporaries shrink too.
// RUN: ampc %amp_src_root/examples/transformer_lm.mlir --train --precision=bf16 --remat=off --emit=memory-report | FileCheck %s --check-prefix=PT-TRAIN-CHECK
// PT-TRAIN-CHECK: Memory report: entry 'train_step', f32 vs bf16
// PT-TRAIN-CHECK: temporaries, planned arena 1.52 MiB 1.01 MiB 67%
// PT-TRAIN-CHECK: total 2.21 MiB 1.70 MiB 77%
// By default (--remat=auto) both sides recompute their softmax, norms and casts in the backward,
// and bf16 gains more: its f32 softmax probabilities are recomputed from the bf16 scores.
// RUN: ampc %amp_src_root/examples/transformer_lm.mlir --train --precision=bf16 --emit=memory-report | FileCheck %s --check-prefix=AUTO-TRAIN-CHECK
// AUTO-TRAIN-CHECK: temporaries, planned arena 1.33 MiB 0.73 MiB 55%
// AUTO-TRAIN-CHECK: total 2.02 MiB 1.42 MiB 70%
// The count is of the recomputed ops (amp.origin = "remat"); a fused kernel's yield is not one.
// AUTO-TRAIN-CHECK: Recomputed in the backward (amp-remat): 22 ops, 1.100 MFLOP, 1.21% of the step's 91.1 MFLOP.

// Without --train the eval entry is measured; an f32 model measures the same on both sides.
// RUN: ampc %amp_src_root/examples/mlp.mlir --precision=f32 --emit=memory-report | FileCheck %s --check-prefix=EVAL-CHECK
// EVAL-CHECK: Memory report: entry 'eval', f32 vs f32
// EVAL-CHECK-NOT: weight copies
// EVAL-CHECK: params (f32 masters) 1.03 MiB 1.03 MiB 100%
// EVAL-CHECK: total {{.*}} 100%
