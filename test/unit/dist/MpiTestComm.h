// The one MPI communicator of a DistMpiTest process (MPI starts once per process), made by
// MpiTestMain.cpp before the tests run and finalized after them.
#ifndef AMP_TEST_UNIT_DIST_MPITESTCOMM_H
#define AMP_TEST_UNIT_DIST_MPITESTCOMM_H

#include "runtime/dist/Communicator.h"

namespace amp::rt::testing {

Communicator& mpiComm();
// The timeout the communicator was made with (--timeout-seconds=, default 20).
double mpiTimeoutSeconds();
// The rank that stays out of the collective in the MpiTimeout tests (--absent-rank=, default 1).
int absentRank();

}  // namespace amp::rt::testing

#endif  // AMP_TEST_UNIT_DIST_MPITESTCOMM_H
