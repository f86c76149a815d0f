// --input binds inputs and labels only (issue 24: `--input fc1.weight=x.npy` was silently
// ignored): a param named there is an error that points to --params, and an unknown name lists the
// model's inputs. Both are refused before the file is read.

// RUN: ampc %amp_src_root/examples/mlp.mlir -o %t.ampx
// RUN: not amp-run %t.ampx --device=reference --input fc1.weight=%t.missing.npy 2>&1 | FileCheck %s --check-prefix=PARAM
// PARAM: amp-run: --input fc1.weight={{.*}}.missing.npy: 'fc1.weight' is a param of the model, not an input; load params with --params FILE.safetensors
// RUN: not amp-run %t.ampx --device=reference --input imagez=%t.missing.npy 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: amp-run: --input imagez={{.*}}: the model has no input 'imagez' (it has: image, label)
