// main() of DistMpiTest, run as
// `mpirun -np 2 DistMpiTest [--timeout-seconds=S] [--absent-rank=R] [gtest flags]`.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "test/unit/dist/MpiTestComm.h"

namespace amp::rt::testing {

static std::unique_ptr<Communicator> gComm;
// Generous: under scripts/sanitize.sh (slow unwinder on every malloc) on a loaded machine a 4 MB
// all-reduce took over 20 s.
static double gTimeoutSeconds = 90;
static int gAbsentRank = 1;

Communicator& mpiComm() { return *gComm; }
double mpiTimeoutSeconds() { return gTimeoutSeconds; }
int absentRank() { return gAbsentRank; }

}  // namespace amp::rt::testing

int main(int argc, char** argv) {
  using namespace amp::rt;
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--timeout-seconds=", 18) == 0) {
      amp::rt::testing::gTimeoutSeconds = std::atof(argv[i] + 18);
    } else if (std::strncmp(argv[i], "--absent-rank=", 14) == 0) {
      amp::rt::testing::gAbsentRank = std::atoi(argv[i] + 14);
    } else {
      std::fprintf(stderr, "DistMpiTest: unknown argument '%s'\n", argv[i]);
      return 2;
    }
  }
  if (!launchedByMpi()) {
    std::fprintf(stderr, "DistMpiTest: run it under mpirun -np 2 (ctest -L mpi does)\n");
    return 2;
  }
  absl::StatusOr<std::unique_ptr<Communicator>> comm = makeCommunicator(amp::rt::testing::gTimeoutSeconds);
  if (!comm.ok()) {
    std::fprintf(stderr, "DistMpiTest: %s\n", comm.status().ToString().c_str());
    return 2;
  }
  amp::rt::testing::gComm = std::move(*comm);
  // The expected values are written for two ranks (ctest starts two).
  if (amp::rt::testing::gComm->worldSize() != 2) {
    std::fprintf(stderr, "DistMpiTest: needs exactly 2 ranks, got %d\n", amp::rt::testing::gComm->worldSize());
    return 2;
  }
  int result = RUN_ALL_TESTS();
  std::printf("rank %d: %s\n", amp::rt::testing::gComm->rank(), result == 0 ? "passed" : "FAILED");
  amp::rt::testing::gComm.reset();  // MPI_Finalize
  return result;
}
