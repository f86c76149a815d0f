// The collectives on the cpu device, one collective call per step through the current call's
// communicator. amp.all_reduce: A single tensor is reduced in its result buffer; a bucket of several is packed
// into the entry's shared scratch, reduced, and unpacked (as DDP copies gradients into its
// bucket buffers). Without a communicator (one rank) the results are copies of the operands.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "runtime/devices/cpu/CpuStep.h"
#include "runtime/dist/Chunks.h"

namespace amp::rt::cpu {
namespace {

class AllReduceStep final : public CpuStep {
 public:
  AllReduceStep(std::vector<int32_t> operands, std::vector<int32_t> results, std::vector<size_t> bytes, DType dtype,
                int64_t count, ReduceOp op, Communicator* const* communicator)
      : operands_(std::move(operands)), results_(std::move(results)), bytes_(std::move(bytes)), dtype_(dtype),
        count_(count), op_(op), communicator_(communicator) {}

  absl::Status run(BufferPtrs ptr) override {
    Communicator* comm = *communicator_;
    const bool packed = comm && operands_.size() > 1;
    size_t offset = 0;
    for (size_t i = 0; i < operands_.size(); ++i) {
      uint8_t* target = packed ? scratch_ + offset : ptr[results_[i]];
      if (target != ptr[operands_[i]]) std::memcpy(target, ptr[operands_[i]], bytes_[i]);
      offset += bytes_[i];
    }
    if (!comm) return absl::OkStatus();
    uint8_t* data = packed ? scratch_ : ptr[results_[0]];
    if (auto s = comm->allReduce(data, count_, dtype_, op_); !s.ok()) return s;
    if (packed) {
      offset = 0;
      for (size_t i = 0; i < results_.size(); ++i) {
        std::memcpy(ptr[results_[i]], scratch_ + offset, bytes_[i]);
        offset += bytes_[i];
      }
    }
    return absl::OkStatus();
  }
  int64_t sharedScratchBytes() const override {
    if (operands_.size() < 2) return 0;
    return static_cast<int64_t>(count_ * static_cast<int64_t>(dtypeSize(dtype_)));
  }
  void bindSharedScratch(uint8_t* scratch) override { scratch_ = scratch; }

 private:
  std::vector<int32_t> operands_, results_;
  std::vector<size_t> bytes_;
  DType dtype_;
  int64_t count_;
  ReduceOp op_;
  Communicator* const* communicator_;
  uint8_t* scratch_ = nullptr;
};

// ZeRO-1 (runtime/dist/Chunks.h). The shared scratch holds the rank-major blocks and this
// rank's block; the job size is checked at every call (the communicator is the call's).
class ChunkStep : public CpuStep {
 public:
  ChunkStep(std::string op, std::vector<int32_t> operands, std::vector<int32_t> results, ChunkedBucket bucket,
            DType dtype, Communicator* const* communicator)
      : op_(std::move(op)), operands_(std::move(operands)), results_(std::move(results)), bucket_(std::move(bucket)),
        dtype_(dtype), communicator_(communicator) {}
  int64_t sharedScratchBytes() const override {
    return static_cast<int64_t>(bucket_.blockBytes()) * (bucket_.ranks + 1);
  }
  void bindSharedScratch(uint8_t* scratch) override { scratch_ = scratch; }

 protected:
  std::vector<const void*> sources(BufferPtrs ptr, const std::vector<int32_t>& ids) const {
    std::vector<const void*> out;
    for (int32_t id : ids) out.push_back(ptr[id]);
    return out;
  }
  std::vector<void*> targets(BufferPtrs ptr, const std::vector<int32_t>& ids) const {
    std::vector<void*> out;
    for (int32_t id : ids) out.push_back(ptr[id]);
    return out;
  }
  uint8_t* blocks() const { return scratch_; }
  uint8_t* mine() const { return scratch_ + bucket_.blockBytes() * bucket_.ranks; }

