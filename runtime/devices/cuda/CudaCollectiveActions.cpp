// The collectives of a data-parallel step (docs/data-parallel.md) on the cuda device: each
// becomes copies on the device and one call of the job's GpuCollectives, all captured into the
// step's graph, so a replayed step communicates with no host synchronisation. The layouts are the
// cpu device's (runtime/devices/cpu/steps/CpuCollective.cpp, runtime/dist/Chunks.h): a bucket of several
// gradients is packed into one scratch buffer, reduced in place and unpacked, as DDP's bucket
// buffers are; ZeRO-1's reduce-scatter sends rank-major blocks, zero-padded, and its all-gather
// receives them.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "runtime/devices/cuda/CudaActions.h"
#include "runtime/dist/Chunks.h"

namespace amp::rt::cuda {
namespace {

class AllReduceCall final : public CollectiveCall {
 public:
  AllReduceCall(DevicePtr send, DevicePtr recv, int64_t count, DType dtype, ReduceOp op)
      : send_(send), recv_(recv), count_(count), dtype_(dtype), op_(op) {}
  absl::Status enqueue(GpuApi&, GpuCollectives& c) const override { return c.allReduce(send_, recv_, count_, dtype_, op_); }

 private:
  DevicePtr send_, recv_;
  int64_t count_;
  DType dtype_;
  ReduceOp op_;
};

// The step was compiled for `ranks` ranks (attribute `ranks`); the job must have as many.
absl::Status checkRanks(const GpuCollectives& c, int64_t ranks, const std::string& op) {
  if (ranks == c.worldSize()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      op, ": the step was compiled for ", ranks, " rank(s) (ampc --shard-optimizer --world-size=", ranks,
      "), but this job has ", c.worldSize(), "; run it with mpirun -np ", ranks, " or recompile"));
}

class ReduceScatterCall final : public CollectiveCall {
 public:
  ReduceScatterCall(std::string op, int64_t ranks, DevicePtr blocks, DevicePtr mine, int64_t blockCount, DType dtype,
                    ReduceOp reduce)
      : op_(std::move(op)), ranks_(ranks), blocks_(blocks), mine_(mine), blockCount_(blockCount), dtype_(dtype),
        reduce_(reduce) {}
  absl::Status enqueue(GpuApi&, GpuCollectives& c) const override {
    if (auto s = checkRanks(c, ranks_, op_); !s.ok()) return s;
    return c.reduceScatter(blocks_, mine_, blockCount_, dtype_, reduce_);
  }

 private:
  std::string op_;
  int64_t ranks_;
  DevicePtr blocks_, mine_;
  int64_t blockCount_;
  DType dtype_;
  ReduceOp reduce_;
};

class AllGatherCall final : public CollectiveCall {
 public:
  AllGatherCall(std::string op, int64_t ranks, DevicePtr mine, DevicePtr blocks, int64_t blockCount, DType dtype)
      : op_(std::move(op)), ranks_(ranks), mine_(mine), blocks_(blocks), blockCount_(blockCount), dtype_(dtype) {}
  absl::Status enqueue(GpuApi&, GpuCollectives& c) const override {
    if (auto s = checkRanks(c, ranks_, op_); !s.ok()) return s;
    return c.allGather(mine_, blocks_, blockCount_, dtype_);
  }

 private:
  std::string op_;
  int64_t ranks_;
  DevicePtr mine_, blocks_;
  int64_t blockCount_;
  DType dtype_;
};

// This rank's chunk of a whole tensor: which chunk is known only once the job is, when the graph
// is captured. The padding past the tensor's end is copied from `zeros` (a copy, not a fill: a
// 16-bit tail may start inside a word).
class RankChunkCall final : public CollectiveCall {
 public:
  RankChunkCall(int64_t ranks, DevicePtr whole, DevicePtr chunk, DevicePtr zeros, int64_t numel, int64_t elementSize)
      : ranks_(ranks), whole_(whole), chunk_(chunk), zeros_(zeros), numel_(numel), elementSize_(elementSize) {}
  absl::Status enqueue(GpuApi& api, GpuCollectives& c) const override {
    if (auto s = checkRanks(c, ranks_, "amp.rank_chunk"); !s.ok()) return s;
    const int64_t length = chunkLength(numel_, ranks_);
    const int64_t first = std::min(numel_, length * c.rank());
    const int64_t real = std::min(length, numel_ - first);
    if (real > 0)
      if (auto s = api.copyOnDevice(chunk_, whole_ + static_cast<DevicePtr>(first * elementSize_), real * elementSize_); !s.ok())
        return s;
    if (real < length)
      return api.copyOnDevice(chunk_ + static_cast<DevicePtr>(real * elementSize_), zeros_, (length - real) * elementSize_);
    return absl::OkStatus();
  }
  // The most padding any rank's chunk has: the last rank's.
  static int64_t maxPadding(int64_t numel, int64_t ranks) {
    const int64_t length = chunkLength(numel, ranks);
    return std::min(length, length * ranks - numel);
  }

