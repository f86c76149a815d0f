// Tells oneDNN's allocations apart from ampc's. A test binary that links OneDnnCalls.cpp interposes
// the oneDNN C entry points the cpu device calls per step; while one of them runs, every allocation
// in the process (oneDNN's OpenMP workers included) is oneDNN's. What oneDNN allocates per execute
// depends on the kernel it dispatches to, which depends on the CPU; what ampc allocates must not.
#ifndef AMP_TEST_UNIT_CPU_ONEDNNCALLS_H
#define AMP_TEST_UNIT_CPU_ONEDNNCALLS_H

#include <cstdint>

namespace amp::test {

// True while some thread is inside an interposed oneDNN call. The tests that use it drive the
// device from one thread, so "some thread" is the caller.
bool insideOneDnn();

// Interposed oneDNN calls made so far: a test checks this grew, so that a build where the
// interposition did not take (and every allocation looks like ampc's) cannot pass unnoticed.
int64_t oneDnnCalls();

}  // namespace amp::test

#endif  // AMP_TEST_UNIT_CPU_ONEDNNCALLS_H
