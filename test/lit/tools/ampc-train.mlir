// ampc's training flags: GradScaler's options (PyTorch's names, defaults and validation) reach
// the scaler and the plan metadata; contradictory flags are ampc's errors, a bad value is the
// error of the pass that takes it (located at the model), by the one rule that pass applies.

// RUN: ampc %amp_src_root/examples/mlp.mlir --train --precision=f16 --init-scale=1024 --growth-factor=4 --backoff-factor=0.25 --growth-interval=10 --emit=train-ir | FileCheck %s --check-prefix=IR-CHECK
// IR-CHECK: amp.init = #amp.init<constant, scale = 1.024000e+03>, amp.name = "amp.loss_scale"
// IR-CHECK: amp.update_scale {{.*}} {amp.origin = "loss_scaling", backoff_factor = 2.500000e-01 : f64, growth_factor = 4.000000e+00 : f64, growth_interval = 10 : i64}

// The defaults are GradScaler's: 2^16, x2 after 2000 clean steps, x0.5 on overflow.
// RUN: ampc %amp_src_root/examples/mlp.mlir --train --precision=f16 --emit=plan | FileCheck %s --check-prefix=META-CHECK
// META-CHECK-DAG: "loss_scaling": "dynamic"
// META-CHECK-DAG: "init_scale": "65536"
// META-CHECK-DAG: "growth_factor": "2"
// META-CHECK-DAG: "backoff_factor": "0.5"
// META-CHECK-DAG: "growth_interval": "2000"
// RUN: ampc %amp_src_root/examples/mlp.mlir --train --precision=f16 --growth-factor=1.5 --emit=plan | FileCheck %s --check-prefix=EXACT-CHECK
// EXACT-CHECK: "growth_factor": "1.5"

// The training step also returns its learning rate, and with clipping the unscaled norm; the
// grads entry returns every gradient by name.
// RUN: ampc %amp_src_root/examples/mlp.mlir --train --precision=bf16 --clip-grad-norm=1 --emit=plan | python3 -c "import json, sys; [print(e['name'], ' '.join(e['result_names'])) for e in json.load(sys.stdin)['entries']]" | FileCheck %s --check-prefix=RESULTS-CHECK
// RESULTS-CHECK-DAG: eval loss logits
// RESULTS-CHECK-DAG: train_step loss found_inf lr grad_norm
// RESULTS-CHECK-DAG: grads loss fc1.weight.grad fc1.bias.grad fc2.weight.grad fc2.bias.grad fc3.weight.grad fc3.bias.grad found_inf

// RUN: not ampc %amp_src_root/examples/mlp.mlir --train --precision=f16 --growth-factor=1 --emit=plan 2>&1 | FileCheck %s --check-prefix=GROWTH-CHECK
// GROWTH-CHECK: mlp.mlir:{{[0-9]+}}:{{[0-9]+}}: error: amp-loss-scaling: growth-factor must be finite and > 1 (as torch's GradScaler), got 1{{$}}
// RUN: not ampc %amp_src_root/examples/mlp.mlir --train --precision=f16 --backoff-factor=1 --emit=plan 2>&1 | FileCheck %s --check-prefix=BACKOFF-CHECK
// BACKOFF-CHECK: error: amp-loss-scaling: backoff-factor must be in (0, 1) (as torch's GradScaler), got 1{{$}}
// RUN: not ampc %amp_src_root/examples/mlp.mlir --train --precision=f16 --growth-interval=0 --emit=plan 2>&1 | FileCheck %s --check-prefix=INTERVAL-CHECK
// INTERVAL-CHECK: error: amp-loss-scaling: growth-interval must be a positive integer below 2^31, got 0
// RUN: not ampc %amp_src_root/examples/mlp.mlir --train --precision=f16 --init-scale=nan --emit=plan 2>&1 | FileCheck %s --check-prefix=INIT-CHECK
// RUN: not ampc %amp_src_root/examples/mlp.mlir --train --precision=f16 --init-scale=1e39 --emit=plan 2>&1 | FileCheck %s --check-prefix=INIT-CHECK
// INIT-CHECK: error: amp-loss-scaling: init-scale must be positive and finite in f32
// RUN: not ampc %amp_src_root/examples/mlp.mlir --train --precision=f16 --loss-scale=none --init-scale=8 --emit=plan 2>&1 | FileCheck %s --check-prefix=MODE-CHECK
// RUN: not ampc %amp_src_root/examples/mlp.mlir --train --precision=f16 --loss-scale=static:8 --growth-interval=8 --emit=plan 2>&1 | FileCheck %s --check-prefix=MODE-CHECK
// MODE-CHECK: ampc: --init-scale, --growth-factor, --backoff-factor and --growth-interval configure dynamic loss scaling