 private:
  int64_t ranks_;
  DevicePtr whole_, chunk_, zeros_;
  int64_t numel_, elementSize_;
};

}  // namespace

absl::Status ActionBuilder::collective(size_t s) {
  switch (*entry_.steps[s].code) {
    case OpCode::AllReduce: return allReduce(s);
    case OpCode::RankChunk: return rankChunk(s);
    default: return chunkCollective(s);
  }
}

void ActionBuilder::pushCollective(size_t s, std::shared_ptr<const CollectiveCall> call, std::string what) {
  Action a;
  a.kind = Action::Kind::Collective;
  a.collective = std::move(call);
  a.collectives = collectives_;
  a.what = absl::StrCat("step ", s, " ", entry_.steps[s].op, ": ", what);
  actions_.push_back(std::move(a));
}

absl::Status ActionBuilder::allReduce(size_t s) {
  const PlanStep& step = entry_.steps[s];
  const size_t n = step.operands.size();
  if (n == 0 || step.results.size() != n) return absl::InvalidArgumentError("expected as many results as operands (at least one)");
  auto kind = step.withAttrsOf<AllReduceAttrs>([](const auto& a) { return std::string(reduceKindKeyword(a.kind)); });
  if (!kind.ok()) return kind.status();
  std::optional<ReduceOp> reduce = parseReduceOp(*kind);
  if (!reduce) return absl::InvalidArgumentError("attribute 'kind' must be \"sum\", \"mean\" or \"max\"");
  const DType dtype = plan_.buffers[step.operands[0]].dtype;
  if (!reduceSupports(*reduce, dtype))
    return absl::InvalidArgumentError(absl::StrCat(*kind, " does not take ", std::string(dtypeName(dtype)), " tensors"));
  int64_t count = 0;
  for (size_t i = 0; i < n; ++i) {
    const BufferDesc &in = plan_.buffers[step.operands[i]], &out = plan_.buffers[step.results[i]];
    if (in.dtype != dtype) return absl::InvalidArgumentError("every operand must have operand 0's element type");
    if (out.dtype != in.dtype || out.shape != in.shape)
      return absl::InvalidArgumentError("each result must have its operand's type");
    count += in.numel();
  }
  const std::string what =
      absl::StrCat("all_reduce ", *kind, " ", count, " x ", std::string(dtypeName(dtype)), n > 1 ? absl::StrCat(" (bucket of ", n, ")") : "");
  if (n == 1) {
    pushCollective(s, std::make_shared<AllReduceCall>(ptr_[step.operands[0]], ptr_[step.results[0]], count, dtype, *reduce), what);
    return absl::OkStatus();
  }
  // A bucket: one call over one contiguous buffer.
  const int64_t size = static_cast<int64_t>(dtypeSize(dtype));
  auto bucket = scratch(count * size);
  if (!bucket.ok()) return bucket.status();
  int64_t offset = 0;
  for (size_t i = 0; i < n; ++i) {
    const int64_t bytes = plan_.buffers[step.operands[i]].byteSize();
    copy(*bucket + static_cast<DevicePtr>(offset), ptr_[step.operands[i]], bytes,
         absl::StrCat("bucket <- ", plan_.buffers[step.operands[i]].name));
    offset += bytes;
  }
  pushCollective(s, std::make_shared<AllReduceCall>(*bucket, *bucket, count, dtype, *reduce), what);
  offset = 0;
  for (size_t i = 0; i < n; ++i) {
    const int64_t bytes = plan_.buffers[step.results[i]].byteSize();
    copy(ptr_[step.results[i]], *bucket + static_cast<DevicePtr>(offset), bytes,
         absl::StrCat(plan_.buffers[step.results[i]].name, " <- bucket"));
    offset += bytes;
  }
  return absl::OkStatus();
}

