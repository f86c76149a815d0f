// amp.all_reduce on the cpu device: one collective call per step through the current call's
// communicator. A single tensor is reduced in its result buffer; a bucket of several is packed
// into the entry's shared scratch, reduced, and unpacked (as DDP copies gradients into its
// bucket buffers). Without a communicator (one rank) the results are copies of the operands.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "runtime/devices/cpu/CpuStep.h"

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

}  // namespace

absl::StatusOr<std::unique_ptr<CpuStep>> makeCollectiveStep(const StepContext& c) {
  const std::string& op = c.step.op;
  if (op != "amp.all_reduce") return nullptr;
  const size_t n = c.step.operands.size();
  if (n == 0 || c.step.results.size() != n) return c.error("expected as many results as operands (at least one)");
  auto kind = c.step.attrs.getString(op, "kind");
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