// --optimizer, --schedule and --precision take the passes' spellings; --loss-scale adds static:S.
// RUN: not ampc %amp_src_root/examples/mlp.mlir --train --optimizer=lion --emit=plan 2>&1 | FileCheck %s --check-prefix=OPTIMIZER-CHECK
// OPTIMIZER-CHECK: ampc: for the --optimizer option: 'lion' is not one of: sgd, adam, adamw
// RUN: not ampc %amp_src_root/examples/mlp.mlir --train --schedule=linear --emit=plan 2>&1 | FileCheck %s --check-prefix=SCHEDULE-CHECK
// SCHEDULE-CHECK: ampc: for the --schedule option: 'linear' is not one of: constant, cosine
// RUN: not ampc %amp_src_root/examples/mlp.mlir --train --schedule=cosine --emit=plan 2>&1 | FileCheck %s --check-prefix=COSINE-CHECK
// COSINE-CHECK: ampc: --schedule=cosine needs --total-steps=N
// RUN: not ampc %amp_src_root/examples/mlp.mlir --precision=fp8 --emit=plan 2>&1 | FileCheck %s --check-prefix=PRECISION-CHECK
// PRECISION-CHECK: ampc: for the --precision option: 'fp8' is not one of: f32, f16, bf16, auto, fp16, fp32
// RUN: not ampc %amp_src_root/examples/mlp.mlir --train --loss-scale=static --emit=plan 2>&1 | FileCheck %s --check-prefix=STATIC-CHECK
// STATIC-CHECK: ampc: --loss-scale must be dynamic, static:S, none or auto, got 'static'
// RUN: ampc %amp_src_root/examples/mlp.mlir --train --precision=f16 --loss-scale=static:128 --optimizer=sgd --schedule=cosine --total-steps=100 --emit=plan | FileCheck %s --check-prefix=FLAGS-CHECK
// FLAGS-CHECK-DAG: "optimizer": "sgd"
// FLAGS-CHECK-DAG: "loss_scaling": "static"
// FLAGS-CHECK-DAG: "init_scale": "128"
// FLAGS-CHECK-DAG: "s": "cosine"

// RUN: not ampc %amp_src_root/examples/mlp.mlir --train --precision=f16 --loss-scale=static:-2 --emit=plan 2>&1 | FileCheck %s --check-prefix=STATIC-RANGE
// STATIC-RANGE: error: amp-loss-scaling: init-scale must be positive and finite in f32, got -2
// RUN: not ampc %amp_src_root/examples/mlp.mlir --train --accumulate=0 --emit=plan 2>&1 | FileCheck %s --check-prefix=ACCUMULATE-CHECK
// ACCUMULATE-CHECK: error: amp-optimizer: accumulate must be in [1, 2^20], got 0

// RUN: not ampc %amp_src_root/examples/mlp.mlir --train --weight-decay=-0.5 --emit=plan 2>&1 | FileCheck %s --check-prefix=WD-CHECK
// WD-CHECK: ampc: --weight-decay must be finite and >= 0, got -0.5

