// The MPI communicator on two ranks (test/unit/dist/CMakeLists.txt starts them with mpirun).
// Each rank fills its buffer from its rank; the results must equal the values computed here
// with the contract's rules, and be bitwise the same on both ranks.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "runtime/dist/MpiCommunicator.h"
#include "runtime/dist/ReduceRules.h"
#include "runtime/numerics/Convert.h"
#include "test/unit/dist/MpiTestComm.h"

namespace amp::rt {
namespace {

using testing::mpiComm;

constexpr float kInf = std::numeric_limits<float>::infinity();

float fromBits(uint32_t b) {
  float x;
  std::memcpy(&x, &b, 4);
  return x;
}
uint32_t bitsOf(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  return b;
}

// Every rank's copy of `bytes` bytes equals rank 0's.
void expectSameOnAllRanks(const void* data, size_t bytes) {
  Communicator& comm = mpiComm();
  std::vector<uint8_t> all(bytes * static_cast<size_t>(comm.worldSize()));
  ASSERT_TRUE(comm.allGather(data, static_cast<int64_t>(bytes), all.data()).ok());
  for (int r = 1; r < comm.worldSize(); ++r)
    EXPECT_EQ(std::memcmp(all.data(), all.data() + r * bytes, bytes), 0) << "rank " << r << " differs from rank 0";
}

// A value per (rank, index) with fractions that make f32/f16/bf16 sums round.
float valueOf(int rank, int64_t i) {
  return (rank == 0 ? 1.0f : -0.37f) * (static_cast<float>(i % 997) * 1.618034f + 0.1f * rank) +
         static_cast<float>(rank) * 3.3f;
}

// Limits bytes per MPI call for one scope (both ranks set the same value).
class ChunkLimit {
 public:
  explicit ChunkLimit(int64_t bytes) : saved_(maxBytesPerMpiCall()) { setMaxBytesPerMpiCall(bytes); }
  ~ChunkLimit() { setMaxBytesPerMpiCall(saved_); }

 private:
  int64_t saved_;
};

TEST(MpiBasics, Describes) {
  Communicator& comm = mpiComm();
  EXPECT_EQ(comm.worldSize(), 2);
  const std::string prefix = "mpi: rank " + std::to_string(comm.rank()) + " of 2 (Open MPI v";
  EXPECT_EQ(comm.description().rfind(prefix, 0), 0u) << comm.description();
  EXPECT_EQ(comm.description().back(), ')');
  EXPECT_TRUE(launchedByMpi());
  EXPECT_TRUE(mpiAvailable());
}

TEST(MpiBasics, MakeCommunicatorOnlyOnce) {
  EXPECT_EQ(makeCommunicator(5).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(MpiAllGather, InRankOrder) {
  Communicator& comm = mpiComm();
  std::string mine = "rank " + std::to_string(comm.rank());
  std::vector<char> out(2 * mine.size(), '?');
  ASSERT_TRUE(comm.allGather(mine.data(), static_cast<int64_t>(mine.size()), out.data()).ok());
  EXPECT_EQ(std::string(out.begin(), out.end()), "rank 0rank 1");
  EXPECT_TRUE(comm.allGather(nullptr, 0, nullptr).ok());
  EXPECT_EQ(comm.allGather(mine.data(), -3, out.data()).code(), absl::StatusCode::kInvalidArgument);
}

TEST(MpiAllReduce, F32SumAndMean) {
  Communicator& comm = mpiComm();
  const int64_t n = 5000;
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Mean}) {
    std::vector<float> data(n), expected(n);
    for (int64_t i = 0; i < n; ++i) {
      data[i] = valueOf(comm.rank(), i);
      float a = valueOf(0, i), b = valueOf(1, i);
      if (op == ReduceOp::Mean) a /= 2, b /= 2;
      expected[i] = a + b;
    }
    // Infinities and NaN travel through the sum as IEEE addition says.
    data[0] = comm.rank() == 0 ? kInf : 1.0f, expected[0] = kInf;
    data[1] = comm.rank() == 0 ? kInf : -kInf, expected[1] = kInf + -kInf;
    data[2] = comm.rank() == 0 ? -0.0f : -0.0f, expected[2] = -0.0f;
    ASSERT_TRUE(comm.allReduce(data.data(), n, DType::F32, op).ok());
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(bitsOf(data[i]), bitsOf(expected[i])) << reduceOpName(op) << " element " << i << ": " << data[i]
                                                      << " != " << expected[i];
    EXPECT_TRUE(std::isnan(data[1]));
    expectSameOnAllRanks(data.data(), n * 4);
  }
}

// f16 and bf16: each addition in f32, rounded once; Mean rounds the pre-divided values first.
TEST(MpiAllReduce, HalfPrecisionSumAndMeanRoundPerAddition) {
  Communicator& comm = mpiComm();
  const int64_t n = 3001;
  for (DType dtype : {DType::F16, DType::BF16}) {
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Mean}) {
      std::vector<uint16_t> data(n), expected(n);
      int64_t rounded = 0;
      for (int64_t i = 0; i < n; ++i) {
        const float mine = valueOf(comm.rank(), i);
        storeFromF32(dtype, data.data(), i, mine);
        std::vector<uint16_t> operand(2);
        for (int r = 0; r < 2; ++r) {
          storeFromF32(dtype, operand.data(), r, valueOf(r, i));
          if (op == ReduceOp::Mean) storeFromF32(dtype, operand.data(), r, loadAsF32(dtype, operand.data(), r) / 2);
        }
        const float exact = loadAsF32(dtype, operand.data(), 0) + loadAsF32(dtype, operand.data(), 1);
        storeFromF32(dtype, expected.data(), i, exact);
        rounded += loadAsF32(dtype, expected.data(), i) != exact;
      }
      EXPECT_GT(rounded, n / 4) << "the inputs must make the sums round";
      ASSERT_TRUE(comm.allReduce(data.data(), n, dtype, op).ok());
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(data[i], expected[i]) << dtypeName(dtype) << " " << reduceOpName(op) << " element " << i;
      expectSameOnAllRanks(data.data(), n * 2);
    }
  }
}

