#include "runtime/train/ShardedState.h"

#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "runtime/dist/Chunks.h"

namespace amp::rt {
namespace {

// The world size a sharded plan was compiled for; validatePlan has checked the metadata.
int64_t shardRanks(const Plan& plan) {
  auto config = plan.trainingConfig();
  return config.ok() && config->shardWorldSize > 0 ? config->shardWorldSize : 1;
}

}  // namespace

absl::StatusOr<WholeState> wholeState(const Session& session, Communicator* comm) {
  const Plan& plan = session.plan();
  const int64_t ranks = shardRanks(plan);
  if (auto s = session.syncPersistent(); !s.ok()) return s;
  WholeState out;
  for (const NamedTensorRef& t : session.persistent()) {
    std::optional<int32_t> id = plan.findBuffer(t.name);
    const BufferDesc* desc = id ? &plan.buffers[*id] : nullptr;
    if (!desc || desc->shardOf.empty()) {
      out.tensors.push_back(t);
      continue;
    }
    if (auto s = checkJobSize(comm, ranks, "checkpoint of sharded optimizer state"); !s.ok()) return s;
    const BufferDesc& param = plan.buffers[*plan.findBuffer(desc->shardOf)];
    const ChunkedBucket bucket = chunkBucket({param.numel()}, ranks, dtypeSize(desc->dtype));
    std::vector<uint8_t> all(bucket.blockBytes() * static_cast<size_t>(ranks));
    if (comm) {
      if (auto s = comm->allGather(t.tensor->data(), static_cast<int64_t>(bucket.blockBytes()), all.data()); !s.ok())
        return s;
    } else {
      std::memcpy(all.data(), t.tensor->data(), bucket.blockBytes());
    }
    auto whole = std::make_unique<Tensor>(desc->dtype, param.shape);
    unpackBlocks(bucket, all.data(), {whole->data()});
    out.tensors.push_back({t.name, whole.get()});
    out.gathered.push_back(std::move(whole));
  }
  return out;
}

absl::Status takeRankChunks(const Plan& plan, int rank, std::vector<NamedTensor>& tensors) {
  const int64_t ranks = shardRanks(plan);
  for (NamedTensor& t : tensors) {
    std::optional<int32_t> id = plan.findBuffer(t.name);
    if (!id || plan.buffers[*id].shardOf.empty()) continue;
    const BufferDesc& desc = plan.buffers[*id];
    const BufferDesc& param = plan.buffers[*plan.findBuffer(desc.shardOf)];
    if (t.tensor.dtype() != desc.dtype || t.tensor.shape() != param.shape)
      return absl::InvalidArgumentError(absl::StrCat(
          "checkpoint has '", t.name, "' as ", std::string(dtypeName(t.tensor.dtype())), " ",
          shapeToString(t.tensor.shape()), ", the model needs it whole as ", std::string(dtypeName(desc.dtype)), " ",
          shapeToString(param.shape), " (the shape of '", desc.shardOf, "')"));
    Tensor chunk(desc.dtype, desc.shape);
    copyRankChunk(t.tensor.data(), t.tensor.numel(), ranks, rank, dtypeSize(desc.dtype), chunk.data());
    t.tensor = std::move(chunk);
  }
  return absl::OkStatus();
}

}  // namespace amp::rt
