// ZeRO-1's chunking (docs/data-parallel.md): a tensor of n elements, over N ranks, is split
// row-major into N chunks of ceil(n / N) elements, the last ones zero-padded; rank r owns chunk r.
// A bucket of several tensors travels as one block per rank: block r is chunk r of each tensor,
// in order. The amp.reduce_scatter, amp.all_gather and amp.rank_chunk kernels of every device,
// and the trainer's checkpoints of sharded state, share these helpers.
#ifndef AMP_RUNTIME_DIST_CHUNKS_H
#define AMP_RUNTIME_DIST_CHUNKS_H

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "runtime/dist/Communicator.h"

namespace amp::rt {

// The largest job a ZeRO-1 step may be compiled for (ampc --world-size).
inline constexpr int64_t kMaxRanks = 65536;

// ceil(numel / ranks) for ranks >= 1, without overflow for any int64 arguments.
int64_t chunkLength(int64_t numel, int64_t ranks);

struct ChunkedBucket {
  int64_t ranks = 1;
  size_t elementSize = 4;
  std::vector<int64_t> numel;  // of each whole tensor
  std::vector<int64_t> chunk;  // chunkLength of each
  int64_t blockElements = 0;   // sum of chunk: one rank's block
  size_t blockBytes() const { return static_cast<size_t>(blockElements) * elementSize; }
};
ChunkedBucket chunkBucket(const std::vector<int64_t>& numels, int64_t ranks, size_t elementSize);

// Whole tensors -> ranks blocks, rank-major (the reduce-scatter's send buffer).
void packBlocks(const ChunkedBucket& b, const std::vector<const void*>& wholes, void* blocks);
// One block <-> the tensors' chunks.
void packBlock(const ChunkedBucket& b, const std::vector<const void*>& chunks, void* block);
void unpackBlock(const ChunkedBucket& b, const void* block, const std::vector<void*>& chunks);
// Every rank's block, rank-major (the all-gather's receive buffer) -> whole tensors, unpadded.
void unpackBlocks(const ChunkedBucket& b, const void* blocks, const std::vector<void*>& wholes);
// Chunk `rank` of one whole tensor, zero-padded.
void copyRankChunk(const void* whole, int64_t numel, int64_t ranks, int64_t rank, size_t elementSize, void* chunk);

// The step was compiled for `ranks` ranks; the job (comm, or one process without it) must have
// as many. `what` names the op for the message.
absl::Status checkJobSize(const Communicator* comm, int64_t ranks, const char* what);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_DIST_CHUNKS_H
