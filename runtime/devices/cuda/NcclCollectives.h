// The cuda device's collectives across GPUs, through NCCL (libnccl.so.2, which the CUDA toolkit
// ships), loaded at run time as the driver is: amp-run starts without it, and only a
// data-parallel job on the cuda device asks for it. The ranks agree on NCCL's unique id through
// the job's Communicator (rank 0 makes it, a broadcast carries it: MPI_Bcast under mpirun), then
// each calls ncclCommInitRank. The entry points form a table so that the tests can put fakes in
// place of the library and check the bootstrap on a machine without a GPU.
#ifndef AMP_RUNTIME_DEVICES_CUDA_NCCLCOLLECTIVES_H
#define AMP_RUNTIME_DEVICES_CUDA_NCCLCOLLECTIVES_H

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/devices/cuda/GpuCollectives.h"

namespace amp::rt::cuda {

// NCCL's C ABI as nccl.h declares it: its enums are ints, ncclComm_t a pointer, ncclUniqueId 128
// bytes passed by value (NcclCollectives.cpp checks the constants against nccl.h when it has it).
struct NcclApi {
  using Comm = void*;
  struct UniqueId {
    char internal[128];
  };
  int (*getVersion)(int* version) = nullptr;
  int (*getUniqueId)(UniqueId* id) = nullptr;
  int (*commInitRank)(Comm* comm, int ranks, UniqueId id, int rank) = nullptr;
  int (*commDestroy)(Comm comm) = nullptr;
  int (*allReduce)(const void* send, void* recv, size_t count, int dtype, int op, Comm comm, void* stream) = nullptr;
  int (*reduceScatter)(const void* send, void* recv, size_t recvCount, int dtype, int op, Comm comm, void* stream) = nullptr;
  int (*allGather)(const void* send, void* recv, size_t sendCount, int dtype, Comm comm, void* stream) = nullptr;
  const char* (*getErrorString)(int result) = nullptr;
  std::string library;  // where the table came from ("libnccl.so.2", "fake")
};

// NCCL's numbers for the types and reductions the device uses (InvalidArgument for the others).
absl::StatusOr<int> ncclTypeOf(DType dtype);
absl::StatusOr<int> ncclOpOf(ReduceOp op);

// libnccl.so.2 from the loader's path, then from the CUDA toolkit ampc was built with
// (AMP_CUDA_ROOT/lib64); Unavailable, saying what to install, without it. Once per process.
absl::StatusOr<const NcclApi*> loadNccl();

// The communicator of `job`'s rank: rank 0's ncclGetUniqueId, job.broadcast from rank 0, then
// ncclCommInitRank(job.worldSize(), id, job.rank()). `idSeen` (optional) receives the id.
absl::StatusOr<NcclApi::Comm> bootstrapNcclComm(const NcclApi& nccl, Communicator& job, NcclApi::UniqueId* idSeen = nullptr);

// Collectives on `api`'s stream (GpuApi::nativeStream) through `nccl`, bootstrapped over `job`.
absl::StatusOr<std::unique_ptr<GpuCollectives>> makeNcclCollectives(GpuApi& api, Communicator& job, const NcclApi& nccl);
// The same with the real library; refuses a GpuApi without a stream (the dry run).
absl::StatusOr<std::unique_ptr<GpuCollectives>> openNcclCollectives(GpuApi& api, Communicator& job);

}  // namespace amp::rt::cuda

#endif  // AMP_RUNTIME_DEVICES_CUDA_NCCLCOLLECTIVES_H
