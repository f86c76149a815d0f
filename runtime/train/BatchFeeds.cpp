#include "runtime/train/BatchFeeds.h"

namespace amp::rt {

absl::StatusOr<BatchBindings> findBatchBindings(const Plan& plan) {
  BatchBindings b;
  for (const BufferDesc& d : plan.buffers) {
    if (d.kind == BufferKind::Input) {
      if (b.input) return absl::InvalidArgumentError("training from a dataset needs a model with exactly one input");
      b.input = &d;
    } else if (d.kind == BufferKind::Label) {
      if (b.label) return absl::InvalidArgumentError("training from a dataset needs a model with exactly one label");
      b.label = &d;
    }
  }
  if (!b.input || !b.label || b.input->shape.empty())
    return absl::InvalidArgumentError("training from a dataset needs one input [B, ...] and one label");
  b.batch = b.input->shape[0];
  return b;
}

absl::StatusOr<std::map<std::string, Tensor>> feedBatch(const BatchBindings& bindings, const Dataset& data,
                                                        const std::vector<int64_t>& indices) {
  std::map<std::string, Tensor> feeds;
  auto gather = [&](const Tensor& inMemory, const std::shared_ptr<const NpyRowFile>& streamed, const BufferDesc& b,
                    const char* what) {
    return streamed ? gatherBatch(*streamed, indices, b.dtype, b.shape, data.name + what)
                    : gatherBatch(inMemory, indices, b.dtype, b.shape, data.name + what);
  };
  auto x = gather(data.inputs, data.inputFile, *bindings.input, " input");
  if (!x.ok()) return x.status();
  auto y = gather(data.labels, data.labelFile, *bindings.label, " label");
  if (!y.ok()) return y.status();
  feeds[bindings.input->name] = std::move(*x);
  feeds[bindings.label->name] = std::move(*y);
  return feeds;
}

}  // namespace amp::rt
