// The communicator's common part: op names, the single-process job, and the choice between a
// single process and MPI.
#include "runtime/dist/Communicator.h"

#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "runtime/dist/ReduceRules.h"
#ifdef AMP_HAVE_MPI
#include "runtime/dist/MpiCommunicator.h"
#endif

namespace amp::rt {

const char* reduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return "sum";
    case ReduceOp::Mean:
      return "mean";
    case ReduceOp::Max:
      return "max";
  }
  return "?";
}

std::optional<ReduceOp> parseReduceOp(std::string_view name) {
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max})
    if (name == reduceOpName(op)) return op;
  return std::nullopt;
}

namespace {

// World of one: every collective is the identity, but arguments are checked and calls counted
// exactly as on a real job, so a plan that is wrong for MPI is already wrong here.
class SingleProcessCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int worldSize() const override { return 1; }
  std::string description() const override { return "single process"; }

  absl::Status allReduce(void* data, int64_t count, DType dtype, ReduceOp op) override {
    ++allReduceCalls_;
    return checkAllReduceArgs(data, count, dtype, op);
  }

  absl::Status reduceScatter(void* data, int64_t chunkCount, DType dtype, ReduceOp op, void* out) override {
    ++reduceScatterCalls_;
    if (absl::Status s = checkReduceScatterArgs(data, chunkCount, dtype, op, out); !s.ok()) return s;
    // A mean over one rank divides by 1, which is exact: the block is the result.
    if (chunkCount > 0 && out != data)
      std::memmove(out, data, static_cast<size_t>(chunkCount) * dtypeSize(dtype));
    return absl::OkStatus();
  }

  absl::Status allGather(const void* data, int64_t bytes, void* out) override {
    ++allGatherCalls_;
    if (bytes < 0) return absl::InvalidArgumentError(absl::StrCat("allGather: negative size ", bytes));
    if (bytes == 0) return absl::OkStatus();
    if (data == nullptr || out == nullptr)
      return absl::InvalidArgumentError("allGather: null buffer");
    if (out != data) std::memmove(out, data, static_cast<size_t>(bytes));
    return absl::OkStatus();
  }

  absl::Status broadcast(void* data, int64_t bytes, int root) override {
    ++broadcastCalls_;
    return checkBroadcastArgs(data, bytes, root, 1);  // the root's bytes are already here
  }

  [[noreturn]] void abortJob(int exitCode) override { std::_Exit(exitCode); }
};

}  // namespace

std::unique_ptr<Communicator> makeSingleProcessCommunicator() {
  return std::make_unique<SingleProcessCommunicator>();
}

bool launchedByMpi() {
  // Open MPI's mpirun, PMIx launchers (Open MPI 5, srun --mpi=pmix) and PMI-1/2 launchers
  // (MPICH's Hydra, srun --mpi=pmi2). SLURM_PROCID alone is not enough: srun also starts
  // plain, non-MPI tasks.
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    if (std::getenv(var) != nullptr) return true;
  return false;
}

bool mpiAvailable() {
#ifdef AMP_HAVE_MPI
  return true;
#else
  return false;
#endif
}

absl::StatusOr<std::unique_ptr<Communicator>> makeCommunicator(double timeoutSeconds) {
  if (!(timeoutSeconds > 0))
    return absl::InvalidArgumentError(
        absl::StrCat("communicator timeout must be > 0 seconds, got ", timeoutSeconds));
  if (!launchedByMpi()) return makeSingleProcessCommunicator();
#ifdef AMP_HAVE_MPI
  return makeMpiCommunicator(timeoutSeconds);
#else
  return absl::FailedPreconditionError(
      "started by mpirun, but amp-run was built without MPI: install libopenmpi-dev "
      "(scripts/setup.sh) and rebuild");
#endif
}

}  // namespace amp::rt
