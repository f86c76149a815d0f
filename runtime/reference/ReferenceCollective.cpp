// The collectives on the reference device. amp.all_reduce: the operands, copied into the results, reduced in one
// collective call through the context's communicator (runtime/dist/Communicator.h). Without a
// communicator the job has one rank and every result equals its operand (a mean over one rank
// divides by 1, which is exact).
#include <cstring>

#include "runtime/dist/Chunks.h"
#include "runtime/dist/Communicator.h"
#include "runtime/reference/ReferenceCommon.h"
#include "runtime/reference/ReferenceTrain.h"

namespace amp::rt::ref {

absl::StatusOr<std::vector<Tensor>> evalAllReduce(const OpCall& c) {
  if (c.numOperands() == 0 || c.results.size() != c.numOperands())
    return c.error("expected as many results as operands (at least one), got ", c.numOperands(), " operand(s) and ",
                   c.results.size(), " result(s)");
  const std::string_view kind = reduceKindKeyword(c.attrsOf<AllReduceAttrs>().kind);
  std::optional<ReduceOp> op = parseReduceOp(kind);
  if (!op) return c.error("attribute 'kind' must be \"sum\", \"mean\" or \"max\", got \"", kind, "\"");
  const DType dtype = c.in(0).dtype();
  if (!reduceSupports(*op, dtype)) return c.error(kind, " does not take ", typeString(c.in(0)));
  int64_t total = 0;
  for (size_t i = 0; i < c.numOperands(); ++i) {
    if (c.in(i).dtype() != dtype)
      return c.error("operand ", i, " is ", typeString(c.in(i)), "; every operand must be ",
                     std::string(dtypeName(dtype)), " (one collective over one element type)");
    if (c.results[i].dtype != dtype || c.results[i].shape != c.in(i).shape())
      return c.error("result ", i, " must have operand ", i, "'s type ", typeString(c.in(i)));
    total += c.in(i).numel();
  }
  std::vector<Tensor> out;
  for (size_t i = 0; i < c.numOperands(); ++i) {
    out.emplace_back(dtype, c.in(i).shape());
    std::memcpy(out.back().data(), c.in(i).data(), c.in(i).nbytes());
  }
  Communicator* comm = c.ctx.communicator;
  if (!comm) return out;
  // One collective per op: a bucket of several tensors travels packed.
  if (out.size() == 1) {
    if (auto s = comm->allReduce(out[0].data(), total, dtype, *op); !s.ok()) return c.error(s.message());
    return out;
  }
  std::vector<uint8_t> packed(static_cast<size_t>(total) * dtypeSize(dtype));
  size_t offset = 0;
  for (const Tensor& t : out) {
    std::memcpy(packed.data() + offset, t.data(), t.nbytes());
    offset += t.nbytes();
  }
  if (auto s = comm->allReduce(packed.data(), total, dtype, *op); !s.ok()) return c.error(s.message());
  offset = 0;
  for (Tensor& t : out) {
    std::memcpy(t.data(), packed.data() + offset, t.nbytes());
    offset += t.nbytes();
  }
  return out;
}

namespace {

// The `ranks` attribute, checked against the job: a step compiled for N ranks runs on N only.
absl::StatusOr<int64_t> jobRanks(const OpCall& c) {
  const int64_t ranks = c.withAttrsOf<ReduceScatterAttrs, AllGatherAttrs, RankChunkAttrs>(
      [](const auto& a) { return a.ranks; });
  if (ranks < 1 || ranks > kMaxRanks) return c.error("attribute 'ranks' must be in [1, ", kMaxRanks, "], got ", ranks);
  if (absl::Status s = checkJobSize(c.ctx.communicator, ranks, std::string(c.name).c_str()); !s.ok()) return s;
  return ranks;
}

// Each result i must be the 1-D chunk (chunkLength elements) of whole tensor i, same dtype.
absl::Status expectChunks(const OpCall& c, const std::vector<DType>& dtypes, const std::vector<int64_t>& numels,
                          const std::vector<Shape>& chunkShapes, int64_t ranks) {
  for (size_t i = 0; i < numels.size(); ++i) {
    if (dtypes[i] != dtypes[0])
      return c.error("tensor ", i, " is ", std::string(dtypeName(dtypes[i])), "; every tensor must be ",
                     std::string(dtypeName(dtypes[0])), " (one collective over one element type)");
    if (chunkShapes[i] != Shape{chunkLength(numels[i], ranks)})
      return c.error("chunk ", i, " must have ", chunkLength(numels[i], ranks), " elements (", numels[i], " over ",
                     ranks, " ranks), got ", typeString(dtypes[i], chunkShapes[i]));
  }
  return absl::OkStatus();
}

}  // namespace

// The bucket's whole operands, packed rank-major, reduce-scattered; this rank's block unpacked.
absl::StatusOr<std::vector<Tensor>> evalReduceScatter(const OpCall& c) {
  if (c.numOperands() == 0 || c.results.size() != c.numOperands())
    return c.error("expected as many results as operands (at least one)");
  const std::string_view kind = reduceKindKeyword(c.attrsOf<ReduceScatterAttrs>().kind);
  std::optional<ReduceOp> op = parseReduceOp(kind);
  if (!op || *op == ReduceOp::Max) return c.error("attribute 'kind' must be \"sum\" or \"mean\", got \"", kind, "\"");
  REF_ASSIGN_OR_RETURN(int64_t ranks, jobRanks(c));
  const DType dtype = c.in(0).dtype();
  if (!reduceSupports(*op, dtype)) return c.error(kind, " does not take ", typeString(c.in(0)));
  std::vector<DType> dtypes;
  std::vector<int64_t> numels;
  std::vector<Shape> shapes;
  for (size_t i = 0; i < c.numOperands(); ++i) {
    dtypes.push_back(c.in(i).dtype());
    numels.push_back(c.in(i).numel());
    shapes.push_back(c.results[i].shape);
    if (c.results[i].dtype != c.in(i).dtype()) return c.error("result ", i, " must have operand ", i, "'s dtype");
  }
  if (auto s = expectChunks(c, dtypes, numels, shapes, ranks); !s.ok()) return s;
  const ChunkedBucket bucket = chunkBucket(numels, ranks, dtypeSize(dtype));
  std::vector<uint8_t> blocks(bucket.blockBytes() * static_cast<size_t>(ranks));
  std::vector<const void*> wholes;
  for (size_t i = 0; i < c.numOperands(); ++i) wholes.push_back(c.in(i).data());
  packBlocks(bucket, wholes, blocks.data());
  std::vector<uint8_t> mine(bucket.blockBytes());
  if (Communicator* comm = c.ctx.communicator) {
    if (auto s = comm->reduceScatter(blocks.data(), bucket.blockElements, dtype, *op, mine.data()); !s.ok())
      return c.error(s.message());
  } else {
    std::memcpy(mine.data(), blocks.data(), mine.size());  // one rank: the block is the result
  }
  std::vector<Tensor> out;
  std::vector<void*> chunks;
  for (size_t i = 0; i < c.numOperands(); ++i) out.emplace_back(dtype, c.results[i].shape);
  for (Tensor& t : out) chunks.push_back(t.data());
  unpackBlock(bucket, mine.data(), chunks);
  return out;
}

// This rank's chunks packed into a block, every rank's block gathered, the whole tensors rebuilt.
absl::StatusOr<std::vector<Tensor>> evalAllGather(const OpCall& c) {
  if (c.numOperands() == 0 || c.results.size() != c.numOperands())
    return c.error("expected as many results as operands (at least one)");
  REF_ASSIGN_OR_RETURN(int64_t ranks, jobRanks(c));
  const DType dtype = c.in(0).dtype();
  std::vector<DType> dtypes;
  std::vector<int64_t> numels;
  std::vector<Shape> shapes;
  for (size_t i = 0; i < c.numOperands(); ++i) {
    dtypes.push_back(c.in(i).dtype());
    numels.push_back(numElements(c.results[i].shape));
    shapes.push_back(c.in(i).shape());
    if (c.results[i].dtype != c.in(i).dtype()) return c.error("result ", i, " must have operand ", i, "'s dtype");
  }
  if (auto s = expectChunks(c, dtypes, numels, shapes, ranks); !s.ok()) return s;
  const ChunkedBucket bucket = chunkBucket(numels, ranks, dtypeSize(dtype));
  std::vector<uint8_t> mine(bucket.blockBytes()), all(bucket.blockBytes() * static_cast<size_t>(ranks));
  std::vector<const void*> chunks;
  for (size_t i = 0; i < c.numOperands(); ++i) chunks.push_back(c.in(i).data());
  packBlock(bucket, chunks, mine.data());
  if (Communicator* comm = c.ctx.communicator) {
    if (auto s = comm->allGather(mine.data(), static_cast<int64_t>(mine.size()), all.data()); !s.ok())
      return c.error(s.message());
  } else {
    all = mine;
  }
  std::vector<Tensor> out;
  std::vector<void*> wholes;
  for (size_t i = 0; i < c.numOperands(); ++i) out.emplace_back(dtype, c.results[i].shape);
  for (Tensor& t : out) wholes.push_back(t.data());
  unpackBlocks(bucket, all.data(), wholes);
  return out;
}

absl::StatusOr<Tensor> evalRankChunk(const OpCall& c) {
  if (auto s = expectOperands(c, 1, 1); !s.ok()) return s;
  REF_ASSIGN_OR_RETURN(int64_t ranks, jobRanks(c));
  const Tensor& whole = c.in(0);
  if (c.result().dtype != whole.dtype() || c.result().shape != Shape{chunkLength(whole.numel(), ranks)})
    return c.error("result must be ", typeString(whole.dtype(), Shape{chunkLength(whole.numel(), ranks)}),
                   ", the chunk of ", typeString(whole), " over ", ranks, " ranks");
  const int64_t rank = c.ctx.communicator ? c.ctx.communicator->rank() : 0;
  Tensor out(whole.dtype(), c.result().shape);
  copyRankChunk(whole.data(), whole.numel(), ranks, rank, dtypeSize(whole.dtype()), out.data());
  return out;
}

}  // namespace amp::rt::ref
