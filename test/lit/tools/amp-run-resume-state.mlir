// amp-run --resume refuses a checkpoint whose sha256 matches its contents but whose state no run
// produces: each case rewrites one value of a real checkpoint (f16, dynamic loss scaling, AdamW)
// and recomputes the sha256. Without --trust-checkpoint the edit is refused by the checkpoint's
// authentication tag; with it, only the value checks can catch it. A harmless edit (the seed)
// resumes under --trust-checkpoint.

// RUN: ampc %amp_src_root/examples/mlp.mlir --train --precision=f16 --optimizer=adamw -o %t.ampx
// RUN: rm -rf %t.ok && mkdir -p %t.ok
// RUN: /usr/bin/python3 -c "import numpy as np; np.save('%t.image.npy', np.linspace(0, 1, 128 * 784, dtype=np.float32).reshape(128, 784)); np.save('%t.label.npy', np.arange(128) % 10)"
// RUN: amp-run %t.ampx --device=reference --entry=train_step --input image=%t.image.npy --input label=%t.label.npy --checkpoint=%t.ok | FileCheck %s --check-prefix=SAVED-CHECK
// SAVED-CHECK: state saved to {{.*}}checkpoint.safetensors (step 1)
// RUN: rm -rf %t.bad && mkdir -p %t.bad
// RUN: python3 %S/Inputs/tamper_checkpoint.py %t.ok/checkpoint.safetensors %t.bad/checkpoint.safetensors meta seed 7
// RUN: amp-run %t.ampx --device=reference --entry=train_step --input image=%t.image.npy --input label=%t.label.npy --checkpoint=%t.bad --resume --trust-checkpoint | FileCheck %s --check-prefix=RESUMED-CHECK
// RESUMED-CHECK: state saved to {{.*}}checkpoint.safetensors (step 2)
// RUN: rm -rf %t.copy && cp -r %t.ok %t.copy
// RUN: amp-run %t.ampx --device=reference --entry=train_step --input image=%t.image.npy --input label=%t.label.npy --checkpoint=%t.copy --resume | FileCheck %s --check-prefix=RESUMED-CHECK
// RUN: python3 %S/Inputs/tamper_checkpoint.py %t.ok/checkpoint.safetensors %t.bad/checkpoint.safetensors meta seed 7
// RUN: not amp-run %t.ampx --device=reference --entry=train_step --input image=%t.image.npy --input label=%t.label.npy --checkpoint=%t.bad --resume 2>&1 | FileCheck %s --check-prefix=AUTH-CHECK
// AUTH-CHECK: amp-run: {{.*}}checkpoint.safetensors: not resuming from it: its tag does not verify under the key {{.*}} (another user or machine wrote it, or it was changed since). Pass --trust-checkpoint if you trust where it came from (its values are still checked)
// RUN: not amp-run %t.ampx --device=reference --entry=train_step --input image=%t.image.npy --input label=%t.label.npy --checkpoint=%t.bad --trust-checkpoint 2>&1 | FileCheck %s --check-prefix=TRUSTONLY-CHECK
// TRUSTONLY-CHECK: --trust-checkpoint is for --resume

// RUN: python3 %S/Inputs/tamper_checkpoint.py %t.ok/checkpoint.safetensors %t.bad/checkpoint.safetensors tensor amp.loss_scale 0 -1
// RUN: not amp-run %t.ampx --device=reference --entry=train_step --input image=%t.image.npy --input label=%t.label.npy --checkpoint=%t.bad --resume --trust-checkpoint 2>&1 | FileCheck %s --check-prefix=SCALE-CHECK
// SCALE-CHECK: amp-run: {{.*}}checkpoint.safetensors: state 'amp.loss_scale' holds -1; the loss scale must be finite and > 0
// RUN: python3 %S/Inputs/tamper_checkpoint.py %t.ok/checkpoint.safetensors %t.bad/checkpoint.safetensors tensor amp.loss_scale 0 nan
// RUN: not amp-run %t.ampx --device=cpu --entry=train_step --input image=%t.image.npy --input label=%t.label.npy --checkpoint=%t.bad --resume --trust-checkpoint 2>&1 | FileCheck %s --check-prefix=NAN-CHECK
// NAN-CHECK: state 'amp.loss_scale' holds nan
// RUN: python3 %S/Inputs/tamper_checkpoint.py %t.ok/checkpoint.safetensors %t.bad/checkpoint.safetensors tensor fc1.weight 3 inf
// RUN: not amp-run %t.ampx --device=reference --entry=train_step --input image=%t.image.npy --input label=%t.label.npy --checkpoint=%t.bad --resume --trust-checkpoint 2>&1 | FileCheck %s --check-prefix=PARAM-CHECK
// PARAM-CHECK: param 'fc1.weight': element 3 is inf; parameter values must be finite
// RUN: python3 %S/Inputs/tamper_checkpoint.py %t.ok/checkpoint.safetensors %t.bad/checkpoint.safetensors tensor amp.growth_tracker 0 -1
// RUN: not amp-run %t.ampx --device=reference --entry=train_step --input image=%t.image.npy --input label=%t.label.npy --checkpoint=%t.bad --resume --trust-checkpoint 2>&1 | FileCheck %s --check-prefix=TRACKER-CHECK
// TRACKER-CHECK: state 'amp.growth_tracker' holds -1
// RUN: python3 %S/Inputs/tamper_checkpoint.py %t.ok/checkpoint.safetensors %t.bad/checkpoint.safetensors tensor amp.skipped_steps 0 -9223372036854775808
// RUN: not amp-run %t.ampx --device=reference --entry=train_step --input image=%t.image.npy --input label=%t.label.npy --checkpoint=%t.bad --resume --trust-checkpoint 2>&1 | FileCheck %s --check-prefix=SKIPPED-CHECK
// SKIPPED-CHECK: state 'amp.skipped_steps' holds
// RUN: python3 %S/Inputs/tamper_checkpoint.py %t.ok/checkpoint.safetensors %t.bad/checkpoint.safetensors meta seed -1
// RUN: not amp-run %t.ampx --device=reference --entry=train_step --input image=%t.image.npy --input label=%t.label.npy --checkpoint=%t.bad --resume --trust-checkpoint 2>&1 | FileCheck %s --check-prefix=SEED-CHECK
// SEED-CHECK: metadata 'seed' is '-1'; the seed is an unsigned 64-bit decimal
// RUN: python3 %S/Inputs/tamper_checkpoint.py %t.ok/checkpoint.safetensors %t.bad/checkpoint.safetensors meta shuffle maybe
// RUN: not amp-run %t.ampx --device=reference --entry=train_step --input image=%t.image.npy --input label=%t.label.npy --checkpoint=%t.bad --resume --trust-checkpoint 2>&1 | FileCheck %s --check-prefix=SHUFFLE-CHECK
// SHUFFLE-CHECK: metadata 'shuffle' is 'maybe'
// RUN: python3 %S/Inputs/tamper_checkpoint.py %t.ok/checkpoint.safetensors %t.bad/checkpoint.safetensors meta step 0
// RUN: not amp-run %t.ampx --device=reference --entry=train_step --input image=%t.image.npy --input label=%t.label.npy --checkpoint=%t.bad --resume --trust-checkpoint 2>&1 | FileCheck %s --check-prefix=STEP-CHECK
// STEP-CHECK: metadata step 0 disagrees with the state's step counters (amp.step 1 + amp.skipped_steps 0)
