#include "runtime/devices/cuda/GpuCollectives.h"

#include <string_view>

#include "absl/strings/str_cat.h"
#include "runtime/devices/cuda/NcclCollectives.h"

namespace amp::rt::cuda {
namespace {

// A job of one rank: the result of every collective is its operand, so out-of-place calls copy
// and in-place ones do nothing.
class LocalCollectives final : public GpuCollectives {
 public:
  explicit LocalCollectives(GpuApi& api) : api_(api) {}
  int rank() const override { return 0; }
  int worldSize() const override { return 1; }
  std::string description() const override { return "one rank (no collective library)"; }

  absl::Status allReduce(DevicePtr send, DevicePtr recv, int64_t count, DType dtype, ReduceOp op) override {
    if (auto s = checkCollectiveArgs("allReduce", send, recv, count, dtype, op); !s.ok()) return s;
    return copy(send, recv, count, dtype);
  }
  absl::Status reduceScatter(DevicePtr send, DevicePtr recv, int64_t blockCount, DType dtype, ReduceOp op) override {
    if (auto s = checkCollectiveArgs("reduceScatter", send, recv, blockCount, dtype, op); !s.ok()) return s;
    return copy(send, recv, blockCount, dtype);
  }
  absl::Status allGather(DevicePtr send, DevicePtr recv, int64_t blockCount, DType dtype) override {
    if (auto s = checkGatherArgs(send, recv, blockCount); !s.ok()) return s;
    return copy(send, recv, blockCount, dtype);
  }

 private:
  absl::Status copy(DevicePtr send, DevicePtr recv, int64_t count, DType dtype) {
    if (count == 0 || send == recv) return absl::OkStatus();
    return api_.copyOnDevice(recv, send, count * static_cast<int64_t>(dtypeSize(dtype)));
  }
  GpuApi& api_;
};

}  // namespace

absl::Status checkCollectiveArgs(const char* what, DevicePtr send, DevicePtr recv, int64_t count, DType dtype, ReduceOp op) {
  if (count < 0) return absl::InvalidArgumentError(absl::StrCat(what, ": negative count ", count));
  if (count > 0 && (send == 0 || recv == 0)) return absl::InvalidArgumentError(absl::StrCat(what, ": null buffer"));
  if (std::string_view(what) == "reduceScatter" && op == ReduceOp::Max)
    return absl::InvalidArgumentError("reduceScatter: takes sum or mean, not max");
  if (!reduceSupports(op, dtype))
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", reduceOpName(op), " does not take ", std::string(dtypeName(dtype)), " values"));
  return absl::OkStatus();
}

absl::Status checkGatherArgs(DevicePtr send, DevicePtr recv, int64_t count) {
  if (count < 0) return absl::InvalidArgumentError(absl::StrCat("allGather: negative count ", count));
  if (count > 0 && (send == 0 || recv == 0)) return absl::InvalidArgumentError("allGather: null buffer");
  return absl::OkStatus();
}

std::unique_ptr<GpuCollectives> makeLocalCollectives(GpuApi& api) { return std::make_unique<LocalCollectives>(api); }

absl::StatusOr<std::unique_ptr<GpuCollectives>> defaultCollectives(GpuApi& api, Communicator* comm) {
  if (!comm || comm->worldSize() == 1) return makeLocalCollectives(api);
  return openNcclCollectives(api, *comm);
}

}  // namespace amp::rt::cuda
