// Communicator over MPI (Debian's Open MPI 4.1). Design notes (docs/data-parallel.md):
//  - Only the main thread calls MPI (MPI_THREAD_FUNNELED); kernels use OpenMP threads.
//  - Every collective is non-blocking (MPI_Ibarrier, MPI_Ireduce, MPI_Ibcast, MPI_Iallgather,
//    MPI_Ireduce_scatter_block) and polled with MPI_Test until a deadline, so a dead or diverged rank gives
//    DeadlineExceeded instead of a hang. The request of a collective that timed out stays
//    pending: the communicator is then broken (later collectives fail at once) and the caller
//    is expected to abortJob().
//  - allReduce is a reduce to rank 0 followed by a broadcast from rank 0: every element of the
//    result is computed once, on rank 0, and copied bit for bit to the others, so all ranks hold
//    identical bits whatever algorithm Open MPI picks. MPI_Allreduce promises no such thing: an
//    algorithm in which ranks combine the operands in different orders is allowed, and with the
//    non-associative f16/bf16 sums ranks would then disagree. Measured on the shared (loaded)
//    2-core build machine, 2 ranks, 16 MB of f32, plain C: MPI_Iallreduce 40-48 ms,
//    MPI_Ireduce + MPI_Ibcast 28-70 ms; the noise is larger than the difference.
#include "runtime/dist/MpiCommunicator.h"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "runtime/dist/ReduceRules.h"

namespace amp::rt {

static std::atomic<int64_t> gMaxBytesPerCall{int64_t{1} << 30};

int64_t maxBytesPerMpiCall() { return gMaxBytesPerCall.load(); }
void setMaxBytesPerMpiCall(int64_t bytes) { gMaxBytesPerCall.store(std::max<int64_t>(bytes, 1)); }

namespace {

using Clock = std::chrono::steady_clock;

// The user-defined reductions MPI applies to our 16-bit floats and f32 maximum.
void sumF16Op(void* in, void* inout, int* len, MPI_Datatype*) {
  sumF16Into(static_cast<const uint16_t*>(in), static_cast<uint16_t*>(inout), *len);
}
void sumBF16Op(void* in, void* inout, int* len, MPI_Datatype*) {
  sumBF16Into(static_cast<const uint16_t*>(in), static_cast<uint16_t*>(inout), *len);
}
void maxF32Op(void* in, void* inout, int* len, MPI_Datatype*) {
  maxF32Into(static_cast<const float*>(in), static_cast<float*>(inout), *len);
}

std::string mpiErrorString(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return absl::StrCat("MPI error ", code);
  return std::string(text, static_cast<size_t>(length));
}

// "Open MPI v4.1.4, package: Debian OpenMPI, ..." -> "Open MPI v4.1.4".
std::string libraryName() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  if (MPI_Get_library_version(text, &length) != MPI_SUCCESS) return "unknown MPI";
  std::string version(text, static_cast<size_t>(length));
  version = version.substr(0, version.find_first_of("\n,"));
  return std::string(absl::StripAsciiWhitespace(version));
}

// Whether this process initialised MPI: MPI can be initialised once per process only.
bool gMpiStarted = false;

class MpiCommunicator final : public Communicator {
 public:
  explicit MpiCommunicator(double timeoutSeconds) : timeoutSeconds_(timeoutSeconds) {}

  ~MpiCommunicator() override {
    if (!initialized_) return;
    // A timed-out collective still owns its request: freeing the communicator or the ops it
    // uses would be erroneous, so only MPI_Finalize runs (Open MPI 4.1 finalizes with a pending
    // request: tested by the MpiTimeout tests, which exit 0).
    if (!broken_) {
      for (MPI_Op* op : {&sumF16_, &sumBF16_, &maxF32_})
        if (*op != MPI_OP_NULL) MPI_Op_free(op);
      if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
    }
    MPI_Finalize();
  }

