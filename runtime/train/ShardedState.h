// The persistent state of a ZeRO-1 session as a checkpoint holds it (docs/data-parallel.md):
// each rank keeps only its chunk of the sharded optimizer state (BufferDesc::shardOf), but a
// checkpoint stores every tensor whole, in the param's shape, exactly as a job without
// --shard-optimizer does. So the replicas can be hashed and compared, and one file serves every
// rank: gathering is a collective, and restoring takes each rank's chunk.
#ifndef AMP_RUNTIME_TRAIN_SHARDEDSTATE_H
#define AMP_RUNTIME_TRAIN_SHARDEDSTATE_H

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/dist/Communicator.h"
#include "runtime/exec/Session.h"
#include "runtime/io/NamedTensor.h"

namespace amp::rt {

struct WholeState {
  std::vector<NamedTensorRef> tensors;    // every param and state buffer, whole
  std::vector<std::unique_ptr<Tensor>> gathered;  // owns the whole copies of sharded state
};

// The session's persistent buffers with the sharded ones gathered whole from every rank. Every
// rank must call it at the same point (one allGather per sharded buffer); without a
// communicator the job has one rank.
absl::StatusOr<WholeState> wholeState(const Session& session, Communicator* comm);

// Checkpoint tensors (whole) -> what this rank's session holds: each sharded buffer's chunk
// `rank` of the whole tensor, which must have its param's shape. Others pass through.
absl::Status takeRankChunks(const Plan& plan, int rank, std::vector<NamedTensor>& tensors);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_TRAIN_SHARDEDSTATE_H
