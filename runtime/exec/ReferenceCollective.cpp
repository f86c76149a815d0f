// amp.all_reduce on the reference device: the operands, copied into the results, reduced in one
// collective call through the context's communicator (runtime/dist/Communicator.h). Without a
// communicator the job has one rank and every result equals its operand (a mean over one rank
// divides by 1, which is exact).
#include <cstring>

#include "runtime/dist/Communicator.h"
#include "runtime/exec/ReferenceCommon.h"
#include "runtime/exec/ReferenceTrain.h"

namespace amp::rt::ref {

absl::StatusOr<std::vector<Tensor>> evalAllReduce(const OpCall& c) {
  if (c.numOperands() == 0 || c.results.size() != c.numOperands())
    return c.error("expected as many results as operands (at least one), got ", c.numOperands(), " operand(s) and ",
                   c.results.size(), " result(s)");
  REF_ASSIGN_OR_RETURN(std::string kind, c.attrs.getString(c.name, "kind"));
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

}  // namespace amp::rt::ref
