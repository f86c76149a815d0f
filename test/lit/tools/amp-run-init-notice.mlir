// A long seeded initialisation is announced and timed (issue 24: a 2^29-element `normal` param
// took more than 30 s with no output). Above 2^26 random values amp-run says what it is doing
// before the session exists; a small model prints nothing of the kind.

// RUN: ampc %S/Inputs/param-normal-2p26.mlir -o %t.ampx
// RUN: not amp-run %t.ampx --device=cpu 2>&1 | FileCheck %s
// CHECK: amp-run: initialising 67108928 parameter values from their seeded random initialisers...
// CHECK-NEXT: amp-run: parameters initialised in {{[0-9]+\.[0-9]}} s
// CHECK-NEXT: amp-run: missing input 'x'

// RUN: ampc %amp_src_root/examples/mlp.mlir -o %t.mlp.ampx
// RUN: not amp-run %t.mlp.ampx --device=cpu 2>&1 | FileCheck %s --check-prefix=SMALL
// SMALL-NOT: initialising
// SMALL: amp-run: missing input
