// How the multi-tensor kernels (kernels/TrainKernels.cu) cover a list of tensors: each tensor is
// cut into chunks of AMP_MT_CHUNK elements, one block per chunk, and the blocks are packed into
// launches of at most AMP_MT_MAX_BLOCKS blocks over at most amp_mt_capacity(depth) tensors, the
// argument block of kernels/MultiTensorArgs.h. A tensor may continue into the next launch. Every
// block also owns one partial-sum slot, numbered across launches in tensor and chunk order, so the
// finalize kernel can sum each tensor's slots in a fixed order. Decided once at prepare time:
// pure host logic, no CUDA dependency.
#ifndef AMP_RUNTIME_DEVICES_CUDA_MULTITENSOR_H
#define AMP_RUNTIME_DEVICES_CUDA_MULTITENSOR_H

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/kernels/cuda/MultiTensorArgs.h"

namespace amp::rt::cuda {

struct MultiTensorBlock {
  int32_t tensor = 0;  // index into its launch's `tensors`
  int32_t chunk = 0;   // chunk of that tensor
};

struct MultiTensorLaunch {
  std::vector<int32_t> tensors;  // indices into the scheduled list, ascending
  std::vector<MultiTensorBlock> blocks;
  int32_t firstSlot = 0;  // the partial-sum slot of blocks[0]; the rest follow
};

struct MultiTensorSchedule {
  std::vector<MultiTensorLaunch> launches;
  // Tensor t's slots are [tensorFirstSlot[t], tensorFirstSlot[t + 1]); an empty tensor has none.
  std::vector<int32_t> tensorFirstSlot;
  int32_t slots = 0;
};

struct MultiTensorLimits {
  int64_t chunk = AMP_MT_CHUNK;
  int maxBlocks = AMP_MT_MAX_BLOCKS;
  int maxTensors = 0;  // 0: amp_mt_capacity(depth)
};

// The launches covering tensors of `numels` elements with `depth` pointers each. Refuses negative
// sizes and lists needing more than 2^31 - 1 blocks in all.
absl::StatusOr<MultiTensorSchedule> scheduleMultiTensor(absl::Span<const int64_t> numels, int depth,
                                                        MultiTensorLimits limits = {});

// Fills the argument block of one launch: `pointer(d, t)` is pointer d of scheduled tensor t.
template <int Depth, class PointerOf>
void fillTensorList(const MultiTensorLaunch& launch, absl::Span<const int64_t> numels, PointerOf pointer,
                    AmpTensorList<Depth>& list) {
  list = AmpTensorList<Depth>{};
  for (size_t i = 0; i < launch.tensors.size(); ++i) {
    for (int d = 0; d < Depth; ++d) list.ptr[d][i] = pointer(d, launch.tensors[i]);
    list.numel[i] = numels[launch.tensors[i]];
  }
  list.firstSlot = launch.firstSlot;
  list.blocks = static_cast<int>(launch.blocks.size());
  for (size_t b = 0; b < launch.blocks.size(); ++b) {
    list.blockTensor[b] = static_cast<unsigned char>(launch.blocks[b].tensor);
    list.blockChunk[b] = launch.blocks[b].chunk;
  }
}

}  // namespace amp::rt::cuda

#endif  // AMP_RUNTIME_DEVICES_CUDA_MULTITENSOR_H