// --data-parallel: the plan records it and the bundle's step reduces; its options need it.
// RUN: ampc %amp_src_root/examples/mlp.mlir --train --precision=bf16 --data-parallel --bucket-mb=0.5 --reduce-precision=bf16 --emit=plan | FileCheck %s --check-prefix=DP
// DP-DAG: "data_parallel": "true"
// DP-DAG: "reduce_precision": "bf16"
// DP-DAG: "op": "amp.all_reduce"
// RUN: not ampc %amp_src_root/examples/mlp.mlir --train --bucket-mb=4 --emit=plan 2>&1 | FileCheck %s --check-prefix=DP-NOFLAG
// DP-NOFLAG: ampc: --bucket-mb and --reduce-precision configure --data-parallel, which is not given
// RUN: not ampc %amp_src_root/examples/mlp.mlir --data-parallel --emit=plan 2>&1 | FileCheck %s --check-prefix=DP-NOTRAIN
// DP-NOTRAIN: ampc: --data-parallel needs --train
// RUN: not ampc %amp_src_root/examples/mlp.mlir --train --data-parallel --bucket-mb=0 --emit=plan 2>&1 | FileCheck %s --check-prefix=DP-BUCKET
// DP-BUCKET: ampc: --bucket-mb must be in (0, 2^20], got 0

// --shard-optimizer (ZeRO-1): the plan records the world size and carries chunk-sized moments.
// RUN: ampc %amp_src_root/examples/mlp.mlir --train --optimizer=adam --data-parallel --shard-optimizer --world-size=3 --emit=plan | FileCheck %s --check-prefix=ZERO
// ZERO-DAG: "shard_world_size": "3"
// ZERO-DAG: "op": "amp.reduce_scatter"
// ZERO-DAG: "op": "amp.all_gather"
// ZERO-DAG: "op": "amp.rank_chunk"
// ZERO-DAG: "shard_of": "fc1.weight"
// ZERO-DAG: 66902
// RUN: ampc %amp_src_root/examples/mlp.mlir --train --optimizer=adam --data-parallel --shard-optimizer --world-size=3 --emit=memory-report | FileCheck %s --check-prefix=ZERO-MEM
// ZERO-MEM: Per rank of a job of 3 ranks (--shard-optimizer, ZeRO-1)
// RUN: not ampc %amp_src_root/examples/mlp.mlir --train --shard-optimizer --world-size=2 --emit=plan 2>&1 | FileCheck %s --check-prefix=ZERO-NODP
// ZERO-NODP: ampc: --shard-optimizer needs --data-parallel
// RUN: not ampc %amp_src_root/examples/mlp.mlir --train --data-parallel --shard-optimizer --emit=plan 2>&1 | FileCheck %s --check-prefix=ZERO-NOSIZE
// ZERO-NOSIZE: ampc: --shard-optimizer needs --world-size=N with N in [1, 65536] (the ranks of mpirun -np N), got 0
// RUN: not ampc %amp_src_root/examples/mlp.mlir --train --data-parallel --world-size=2 --emit=plan 2>&1 | FileCheck %s --check-prefix=ZERO-NOSHARD
// ZERO-NOSHARD: ampc: --world-size configures --shard-optimizer, which is not given

// ampc's compilation is one pass pipeline: MLIR's timing flag reports every stage's passes in one
// report, in order.
// RUN: ampc %amp_src_root/examples/mlp.mlir --train --mlir-timing --emit=plan -o /dev/null 2>&1 | FileCheck %s --check-prefix=TIMING
// TIMING: Execution time report
// TIMING-NOT: Execution time report
// TIMING: AmpVerifyModelPass
// TIMING-NOT: Execution time report
// TIMING: AmpAutocastPass
// TIMING-NOT: Execution time report
// TIMING: AmpOptimizerPass
// TIMING-NOT: Execution time report
// TIMING: AmpFuseGradPipelinePass
// TIMING-NOT: Execution time report
// TIMING: AmpFusePass
// TIMING-NOT: Execution time report
