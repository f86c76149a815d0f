// amp-run --device=cuda --dry-run: the cuda device prepares every entry of a cuda bundle on a
// simulated GPU (no driver needed), captures each entry's graph, replays it, and prints what the
// GPU would run (docs/cuda-device.md). Needs an ampc built with the CUDA toolkit (NVRTC); no GPU.
// REQUIRES: nvrtc

// RUN: ampc %amp_src_root/examples/mlp.mlir --train --precision=bf16 --optimizer=adamw --target=cuda:sm_90 -o %t.ampx
// RUN: amp-run %t.ampx --device=cuda --dry-run | FileCheck %s
// CHECK: cuda dry run on cuda: dry run (no GPU; an H200's limits) (sm_90, 132 SMs), driver for CUDA 13.0
// CHECK: entry eval: {{[0-9]+}} operations in one graph ({{[0-9]+}} generated kernels, 3 cuBLASLt GEMMs
// CHECK-SAME: code sm_90 cubin
// The forward GEMMs carry the bias in cuBLASLt's epilogue; D^T = W^T x^T, so m is the layer's
// width and n the batch. The relu is a pass of its own, which keeps NaN as the reference does.
// CHECK: amp.linear: cuBLASLt bf16 256 x 128 x 784 BIAS
// CHECK-NEXT: amp.linear: amp_relu_inplace_bf16
// CHECK: amp.linear: cuBLASLt bf16 10 x 128 x 256 BIAS
// CHECK: amp.cross_entropy: amp_cross_entropy_f32_i64
// CHECK: amp.cross_entropy: amp_cross_entropy_mean_f32_i64
// CHECK: steady state: 1 graph launch(es) and 1 host synchronisation(s) per call
// CHECK: enqueued (as training runs it): 1 graph launch(es) and 0 host synchronisation(s) per call; 8 of 8 scalar logs delivered
// CHECK: entry train_step: {{[0-9]+}} operations in one graph ({{[0-9]+}} generated kernels, 8 cuBLASLt GEMMs
// The gradient pipeline ampc fused (amp-fuse-grad-pipeline) is two passes over the gradients:
// statistics reading the stored bf16 gradients, then the optimizer, which also unscales them and
// writes the bf16 weight copies.
// CHECK: amp.grad_stats: found_inf = 0
// CHECK: amp.grad_stats: amp_mt_grad_stats_bf16w (6 tensors, 9 blocks)
// CHECK: amp.step_counters: amp_step_counters_kernel
// CHECK: amp.lr_schedule: amp_lr_schedule_kernel
// CHECK: amp.adam_update: amp_optimizer_scalars
// All six AdamW updates in one multi-tensor launch: 784x256 is 4 chunks of 65536, the rest 1 each.
// (bf16 needs no loss scale: the stored gradient is stepped with as is.)
// CHECK: amp.adam_update: amp_mt_adam_bf16_bf16 for 6 updates (6 tensors, 9 blocks)
// The graph gathers the step's scalar log (results, and state after the update) for the host.
// CHECK: log result loss
// CHECK: log state after the call: amp.step
// CHECK: steady state: 1 graph launch(es) and 1 host synchronisation(s) per call
// CHECK: enqueued (as training runs it): 1 graph launch(es) and 0 host synchronisation(s) per call; 8 of 8 scalar logs delivered
// CHECK: GPU memory with every entry prepared: {{[0-9]+\.[0-9]}} MiB (params and state {{[0-9]+\.[0-9]}} MiB), of the H200's 143771.0 MiB

// An sm_80 bundle on the simulated Hopper GPU runs its PTX, JIT-compiled by the driver.
// RUN: ampc %amp_src_root/examples/mlp.mlir --train --precision=f16 --target=cuda:sm_80 -o %t.sm80.ampx
// RUN: amp-run %t.sm80.ampx --device=cuda --dry-run | FileCheck %s --check-prefix=JIT
// JIT: code sm_80 PTX, JIT-compiled for sm_90
// JIT: amp.update_scale: amp_update_scale_kernel
// The grads entry returns the unscaled gradients, so its pipeline runs as the plan says.
// JIT: entry grads:
// JIT-NOT: amp.grad_stats
// JIT: amp.unscale_check: amp_mt_unscale_check_f32 (6 tensors, 9 blocks)

