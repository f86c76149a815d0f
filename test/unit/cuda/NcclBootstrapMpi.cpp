// Under `mpirun -np 2`: both ranks bootstrap NCCL through the job's MPI communicator with the real
// libnccl.so.2 (its ncclGetUniqueId needs no GPU), and must reach ncclCommInitRank with the same
// id, rank 0's. ncclCommInitRank itself needs a GPU, so it is a fake that keeps the id. Exit 0
// when they agree, 1 when not, 77 (ctest's skip) without NCCL.
#include <cstdio>
#include <cstring>
#include <vector>

#include "runtime/devices/cuda/NcclCollectives.h"
#include "runtime/dist/Communicator.h"

namespace {
amp::rt::cuda::NcclApi::UniqueId initId;
int uniqueIds = 0, inits = 0, initRanks = 0, initRank = -1;
int (*realGetUniqueId)(amp::rt::cuda::NcclApi::UniqueId*) = nullptr;
}  // namespace

int main() {
  using namespace amp::rt;
  using namespace amp::rt::cuda;
  auto job = makeCommunicator(60);
  if (!job.ok()) {
    std::fprintf(stderr, "%s\n", job.status().ToString().c_str());
    return 1;
  }
  Communicator& comm = **job;
  auto nccl = loadNccl();
  if (!nccl.ok()) {
    std::fprintf(stderr, "skipped: %s\n", nccl.status().ToString().c_str());
    return 77;
  }
  NcclApi api = **nccl;
  realGetUniqueId = api.getUniqueId;
  api.getUniqueId = [](NcclApi::UniqueId* id) {
    ++uniqueIds;
    return realGetUniqueId(id);
  };
  api.commInitRank = [](NcclApi::Comm* c, int ranks, NcclApi::UniqueId id, int rank) {
    ++inits;
    initRanks = ranks;
    initRank = rank;
    initId = id;
    *c = nullptr;
    return 0;
  };
  auto bootstrapped = bootstrapNcclComm(api, comm);
  if (!bootstrapped.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", comm.rank(), bootstrapped.status().ToString().c_str());
    return 1;
  }
  std::vector<char> ids(sizeof initId * static_cast<size_t>(comm.worldSize()));
  if (auto s = comm.allGather(&initId, sizeof initId, ids.data()); !s.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", comm.rank(), s.ToString().c_str());
    return 1;
  }
  bool ok = comm.worldSize() == 2 && inits == 1 && initRanks == 2 && initRank == comm.rank() &&
            uniqueIds == (comm.rank() == 0 ? 1 : 0) && comm.broadcastCalls() == 1;
  for (int r = 1; r < comm.worldSize(); ++r)
    ok = ok && std::memcmp(ids.data(), ids.data() + r * sizeof initId, sizeof initId) == 0;
  std::printf("rank %d of %d: %s (ids made here: %d, ncclCommInitRank(%d, id, %d))\n", comm.rank(), comm.worldSize(),
              ok ? "same NCCL id as rank 0" : "MISMATCH", uniqueIds, initRanks, initRank);
  return ok ? 0 : 1;
}