// ZeRO-1's reduce-scatter and all-gather over the bucket's rank-major blocks (Chunks.h): the copies
// between the whole tensors and the blocks depend only on the number of ranks, so they are
// decided here; the scratch holds the ranks' blocks and then this rank's block.
absl::Status ActionBuilder::chunkCollective(size_t s) {
  const PlanStep& step = entry_.steps[s];
  const bool scatter = step.code == OpCode::ReduceScatter;
  auto ranks = step.withAttrsOf<ReduceScatterAttrs, AllGatherAttrs, RankChunkAttrs>([](const auto& a) { return a.ranks; });
  if (!ranks.ok()) return ranks.status();
  if (*ranks < 1 || *ranks > kMaxRanks) return absl::InvalidArgumentError(absl::StrCat("attribute 'ranks' must be in [1, ", kMaxRanks, "]"));
  const size_t n = step.operands.size();
  if (n == 0 || step.results.size() != n) return absl::InvalidArgumentError("expected as many results as operands (at least one)");
  const std::vector<int32_t>& wholes = scatter ? step.operands : step.results;
  const std::vector<int32_t>& chunks = scatter ? step.results : step.operands;
  const DType dtype = plan_.buffers[wholes[0]].dtype;
  std::vector<int64_t> numels;
  for (size_t i = 0; i < n; ++i) {
    const BufferDesc &whole = plan_.buffers[wholes[i]], &chunk = plan_.buffers[chunks[i]];
    if (whole.dtype != dtype || chunk.dtype != dtype)
      return absl::InvalidArgumentError("every tensor and chunk must have tensor 0's element type (one collective over one type)");
    if (chunk.shape != Shape{chunkLength(whole.numel(), *ranks)})
      return absl::InvalidArgumentError(absl::StrCat("chunk ", i, " must have ", chunkLength(whole.numel(), *ranks),
                                                     " elements (", whole.numel(), " over ", *ranks, " ranks)"));
    numels.push_back(whole.numel());
  }
  std::optional<ReduceOp> reduce;
  if (scatter) {
    auto kind = step.withAttrsOf<ReduceScatterAttrs>([](const auto& a) { return std::string(reduceKindKeyword(a.kind)); });
    if (!kind.ok()) return kind.status();
    reduce = parseReduceOp(*kind);
    if (!reduce || *reduce == ReduceOp::Max || !reduceSupports(*reduce, dtype))
      return absl::InvalidArgumentError("attribute 'kind' must be \"sum\" or \"mean\" over f32, f16 or bf16 tensors");
  }
  const int64_t size = static_cast<int64_t>(dtypeSize(dtype));
  const ChunkedBucket bucket = chunkBucket(numels, *ranks, static_cast<size_t>(size));
  const int64_t blockBytes = static_cast<int64_t>(bucket.blockBytes());
  // Rounded to words: the padding is zeroed with one fill, once (no copy ever writes it).
  const int64_t scratchBytes = (blockBytes * (*ranks + 1) + 3) / 4 * 4;
  auto area = scratch(scratchBytes);
  if (!area.ok()) return area.status();
  if (scatter && scratchBytes > 0)
    if (auto st = api_.fill32(*area, 0, scratchBytes / 4); !st.ok()) return st;
  const DevicePtr blocks = *area, mine = *area + static_cast<DevicePtr>(blockBytes * *ranks);
  // The real (unpadded) part of chunk r of tensor i, and where it sits in the whole tensor and in
  // block r.
  auto forEachPiece = [&](auto visit) {
    for (int64_t r = 0; r < *ranks; ++r) {
      int64_t offset = 0;
      for (size_t i = 0; i < n; ++i) {
        const int64_t first = std::min(numels[i], bucket.chunk[i] * r);
        const int64_t real = std::min(bucket.chunk[i], numels[i] - first);
        if (real > 0) visit(r, i, first * size, offset * size, real * size);
        offset += bucket.chunk[i];
      }
    }
  };
  const std::string& op = step.op;
  if (scatter) {
    forEachPiece([&](int64_t r, size_t i, int64_t inWhole, int64_t inBlock, int64_t bytes) {
      copy(blocks + static_cast<DevicePtr>(r * blockBytes + inBlock), ptr_[wholes[i]] + static_cast<DevicePtr>(inWhole), bytes,
           absl::StrCat("block ", r, " <- ", plan_.buffers[wholes[i]].name));
    });
    pushCollective(s, std::make_shared<ReduceScatterCall>(op, *ranks, blocks, mine, bucket.blockElements, dtype, *reduce),
                   absl::StrCat("reduce_scatter ", reduceOpName(*reduce), " ", bucket.blockElements, " x ",
                                std::string(dtypeName(dtype)), " per rank"));
    int64_t offset = 0;
    for (size_t i = 0; i < n; ++i) {
      copy(ptr_[chunks[i]], mine + static_cast<DevicePtr>(offset * size), bucket.chunk[i] * size,
           absl::StrCat(plan_.buffers[chunks[i]].name, " <- this rank's block"));
      offset += bucket.chunk[i];
    }
    return absl::OkStatus();
  }
  int64_t offset = 0;
  for (size_t i = 0; i < n; ++i) {
    copy(mine + static_cast<DevicePtr>(offset * size), ptr_[chunks[i]], bucket.chunk[i] * size,
         absl::StrCat("this rank's block <- ", plan_.buffers[chunks[i]].name));
    offset += bucket.chunk[i];
  }
  pushCollective(s, std::make_shared<AllGatherCall>(op, *ranks, mine, blocks, bucket.blockElements, dtype),
                 absl::StrCat("all_gather ", bucket.blockElements, " x ", std::string(dtypeName(dtype)), " per rank"));
  forEachPiece([&](int64_t r, size_t i, int64_t inWhole, int64_t inBlock, int64_t bytes) {
    copy(ptr_[wholes[i]] + static_cast<DevicePtr>(inWhole), blocks + static_cast<DevicePtr>(r * blockBytes + inBlock), bytes,
         absl::StrCat(plan_.buffers[wholes[i]].name, " <- block ", r));
  });
  return absl::OkStatus();
}

