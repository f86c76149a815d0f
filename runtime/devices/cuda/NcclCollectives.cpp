#include "runtime/devices/cuda/NcclCollectives.h"

#include <dlfcn.h>

#include <cstring>

#include "absl/strings/str_cat.h"

#if defined(AMP_HAVE_NCCL_HEADER)
#include <nccl.h>
#endif

namespace amp::rt::cuda {
namespace {

constexpr int kNcclSuccess = 0;
constexpr int kNcclInt32 = 2, kNcclInt64 = 4, kNcclFloat16 = 6, kNcclFloat32 = 7, kNcclBfloat16 = 9;
constexpr int kNcclSum = 0, kNcclMax = 2, kNcclAvg = 4;
// ncclAvg appeared in NCCL 2.10.
constexpr int kOldestNccl = 21000;

#if defined(AMP_HAVE_NCCL_HEADER)
static_assert(kNcclSuccess == ncclSuccess && kNcclInt32 == ncclInt32 && kNcclInt64 == ncclInt64 &&
              kNcclFloat16 == ncclFloat16 && kNcclFloat32 == ncclFloat32 && kNcclBfloat16 == ncclBfloat16);
static_assert(kNcclSum == ncclSum && kNcclMax == ncclMax && kNcclAvg == ncclAvg);
static_assert(sizeof(NcclApi::UniqueId) == sizeof(ncclUniqueId) && sizeof(ncclResult_t) == sizeof(int) &&
              sizeof(ncclDataType_t) == sizeof(int) && sizeof(ncclRedOp_t) == sizeof(int));
#endif

std::string ncclError(const NcclApi& nccl, const char* call, int result, const Communicator* job = nullptr) {
  const char* text = nccl.getErrorString ? nccl.getErrorString(result) : nullptr;
  return absl::StrCat(job ? absl::StrCat("rank ", job->rank(), " of ", job->worldSize(), ": ") : "", call,
                      " failed: ", text ? text : "unknown error", " (", result, ")");
}

class NcclCollectives final : public GpuCollectives {
 public:
  NcclCollectives(GpuApi& api, const NcclApi& nccl, NcclApi::Comm comm, int rank, int worldSize, int version)
      : api_(api), nccl_(nccl), comm_(comm), rank_(rank), worldSize_(worldSize), version_(version) {}
  ~NcclCollectives() override {
    if (comm_ && nccl_.commDestroy) nccl_.commDestroy(comm_);
  }

  int rank() const override { return rank_; }
  int worldSize() const override { return worldSize_; }
  std::string description() const override {
    return absl::StrCat("nccl ", version_ / 10000, ".", version_ / 100 % 100, ".", version_ % 100, " (", nccl_.library,
                        "): rank ", rank_, " of ", worldSize_);
  }

  absl::Status allReduce(DevicePtr send, DevicePtr recv, int64_t count, DType dtype, ReduceOp op) override {
    if (auto s = checkCollectiveArgs("allReduce", send, recv, count, dtype, op); !s.ok()) return s;
    auto [type, ncclOp] = typeAndOp(dtype, op);
    if (count == 0) return absl::OkStatus();
    return check("ncclAllReduce", nccl_.allReduce(address(send), address(recv), static_cast<size_t>(count), type, ncclOp,
                                                  comm_, api_.nativeStream()));
  }

  absl::Status reduceScatter(DevicePtr send, DevicePtr recv, int64_t blockCount, DType dtype, ReduceOp op) override {
    if (auto s = checkCollectiveArgs("reduceScatter", send, recv, blockCount, dtype, op); !s.ok()) return s;
    auto [type, ncclOp] = typeAndOp(dtype, op);
    if (blockCount == 0) return absl::OkStatus();
    return check("ncclReduceScatter", nccl_.reduceScatter(address(send), address(recv), static_cast<size_t>(blockCount),
                                                          type, ncclOp, comm_, api_.nativeStream()));
  }

  absl::Status allGather(DevicePtr send, DevicePtr recv, int64_t blockCount, DType dtype) override {
    if (auto s = checkGatherArgs(send, recv, blockCount); !s.ok()) return s;
    auto type = ncclTypeOf(dtype);
    if (!type.ok()) return type.status();
    if (blockCount == 0) return absl::OkStatus();
    return check("ncclAllGather", nccl_.allGather(address(send), address(recv), static_cast<size_t>(blockCount), *type,
                                                  comm_, api_.nativeStream()));
  }

 private:
  static void* address(DevicePtr p) { return reinterpret_cast<void*>(static_cast<uintptr_t>(p)); }
  // checkCollectiveArgs has accepted the pair, so both have NCCL numbers.
  static std::pair<int, int> typeAndOp(DType dtype, ReduceOp op) { return {*ncclTypeOf(dtype), *ncclOpOf(op)}; }
  absl::Status check(const char* call, int result) const {
    if (result == kNcclSuccess) return absl::OkStatus();
    return absl::InternalError(
        absl::StrCat("rank ", rank_, " of ", worldSize_, ": ", ncclError(nccl_, call, result)));
  }

