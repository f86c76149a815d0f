// NCCL's bootstrap and calls without a GPU: the library's entry points are replaced by fakes that
// record what the cuda device asks of them (the real libnccl.so.2 is loaded too, where present,
// and its ncclGetUniqueId used: it needs no GPU). Everything up to ncclCommInitRank is checked
// here; the calls themselves run only on a GPU (NcclGpuTest.cpp).
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/devices/cuda/DryRunApi.h"
#include "runtime/devices/cuda/NcclCollectives.h"

namespace amp::rt::cuda {
namespace {

// What the fake library saw.
struct Seen {
  int uniqueIds = 0, inits = 0, destroys = 0;
  int initRanks = -1, initRank = -1;
  NcclApi::UniqueId initId{};
  std::vector<std::string> calls;
  int failUniqueId = 0;
};
Seen seen;

NcclApi fakeNccl() {
  seen = Seen{};
  NcclApi f;
  f.library = "fake";
  f.getVersion = [](int* v) { *v = 22809; return 0; };
  f.getUniqueId = [](NcclApi::UniqueId* id) {
    ++seen.uniqueIds;
    if (seen.failUniqueId) return seen.failUniqueId;
    std::memset(id->internal, 0, sizeof id->internal);
    std::strcpy(id->internal, "rank 0's id");
    return 0;
  };
  f.commInitRank = [](NcclApi::Comm* comm, int ranks, NcclApi::UniqueId id, int rank) {
    ++seen.inits;
    seen.initRanks = ranks;
    seen.initRank = rank;
    seen.initId = id;
    *comm = &seen;
    return 0;
  };
  f.commDestroy = [](NcclApi::Comm) { ++seen.destroys; return 0; };
  f.allReduce = [](const void* s, void* r, size_t n, int t, int op, NcclApi::Comm, void*) {
    seen.calls.push_back("allReduce " + std::to_string(n) + " type " + std::to_string(t) + " op " + std::to_string(op) +
                         (s == r ? " in place" : ""));
    return 0;
  };
  f.reduceScatter = [](const void*, void*, size_t n, int t, int op, NcclApi::Comm, void*) {
    seen.calls.push_back("reduceScatter " + std::to_string(n) + " type " + std::to_string(t) + " op " + std::to_string(op));
    return 0;
  };
  f.allGather = [](const void*, void*, size_t n, int t, NcclApi::Comm, void*) {
    seen.calls.push_back("allGather " + std::to_string(n) + " type " + std::to_string(t));
    return 0;
  };
  f.getErrorString = [](int r) { return r == 3 ? "internal error (fake)" : "other error (fake)"; };
  return f;
}

// A rank other than 0 of a job: its broadcast delivers what rank 0 would have sent.
class OtherRank final : public Communicator {
 public:
  OtherRank(int rank, int worldSize, std::string rootBytes) : rank_(rank), world_(worldSize), root_(std::move(rootBytes)) {}
  int rank() const override { return rank_; }
  int worldSize() const override { return world_; }
  std::string description() const override { return "fake job"; }
  absl::Status allReduce(void*, int64_t, DType, ReduceOp) override { return absl::UnimplementedError("fake"); }
  absl::Status reduceScatter(void*, int64_t, DType, ReduceOp, void*) override { return absl::UnimplementedError("fake"); }
  absl::Status allGather(const void*, int64_t, void*) override { return absl::UnimplementedError("fake"); }
  absl::Status broadcast(void* data, int64_t bytes, int root) override {
    ++broadcastCalls_;
    if (root != 0 || bytes < 0) return absl::InvalidArgumentError("not rank 0's id");
    std::memset(data, 0, static_cast<size_t>(bytes));
    std::memcpy(data, root_.data(), std::min(root_.size(), static_cast<size_t>(bytes)));
    return absl::OkStatus();
  }
  [[noreturn]] void abortJob(int code) override { std::_Exit(code); }

