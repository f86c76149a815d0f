// The single-process communicator and the factory: identity collectives, call counting, the
// dtype/op contract, and launcher detection.
#include "runtime/dist/Communicator.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/numerics/Convert.h"

namespace amp::rt {
namespace {

// Sets or clears the launcher variables for one test and puts them back afterwards.
class LauncherEnv {
 public:
  LauncherEnv() {
    for (const char* var : kVars) {
      const char* value = std::getenv(var);
      saved_[var] = value ? std::optional<std::string>(value) : std::nullopt;
      ::unsetenv(var);
    }
  }
  ~LauncherEnv() {
    for (const auto& [var, value] : saved_) {
      if (value) ::setenv(var.c_str(), value->c_str(), 1);
      else ::unsetenv(var.c_str());
    }
  }
  static constexpr const char* kVars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"};

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

std::vector<uint8_t> bytesOf(const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  return std::vector<uint8_t>(p, p + n);
}

// Bit patterns that an arithmetic identity would be tempted to change: signalling NaNs, -0,
// subnormals, infinities.
std::vector<uint16_t> tricky16() { return {0x0000, 0x8000, 0x0001, 0x7c00, 0xfc00, 0x7c01, 0xfe00, 0x3c00, 0x7f81, 0xff80}; }
std::vector<float> trickyF32() {
  std::vector<float> v = {0.0f, -0.0f, 1.5f, -3.25f, std::numeric_limits<float>::denorm_min(),
                          std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()};
  uint32_t signalling = 0x7f800001, negativeQuiet = 0xffc00123;
  float f;
  std::memcpy(&f, &signalling, 4);
  v.push_back(f);
  std::memcpy(&f, &negativeQuiet, 4);
  v.push_back(f);
  return v;
}

TEST(DistSingleProcess, Describes) {
  std::unique_ptr<Communicator> comm = makeSingleProcessCommunicator();
  EXPECT_EQ(comm->rank(), 0);
  EXPECT_EQ(comm->worldSize(), 1);
  EXPECT_EQ(comm->description(), "single process");
  EXPECT_EQ(comm->allReduceCalls(), 0);
}

TEST(DistSingleProcess, EveryAllowedReductionIsTheIdentityBitForBit) {
  std::unique_ptr<Communicator> comm = makeSingleProcessCommunicator();
  int64_t calls = 0;
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Mean}) {
    std::vector<float> f32 = trickyF32();
    std::vector<uint8_t> before = bytesOf(f32.data(), f32.size() * 4);
    ASSERT_TRUE(comm->allReduce(f32.data(), static_cast<int64_t>(f32.size()), DType::F32, op).ok());
    EXPECT_EQ(bytesOf(f32.data(), f32.size() * 4), before) << reduceOpName(op);
    for (DType half : {DType::F16, DType::BF16}) {
      std::vector<uint16_t> h = tricky16();
      std::vector<uint16_t> expected = h;
      ASSERT_TRUE(comm->allReduce(h.data(), static_cast<int64_t>(h.size()), half, op).ok());
      EXPECT_EQ(h, expected) << reduceOpName(op) << " " << dtypeName(half);
      calls += 1;
    }
    calls += 1;
  }
  std::vector<float> f32 = trickyF32();
  std::vector<uint8_t> before = bytesOf(f32.data(), f32.size() * 4);
  ASSERT_TRUE(comm->allReduce(f32.data(), static_cast<int64_t>(f32.size()), DType::F32, ReduceOp::Max).ok());
  EXPECT_EQ(bytesOf(f32.data(), f32.size() * 4), before);
  std::vector<int32_t> i32 = {std::numeric_limits<int32_t>::min(), -1, 0, 7};
  std::vector<int32_t> i32Before = i32;
  ASSERT_TRUE(comm->allReduce(i32.data(), 4, DType::I32, ReduceOp::Max).ok());
  EXPECT_EQ(i32, i32Before);
  std::vector<int64_t> i64 = {std::numeric_limits<int64_t>::max(), -5};
  std::vector<int64_t> i64Before = i64;
  ASSERT_TRUE(comm->allReduce(i64.data(), 2, DType::I64, ReduceOp::Max).ok());
  EXPECT_EQ(i64, i64Before);
  calls += 3;
  EXPECT_EQ(comm->allReduceCalls(), calls);
}

TEST(DistSingleProcess, EmptyBuffersAreValidAndCounted) {
  std::unique_ptr<Communicator> comm = makeSingleProcessCommunicator();
  EXPECT_TRUE(comm->allReduce(nullptr, 0, DType::F32, ReduceOp::Sum).ok());
  EXPECT_TRUE(comm->allReduce(nullptr, 0, DType::I64, ReduceOp::Max).ok());
  EXPECT_EQ(comm->allReduceCalls(), 2);
  EXPECT_TRUE(comm->allGather(nullptr, 0, nullptr).ok());
}

TEST(DistSingleProcess, RejectsUndefinedReductionsAndStillCountsThem) {
  std::unique_ptr<Communicator> comm = makeSingleProcessCommunicator();
  std::vector<uint8_t> buffer(64);
  struct Case {
    DType dtype;
    ReduceOp op;
  };
  const Case rejected[] = {
      {DType::I32, ReduceOp::Sum},      {DType::I64, ReduceOp::Mean},  {DType::F16, ReduceOp::Max},
      {DType::BF16, ReduceOp::Max},     {DType::F64, ReduceOp::Sum},   {DType::U8, ReduceOp::Max},
      {DType::Bool, ReduceOp::Sum},     {DType::F8E4M3FN, ReduceOp::Sum}, {DType::F8E5M2, ReduceOp::Max},
  };
  for (const Case& c : rejected) {
    absl::Status s = comm->allReduce(buffer.data(), 4, c.dtype, c.op);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << dtypeName(c.dtype) << " " << reduceOpName(c.op);
    EXPECT_NE(s.message().find(std::string(dtypeName(c.dtype))), std::string::npos) << s;
    EXPECT_NE(s.message().find(reduceOpName(c.op)), std::string::npos) << s;
  }
  EXPECT_EQ(comm->allReduce(buffer.data(), -1, DType::F32, ReduceOp::Sum).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(comm->allReduce(nullptr, 3, DType::F32, ReduceOp::Sum).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(comm->allReduceCalls(), static_cast<int64_t>(std::size(rejected)) + 2);
}

TEST(DistSingleProcess, AllGatherCopiesTheOneRank) {
  std::unique_ptr<Communicator> comm = makeSingleProcessCommunicator();
  const char text[] = "rank zero";
  char out[sizeof text] = {};
  ASSERT_TRUE(comm->allGather(text, sizeof text, out).ok());
  EXPECT_STREQ(out, text);
  EXPECT_EQ(comm->allGather(text, -1, out).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(comm->allGather(nullptr, 4, out).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(comm->allReduceCalls(), 0) << "allGather is not an allReduce";
}

TEST(DistSingleProcess, ReduceScatterOfOneRankIsItsBlock) {
  auto comm = makeSingleProcessCommunicator();
  std::vector<float> block = {1.5f, -0.0f, 3.25f}, out(3, 9.0f);
  ASSERT_TRUE(comm->reduceScatter(block.data(), 3, DType::F32, ReduceOp::Mean, out.data()).ok());
  EXPECT_EQ(out, block);
  EXPECT_TRUE(std::signbit(out[1]));
  EXPECT_EQ(comm->reduceScatter(block.data(), 3, DType::I32, ReduceOp::Sum, out.data()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(comm->reduceScatter(block.data(), 3, DType::F32, ReduceOp::Max, out.data()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(comm->reduceScatterCalls(), 3);
  EXPECT_EQ(comm->allReduceCalls(), 0);
}

TEST(DistSingleProcess, OpNames) {
  EXPECT_STREQ(reduceOpName(ReduceOp::Sum), "sum");
  EXPECT_STREQ(reduceOpName(ReduceOp::Mean), "mean");
  EXPECT_STREQ(reduceOpName(ReduceOp::Max), "max");
}

TEST(DistLauncher, DetectsTheLauncherFromTheEnvironment) {
  LauncherEnv env;
  EXPECT_FALSE(launchedByMpi());
  for (const char* var : LauncherEnv::kVars) {
    ::setenv(var, "0", 1);
    EXPECT_TRUE(launchedByMpi()) << var;
    ::unsetenv(var);
  }
}

TEST(DistLauncher, WithoutALauncherTheJobIsOneProcess) {
  LauncherEnv env;
  absl::StatusOr<std::unique_ptr<Communicator>> comm = makeCommunicator(30);
  ASSERT_TRUE(comm.ok()) << comm.status();
  EXPECT_EQ((*comm)->worldSize(), 1);
  EXPECT_EQ((*comm)->description(), "single process");
}

TEST(DistLauncher, RejectsANonPositiveTimeout) {
  LauncherEnv env;
  for (double t : {0.0, -1.0, std::nan("")})
    EXPECT_EQ(makeCommunicator(t).status().code(), absl::StatusCode::kInvalidArgument) << t;
}

TEST(DistLauncher, MpiLaunchWithoutMpiSaysHowToFixIt) {
  if (mpiAvailable()) GTEST_SKIP() << "built with MPI (the mpirun tests cover it)";
  LauncherEnv env;
  ::setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  absl::Status s = makeCommunicator(30).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("built without MPI: install libopenmpi-dev"), std::string::npos) << s;
}

}  // namespace
}  // namespace amp::rt