  GpuApi& api_;
  const NcclApi& nccl_;
  NcclApi::Comm comm_;
  int rank_, worldSize_, version_;
};

}  // namespace

absl::StatusOr<int> ncclTypeOf(DType dtype) {
  switch (dtype) {
    case DType::F32: return kNcclFloat32;
    case DType::F16: return kNcclFloat16;
    case DType::BF16: return kNcclBfloat16;
    case DType::I32: return kNcclInt32;
    case DType::I64: return kNcclInt64;
    default: break;
  }
  return absl::InvalidArgumentError(absl::StrCat("nccl: no collective over ", std::string(dtypeName(dtype)), " here"));
}

// Mean is ncclAvg: NCCL scales by 1/N itself (with one rank, by 1: the identity).
absl::StatusOr<int> ncclOpOf(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return kNcclSum;
    case ReduceOp::Mean: return kNcclAvg;
    case ReduceOp::Max: return kNcclMax;
  }
  return absl::InvalidArgumentError("nccl: unknown reduction");
}

absl::StatusOr<const NcclApi*> loadNccl() {
  static NcclApi nccl;
  static absl::Status status = [] {
    void* lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    std::string tried = "libnccl.so.2";
#if defined(AMP_CUDA_ROOT_DIR)
    if (!lib) {
      const std::string toolkit = std::string(AMP_CUDA_ROOT_DIR) + "/lib64/libnccl.so.2";
      lib = dlopen(toolkit.c_str(), RTLD_NOW | RTLD_LOCAL);
      tried += " and " + toolkit;
      if (lib) nccl.library = toolkit;
    }
#endif
    if (!lib)
      return absl::UnavailableError(absl::StrCat(
          "data-parallel training on the cuda device needs NCCL, and ", tried,
          " cannot be loaded: install NCCL (it ships with the CUDA toolkit) or add its folder to LD_LIBRARY_PATH"));
    if (nccl.library.empty()) nccl.library = "libnccl.so.2";
    bool complete = true;
    std::string missing;
    auto resolve = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      if (!fn) {
        complete = false;
        absl::StrAppend(&missing, missing.empty() ? "" : ", ", name);
      }
    };
    resolve(nccl.getVersion, "ncclGetVersion");
    resolve(nccl.getUniqueId, "ncclGetUniqueId");
    resolve(nccl.commInitRank, "ncclCommInitRank");
    resolve(nccl.commDestroy, "ncclCommDestroy");
    resolve(nccl.allReduce, "ncclAllReduce");
    resolve(nccl.reduceScatter, "ncclReduceScatter");
    resolve(nccl.allGather, "ncclAllGather");
    resolve(nccl.getErrorString, "ncclGetErrorString");
    if (!complete) return absl::FailedPreconditionError(absl::StrCat(nccl.library, " lacks ", missing));
    int version = 0;
    if (nccl.getVersion(&version) != kNcclSuccess || version < kOldestNccl)
      return absl::FailedPreconditionError(absl::StrCat(nccl.library, " is NCCL ", version / 10000, ".",
                                                        version / 100 % 100, "; 2.10 or newer is needed (ncclAvg)"));
    return absl::OkStatus();
  }();
  if (!status.ok()) return status;
  return &nccl;
}

absl::StatusOr<NcclApi::Comm> bootstrapNcclComm(const NcclApi& nccl, Communicator& job, NcclApi::UniqueId* idSeen) {
  NcclApi::UniqueId id;
  std::memset(&id, 0, sizeof id);
  // A failure on rank 0 leaves the others in the broadcast until the job's timeout; the caller
  // ends the job (Communicator::abortJob) on any error here.
  if (job.rank() == 0)
    if (int r = nccl.getUniqueId(&id); r != kNcclSuccess)
      return absl::InternalError(ncclError(nccl, "ncclGetUniqueId", r, &job));
  if (auto s = job.broadcast(&id, sizeof id, 0); !s.ok())
    return absl::Status(s.code(), absl::StrCat("nccl bootstrap: broadcasting rank 0's unique id: ", s.message()));
  if (idSeen) *idSeen = id;
  NcclApi::Comm comm = nullptr;
  if (int r = nccl.commInitRank(&comm, job.worldSize(), id, job.rank()); r != kNcclSuccess)
    return absl::InternalError(ncclError(nccl, "ncclCommInitRank", r, &job));
  return comm;
}

absl::StatusOr<std::unique_ptr<GpuCollectives>> makeNcclCollectives(GpuApi& api, Communicator& job, const NcclApi& nccl) {
  int version = 0;
  if (int r = nccl.getVersion(&version); r != kNcclSuccess) return absl::InternalError(ncclError(nccl, "ncclGetVersion", r));
  auto comm = bootstrapNcclComm(nccl, job);
  if (!comm.ok()) return comm.status();
  return std::unique_ptr<GpuCollectives>(
      std::make_unique<NcclCollectives>(api, nccl, *comm, job.rank(), job.worldSize(), version));
}

absl::StatusOr<std::unique_ptr<GpuCollectives>> openNcclCollectives(GpuApi& api, Communicator& job) {
  // Without the device's own stream NCCL would enqueue on the legacy default stream, which a
  // capture refuses, and its work would not be ordered with the step's.
  if (!api.nativeStream())
    return absl::FailedPreconditionError(
        "data-parallel training on the cuda device needs the GPU's stream for NCCL, which this GpuApi does not expose "
        "(the dry run has none)");
  auto nccl = loadNccl();
  if (!nccl.ok()) return nccl.status();
  return makeNcclCollectives(api, job, **nccl);
}

}  // namespace amp::rt::cuda