absl::Status ActionBuilder::rankChunk(size_t s) {
  const PlanStep& step = entry_.steps[s];
  auto ranks = step.withAttrsOf<ReduceScatterAttrs, AllGatherAttrs, RankChunkAttrs>([](const auto& a) { return a.ranks; });
  if (!ranks.ok()) return ranks.status();
  if (*ranks < 1 || *ranks > kMaxRanks) return absl::InvalidArgumentError(absl::StrCat("attribute 'ranks' must be in [1, ", kMaxRanks, "]"));
  if (step.operands.size() != 1 || step.results.size() != 1) return absl::InvalidArgumentError("expected one operand and one result");
  const BufferDesc &in = plan_.buffers[step.operands[0]], &out = plan_.buffers[step.results[0]];
  if (out.dtype != in.dtype || out.shape != Shape{chunkLength(in.numel(), *ranks)})
    return absl::InvalidArgumentError("the result must be the operand's chunk over 'ranks' ranks");
  const int64_t size = static_cast<int64_t>(dtypeSize(in.dtype));
  DevicePtr zeros = 0;
  if (const int64_t padding = RankChunkCall::maxPadding(in.numel(), *ranks); padding > 0) {
    const int64_t bytes = (padding * size + 3) / 4 * 4;
    auto area = scratch(bytes);
    if (!area.ok()) return area.status();
    if (auto st = api_.fill32(*area, 0, bytes / 4); !st.ok()) return st;  // once: nothing writes it after
    zeros = *area;
  }
  pushCollective(s, std::make_shared<RankChunkCall>(*ranks, ptr_[step.operands[0]], ptr_[step.results[0]], zeros, in.numel(), size),
                 absl::StrCat("this rank's chunk of ", in.name));
  return absl::OkStatus();
}

}  // namespace amp::rt::cuda
