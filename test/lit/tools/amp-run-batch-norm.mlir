// batch_norm's running statistics as state (docs/model-convention.md, "Buffers"): the training
// step updates them as PyTorch does (momentum, unbiased variance), the eval entry normalises with
// them, checkpoints carry them and --resume continues from them; a resumed running variance that
// no run produces is refused.

// The train step returns the new statistics as updates; the eval entry (the model function) runs
// the batch norm in inference mode; @grads updates nothing.
// RUN: ampc %S/Inputs/batch-norm-model.mlir --train --precision=f32 --emit=train-ir | FileCheck %s --check-prefix=IR-CHECK
// IR-CHECK-LABEL: func.func @bn(
// IR-CHECK: amp.batch_norm %arg0, %arg2, %arg3 running(%arg4, %arg5) {amp.precision
// IR-CHECK-LABEL: func.func @train_step(
// IR-CHECK-SAME: {amp.updates = "bn.running_mean"}, tensor<2xf32> {amp.updates = "bn.running_var"}
// IR-CHECK: amp.batch_norm %arg0, %arg2, %arg3 running(%arg4, %arg5) training
// IR-CHECK-LABEL: func.func @grads(
// IR-CHECK-NOT: amp.updates
// IR-CHECK: return

// One step on the reference and on the cpu device: PyTorch's statistics, the same bits (the
// gradients may differ in their last bits: the cpu device's GEMMs sum in oneDNN's order).
// RUN: ampc %S/Inputs/batch-norm-model.mlir --train --precision=f32 -o %t.ampx
// RUN: /usr/bin/python3 -c "import numpy as np; np.save('%t.x.npy', (np.arange(72, dtype=np.float32).reshape(4, 2, 3, 3) * 0.37) %% 5 - 1.5); np.save('%t.y.npy', np.array([0, 1, 2, 1]))"
// RUN: rm -rf %t.ref %t.cpu && mkdir -p %t.ref %t.cpu
// RUN: amp-run %t.ampx --device=reference --entry=train_step --input x=%t.x.npy --input y=%t.y.npy --checkpoint=%t.ref
// RUN: /usr/bin/python3 %S/Inputs/check_batch_norm_stats.py %t.ref/checkpoint.safetensors %t.x.npy bn 1 0.1 | FileCheck %s --check-prefix=ONE-CHECK
// ONE-CHECK: ok
// RUN: env AMP_CPU_FEATURES=x86-64-v3 amp-run %t.ampx --device=cpu --entry=train_step --input x=%t.x.npy --input y=%t.y.npy --checkpoint=%t.cpu
// RUN: /usr/bin/python3 %S/Inputs/check_batch_norm_stats.py %t.cpu/checkpoint.safetensors %t.x.npy bn 1 0.1 %t.ref/checkpoint.safetensors | FileCheck %s --check-prefix=ONE-CHECK

// --resume continues from the saved statistics: a second step on the same batch applies the
// update twice.
// RUN: amp-run %t.ampx --device=reference --entry=train_step --input x=%t.x.npy --input y=%t.y.npy --checkpoint=%t.ref --resume
// RUN: /usr/bin/python3 %S/Inputs/check_batch_norm_stats.py %t.ref/checkpoint.safetensors %t.x.npy bn 2 0.1 | FileCheck %s --check-prefix=TWO-CHECK
// TWO-CHECK: ok

// A running variance below zero is no state a run produces.
// RUN: rm -rf %t.bad && mkdir -p %t.bad
// RUN: python3 %S/Inputs/tamper_checkpoint.py %t.ref/checkpoint.safetensors %t.bad/checkpoint.safetensors tensor bn.running_var 1 -0.5
// RUN: not amp-run %t.ampx --device=reference --entry=train_step --input x=%t.x.npy --input y=%t.y.npy --checkpoint=%t.bad --resume --trust-checkpoint 2>&1 | FileCheck %s --check-prefix=BAD-CHECK
// BAD-CHECK: state 'bn.running_var' holds -0.5 at element 1; a running variance averages batch variances, so it is finite and >= 0

// Gradient accumulation: every micro-batch's forward updates the statistics, as in PyTorch; a
// window of two micro-batches (@accumulate, then @train_step) applies the update twice.
// RUN: ampc %S/Inputs/batch-norm-model.mlir --train --precision=f32 --accumulate=2 -o %t.acc.ampx
// RUN: rm -rf %t.acc && mkdir -p %t.acc
// RUN: amp-run %t.acc.ampx --device=reference --entry=accumulate --input x=%t.x.npy --input y=%t.y.npy --checkpoint=%t.acc
// RUN: amp-run %t.acc.ampx --device=reference --entry=train_step --input x=%t.x.npy --input y=%t.y.npy --checkpoint=%t.acc --resume
// RUN: /usr/bin/python3 %S/Inputs/check_batch_norm_stats.py %t.acc/checkpoint.safetensors %t.x.npy bn 2 0.1 | FileCheck %s --check-prefix=TWO-CHECK

// The cuda device runs it (here in its dry run, no GPU needed): one kernel per batch norm step.
// RUN: ampc %S/Inputs/batch-norm-model.mlir --train --precision=bf16 --target=cuda:sm_90 -o %t.cuda.ampx
// RUN: amp-run %t.cuda.ampx --device=cuda --dry-run 2>&1 | FileCheck %s --check-prefix=CUDA-CHECK
// CUDA-CHECK: entry train_step:
// CUDA-CHECK: amp.batch_norm: amp_batch_norm_f32
// CUDA-CHECK: amp.batch_norm_grad: amp_batch_norm_grad_f32
