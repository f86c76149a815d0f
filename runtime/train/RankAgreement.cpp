#include "runtime/train/RankAgreement.h"

#include "absl/strings/str_cat.h"

namespace amp::rt {

absl::Status checkReplicasAgree(const std::string& stateHash, Communicator& comm, int64_t step) {
  const size_t n = stateHash.size();
  std::string all(n * static_cast<size_t>(comm.worldSize()), '\0');
  if (auto s = comm.allGather(stateHash.data(), static_cast<int64_t>(n), all.data()); !s.ok()) return s;
  for (int r = 0; r < comm.worldSize(); ++r) {
    std::string theirs = all.substr(static_cast<size_t>(r) * n, n);
    if (theirs != all.substr(0, n))
      return absl::DataLossError(absl::StrCat(
          "step ", step, ": the params and state of rank ", r, " (sha256 ", theirs.substr(0, 16),
          "...) differ from rank 0's (", all.substr(0, 16), "...): the data-parallel replicas diverged"));
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> agreeToStop(Communicator* comm, bool local) {
  if (!comm || comm->worldSize() == 1) return local;
  int32_t flag = local ? 1 : 0;
  if (auto s = comm->allReduce(&flag, 1, DType::I32, ReduceOp::Max); !s.ok()) return s;
  return flag != 0;
}

}  // namespace amp::rt
