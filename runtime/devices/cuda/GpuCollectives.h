// What the cuda device asks of a data-parallel job: collectives over device memory, enqueued on
// the GpuApi's stream like any kernel, so that capturing a step puts them into its graph and a
// replay runs them with no host involvement. NCCL implements it across GPUs (NcclCollectives.h);
// a job of one rank needs no library (makeLocalCollectives); the tests record the calls
// (GpuCollectivesDryRun.h). Reduction semantics are the Communicator's (runtime/dist).
#ifndef AMP_RUNTIME_DEVICES_CUDA_GPUCOLLECTIVES_H
#define AMP_RUNTIME_DEVICES_CUDA_GPUCOLLECTIVES_H

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/DType.h"
#include "runtime/devices/cuda/GpuApi.h"
#include "runtime/dist/Communicator.h"

namespace amp::rt::cuda {

class GpuCollectives {
 public:
  virtual ~GpuCollectives() = default;
  virtual int rank() const = 0;
  virtual int worldSize() const = 0;
  // One line for logs: "nccl 2.28.9: rank 0 of 2", "one rank (no collective library)".
  virtual std::string description() const = 0;

  // `count` elements of `dtype` from `send` reduced over the ranks into `recv` (send == recv: in
  // place). Sum and Mean over f32, f16, bf16; Max over f32, i32, i64 (reduceSupports).
  virtual absl::Status allReduce(DevicePtr send, DevicePtr recv, int64_t count, DType dtype, ReduceOp op) = 0;
  // `send` holds worldSize() blocks of `blockCount` elements, block r destined for rank r; `recv`
  // receives the reduction of this rank's block. Sum and Mean.
  virtual absl::Status reduceScatter(DevicePtr send, DevicePtr recv, int64_t blockCount, DType dtype, ReduceOp op) = 0;
  // Every rank's `blockCount` elements into `recv`, in rank order.
  virtual absl::Status allGather(DevicePtr send, DevicePtr recv, int64_t blockCount, DType dtype) = 0;
};

// A job of one rank over `api`'s copies: every collective is the identity (a mean over one rank
// divides by 1), checked as a real one is.
std::unique_ptr<GpuCollectives> makeLocalCollectives(GpuApi& api);

// How an executor gets the collectives of the job that `comm` describes (called once, on the
// first call of an entry, before its graph is captured). `comm` is null when the caller runs
// without a job (one rank).
using CollectivesFactory = std::function<absl::StatusOr<std::unique_ptr<GpuCollectives>>(GpuApi& api, Communicator* comm)>;

// The default: one rank runs the local collectives, more ranks NCCL bootstrapped through `comm`.
absl::StatusOr<std::unique_ptr<GpuCollectives>> defaultCollectives(GpuApi& api, Communicator* comm);

// The argument rules every implementation enforces (InvalidArgument otherwise): count >= 0,
// addresses for count > 0, a pair reduceSupports (reduceScatter: Sum or Mean only).
absl::Status checkCollectiveArgs(const char* what, DevicePtr send, DevicePtr recv, int64_t count, DType dtype, ReduceOp op);
absl::Status checkGatherArgs(DevicePtr send, DevicePtr recv, int64_t count);

// One collective step as lowered by the executor (CudaCollectiveActions.cpp): the copies around
// the library call and the call itself, enqueued when the step's graph is captured. Addresses
// that depend on the rank (amp.rank_chunk, the blocks of ZeRO-1) are resolved then, from the
// collectives the entry runs with.
class CollectiveCall {
 public:
  virtual ~CollectiveCall() = default;
  virtual absl::Status enqueue(GpuApi& api, GpuCollectives& collectives) const = 0;
};

}  // namespace amp::rt::cuda

#endif  // AMP_RUNTIME_DEVICES_CUDA_GPUCOLLECTIVES_H
