// amp-run on the cpu device (the default) and the reference device: a compiled bundle and an on-the-fly .mlir evaluate the MLP's
// loss on the first Fashion-MNIST test batch to the same value; bad input gives clear errors.

// RUN: ampc %amp_src_root/examples/mlp.mlir --precision=f32 -o %t.ampx
// RUN: amp-run %t.ampx --data=fashion-mnist --summary=%t.json --output=%t.out.safetensors | FileCheck %s --check-prefix=EVAL-CHECK
// RUN: FileCheck %s --check-prefix=SUMMARY-CHECK < %t.json
// EVAL-CHECK: loss = 2.42448
// EVAL-CHECK: logits: f32 [128, 10]
// SUMMARY-CHECK: "entry": "eval"
// SUMMARY-CHECK: "device": "cpu"
// SUMMARY-CHECK: "loss": 2.424

// The reference device (the oracle) gives the same loss to the printed digits.
// RUN: amp-run %t.ampx --device=reference --data=fashion-mnist | FileCheck %s --check-prefix=EVAL-CHECK

// The bf16 forward (autocast) evaluates close to, but not exactly at, the f32 loss.
// RUN: ampc %amp_src_root/examples/mlp.mlir --precision=bf16 -o %t.bf16.ampx
// RUN: amp-run %t.bf16.ampx --data=fashion-mnist | FileCheck %s --check-prefix=BF16-CHECK
// BF16-CHECK: loss = 2.4{{[0-9]+}}

// RUN: not amp-run %t.missing.ampx 2>&1 | FileCheck %s --check-prefix=MISSING-CHECK
// MISSING-CHECK: amp-run: {{.*}}missing.ampx

// RUN: echo "not a bundle" > %t.bad.ampx
// RUN: not amp-run %t.bad.ampx 2>&1 | FileCheck %s --check-prefix=CORRUPT-CHECK
// CORRUPT-CHECK: amp-run: {{.*}}bad.ampx

// RUN: not amp-run %t.ampx --device=tpu 2>&1 | FileCheck %s --check-prefix=DEVICE-CHECK
// DEVICE-CHECK: unknown device 'tpu'

// RUN: not amp-run %t.ampx --frobnicate 2>&1 | FileCheck %s --check-prefix=OPTION-CHECK
// OPTION-CHECK: amp-run: The following argument was not expected: --frobnicate (see amp-run --help)

// RUN: not amp-run %t.ampx 2>&1 | FileCheck %s --check-prefix=NOINPUT-CHECK
// NOINPUT-CHECK: missing input 'image' (f32 [128, 784])

// RUN: not amp-run %t.ampx --data=fashion-mnist --entry=train_step 2>&1 | FileCheck %s --check-prefix=ENTRY-CHECK
// ENTRY-CHECK: no entry point 'train_step' (it has: eval)

// RUN: ampc %amp_src_root/examples/mlp.mlir --train --precision=f32 -o %t.train.ampx
// RUN: not amp-run %t.train.ampx --data=fashion-mnist --steps=3 --batch=64 2>&1 | FileCheck %s --check-prefix=BATCH-CHECK
// BATCH-CHECK: --batch=64 but the model was compiled for batch 128

// Options a mode does not use are named errors; booleans take =true|false; --help is generated.
// RUN: not amp-run %t.train.ampx --data=fashion-mnist --entry=eval --steps=3 2>&1 | FileCheck %s --check-prefix=MODE-CHECK
// MODE-CHECK: amp-run: --entry is for running one entry, not for training (--epochs/--steps)
// RUN: not amp-run %t.train.ampx --data=fashion-mnist --log-every=5 --seed=3 2>&1 | FileCheck %s --check-prefix=MODE2-CHECK
// MODE2-CHECK: amp-run: --log-every, --seed are for training: give --epochs=N or --steps=N (with --data)
// RUN: not amp-run %t.train.ampx --data=fashion-mnist --steps=0 2>&1 | FileCheck %s --check-prefix=STEPS-CHECK
// STEPS-CHECK: amp-run: --steps: expects a positive integer, got '0'
// RUN: not amp-run %t.train.ampx --data=fashion-mnist --steps=1 --check-numerics=maybe 2>&1 | FileCheck %s --check-prefix=BOOL-CHECK
// BOOL-CHECK: amp-run: Could not convert: --check-numerics = maybe
// RUN: amp-run %t.train.ampx --data=fashion-mnist --check-numerics=false --resume=false | FileCheck %s --check-prefix=EVAL-CHECK
// RUN: amp-run --help | FileCheck %s --check-prefix=HELP-CHECK
// HELP-CHECK: Usage: amp-run [OPTIONS] [model]
// HELP-CHECK: --input NAME=FILE
// HELP-CHECK: --epochs INT:N>=1 Excludes: --steps
// HELP-CHECK: --metrics FILE.jsonl

// The .mlir path compiles on the fly with the ampc next to amp-run.
// RUN: amp-run %amp_src_root/examples/mlp.mlir --data=fashion-mnist | FileCheck %s --check-prefix=FLY-CHECK
// FLY-CHECK: loss = 2.4
