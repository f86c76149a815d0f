#include "runtime/devices/cuda/MultiTensor.h"

#include <limits>

#include "absl/strings/str_cat.h"

namespace amp::rt::cuda {

absl::StatusOr<MultiTensorSchedule> scheduleMultiTensor(absl::Span<const int64_t> numels, int depth,
                                                        MultiTensorLimits limits) {
  if (depth < 1 || depth > 5) return absl::InvalidArgumentError(absl::StrCat("multi-tensor depth ", depth, " not in [1, 5]"));
  if (limits.maxTensors == 0) limits.maxTensors = amp_mt_capacity(depth);
  if (limits.chunk < 1 || limits.maxBlocks < 1 || limits.maxBlocks > AMP_MT_MAX_BLOCKS || limits.maxTensors < 1 ||
      limits.maxTensors > amp_mt_capacity(depth))
    return absl::InvalidArgumentError("multi-tensor limits outside the argument block's capacity");
  MultiTensorSchedule out;
  out.tensorFirstSlot.reserve(numels.size() + 1);
  int64_t slot = 0;
  MultiTensorLaunch current;
  auto flush = [&] {
    if (current.blocks.empty()) return;
    out.launches.push_back(std::move(current));
    current = MultiTensorLaunch{};
  };
  for (size_t t = 0; t < numels.size(); ++t) {
    const int64_t n = numels[t];
    if (n < 0) return absl::InvalidArgumentError(absl::StrCat("multi-tensor list: tensor ", t, " has ", n, " elements"));
    out.tensorFirstSlot.push_back(static_cast<int32_t>(slot));
    const int64_t chunks = n == 0 ? 0 : (n - 1) / limits.chunk + 1;
    if (chunks > std::numeric_limits<int32_t>::max() - slot)
      return absl::InvalidArgumentError(
          absl::StrCat("multi-tensor list: more than 2^31 - 1 chunks of ", limits.chunk, " elements"));
    for (int64_t c = 0; c < chunks; ++c) {
      const bool full = static_cast<int>(current.blocks.size()) == limits.maxBlocks;
      const bool newTensor = current.tensors.empty() || current.tensors.back() != static_cast<int32_t>(t);
      if (full || (newTensor && static_cast<int>(current.tensors.size()) == limits.maxTensors)) flush();
      if (current.blocks.empty()) current.firstSlot = static_cast<int32_t>(slot);
      if (current.tensors.empty() || current.tensors.back() != static_cast<int32_t>(t))
        current.tensors.push_back(static_cast<int32_t>(t));
      current.blocks.push_back({static_cast<int32_t>(current.tensors.size() - 1), static_cast<int32_t>(c)});
      ++slot;
    }
  }
  flush();
  out.tensorFirstSlot.push_back(static_cast<int32_t>(slot));
  out.slots = static_cast<int32_t>(slot);
  return out;
}

}  // namespace amp::rt::cuda