 private:
  int rank_, world_;
  std::string root_;
};

TEST(NcclBootstrap, RankZeroMakesTheIdAndEveryRankInitialisesWithIt) {
  NcclApi nccl = fakeNccl();
  auto job = makeSingleProcessCommunicator();
  auto comm = bootstrapNcclComm(nccl, *job);
  ASSERT_TRUE(comm.ok()) << comm.status();
  EXPECT_EQ(seen.uniqueIds, 1);
  EXPECT_EQ(job->broadcastCalls(), 1);  // the id goes through the job's communicator
  EXPECT_EQ(seen.inits, 1);
  EXPECT_EQ(seen.initRanks, 1);
  EXPECT_EQ(seen.initRank, 0);
  EXPECT_STREQ(seen.initId.internal, "rank 0's id");
}

TEST(NcclBootstrap, AnotherRankTakesRankZerosIdFromTheBroadcast) {
  NcclApi nccl = fakeNccl();
  OtherRank job(3, 4, "the id rank 0 broadcast");
  NcclApi::UniqueId id;
  auto comm = bootstrapNcclComm(nccl, job, &id);
  ASSERT_TRUE(comm.ok()) << comm.status();
  EXPECT_EQ(seen.uniqueIds, 0);  // only rank 0 makes one
  EXPECT_EQ(job.broadcastCalls(), 1);
  EXPECT_EQ(seen.initRanks, 4);
  EXPECT_EQ(seen.initRank, 3);
  EXPECT_STREQ(seen.initId.internal, "the id rank 0 broadcast");
  EXPECT_STREQ(id.internal, "the id rank 0 broadcast");
}

TEST(NcclBootstrap, AFailureNamesTheCallAndNcclsReason) {
  NcclApi nccl = fakeNccl();
  seen.failUniqueId = 3;
  auto job = makeSingleProcessCommunicator();
  auto comm = bootstrapNcclComm(nccl, *job);
  ASSERT_FALSE(comm.ok());
  EXPECT_NE(comm.status().message().find("ncclGetUniqueId failed: internal error (fake)"), std::string::npos)
      << comm.status();
  EXPECT_EQ(seen.inits, 0);
}

TEST(NcclBootstrap, CollectivesGoToNcclWithItsTypesAndOperations) {
  NcclApi nccl = fakeNccl();
  DryRunApi api;
  auto job = makeSingleProcessCommunicator();
  {
    auto c = makeNcclCollectives(api, *job, nccl);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ((*c)->description(), "nccl 2.28.9 (fake): rank 0 of 1");
    auto a = api.allocate(4096);
    ASSERT_TRUE(a.ok());
    EXPECT_TRUE((*c)->allReduce(*a, *a, 100, DType::F32, ReduceOp::Mean).ok());
    EXPECT_TRUE((*c)->allReduce(*a, *a + 512, 10, DType::BF16, ReduceOp::Sum).ok());
    EXPECT_TRUE((*c)->allReduce(*a, *a, 1, DType::I64, ReduceOp::Max).ok());
    EXPECT_TRUE((*c)->reduceScatter(*a, *a + 2048, 6, DType::F16, ReduceOp::Mean).ok());
    EXPECT_TRUE((*c)->allGather(*a + 2048, *a, 6, DType::F32).ok());
    // Refused before NCCL sees them: a max over bf16, a max reduce-scatter, a negative count.
    EXPECT_FALSE((*c)->allReduce(*a, *a, 4, DType::BF16, ReduceOp::Max).ok());
    EXPECT_FALSE((*c)->reduceScatter(*a, *a, 4, DType::F32, ReduceOp::Max).ok());
    EXPECT_FALSE((*c)->allGather(*a, *a, -1, DType::F32).ok());
    EXPECT_EQ(seen.calls, (std::vector<std::string>{"allReduce 100 type 7 op 4 in place", "allReduce 10 type 9 op 0",
                                                     "allReduce 1 type 4 op 2 in place", "reduceScatter 6 type 6 op 4",
                                                     "allGather 6 type 7"}));
    api.release(*a);
  }
  EXPECT_EQ(seen.destroys, 1);
}

TEST(NcclBootstrap, TheRealLibraryLoadsAndMakesAnIdWithoutAGpu) {
  auto nccl = loadNccl();
  if (absl::IsUnavailable(nccl.status())) GTEST_SKIP() << nccl.status();
  ASSERT_TRUE(nccl.ok()) << nccl.status();
  int version = 0;
  ASSERT_EQ((*nccl)->getVersion(&version), 0);
  EXPECT_GE(version, 21000);
  // The real id, through the real bootstrap; only the communicator's creation (which needs a GPU)
  // is a fake.
  NcclApi partial = **nccl;
  NcclApi fake = fakeNccl();
  partial.commInitRank = fake.commInitRank;
  auto job = makeSingleProcessCommunicator();
  NcclApi::UniqueId id;
  auto comm = bootstrapNcclComm(partial, *job, &id);
  ASSERT_TRUE(comm.ok()) << comm.status();
  EXPECT_EQ(seen.inits, 1);
  EXPECT_EQ(std::memcmp(&seen.initId, &id, sizeof id), 0);
  const std::vector<char> zeros(sizeof id, 0);
  EXPECT_NE(std::memcmp(&id, zeros.data(), sizeof id), 0);
}

TEST(NcclBootstrap, TheDryRunHasNoStreamForNccl) {
  DryRunApi api;
  OtherRank job(1, 2, "id");
  auto c = defaultCollectives(api, &job);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("needs the GPU's stream for NCCL"), std::string::npos) << c.status();
  // One rank needs no library.
  auto alone = defaultCollectives(api, nullptr);
  ASSERT_TRUE(alone.ok()) << alone.status();
  EXPECT_EQ((*alone)->worldSize(), 1);
}

TEST(NcclBootstrap, TheSingleProcessBroadcastChecksItsArguments) {
  auto job = makeSingleProcessCommunicator();
  char id[128] = "kept";
  EXPECT_TRUE(job->broadcast(id, sizeof id, 0).ok());
  EXPECT_STREQ(id, "kept");
  EXPECT_FALSE(job->broadcast(id, sizeof id, 1).ok());
  EXPECT_FALSE(job->broadcast(nullptr, 8, 0).ok());
  EXPECT_FALSE(job->broadcast(id, -1, 0).ok());
}

}  // namespace
}  // namespace amp::rt::cuda
