// Collectives that record their calls instead of communicating, for the dry run and the tests:
// each call is one line ("all_reduce mean 1234 x f32 in place"), placed after the GpuApi call
// it followed, so a test sees where in the captured graph it sits. With one rank it also performs
// the identity (through the GpuApi's copies, which the dry run carries out), so the data paths
// around it stay real; with more it only records.
#ifndef AMP_RUNTIME_DEVICES_CUDA_GPUCOLLECTIVESDRYRUN_H
#define AMP_RUNTIME_DEVICES_CUDA_GPUCOLLECTIVESDRYRUN_H

#include <memory>
#include <string>
#include <vector>

#include "runtime/devices/cuda/DryRunApi.h"
#include "runtime/devices/cuda/GpuCollectives.h"

namespace amp::rt::cuda {

class RecordingCollectives final : public GpuCollectives {
 public:
  struct Call {
    std::string line;
    size_t apiCallsBefore = 0;  // dry.calls().size() when it was made
    DevicePtr send = 0, recv = 0;
    int64_t count = 0;
  };
  RecordingCollectives(DryRunApi& dry, int rank, int worldSize);

  int rank() const override { return rank_; }
  int worldSize() const override { return worldSize_; }
  std::string description() const override;
  absl::Status allReduce(DevicePtr send, DevicePtr recv, int64_t count, DType dtype, ReduceOp op) override;
  absl::Status reduceScatter(DevicePtr send, DevicePtr recv, int64_t blockCount, DType dtype, ReduceOp op) override;
  absl::Status allGather(DevicePtr send, DevicePtr recv, int64_t blockCount, DType dtype) override;

  const std::vector<Call>& calls() const { return calls_; }

 private:
  void record(std::string line, DevicePtr send, DevicePtr recv, int64_t count);

  DryRunApi& dry_;
  std::unique_ptr<GpuCollectives> identity_;  // with one rank
  int rank_, worldSize_;
  std::vector<Call> calls_;
};

// A CollectivesFactory for an executor over `dry` whose recorder is left in `*recorder` (owned by
// the executor). `worldSize` 0: the job's (the communicator's, 1 without one); otherwise this
// process plays rank `rank` of `worldSize`.
CollectivesFactory recordingCollectives(DryRunApi& dry, RecordingCollectives** recorder, int worldSize = 0, int rank = 0);

}  // namespace amp::rt::cuda

#endif  // AMP_RUNTIME_DEVICES_CUDA_GPUCOLLECTIVESDRYRUN_H