  std::string op_;
  std::vector<int32_t> operands_, results_;
  ChunkedBucket bucket_;
  DType dtype_;
  Communicator* const* communicator_;
  uint8_t* scratch_ = nullptr;
};

class ReduceScatterStep final : public ChunkStep {
 public:
  ReduceScatterStep(std::string op, std::vector<int32_t> operands, std::vector<int32_t> results,
                    ChunkedBucket bucket, DType dtype, Communicator* const* communicator, ReduceOp reduce)
      : ChunkStep(std::move(op), std::move(operands), std::move(results), std::move(bucket), dtype, communicator),
        reduce_(reduce) {}
  absl::Status run(BufferPtrs ptr) override {
    Communicator* comm = *communicator_;
    if (auto s = checkJobSize(comm, bucket_.ranks, op_.c_str()); !s.ok()) return s;
    packBlocks(bucket_, sources(ptr, operands_), blocks());
    if (comm) {
      if (auto s = comm->reduceScatter(blocks(), bucket_.blockElements, dtype_, reduce_, mine()); !s.ok()) return s;
      unpackBlock(bucket_, mine(), targets(ptr, results_));
    } else {
      unpackBlock(bucket_, blocks(), targets(ptr, results_));
    }
    return absl::OkStatus();
  }

 private:
  ReduceOp reduce_;
};

class AllGatherStep final : public ChunkStep {
 public:
  using ChunkStep::ChunkStep;
  absl::Status run(BufferPtrs ptr) override {
    Communicator* comm = *communicator_;
    if (auto s = checkJobSize(comm, bucket_.ranks, op_.c_str()); !s.ok()) return s;
    packBlock(bucket_, sources(ptr, operands_), mine());
    if (comm) {
      const int64_t bytes = static_cast<int64_t>(bucket_.blockBytes());
      if (auto s = comm->allGather(mine(), bytes, blocks()); !s.ok()) return s;
      unpackBlocks(bucket_, blocks(), targets(ptr, results_));
    } else {
      unpackBlocks(bucket_, mine(), targets(ptr, results_));
    }
    return absl::OkStatus();
  }
};

class RankChunkStep final : public CpuStep {
 public:
  RankChunkStep(int32_t operand, int32_t result, int64_t numel, int64_t ranks, size_t elementSize,
                Communicator* const* communicator)
      : operand_(operand), result_(result), numel_(numel), ranks_(ranks), elementSize_(elementSize),
        communicator_(communicator) {}
  absl::Status run(BufferPtrs ptr) override {
    Communicator* comm = *communicator_;
    if (auto s = checkJobSize(comm, ranks_, "amp.rank_chunk"); !s.ok()) return s;
    copyRankChunk(ptr[operand_], numel_, ranks_, comm ? comm->rank() : 0, elementSize_, ptr[result_]);
    return absl::OkStatus();
  }

