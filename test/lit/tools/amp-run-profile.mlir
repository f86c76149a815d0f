// amp-run --profile on the host devices (docs/cpu-device.md, "Profiling"): train_step timed step by
// step over 10 calls on the last batch, by category, with the GEMMs' FLOPs and GFLOP/s, the
// slowest steps with their source locations, the same in --summary's JSON, and the params put
// back: the profiled run ends on the loss of a run without --profile.

// RUN: rm -rf %t && mkdir -p %t
// RUN: ampc %amp_src_root/examples/mlp.mlir --train --precision=bf16 -o %t/mlp.ampx
// RUN: amp-run %t/mlp.ampx --device=cpu --steps=4 --data=fashion-mnist --profile --summary=%t/cpu.json | FileCheck %s --check-prefixes=CHECK,CPU
// RUN: amp-run %t/mlp.ampx --device=reference --steps=2 --data=fashion-mnist --profile --summary=%t/ref.json | FileCheck %s
// CHECK: profile of train_step: 10 call(s), each step timed as the call runs it
// CHECK-NEXT: GEMM {{.*}} ms {{.*}}%    8 operation(s)     0.155 GFLOP {{.*}} GFLOP/s
// CHECK-NEXT: conv {{.*}} 0 operation(s)
// CHECK-NEXT: norm {{.*}} 0 operation(s)
// CHECK-NEXT: elementwise/fused {{.*}} operation(s) {{.*}} MB {{.*}} GB/s
// CHECK-NEXT: conversion
// CHECK-NEXT: optimizer/scaler
// CHECK-NEXT: layout
// CHECK-NEXT: other
// CHECK-NEXT: steps' sum {{.*}} ms; the call {{.*}} ms
// CPU-NEXT: memory: a STREAM-like copy runs at {{[0-9.]+}} GB/s on these threads
// CHECK: by operation (the {{[0-9]+}} slowest of {{[0-9]+}}):
// CHECK-NEXT: ms {{.*}}% {{[0-9]+}} step(s) amp.
// CHECK: slowest steps:
// CHECK-NEXT: ms {{.*}}% #{{[0-9]+}} amp.{{linear|matmul}} GEMM {{.*}} GFLOP/s {{.*}}mlp.mlir:{{[0-9]+}}:{{[0-9]+}}
// RUN: %python -c "import json, sys; p = json.load(open(sys.argv[1]))['profile']; c = {x['name']: x for x in p['categories']}; print('gemm', c['GEMM']['operations'], round(c['GEMM']['gflop'], 3), c['GEMM']['gflop_per_s'] > 0, len(p['slowest_steps']), p['calls'], c['elementwise/fused']['gb_per_s'] > 0, p['copy_gb_per_s'] > 0, sum(o['steps'] for o in p['by_op'] if o['category'] == 'GEMM'))" %t/cpu.json | FileCheck %s --check-prefix=JSON
// JSON: gemm 8 0.155 True 15 10 True True 8

// The profile's calls change nothing: the same run without --profile gives the same final loss.
// RUN: amp-run %t/mlp.ampx --device=cpu --steps=4 --data=fashion-mnist --summary=%t/plain.json > /dev/null
// RUN: %python -c "import json, sys; a, b = (json.load(open(f))['final_loss'] for f in sys.argv[1:]); print('same' if a == b else 'differ', a, b)" %t/cpu.json %t/plain.json | FileCheck %s --check-prefix=SAME
// SAME: same