TEST(MpiAllReduce, F32MaxPropagatesNaNAndOrdersInfinitiesAndZeros) {
  Communicator& comm = mpiComm();
  const int r = comm.rank();
  const float nan0 = fromBits(0x7fc00005);
  std::vector<float> data = {
      r == 0 ? 1.0f : 2.0f,     // 2
      r == 0 ? -kInf : -7.0f,   // -7
      r == 0 ? kInf : 3.0f,     // +inf
      r == 0 ? 0.0f : -0.0f,    // +0 (whichever rank holds it)
      r == 0 ? -0.0f : 0.0f,    // +0
      r == 0 ? nan0 : kInf,     // NaN from rank 0
      r == 0 ? -kInf : nan0,    // NaN from rank 1
      r == 0 ? -kInf : -kInf,   // -inf
  };
  ASSERT_TRUE(comm.allReduce(data.data(), static_cast<int64_t>(data.size()), DType::F32, ReduceOp::Max).ok());
  EXPECT_EQ(data[0], 2.0f);
  EXPECT_EQ(data[1], -7.0f);
  EXPECT_EQ(data[2], kInf);
  EXPECT_EQ(bitsOf(data[3]), 0u);
  EXPECT_EQ(bitsOf(data[4]), 0u);
  EXPECT_EQ(bitsOf(data[5]), bitsOf(nan0));
  EXPECT_EQ(bitsOf(data[6]), bitsOf(nan0));
  EXPECT_EQ(data[7], -kInf);
  expectSameOnAllRanks(data.data(), data.size() * 4);
}

TEST(MpiAllReduce, IntegerMax) {
  Communicator& comm = mpiComm();
  const bool r0 = comm.rank() == 0;
  std::vector<int32_t> i32 = {r0 ? std::numeric_limits<int32_t>::min() : -1, r0 ? 5 : 4,
                              r0 ? std::numeric_limits<int32_t>::max() : 0};
  ASSERT_TRUE(comm.allReduce(i32.data(), 3, DType::I32, ReduceOp::Max).ok());
  EXPECT_EQ(i32, (std::vector<int32_t>{-1, 5, std::numeric_limits<int32_t>::max()}));
  std::vector<int64_t> i64 = {r0 ? int64_t{1} << 40 : (int64_t{1} << 40) + 1, r0 ? -9 : std::numeric_limits<int64_t>::min()};
  ASSERT_TRUE(comm.allReduce(i64.data(), 2, DType::I64, ReduceOp::Max).ok());
  EXPECT_EQ(i64, (std::vector<int64_t>{(int64_t{1} << 40) + 1, -9}));
}

