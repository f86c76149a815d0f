// Collective communication between the ranks of a data-parallel job (docs/data-parallel.md).
// The plan's amp.all_reduce steps and the trainer's checkpoint agreement run through this
// interface; MPI implements it for the reference and cpu devices (no home-made transport). A
// process not started by mpirun is a job of one rank, where every collective is the identity.
#ifndef AMP_RUNTIME_DIST_COMMUNICATOR_H
#define AMP_RUNTIME_DIST_COMMUNICATOR_H

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "runtime/DType.h"

namespace amp::rt {

// Mean is DistributedDataParallel's: every rank divides its values by the world size (in the
// buffer's precision, f32 arithmetic), then the divided values are summed.
enum class ReduceOp { Sum, Mean, Max };
const char* reduceOpName(ReduceOp op);
// The inverse of reduceOpName ("sum", "mean", "max": amp.all_reduce's `kind` in a plan).
std::optional<ReduceOp> parseReduceOp(std::string_view name);
// The dtype/op pairs allReduce defines: sum and mean take f32, f16, bf16; max takes f32, i32, i64.
bool reduceSupports(ReduceOp op, DType dtype);

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int worldSize() const = 0;
  // One line for logs: "mpi: rank 0 of 2 (Open MPI v4.1.4)", "single process".
  virtual std::string description() const = 0;

  // In place over `count` elements of `dtype`. Sum and Mean take f32, f16 and bf16 (f16/bf16
  // are added in f32 and rounded once per addition, as the wire carries 16-bit values); Max
  // takes f32, i32 and i64 (a NaN on any rank makes the f32 maximum NaN). Every rank receives
  // bitwise the same result. DeadlineExceeded when the other ranks have not joined within the
  // communicator's timeout (a rank died or hangs).
  virtual absl::Status allReduce(void* data, int64_t count, DType dtype, ReduceOp op) = 0;
  // ZeRO-1's gradient reduction: `data` holds worldSize() blocks of `chunkCount` elements, block
  // r destined for rank r; this rank receives in `out` the reduction over all ranks of its block.
  // Sum and Mean as for allReduce (f32, f16, bf16). `data` is clobbered (Mean divides it in
  // place). Same timeout.
  virtual absl::Status reduceScatter(void* data, int64_t chunkCount, DType dtype, ReduceOp op, void* out) = 0;
  // Every rank's `bytes` bytes, in rank order, into `out` (worldSize() * bytes). Same timeout.
  virtual absl::Status allGather(const void* data, int64_t bytes, void* out) = 0;
  // Rank `root`'s `bytes` bytes into `data` on every rank (MPI_Bcast): how a library with a
  // transport of its own (NCCL) learns the unique id that rank 0 made. Same timeout.
  virtual absl::Status broadcast(void* data, int64_t bytes, int root) = 0;
  // Ends every rank of the job after an error on this one (MPI_Abort with `exitCode`): the
  // other ranks must not wait for a collective this one will never join.
  [[noreturn]] virtual void abortJob(int exitCode) = 0;

  // Calls made so far of each collective (tests count the communication per step), and the wall
  // time spent in all of them, waiting for the other ranks included (the summary's
  // communication share).
  int64_t allReduceCalls() const { return allReduceCalls_; }
  int64_t reduceScatterCalls() const { return reduceScatterCalls_; }
  int64_t allGatherCalls() const { return allGatherCalls_; }
  int64_t broadcastCalls() const { return broadcastCalls_; }
  double collectiveSeconds() const { return collectiveSeconds_; }

 protected:
  int64_t allReduceCalls_ = 0, reduceScatterCalls_ = 0, allGatherCalls_ = 0, broadcastCalls_ = 0;
  double collectiveSeconds_ = 0;
};

// A job of one rank.
std::unique_ptr<Communicator> makeSingleProcessCommunicator();

// True when this process was started by an MPI launcher (mpirun/mpiexec/srun set its rank in
// the environment).
bool launchedByMpi();
// True when the runtime was built with MPI (Debian's Open MPI).
bool mpiAvailable();

// The job this process belongs to: MPI when launchedByMpi(), else a single process. Collectives
// give up after `timeoutSeconds` (> 0). Errors: launched by mpirun but built without MPI; MPI
// failed to initialise. Call once per process.
absl::StatusOr<std::unique_ptr<Communicator>> makeCommunicator(double timeoutSeconds);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_DIST_COMMUNICATOR_H