// The transformer language model (layer norms, attention's batched GEMMs, softmax, embedding and
// their gradients) lowers completely.
// RUN: ampc %amp_src_root/examples/transformer_lm.mlir --train --precision=bf16 --target=cuda:sm_90 -o %t.lm.ampx
// RUN: amp-run %t.lm.ampx --device=cuda --dry-run | FileCheck %s --check-prefix=LM
// LM: entry eval:
// LM: amp.embedding: amp_embedding_f32_i64
// LM: amp.layer_norm: amp_layer_norm_f32
// LM: amp.softmax: amp_softmax_f32
// LM: entry train_step:
// LM: amp.layer_norm_grad: amp_layer_norm_grad_f32
// LM-NEXT: amp.layer_norm_grad: amp_layer_norm_grad_affine_f32
// LM: amp.embedding_grad: amp_embedding_grad_f32_i64

// Gradient accumulation: the accumulate entry and the train_step that applies the sum are graphs
// too (their broadcasts of the micro-batch count become one-op kernels).
// RUN: ampc %amp_src_root/examples/mlp.mlir --train --precision=f16 --accumulate=2 --target=cuda:sm_90 -o %t.acc.ampx
// RUN: amp-run %t.acc.ampx --device=cuda --dry-run | FileCheck %s --check-prefix=ACC
// ACC: entry train_step:
// ACC: amp.broadcast_to: amp_k
// ACC: entry accumulate: {{[0-9]+}} operations in one graph ({{[0-9]+}} generated kernels, 8 cuBLASLt GEMMs
// ACC: steady state: 1 graph launch(es) and 1 host synchronisation(s) per call
// ACC: enqueued (as training runs it): 1 graph launch(es) and 0 host synchronisation(s) per call

// A data-parallel bundle in one process: its collectives are operations of the step's graph
// (plain copies with one rank; NCCL with more, docs/data-parallel.md "On the cuda device").
// RUN: ampc %amp_src_root/examples/mlp.mlir --train --data-parallel --target=cuda:sm_90 -o %t.dp.ampx
// RUN: amp-run %t.dp.ampx --device=cuda --dry-run 2>&1 | FileCheck %s --check-prefix=DP
// DP: amp.all_reduce: all_reduce mean

// Slices and concatenations are bit copies (the transpose kernel, amp_concat_part).
// RUN: ampc %S/Inputs/slice.mlir --target=cuda:sm_90 -o %t.slice.ampx
// RUN: amp-run %t.slice.ampx --device=cuda --dry-run | FileCheck %s --check-prefix=SLICE
// SLICE: step 0 amp.slice: amp_transpose_4
// SLICE: step 2 amp.concat: amp_concat_part_4
// SLICE-NEXT: step 2 amp.concat: amp_concat_part_4

// A convolution is an implicit GEMM: x's columns (K = 1·3·3 taps by P = 6·6 positions per image),
// then one cuBLASLt GEMM per image with w shared: D^T = cols^T w^T, m = P, n = O, k = K.
// RUN: ampc %S/Inputs/conv.mlir --target=cuda:sm_90 -o %t.conv.ampx
// RUN: amp-run %t.conv.ampx --device=cuda --dry-run | FileCheck %s --check-prefix=CONV
// CONV: step 2 amp.conv2d: amp_conv_gather_b16 columns of x, 648 elements
// CONV-NEXT: step 2 amp.conv2d: implicit GEMM, cuBLASLt bf16 36 x 4 x 9 in 2 batches
// --conv=direct runs the exact direct kernel (kernels/ConvKernels.cu), the reference's bits.
// RUN: amp-run %t.conv.ampx --device=cuda --dry-run --conv=direct | FileCheck %s --check-prefix=DIRECT
// DIRECT: step 2 amp.conv2d: amp_conv2d_bf16
// DIRECT-NOT: implicit GEMM
// RUN: not amp-run %t.conv.ampx --conv=direct 2>&1 | FileCheck %s --check-prefix=CONVCPU
// CONVCPU: --conv is for --device=cuda

