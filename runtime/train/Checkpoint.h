// Checkpoints: every param and state buffer of a session plus {step, seed, shuffle, world size,
// model} metadata and a content hash, in one safetensors file written atomically
// (DIR/checkpoint.safetensors), authenticated by a tag under the user's ampc key, and restored
// bitwise.
#ifndef AMP_RUNTIME_TRAIN_CHECKPOINT_H
#define AMP_RUNTIME_TRAIN_CHECKPOINT_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/dist/Communicator.h"
#include "runtime/exec/Session.h"
#include "runtime/io/Safetensors.h"
#include "runtime/plan/Plan.h"
#include "runtime/plan/Provenance.h"

namespace amp::rt {

// Steps are counted in int64 with room for any run length added to them.
inline constexpr int64_t kMaxCheckpointStep = int64_t{1} << 62;

// DIR/checkpoint.safetensors.
std::string checkpointPath(const std::string& dir);

// The checkpoint's content hash (metadata "sha256"): SHA-256 over every tensor's name, dtype,
// shape and bytes, in name order. safetensors has no checksum; this catches a flipped bit on load.
std::string checkpointHash(const std::vector<NamedTensorRef>& tensors);

// Who wrote a checkpoint (docs/cli.md, "Checkpoints"). Every checkpoint carries the metadata
// "ampc.auth": an HMAC-SHA256 under the user's ampc key (runtime/plan/Provenance.h) over every
// other metadata value, the content sha256 among them, so it covers the whole file. A loader
// accepts only a checkpoint whose tag verifies under `key`, unless `trustAny` (amp-run's
// --trust-checkpoint); either way every value is validated as --params' are.
struct CheckpointAuth {
  std::optional<UserKey> key;  // saving without one writes an unauthenticated (all-zero) tag
  bool trustAny = false;
};
// The tag of a checkpoint's metadata (without "ampc.auth") under `key`.
std::string checkpointTag(const StringMap& metadata, const UserKey& key);

struct CheckpointInfo {
  int64_t step = 0;
  uint64_t seed = 0;
  bool shuffle = true;
  int64_t worldSize = 1;  // the data-parallel job that wrote it (the data order depends on it)
};
// Writes the session's params and state (sharded optimizer state whole: runtime/train/ShardedState.h;
// a session of one rank). The overload writes given whole tensors (a data-parallel job's rank 0).
absl::Status saveCheckpoint(const Session& session, const std::string& dir, const CheckpointInfo& info,
                            const CheckpointAuth& auth);
absl::Status saveCheckpoint(const Plan& plan, const std::vector<NamedTensorRef>& tensors, const std::string& dir,
                            const CheckpointInfo& info, const CheckpointAuth& auth);
// Restores a checkpoint; a ZeRO-1 session of rank `rank` takes its chunk of the sharded state.
absl::StatusOr<CheckpointInfo> loadCheckpoint(Session& session, const std::string& dir, const CheckpointAuth& auth,
                                              int rank = 0);

// A training job's checkpoints (`comm` null or `worldSize` 1: a job of one rank).
//
// Creates the directory before the first step, so that an unusable one is found before the
// work is done, not after.
absl::Status createCheckpointDir(const std::string& dir);
// The state after step `info.step`: every rank gathers it whole (a collective), the ranks check
// that their replicas agree (runtime/train/RankAgreement.h), and rank 0 writes.
absl::Status saveJobCheckpoint(const Session& session, Communicator* comm, const std::string& dir,
                               const CheckpointInfo& info, const CheckpointAuth& auth);
// Restores rank `rank` of a job of `worldSize` ranks; a job of another size wrote a data order
// this one cannot continue, so its checkpoint is refused.
absl::StatusOr<CheckpointInfo> loadJobCheckpoint(Session& session, const std::string& dir, const CheckpointAuth& auth,
                                                 int rank, int worldSize);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_TRAIN_CHECKPOINT_H
