// Bundles for cuda:sm_80/sm_90 carry the fused kernels compiled by NVRTC: a cubin and the PTX of
// the architecture, as code/<arch>.cubin and code/<arch>.ptx (docs/plan-format.md), and no x86
// shared objects. Needs an ampc built with the CUDA toolkit; no GPU.
// REQUIRES: nvrtc

// RUN: ampc %amp_src_root/examples/transformer_lm.mlir --train --precision=bf16 --target=cuda:sm_90 -o %t.sm90.ampx
// RUN: grep -a -o 'code/[a-z0-9_-]*\.[a-z]*' %t.sm90.ampx | sort -u | FileCheck %s --check-prefix=SM90
// SM90: code/sm_90.cubin
// SM90-NEXT: code/sm_90.ptx
// SM90-NOT: code/
// The PTX is stored as text, for the driver to JIT on newer GPUs.
// RUN: grep -a -c '^\.target sm_90$' %t.sm90.ampx | FileCheck %s --check-prefix=ONE
// ONE: 1
// The code object carries the device's scaler/optimizer kernels, and the bundle records the CUDA
// release it was compiled with: the driver that loads it must be as new.
// RUN: grep -a -c '^\.visible \.entry amp_mt_adam_f32_bf16(' %t.sm90.ampx | FileCheck %s --check-prefix=ONE
// RUN: grep -a -o 'cuda_toolkit\\*":\\*"[0-9]*\.[0-9]*' %t.sm90.ampx | FileCheck %s --check-prefix=TOOLKIT
// TOOLKIT: cuda_toolkit{{.*}}13.

// RUN: ampc %amp_src_root/examples/mlp.mlir --train --precision=f16 --target=cuda:sm_80 -o %t.sm80.ampx
// RUN: grep -a -o 'code/[a-z0-9_-]*\.[a-z]*' %t.sm80.ampx | sort -u | FileCheck %s --check-prefix=SM80
// SM80: code/sm_80.cubin
// SM80-NEXT: code/sm_80.ptx
// SM80-NOT: code/

// Other GPU architectures have no kernels yet: a bundle for them is an error unless it goes
// without code objects.
// RUN: not ampc %amp_src_root/examples/mlp.mlir --train --target=cuda:sm_75 -o %t.sm75.ampx 2>&1 | FileCheck %s --check-prefix=SM75
// SM75: error: ampc: target cuda:sm_75: the CUDA kernels compile for cuda:sm_80 and cuda:sm_90
// RUN: ampc %amp_src_root/examples/mlp.mlir --train --target=cuda:sm_75 --native-kernels=false -o %t.sm75.ampx
// RUN: not grep -a 'code/sm_' %t.sm75.ampx