 private:
  int32_t operand_, result_;
  int64_t numel_, ranks_;
  size_t elementSize_;
  Communicator* const* communicator_;
};

// The chunked bucket of a ZeRO-1 step whose whole tensors are `wholes` and chunks `chunks`.
absl::StatusOr<ChunkedBucket> chunkedBucketOf(const StepContext& c, const std::vector<const BufferDesc*>& wholes,
                                              const std::vector<const BufferDesc*>& chunks, int64_t ranks) {
  std::vector<int64_t> numels;
  for (size_t i = 0; i < wholes.size(); ++i) {
    if (wholes[i]->dtype != wholes[0]->dtype || chunks[i]->dtype != wholes[i]->dtype)
      return c.error("every tensor and chunk must have tensor 0's element type (one collective over one type)");
    if (chunks[i]->shape != Shape{chunkLength(wholes[i]->numel(), ranks)})
      return c.error(absl::StrCat("chunk ", i, " must have ", chunkLength(wholes[i]->numel(), ranks), " elements (",
                                  wholes[i]->numel(), " over ", ranks, " ranks)"));
    numels.push_back(wholes[i]->numel());
  }
  return chunkBucket(numels, ranks, dtypeSize(wholes[0]->dtype));
}

absl::StatusOr<std::unique_ptr<CpuStep>> makeChunkStep(const StepContext& c) {
  const std::string& op = c.step.op;
  auto ranks = c.step.withAttrsOf<ReduceScatterAttrs, AllGatherAttrs, RankChunkAttrs>([](const auto& a) { return a.ranks; });
  if (!ranks.ok()) return ranks.status();
  // Bounded before any size is computed from it (the scratch holds ranks + 1 blocks).
  if (*ranks < 1 || *ranks > kMaxRanks) return c.error(absl::StrCat("attribute 'ranks' must be in [1, ", kMaxRanks, "]"));
  const size_t n = c.step.operands.size();
  if (n == 0 || c.step.results.size() != n) return c.error("expected as many results as operands (at least one)");
  if (c.code == OpCode::RankChunk) {
    if (n != 1) return c.error("expected one operand");
    const BufferDesc &in = c.operand(0), &out = c.result(0);
    if (out.dtype != in.dtype || out.shape != Shape{chunkLength(in.numel(), *ranks)})
      return c.error("the result must be the operand's chunk over 'ranks' ranks");
    return std::unique_ptr<CpuStep>(new RankChunkStep(c.step.operands[0], c.step.results[0], in.numel(), *ranks,
                                                      dtypeSize(in.dtype), c.communicator));
  }
  std::vector<const BufferDesc*> operands, results;
  for (size_t i = 0; i < n; ++i) {
    operands.push_back(&c.operand(i));
    results.push_back(&c.result(i));
  }
  const bool scatter = c.code == OpCode::ReduceScatter;
  auto bucket = scatter ? chunkedBucketOf(c, operands, results, *ranks) : chunkedBucketOf(c, results, operands, *ranks);
  if (!bucket.ok()) return bucket.status();
  if (!scatter)
    return std::unique_ptr<CpuStep>(new AllGatherStep(op, c.step.operands, c.step.results, std::move(*bucket),
                                                      operands[0]->dtype, c.communicator));
  auto kind = c.step.withAttrsOf<ReduceScatterAttrs>([](const auto& a) { return std::string(reduceKindKeyword(a.kind)); });
  if (!kind.ok()) return kind.status();
  std::optional<ReduceOp> reduce = parseReduceOp(*kind);
  if (!reduce || *reduce == ReduceOp::Max || !reduceSupports(*reduce, operands[0]->dtype))
    return c.error("attribute 'kind' must be \"sum\" or \"mean\" over f32, f16 or bf16 tensors");
  return std::unique_ptr<CpuStep>(new ReduceScatterStep(op, c.step.operands, c.step.results, std::move(*bucket),
                                                        operands[0]->dtype, c.communicator, *reduce));
}

}  // namespace

absl::StatusOr<std::unique_ptr<CpuStep>> makeCollectiveStep(const StepContext& c) {
  if (c.code == OpCode::ReduceScatter || c.code == OpCode::AllGather || c.code == OpCode::RankChunk) return makeChunkStep(c);
  if (c.code != OpCode::AllReduce) return nullptr;
  const size_t n = c.step.operands.size();
  if (n == 0 || c.step.results.size() != n) return c.error("expected as many results as operands (at least one)");
  auto kind = c.step.withAttrsOf<AllReduceAttrs>([](const auto& a) { return std::string(reduceKindKeyword(a.kind)); });
  if (!kind.ok()) return kind.status();
  std::optional<ReduceOp> reduce = parseReduceOp(*kind);
  if (!reduce) return c.error("attribute 'kind' must be \"sum\", \"mean\" or \"max\"");
  const DType dtype = c.operand(0).dtype;
  if (!reduceSupports(*reduce, dtype))
    return c.error(absl::StrCat(*kind, " does not take ", std::string(dtypeName(dtype)), " tensors"));
  std::vector<size_t> bytes;
  int64_t count = 0;
  for (size_t i = 0; i < n; ++i) {
    const BufferDesc &in = c.operand(i), &out = c.result(i);
    if (in.dtype != dtype) return c.error("every operand must have operand 0's element type");
    if (out.dtype != in.dtype || out.shape != in.shape) return c.error("each result must have its operand's type");
    bytes.push_back(static_cast<size_t>(in.byteSize()));
    count += in.numel();
  }
  return std::unique_ptr<CpuStep>(new AllReduceStep(c.step.operands, c.step.results, std::move(bytes), dtype, count,
                                                    *reduce, c.communicator));
}

}  // namespace amp::rt::cpu
