#include "runtime/devices/cuda/GpuCollectivesDryRun.h"

#include "absl/strings/str_cat.h"

namespace amp::rt::cuda {

RecordingCollectives::RecordingCollectives(DryRunApi& dry, int rank, int worldSize)
    : dry_(dry), identity_(worldSize == 1 ? makeLocalCollectives(dry) : nullptr), rank_(rank), worldSize_(worldSize) {}

std::string RecordingCollectives::description() const {
  return absl::StrCat("dry run: rank ", rank_, " of ", worldSize_, " (collectives recorded)");
}

void RecordingCollectives::record(std::string line, DevicePtr send, DevicePtr recv, int64_t count) {
  absl::StrAppend(&line, send == recv ? " in place" : "");
  calls_.push_back(Call{std::move(line), dry_.calls().size(), send, recv, count});
}

absl::Status RecordingCollectives::allReduce(DevicePtr send, DevicePtr recv, int64_t count, DType dtype, ReduceOp op) {
  if (auto s = checkCollectiveArgs("allReduce", send, recv, count, dtype, op); !s.ok()) return s;
  record(absl::StrCat("all_reduce ", reduceOpName(op), " ", count, " x ", std::string(dtypeName(dtype))), send, recv, count);
  return identity_ ? identity_->allReduce(send, recv, count, dtype, op) : absl::OkStatus();
}

absl::Status RecordingCollectives::reduceScatter(DevicePtr send, DevicePtr recv, int64_t blockCount, DType dtype, ReduceOp op) {
  if (auto s = checkCollectiveArgs("reduceScatter", send, recv, blockCount, dtype, op); !s.ok()) return s;
  record(absl::StrCat("reduce_scatter ", reduceOpName(op), " ", blockCount, " x ", std::string(dtypeName(dtype)), " per rank"),
         send, recv, blockCount);
  return identity_ ? identity_->reduceScatter(send, recv, blockCount, dtype, op) : absl::OkStatus();
}

absl::Status RecordingCollectives::allGather(DevicePtr send, DevicePtr recv, int64_t blockCount, DType dtype) {
  if (auto s = checkGatherArgs(send, recv, blockCount); !s.ok()) return s;
  record(absl::StrCat("all_gather ", blockCount, " x ", std::string(dtypeName(dtype)), " per rank"), send, recv, blockCount);
  return identity_ ? identity_->allGather(send, recv, blockCount, dtype) : absl::OkStatus();
}

CollectivesFactory recordingCollectives(DryRunApi& dry, RecordingCollectives** recorder, int worldSize, int rank) {
  return [&dry, recorder, worldSize, rank](GpuApi&, Communicator* comm) -> absl::StatusOr<std::unique_ptr<GpuCollectives>> {
    const int ranks = worldSize > 0 ? worldSize : comm ? comm->worldSize() : 1;
    const int me = worldSize > 0 ? rank : comm ? comm->rank() : 0;
    if (me < 0 || me >= ranks) return absl::InvalidArgumentError("dry run: rank outside the job");
    auto made = std::make_unique<RecordingCollectives>(dry, me, ranks);
    if (recorder) *recorder = made.get();
    return std::unique_ptr<GpuCollectives>(std::move(made));
  };
}

}  // namespace amp::rt::cuda
