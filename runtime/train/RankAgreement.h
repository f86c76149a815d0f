// What the ranks of a data-parallel job agree on outside the plan's collectives: that their
// replicas are still equal, and the step after which they stop. A job of one rank agrees with
// itself without a call.
#ifndef AMP_RUNTIME_TRAIN_RANKAGREEMENT_H
#define AMP_RUNTIME_TRAIN_RANKAGREEMENT_H

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/dist/Communicator.h"

namespace amp::rt {

// Every rank's `stateHash` (its params and state: checkpointHash in Checkpoint.h), compared at
// step `step`: replicas that diverged (a collective that was skipped, a non-deterministic
// kernel) are an error, not a silent checkpoint of rank 0's copy.
absl::Status checkReplicasAgree(const std::string& stateHash, Communicator& comm, int64_t step);

// A stop requested on any rank (a signal reaches the ranks at different moments) stops all of
// them after the same step, so no rank waits for a collective the others will not join.
// `comm` null: this process trains alone.
absl::StatusOr<bool> agreeToStop(Communicator* comm, bool local);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_TRAIN_RANKAGREEMENT_H