  absl::Status init() {
    int provided = 0;
    if (int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided); rc != MPI_SUCCESS)
      return absl::InternalError(absl::StrCat("MPI_Init_thread failed: ", mpiErrorString(rc)));
    gMpiStarted = true;
    initialized_ = true;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (provided < MPI_THREAD_FUNNELED)
      return absl::FailedPreconditionError(
          "MPI does not provide MPI_THREAD_FUNNELED (the OpenMP kernels need it)");
    if (int rc = MPI_Comm_dup(MPI_COMM_WORLD, &comm_); rc != MPI_SUCCESS) return mpiError("MPI_Comm_dup", rc);
    if (int rc = MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN); rc != MPI_SUCCESS)
      return mpiError("MPI_Comm_set_errhandler", rc);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &worldSize_);
    // Commutative: each combine is commutative bit for bit (an f32 addition, a total-order max);
    // only the f16/bf16 sums are not associative, and rank 0 computes those for everyone.
    if (int rc = MPI_Op_create(&sumF16Op, 1, &sumF16_); rc != MPI_SUCCESS) return mpiError("MPI_Op_create", rc);
    if (int rc = MPI_Op_create(&sumBF16Op, 1, &sumBF16_); rc != MPI_SUCCESS) return mpiError("MPI_Op_create", rc);
    if (int rc = MPI_Op_create(&maxF32Op, 1, &maxF32_); rc != MPI_SUCCESS) return mpiError("MPI_Op_create", rc);
    library_ = libraryName();
    return absl::OkStatus();
  }

  int rank() const override { return rank_; }
  int worldSize() const override { return worldSize_; }
  std::string description() const override {
    return absl::StrCat("mpi: rank ", rank_, " of ", worldSize_, " (", library_, ")");
  }

  absl::Status allReduce(void* data, int64_t count, DType dtype, ReduceOp op) override {
    ++allReduceCalls_;
    return timed([&] { return reduceAll(data, count, dtype, op); });
  }

  absl::Status reduceScatter(void* data, int64_t chunkCount, DType dtype, ReduceOp op, void* out) override {
    ++reduceScatterCalls_;
    return timed([&] { return reduceScatterBlocks(data, chunkCount, dtype, op, out); });
  }

  absl::Status allGather(const void* data, int64_t bytes, void* out) override {
    ++allGatherCalls_;
    return timed([&] { return gatherAll(data, bytes, out); });
  }

  absl::Status broadcast(void* data, int64_t bytes, int root) override {
    ++broadcastCalls_;
    return timed([&] { return broadcastFrom(data, bytes, root); });
  }

  absl::Status reduceAll(void* data, int64_t count, DType dtype, ReduceOp op) {
    if (absl::Status s = checkAllReduceArgs(data, count, dtype, op); !s.ok()) return s;
    if (absl::Status s = checkUsable(); !s.ok()) return s;
    // Every rank runs the same plan, so every rank skips an empty buffer.
    if (count == 0) return absl::OkStatus();
    if (op == ReduceOp::Mean) divideForMean(data, count, dtype, worldSize_);
    const MPI_Datatype type = mpiType(dtype);
    const MPI_Op mpiOp = this->mpiOp(dtype, op);
    const int64_t elementSize = static_cast<int64_t>(dtypeSize(dtype));
    const int64_t perCall = std::clamp<int64_t>(maxBytesPerMpiCall() / elementSize, 1, INT32_MAX);
    const std::string what = absl::StrCat("all_reduce (", reduceOpName(op), ", ", count, " x ",
                                          std::string(dtypeName(dtype)), ")");
    const Clock::time_point deadline = deadlineFromNow();
    if (absl::Status s = waitForAllRanks(deadline, what); !s.ok()) return s;
    char* bytes = static_cast<char*>(data);
    for (int64_t first = 0; first < count; first += perCall) {
      const int n = static_cast<int>(std::min(perCall, count - first));
      char* chunk = bytes + first * elementSize;
      MPI_Request request;
      int rc = rank_ == 0 ? MPI_Ireduce(MPI_IN_PLACE, chunk, n, type, mpiOp, 0, comm_, &request)
                          : MPI_Ireduce(chunk, nullptr, n, type, mpiOp, 0, comm_, &request);
      if (rc != MPI_SUCCESS) return mpiError("MPI_Ireduce", rc);
      if (absl::Status s = wait(request, Polling::Busy, deadline, what); !s.ok()) return s;
      rc = MPI_Ibcast(chunk, n, type, 0, comm_, &request);
      if (rc != MPI_SUCCESS) return mpiError("MPI_Ibcast", rc);
      if (absl::Status s = wait(request, Polling::Busy, deadline, what); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  // One MPI_Ireduce_scatter_block per piece of at most maxBytesPerMpiCall() bytes of each block.
  // Each chunk of the result exists on one rank only, so unlike allReduce there are no copies
  // that could disagree. A buffer larger than one call is sent in pieces packed rank-major.
  absl::Status reduceScatterBlocks(void* data, int64_t chunkCount, DType dtype, ReduceOp op, void* out) {
    if (absl::Status s = checkReduceScatterArgs(data, chunkCount, dtype, op, out); !s.ok()) return s;
    if (absl::Status s = checkUsable(); !s.ok()) return s;
    if (chunkCount == 0) return absl::OkStatus();
    const int64_t total = chunkCount * worldSize_;
    if (op == ReduceOp::Mean) divideForMean(data, total, dtype, worldSize_);
    const MPI_Datatype type = mpiType(dtype);
    const MPI_Op mpiOp = this->mpiOp(dtype, op);
    const int64_t elementSize = static_cast<int64_t>(dtypeSize(dtype));
    const int64_t perCall = std::clamp<int64_t>(maxBytesPerMpiCall() / elementSize / worldSize_, 1, INT32_MAX);
    const std::string what = absl::StrCat("reduce_scatter (", reduceOpName(op), ", ", chunkCount, " x ",
                                          std::string(dtypeName(dtype)), " per rank)");
    const Clock::time_point deadline = deadlineFromNow();
    if (absl::Status s = waitForAllRanks(deadline, what); !s.ok()) return s;
    const char* blocks = static_cast<const char*>(data);
    char* result = static_cast<char*>(out);
    std::vector<char> packed;
    for (int64_t first = 0; first < chunkCount; first += perCall) {
      const int n = static_cast<int>(std::min(perCall, chunkCount - first));
      const char* send = blocks;
      if (n != chunkCount) {
        packed.resize(static_cast<size_t>(n * elementSize * worldSize_));
        for (int r = 0; r < worldSize_; ++r)
          std::memcpy(packed.data() + r * n * elementSize, blocks + (r * chunkCount + first) * elementSize,
                      static_cast<size_t>(n * elementSize));
        send = packed.data();
      }
      MPI_Request request;
      int rc = MPI_Ireduce_scatter_block(send, result + first * elementSize, n, type, mpiOp, comm_, &request);
      if (rc != MPI_SUCCESS) return mpiError("MPI_Ireduce_scatter_block", rc);
      if (absl::Status s = wait(request, Polling::Busy, deadline, what); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  absl::Status gatherAll(const void* data, int64_t bytes, void* out) {
    if (bytes < 0) return absl::InvalidArgumentError(absl::StrCat("allGather: negative size ", bytes));
    if (absl::Status s = checkUsable(); !s.ok()) return s;
    if (bytes == 0) return absl::OkStatus();
    if (data == nullptr || out == nullptr) return absl::InvalidArgumentError("allGather: null buffer");
    const std::string what = absl::StrCat("all_gather (", bytes, " bytes per rank)");
    const Clock::time_point deadline = deadlineFromNow();
    if (absl::Status s = waitForAllRanks(deadline, what); !s.ok()) return s;
    const int64_t perCall = std::clamp<int64_t>(maxBytesPerMpiCall(), 1, INT32_MAX);
    for (int64_t first = 0; first < bytes; first += perCall) {
      const int n = static_cast<int>(std::min(perCall, bytes - first));
      // Rank r's piece lands at out + r * bytes + first: a receive type of n bytes whose extent
      // is a whole rank's block (no staging copy).
      MPI_Datatype block = MPI_DATATYPE_NULL, rankStride = MPI_DATATYPE_NULL;
      int rc = MPI_Type_contiguous(n, MPI_BYTE, &block);
      if (rc == MPI_SUCCESS) rc = MPI_Type_create_resized(block, 0, static_cast<MPI_Aint>(bytes), &rankStride);
      if (rc == MPI_SUCCESS) rc = MPI_Type_commit(&rankStride);
      if (block != MPI_DATATYPE_NULL) MPI_Type_free(&block);
      if (rc != MPI_SUCCESS) return mpiError("MPI_Type_create_resized", rc);
      MPI_Request request;
      rc = MPI_Iallgather(static_cast<const char*>(data) + first, n, MPI_BYTE,
                          static_cast<char*>(out) + first, 1, rankStride, comm_, &request);
      // Freeing a datatype a pending request uses is allowed: the request completes normally
      // (MPI-3.1, section 4.1.9).
      MPI_Type_free(&rankStride);
      if (rc != MPI_SUCCESS) return mpiError("MPI_Iallgather", rc);
      if (absl::Status s = wait(request, Polling::Busy, deadline, what); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  // MPI_Ibcast polled against the deadline (MPI_Bcast itself could wait forever), in pieces of
  // at most maxBytesPerMpiCall() bytes.
  absl::Status broadcastFrom(void* data, int64_t bytes, int root) {
    if (absl::Status s = checkBroadcastArgs(data, bytes, root, worldSize_); !s.ok()) return s;
    if (absl::Status s = checkUsable(); !s.ok()) return s;
    if (bytes == 0) return absl::OkStatus();
    const std::string what = absl::StrCat("broadcast (", bytes, " bytes from rank ", root, ")");
    const Clock::time_point deadline = deadlineFromNow();
    if (absl::Status s = waitForAllRanks(deadline, what); !s.ok()) return s;
    const int64_t perCall = std::clamp<int64_t>(maxBytesPerMpiCall(), 1, INT32_MAX);
    for (int64_t first = 0; first < bytes; first += perCall) {
      const int n = static_cast<int>(std::min(perCall, bytes - first));
      MPI_Request request;
      if (int rc = MPI_Ibcast(static_cast<char*>(data) + first, n, MPI_BYTE, root, comm_, &request); rc != MPI_SUCCESS)
        return mpiError("MPI_Ibcast", rc);
      if (absl::Status s = wait(request, Polling::Busy, deadline, what); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  [[noreturn]] void abortJob(int exitCode) override {
    MPI_Abort(MPI_COMM_WORLD, exitCode);
    std::_Exit(exitCode);  // MPI_Abort should not return; if it does, still end this rank.
  }

 private:
  template <class Call>
  absl::Status timed(Call call) {
    const Clock::time_point start = Clock::now();
    absl::Status status = call();
    collectiveSeconds_ += std::chrono::duration<double>(Clock::now() - start).count();
    return status;
  }

  Clock::time_point deadlineFromNow() const {
    return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(timeoutSeconds_));
  }

  absl::Status checkUsable() const {
    if (!broken_) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat(
        "rank ", rank_, " of ", worldSize_, ": a previous collective timed out; the job must end"));
  }

  // After a failed MPI call the ranks are out of step (some may wait in a collective this one
  // left), so the communicator is broken as after a timeout.
  absl::Status mpiError(const char* call, int code) {
    broken_ = true;
    return absl::InternalError(
        absl::StrCat("rank ", rank_, " of ", worldSize_, ": ", call, " failed: ", mpiErrorString(code)));
  }

  // How a rank waits for a request. Open MPI's non-blocking collectives advance only inside MPI
  // calls (libnbc: one round per MPI_Test), so the polling pace is the transfer's pace.
  enum class Polling {
    // Waiting for the other ranks to arrive, which may take a whole step of a slower rank: spin
    // for the first milliseconds, then sleep between polls (20 us doubling to 200 us) so a
    // waiting rank does not burn a core.
    Patient,
    // Moving data once every rank has arrived: poll without sleeping (yielding the core to
    // runnable threads). Sleeping here made a 16 MB f32 allReduce on 2 ranks 15x slower
    // (640 ms instead of ~40 ms): a large reduction takes hundreds of rounds.
    Busy,
  };

  // Polls until the request completes or the deadline passes.
  absl::Status wait(MPI_Request& request, Polling polling, Clock::time_point deadline,
                    const std::string& what) {
    constexpr auto kSpin = std::chrono::milliseconds(5);
    constexpr auto kMaxSleep = std::chrono::microseconds(200);
    const Clock::time_point start = Clock::now();
    auto sleep = std::chrono::microseconds(20);
    while (true) {
      int done = 0;
      if (int rc = MPI_Test(&request, &done, MPI_STATUS_IGNORE); rc != MPI_SUCCESS)
        return mpiError("MPI_Test", rc);
      if (done) return absl::OkStatus();
      const Clock::time_point now = Clock::now();
      if (now >= deadline) {
        broken_ = true;
        return absl::DeadlineExceededError(absl::StrFormat(
            "rank %d of %d: %s did not complete within %g s: another rank died, hangs, or is "
            "not running the same bundle",
            rank_, worldSize_, what, timeoutSeconds_));
      }
      if (polling == Polling::Busy) {
        std::this_thread::yield();
      } else if (now - start >= kSpin) {
        std::this_thread::sleep_for(sleep);
        sleep = std::min(sleep * 2, kMaxSleep);
      }
    }
  }

  // Every collective starts with a barrier waited for patiently: once it completes all ranks
  // are inside the same collective and the data moves under busy polling. A barrier costs a
  // few microseconds on shared memory.
  absl::Status waitForAllRanks(Clock::time_point deadline, const std::string& what) {
    MPI_Request request;
    if (int rc = MPI_Ibarrier(comm_, &request); rc != MPI_SUCCESS) return mpiError("MPI_Ibarrier", rc);
    return wait(request, Polling::Patient, deadline, what);
  }

  static MPI_Datatype mpiType(DType dtype) {
    switch (dtype) {
      case DType::F32:
        return MPI_FLOAT;
      case DType::F16:
      case DType::BF16:
        return MPI_UINT16_T;  // MPI has no 16-bit float; the user-defined ops interpret the bits
      case DType::I32:
        return MPI_INT32_T;
      case DType::I64:
        return MPI_INT64_T;
      default:
        return MPI_DATATYPE_NULL;  // unreachable: checkAllReduceArgs rejected it
    }
  }

  MPI_Op mpiOp(DType dtype, ReduceOp op) const {
    if (op == ReduceOp::Max) return dtype == DType::F32 ? maxF32_ : MPI_MAX;
    if (dtype == DType::F16) return sumF16_;
    if (dtype == DType::BF16) return sumBF16_;
    return MPI_SUM;  // f32: one IEEE addition per combine
  }

  double timeoutSeconds_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int worldSize_ = 1;
  MPI_Op sumF16_ = MPI_OP_NULL, sumBF16_ = MPI_OP_NULL, maxF32_ = MPI_OP_NULL;
  std::string library_;
  bool initialized_ = false;  // MPI_Init_thread succeeded: the destructor finalizes
  bool broken_ = false;       // a collective timed out (its request is still pending) or failed
};

}  // namespace

absl::StatusOr<std::unique_ptr<Communicator>> makeMpiCommunicator(double timeoutSeconds) {
  if (gMpiStarted)
    return absl::FailedPreconditionError(
        "makeCommunicator: MPI was already initialised in this process (call it once)");
  auto comm = std::make_unique<MpiCommunicator>(timeoutSeconds);
  // On failure the destructor still finalizes what init() started.
  if (absl::Status s = comm->init(); !s.ok()) return s;
  return std::unique_ptr<Communicator>(std::move(comm));
}

}  // namespace amp::rt