// --profile: train_step's operations by category (on a GPU with their device time; the dry run
// has no clock).
// RUN: amp-run %t.ampx --device=cuda --dry-run --profile | FileCheck %s --check-prefix=PROFILE
// PROFILE: profile of train_step: 2 call(s), each timed as its graph, then operation by operation (the dry run has no clock: operation counts only)
// PROFILE-NEXT: GEMM              8 operation(s)
// PROFILE-NEXT: fused             {{[1-9][0-9]*}} operation(s)
// PROFILE-NEXT: scaler/optimizer  {{[1-9][0-9]*}} operation(s)
// PROFILE-NEXT: other             {{[1-9][0-9]*}} operation(s)
// (The host devices profile too: test/lit/tools/amp-run-profile.mlir.)
// RUN: not amp-run %t.ampx --device=cuda --profile 2>&1 | FileCheck %s --check-prefix=PROFILEENTRY
// PROFILEENTRY: --profile profiles training: give --steps=N or --epochs=N (or --dry-run)

// --dry-run is the cuda device's, and takes nothing that would run the model.
// RUN: not amp-run %t.ampx --dry-run 2>&1 | FileCheck %s --check-prefix=NOTCUDA
// NOTCUDA: --dry-run is for --device=cuda
// RUN: not amp-run %t.ampx --device=cuda --dry-run --steps=3 --data=fashion-mnist 2>&1 | FileCheck %s --check-prefix=EXTRA
// EXTRA: has no effect with --dry-run

// ampc --gemm-epilogues=cublaslt moves the relu backward into the GEMMs (docs/cuda-device.md): each
// relu layer's forward also writes a ReLU bit mask, and the dX GEMM of the layer above applies
// it and sums the bias gradient; the two fused relu-backward kernels are no longer in the bundle
// (7 generated kernels, 9 without the epilogues).
// RUN: ampc %amp_src_root/examples/mlp.mlir --train --precision=bf16 --optimizer=adamw --target=cuda:sm_90 --gemm-epilogues=cublaslt -o %t.epi.ampx
// RUN: amp-run %t.epi.ampx --device=cuda --dry-run | FileCheck %s --check-prefix=EPI
// EPI: entry train_step: {{[0-9]+}} operations in one graph (7 generated kernels, 8 cuBLASLt GEMMs
// EPI: step 2 amp.gemm_epilogue: cuBLASLt bf16 256 x 128 x 784 RELU_AUX_BIAS
// EPI: step 3 amp.gemm_epilogue: cuBLASLt bf16 256 x 128 x 256 RELU_AUX_BIAS
// EPI: step 9 amp.gemm_epilogue: cuBLASLt bf16 256 x 128 x 10 DRELU_BGRAD
// EPI: step 11 amp.gemm_epilogue: cuBLASLt bf16 256 x 128 x 256 DRELU_BGRAD
// EPI: GPU memory with every entry prepared
// The choice is the compiler's: amp-run has no such flag, and a cpu target has no cuBLASLt.
// RUN: not amp-run %t.epi.ampx --gemm-epilogues=cublaslt 2>&1 | FileCheck %s --check-prefix=NOFLAG
// NOFLAG: The following argument was not expected: --gemm-epilogues=cublaslt
// RUN: not ampc %amp_src_root/examples/mlp.mlir --train --gemm-epilogues=cublaslt -o %t.cpu.ampx 2>&1 | FileCheck %s --check-prefix=EPICPU
// EPICPU: --gemm-epilogues=cublaslt is for cuda targets (--target=cuda:sm_80 or cuda:sm_90); the target is 'cpu'
