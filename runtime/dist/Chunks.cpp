#include "runtime/dist/Chunks.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace amp::rt {

// Not (numel + ranks - 1) / ranks: that overflows for a plan's hostile `ranks` near 2^63.
int64_t chunkLength(int64_t numel, int64_t ranks) {
  if (numel <= 0) return 0;
  return ranks > 0 ? (numel - 1) / ranks + 1 : numel;
}

ChunkedBucket chunkBucket(const std::vector<int64_t>& numels, int64_t ranks, size_t elementSize) {
  ChunkedBucket b;
  b.ranks = ranks;
  b.elementSize = elementSize;
  b.numel = numels;
  for (int64_t n : numels) {
    b.chunk.push_back(chunkLength(n, ranks));
    b.blockElements += b.chunk.back();
  }
  return b;
}

void copyRankChunk(const void* whole, int64_t numel, int64_t ranks, int64_t rank, size_t elementSize, void* chunk) {
  const int64_t c = chunkLength(numel, ranks);
  const int64_t first = std::min(numel, rank * c);
  const int64_t real = std::min(c, numel - first);
  char* out = static_cast<char*>(chunk);
  if (real > 0) std::memcpy(out, static_cast<const char*>(whole) + first * elementSize, real * elementSize);
  std::memset(out + std::max<int64_t>(real, 0) * elementSize, 0, (c - std::max<int64_t>(real, 0)) * elementSize);
}

void packBlocks(const ChunkedBucket& b, const std::vector<const void*>& wholes, void* blocks) {
  char* out = static_cast<char*>(blocks);
  for (int64_t r = 0; r < b.ranks; ++r)
    for (size_t i = 0; i < wholes.size(); ++i) {
      copyRankChunk(wholes[i], b.numel[i], b.ranks, r, b.elementSize, out);
      out += b.chunk[i] * b.elementSize;
    }
}

void packBlock(const ChunkedBucket& b, const std::vector<const void*>& chunks, void* block) {
  char* out = static_cast<char*>(block);
  for (size_t i = 0; i < chunks.size(); ++i) {
    std::memcpy(out, chunks[i], b.chunk[i] * b.elementSize);
    out += b.chunk[i] * b.elementSize;
  }
}

void unpackBlock(const ChunkedBucket& b, const void* block, const std::vector<void*>& chunks) {
  const char* in = static_cast<const char*>(block);
  for (size_t i = 0; i < chunks.size(); ++i) {
    std::memcpy(chunks[i], in, b.chunk[i] * b.elementSize);
    in += b.chunk[i] * b.elementSize;
  }
}

void unpackBlocks(const ChunkedBucket& b, const void* blocks, const std::vector<void*>& wholes) {
  const char* in = static_cast<const char*>(blocks);
  for (int64_t r = 0; r < b.ranks; ++r)
    for (size_t i = 0; i < wholes.size(); ++i) {
      const int64_t first = std::min(b.numel[i], r * b.chunk[i]);
      const int64_t real = std::min(b.chunk[i], b.numel[i] - first);
      if (real > 0) std::memcpy(static_cast<char*>(wholes[i]) + first * b.elementSize, in, real * b.elementSize);
      in += b.chunk[i] * b.elementSize;
    }
}

absl::Status checkJobSize(const Communicator* comm, int64_t ranks, const char* what) {
  const int world = comm ? comm->worldSize() : 1;
  if (ranks == world) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      what, ": the step was compiled for ", ranks, " rank(s) (ampc --shard-optimizer --world-size=", ranks,
      "), but this job has ", world, "; run it with mpirun -np ", ranks, " or recompile"));
}

}  // namespace amp::rt
