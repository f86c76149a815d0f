// Plans larger than the process may allocate are refused before anything is allocated, with the
// limit named, on every device (issue 24: a 2^31-element param under `ulimit -v 6000000` crashed
// both devices; a 16777216x256 broadcast aborted the reference device with std::bad_alloc).
// The process's address-space limit counts like --memory-limit (runtime/plan/PlanValidation.h).
// AddressSanitizer reserves terabytes of shadow address space, so a sanitized amp-run cannot start
// under `ulimit -v` at all (scripts/sanitize.sh's run); the unsanitized suite runs this.
// UNSUPPORTED: asan

// RUN: ampc %S/Inputs/param-2g-elements.mlir -o %t.param.ampx
// RUN: not bash -c "ulimit -v 6000000 && exec amp-run %t.param.ampx --device=reference" 2>&1 | FileCheck %s --check-prefix=PARAM-CHECK
// RUN: not bash -c "ulimit -v 6000000 && exec amp-run %t.param.ampx --device=cpu" 2>&1 | FileCheck %s --check-prefix=PARAM-CHECK
// PARAM-CHECK: amp-run: the plan needs 8589934596 bytes of params, state, inputs and constants plus {{[0-9]+}} bytes of arenas, more than the memory limit of 6144000000 bytes (the process's address-space limit, ulimit -v)

// An explicit --memory-limit below the process's limit is named as such.
// RUN: not amp-run %t.param.ampx --device=reference --memory-limit=1000000 2>&1 | FileCheck %s --check-prefix=FLAG-CHECK
// FLAG-CHECK: more than the memory limit of 1000000 bytes (--memory-limit)

// RUN: ampc %S/Inputs/broadcast-16g.mlir -o %t.bcast.ampx
// RUN: not bash -c "ulimit -v 6000000 && exec amp-run %t.bcast.ampx --device=reference" 2>&1 | FileCheck %s --check-prefix=BCAST-CHECK
// BCAST-CHECK: amp-run: the plan needs 1024 bytes of params, state, inputs and constants plus 17179869248 bytes of arenas, more than the memory limit of 6144000000 bytes (the process's address-space limit, ulimit -v)