TEST(MpiAllReduce, CountsCallsAndRejectsLikeASingleProcess) {
  Communicator& comm = mpiComm();
  const int64_t before = comm.allReduceCalls();
  float x = static_cast<float>(comm.rank());
  ASSERT_TRUE(comm.allReduce(&x, 1, DType::F32, ReduceOp::Sum).ok());
  EXPECT_EQ(x, 1.0f);
  EXPECT_TRUE(comm.allReduce(nullptr, 0, DType::F32, ReduceOp::Mean).ok()) << "empty: skipped on every rank";
  int32_t i = 0;
  EXPECT_EQ(comm.allReduce(&i, 1, DType::I32, ReduceOp::Sum).code(), absl::StatusCode::kInvalidArgument);
  uint16_t h = 0;
  EXPECT_EQ(comm.allReduce(&h, 1, DType::F16, ReduceOp::Max).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(comm.allReduce(&x, -1, DType::F32, ReduceOp::Sum).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(comm.allReduceCalls(), before + 5);
  // The rejected calls communicated nothing: the ranks are still in step.
  ASSERT_TRUE(comm.allReduce(&x, 1, DType::F32, ReduceOp::Sum).ok());
  EXPECT_EQ(x, 2.0f);
}

TEST(MpiAllReduce, FourMegabytes) {
  Communicator& comm = mpiComm();
  const int64_t n = int64_t{1} << 20;
  std::vector<float> data(n);
  for (int64_t i = 0; i < n; ++i) data[i] = static_cast<float>(i % 4096) + static_cast<float>(comm.rank()) * 0.5f;
  ASSERT_TRUE(comm.allReduce(data.data(), n, DType::F32, ReduceOp::Sum).ok());
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(data[i], 2.0f * static_cast<float>(i % 4096) + 0.5f) << i;
}

// ZeRO-1's gradient reduction: rank r receives the reduction of block r only, with the same
// rules as allReduce (Mean pre-divides; f16/bf16 sums round once per addition).
TEST(MpiReduceScatter, EachRankReceivesItsBlockReduced) {
  Communicator& comm = mpiComm();
  const int r = comm.rank();
  const int64_t chunk = 1001;
  std::vector<float> blocks(chunk * 2), out(chunk, -1.0f);
  std::vector<uint16_t> bf(chunk * 2), bfOut(chunk);
  for (int64_t i = 0; i < chunk * 2; ++i) {
    blocks[i] = valueOf(r, i);
    bf[i] = f32ToBF16(valueOf(r, i));
  }
  const int64_t calls = comm.reduceScatterCalls();
  ASSERT_TRUE(comm.reduceScatter(blocks.data(), chunk, DType::F32, ReduceOp::Mean, out.data()).ok());
  ASSERT_TRUE(comm.reduceScatter(bf.data(), chunk, DType::BF16, ReduceOp::Sum, bfOut.data()).ok());
  EXPECT_EQ(comm.reduceScatterCalls(), calls + 2);
  for (int64_t i = 0; i < chunk; ++i) {
    const int64_t k = r * chunk + i;
    ASSERT_EQ(bitsOf(out[i]), bitsOf(valueOf(0, k) / 2.0f + valueOf(1, k) / 2.0f)) << i;
    ASSERT_EQ(bfOut[i], f32ToBF16(bf16ToF32(f32ToBF16(valueOf(0, k))) + bf16ToF32(f32ToBF16(valueOf(1, k))))) << i;
  }
  float x = 0;
  EXPECT_EQ(comm.reduceScatter(&x, 1, DType::F32, ReduceOp::Max, &x).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(comm.reduceScatter(&x, 1, DType::F32, ReduceOp::Sum, nullptr).code(), absl::StatusCode::kInvalidArgument);
  // The rejected calls communicated nothing: the ranks are still in step.
  std::vector<float> two = {1.0f + r, 10.0f + r};
  ASSERT_TRUE(comm.reduceScatter(two.data(), 1, DType::F32, ReduceOp::Sum, &x).ok());
  EXPECT_EQ(x, r == 0 ? 3.0f : 21.0f);
}

TEST(MpiChunking, ReduceScatterInPieces) {
  Communicator& comm = mpiComm();
  ChunkLimit limit(256);  // 32 f32 elements of each rank's block per call
  const int64_t chunk = 1003;
  std::vector<float> blocks(chunk * 2), out(chunk);
  for (int64_t i = 0; i < chunk * 2; ++i) blocks[i] = valueOf(comm.rank(), i);
  ASSERT_TRUE(comm.reduceScatter(blocks.data(), chunk, DType::F32, ReduceOp::Sum, out.data()).ok());
  for (int64_t i = 0; i < chunk; ++i) {
    const int64_t k = comm.rank() * chunk + i;
    ASSERT_EQ(bitsOf(out[i]), bitsOf(valueOf(0, k) + valueOf(1, k))) << i;
  }
}

// Buffers larger than one MPI call (int counts) go in pieces; a lowered limit makes the pieces
// small and uneven (the last one is shorter).
TEST(MpiChunking, AllReduceInPieces) {
  Communicator& comm = mpiComm();
  ChunkLimit limit(256);  // 64 f32 / 128 f16 elements per call
  const int64_t n = 10007;
  std::vector<float> f32(n), expected32(n);
  std::vector<uint16_t> f16(n), expected16(n);
  for (int64_t i = 0; i < n; ++i) {
    f32[i] = valueOf(comm.rank(), i);
    expected32[i] = valueOf(0, i) + valueOf(1, i);
    f16[i] = f32ToF16(valueOf(comm.rank(), i));
    expected16[i] = f32ToF16(f16ToF32(f32ToF16(valueOf(0, i))) + f16ToF32(f32ToF16(valueOf(1, i))));
  }
  const int64_t calls = comm.allReduceCalls();
  ASSERT_TRUE(comm.allReduce(f32.data(), n, DType::F32, ReduceOp::Sum).ok());
  ASSERT_TRUE(comm.allReduce(f16.data(), n, DType::F16, ReduceOp::Sum).ok());
  EXPECT_EQ(comm.allReduceCalls(), calls + 2) << "a chunked call is one call";
  EXPECT_EQ(f32, expected32);
  EXPECT_EQ(f16, expected16);
}

TEST(MpiChunking, AllGatherInPieces) {
  Communicator& comm = mpiComm();
  ChunkLimit limit(100);
  const int64_t bytes = 1001;
  std::vector<uint8_t> mine(bytes), out(2 * bytes, 0);
  for (int64_t i = 0; i < bytes; ++i) mine[i] = static_cast<uint8_t>(i * 7 + comm.rank() * 101);
  ASSERT_TRUE(comm.allGather(mine.data(), bytes, out.data()).ok());
  for (int r = 0; r < 2; ++r)
    for (int64_t i = 0; i < bytes; ++i)
      ASSERT_EQ(out[r * bytes + i], static_cast<uint8_t>(i * 7 + r * 101)) << "rank " << r << " byte " << i;
}

// Run on its own (ctest dist.mpi_timeout.*): the timed-out request stays pending, so the
// communicator is unusable afterwards. The absent rank sleeps past the deadline and never joins;
// both ranks then finalize and exit 0.
TEST(MpiTimeout, ACollectiveARankSkipsGivesDeadlineExceeded) {
  Communicator& comm = mpiComm();
  const double timeout = testing::mpiTimeoutSeconds();
  ASSERT_LE(timeout, 5) << "run with a short --timeout-seconds";
  if (comm.rank() == testing::absentRank()) {
    std::this_thread::sleep_for(std::chrono::duration<double>(timeout + 1.5));
    return;
  }
  std::vector<float> data(1000, 1.0f);
  const auto start = std::chrono::steady_clock::now();
  absl::Status s = comm.allReduce(data.data(), 1000, DType::F32, ReduceOp::Sum);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_GE(waited, timeout);
  EXPECT_LT(waited, timeout + 1.0);
  const std::string expectedStart = "rank " + std::to_string(comm.rank()) + " of 2: all_reduce (sum, 1000 x f32) did not complete within";
  EXPECT_EQ(s.message().rfind(expectedStart, 0), 0u) << s;
  EXPECT_NE(s.message().find("another rank died, hangs, or is not running the same bundle"), std::string::npos) << s;
  // Broken from now on: fail fast instead of queueing behind the pending request.
  EXPECT_EQ(comm.allReduce(data.data(), 1000, DType::F32, ReduceOp::Sum).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(comm.allGather(data.data(), 4, data.data() + 10).code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace amp::rt
