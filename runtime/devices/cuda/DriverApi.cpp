// GpuApi over the NVIDIA driver API and cuBLASLt, both dlopen'ed when the cuda device is created:
// amp-run links neither, so it starts on machines without them. Driver entry points come from
// cuGetProcAddress at the CUDA version of the headers this was compiled with, so each has the ABI
// this code expects. One primary context, one non-blocking stream, one cuBLASLt handle and
// workspace per device.
#include <dlfcn.h>

#include <map>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "runtime/devices/cuda/GpuApi.h"
#include "runtime/devices/cuda/GpuMemory.h"

#ifdef AMP_HAVE_CUDA
#include <cublasLt.h>
#include <cuda.h>
#endif

namespace amp::rt::cuda {

#ifndef AMP_HAVE_CUDA

absl::StatusOr<std::unique_ptr<GpuApi>> openDriverApi(int) {
  return absl::UnavailableError(
      "this amp-run was built without the CUDA toolkit, so --device=cuda is not available; use --device=cpu");
}

#else

namespace {

// The driver entry points used, resolved by cuGetProcAddress (base names; cuda.h maps each to
// the ABI version it declares).
#define AMP_CU_FUNCTIONS(X)                                                                                     \
  X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceGetAttribute) \
  X(cuDeviceTotalMem) X(cuMemGetInfo)                                                                           \
  X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) X(cuStreamCreate)                 \
  X(cuStreamDestroy) X(cuStreamSynchronize) X(cuMemAlloc) X(cuMemFree) X(cuMemHostAlloc) X(cuMemFreeHost)       \
  X(cuModuleLoadDataEx) X(cuModuleUnload) X(cuModuleGetFunction) X(cuLaunchKernel) X(cuMemcpyHtoDAsync)        \
  X(cuMemcpyDtoHAsync) X(cuMemcpyDtoDAsync) X(cuMemsetD32Async) X(cuStreamBeginCapture) X(cuStreamEndCapture)   \
  X(cuGraphInstantiateWithFlags) X(cuGraphLaunch) X(cuGraphExecDestroy) X(cuGraphDestroy) X(cuEventCreate)      \
  X(cuEventRecord) X(cuEventQuery) X(cuEventSynchronize) X(cuEventDestroy) X(cuEventElapsedTime)            \
  X(cuGetErrorName) X(cuGetErrorString)

#define AMP_LT_FUNCTIONS(X)                                                                              \
  X(cublasLtCreate) X(cublasLtDestroy) X(cublasLtMatmulDescCreate) X(cublasLtMatmulDescDestroy)          \
  X(cublasLtMatmulDescSetAttribute) X(cublasLtMatrixLayoutCreate) X(cublasLtMatrixLayoutDestroy)         \
  X(cublasLtMatrixLayoutSetAttribute) X(cublasLtMatmulPreferenceCreate) X(cublasLtMatmulPreferenceDestroy) \
  X(cublasLtMatmulPreferenceSetAttribute) X(cublasLtMatmulAlgoGetHeuristic) X(cublasLtMatmul)            \
  X(cublasLtGetStatusName) X(cublasLtGetStatusString)

struct Driver {
#define AMP_DECLARE(name) decltype(&::name) name = nullptr;
  AMP_CU_FUNCTIONS(AMP_DECLARE)
  AMP_LT_FUNCTIONS(AMP_DECLARE)
#undef AMP_DECLARE
};

cublasLtEpilogue_t cublasEpilogue(GemmEpilogue e) {
  switch (e) {
    case GemmEpilogue::None: return CUBLASLT_EPILOGUE_DEFAULT;
    case GemmEpilogue::Bias: return CUBLASLT_EPILOGUE_BIAS;
    case GemmEpilogue::ReluBias: return CUBLASLT_EPILOGUE_RELU_BIAS;
    case GemmEpilogue::Relu: return CUBLASLT_EPILOGUE_RELU;
    case GemmEpilogue::ReluAux: return CUBLASLT_EPILOGUE_RELU_AUX;
    case GemmEpilogue::ReluAuxBias: return CUBLASLT_EPILOGUE_RELU_AUX_BIAS;
    case GemmEpilogue::GeluBias: return CUBLASLT_EPILOGUE_GELU_BIAS;
    case GemmEpilogue::GeluAux: return CUBLASLT_EPILOGUE_GELU_AUX;
    case GemmEpilogue::GeluAuxBias: return CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    case GemmEpilogue::DRelu: return CUBLASLT_EPILOGUE_DRELU;
    case GemmEpilogue::DReluBgrad: return CUBLASLT_EPILOGUE_DRELU_BGRAD;
    case GemmEpilogue::DGelu: return CUBLASLT_EPILOGUE_DGELU;
    case GemmEpilogue::DGeluBgrad: return CUBLASLT_EPILOGUE_DGELU_BGRAD;
    case GemmEpilogue::BgradA: return CUBLASLT_EPILOGUE_BGRADA;
    case GemmEpilogue::BgradB: return CUBLASLT_EPILOGUE_BGRADB;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

constexpr const char* kNoGpuHint = "--device=cuda needs an NVIDIA GPU and its driver; use --device=cpu on this machine";

// Loads libcuda.so.1 and libcublasLt once per process; the handles stay open.
absl::StatusOr<const Driver*> loadDriver() {
  static Driver driver;
  static absl::Status status = [] {
    void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!cuda)
      return absl::UnavailableError(absl::StrCat("no NVIDIA driver: libcuda.so.1 cannot be loaded (", dlerror(), "); ",
                                                 kNoGpuHint));
    using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
    auto getProc = reinterpret_cast<GetProc>(dlsym(cuda, "cuGetProcAddress_v2"));
    if (!getProc)
      return absl::FailedPreconditionError(
          "the NVIDIA driver is too old (no cuGetProcAddress_v2, CUDA 12 or newer needed): update the driver");
#define AMP_RESOLVE(name)                                                                                      \
  {                                                                                                            \
    void* fn = nullptr;                                                                                        \
    CUdriverProcAddressQueryResult found;                                                                      \
    if (getProc(#name, &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &found) != CUDA_SUCCESS || !fn)         \
      return absl::FailedPreconditionError(absl::StrCat("the NVIDIA driver lacks " #name " for CUDA ",         \
                                                        CUDA_VERSION / 1000, ".", CUDA_VERSION % 1000 / 10,    \
                                                        ": update the driver"));                               \
    driver.name = reinterpret_cast<decltype(driver.name)>(fn);                                                 \
  }
    AMP_CU_FUNCTIONS(AMP_RESOLVE)
#undef AMP_RESOLVE
    const std::string ltName = absl::StrCat("libcublasLt.so.", CUBLAS_VER_MAJOR);
    void* lt = dlopen(ltName.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lt)
      return absl::UnavailableError(absl::StrCat("cuBLASLt cannot be loaded (", dlerror(),
                                                 "): install the CUDA toolkit's libraries or add their folder to "
                                                 "LD_LIBRARY_PATH"));
#define AMP_RESOLVE_LT(name)                                                                                  \
  driver.name = reinterpret_cast<decltype(driver.name)>(dlsym(lt, #name));                                    \
  if (!driver.name) return absl::FailedPreconditionError(absl::StrCat(ltName, " lacks " #name));
    AMP_LT_FUNCTIONS(AMP_RESOLVE_LT)
#undef AMP_RESOLVE_LT
    return absl::OkStatus();
  }();
  if (!status.ok()) return status;
  return &driver;
}

// A prepared matmul: its descriptor, its three layouts (C is D), the heuristic's algorithm.
struct Gemm {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo = {};
  float beta = 0.0f;
};

void destroyGemm(const Driver& d, Gemm& g) {
  if (g.desc) d.cublasLtMatmulDescDestroy(g.desc);
  for (cublasLtMatrixLayout_t l : {g.a, g.b, g.d})
    if (l) d.cublasLtMatrixLayoutDestroy(l);
  g = Gemm{};
}

// Each cuBLASLt attribute set, checked, with the attribute's name for the error (DriverApi::setDesc).
#define AMP_LT_DESC(desc, attr, value) setDesc(desc, attr, #attr, value)
#define AMP_LT_LAYOUT(layout, attr, value) setLayout(layout, attr, #attr, value)
#define AMP_LT_PREF(pref, attr, value) setPref(pref, attr, #attr, value)

class DriverApi final : public GpuApi {
 public:
  explicit DriverApi(const Driver& d) : d_(d) {}
  ~DriverApi() override {
    if (context_) d_.cuCtxSetCurrent(context_);
    for (auto& [key, g] : gemms_) {
      (void)key;
      destroyGemm(d_, g);
    }
    for (CUgraphExec g : graphs_) d_.cuGraphExecDestroy(g);
    for (CUevent e : events_) d_.cuEventDestroy(e);
    for (CUevent e : timers_) d_.cuEventDestroy(e);
    if (workspace_) d_.cuMemFree(workspace_);
    if (lt_) d_.cublasLtDestroy(lt_);
    if (module_) d_.cuModuleUnload(module_);
    if (stream_) d_.cuStreamDestroy(stream_);
    if (context_) d_.cuDevicePrimaryCtxRelease(device_);
  }

  absl::Status open(int ordinal) {
    CUresult r = d_.cuInit(0);
    if (r == CUDA_ERROR_NO_DEVICE) return absl::UnavailableError(absl::StrCat("the NVIDIA driver found no GPU; ", kNoGpuHint));
    if (r != CUDA_SUCCESS) return fail(r, "cuInit");
    int count = 0;
    if ((r = d_.cuDeviceGetCount(&count)) != CUDA_SUCCESS) return fail(r, "cuDeviceGetCount");
    if (ordinal < 0 || ordinal >= count)
      return absl::InvalidArgumentError(absl::StrCat("GPU ", ordinal, " does not exist (", count, " GPU(s))"));
    if ((r = d_.cuDeviceGet(&device_, ordinal)) != CUDA_SUCCESS) return fail(r, "cuDeviceGet");
    char name[256] = {};
    d_.cuDeviceGetName(name, sizeof name - 1, device_);
    info_.name = name;
    d_.cuDeviceGetAttribute(&info_.ccMajor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device_);
    d_.cuDeviceGetAttribute(&info_.ccMinor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device_);
    d_.cuDeviceGetAttribute(&info_.multiprocessors, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device_);
    d_.cuDriverGetVersion(&info_.driverVersion);
    size_t total = 0;
    if (d_.cuDeviceTotalMem(&total, device_) == CUDA_SUCCESS) info_.memoryBytes = static_cast<int64_t>(total);
    if ((r = d_.cuDevicePrimaryCtxRetain(&context_, device_)) != CUDA_SUCCESS) return fail(r, "cuDevicePrimaryCtxRetain");
    if ((r = d_.cuCtxSetCurrent(context_)) != CUDA_SUCCESS) return fail(r, "cuCtxSetCurrent");
    if ((r = d_.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS) return fail(r, "cuStreamCreate");
    cublasStatus_t s = d_.cublasLtCreate(&lt_);
    if (s != CUBLAS_STATUS_SUCCESS) return failLt(s, "cublasLtCreate");
    // cuBLASLt's recommendation: 32 MiB of workspace on Hopper, 4 MiB before it.
    workspaceBytes_ = info_.ccMajor >= 9 ? (size_t{32} << 20) : (size_t{4} << 20);
    if ((r = d_.cuMemAlloc(&workspace_, workspaceBytes_)) != CUDA_SUCCESS) return fail(r, "cuMemAlloc (cuBLASLt workspace)");
    return absl::OkStatus();
  }

  const GpuInfo& info() const override { return info_; }
  void* nativeStream() override { return stream_; }

  absl::StatusOr<DevicePtr> allocate(int64_t bytes) override {
    CUdeviceptr p = 0;
    if (CUresult r = d_.cuMemAlloc(&p, static_cast<size_t>(bytes > 0 ? bytes : 1)); r != CUDA_SUCCESS) {
      size_t freeBytes = 0, total = 0;
      if (r == CUDA_ERROR_OUT_OF_MEMORY && d_.cuMemGetInfo(&freeBytes, &total) == CUDA_SUCCESS)
        return gpuOutOfMemory(bytes, static_cast<int64_t>(freeBytes), static_cast<int64_t>(total));
      return fail(r, absl::StrCat("cuMemAlloc(", bytes, " bytes)"));
    }
    return static_cast<DevicePtr>(p);
  }
  void release(DevicePtr p) override { d_.cuMemFree(static_cast<CUdeviceptr>(p)); }
  absl::StatusOr<void*> allocatePinned(int64_t bytes) override {
    void* p = nullptr;
    if (CUresult r = d_.cuMemHostAlloc(&p, static_cast<size_t>(bytes > 0 ? bytes : 1), 0); r != CUDA_SUCCESS)
      return fail(r, absl::StrCat("cuMemHostAlloc(", bytes, " bytes)"));
    return p;
  }
  void releasePinned(void* p) override { d_.cuMemFreeHost(p); }

  absl::Status loadModule(const std::vector<uint8_t>& image, bool ptx) override {
    if (module_) return absl::FailedPreconditionError("a code object is already loaded");
    std::vector<uint8_t> text;
    const void* data = image.data();
    if (ptx) {  // the driver takes PTX as a NUL-terminated string
      text = image;
      text.push_back(0);
      data = text.data();
    }
    char log[8192] = {};
    CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void* values[] = {log, reinterpret_cast<void*>(sizeof log - 1)};
    if (CUresult r = d_.cuModuleLoadDataEx(&module_, data, 2, options, values); r != CUDA_SUCCESS) {
      module_ = nullptr;
      return fail(r, absl::StrCat("loading the bundle's ", ptx ? "PTX" : "cubin", log[0] ? ": " : "", log));
    }
    return absl::OkStatus();
  }
  absl::StatusOr<KernelFn> function(const std::string& name) override {
    CUfunction f = nullptr;
    if (CUresult r = d_.cuModuleGetFunction(&f, module_, name.c_str()); r != CUDA_SUCCESS)
      return fail(r, absl::StrCat("kernel ", name, " is not in the bundle's code object"));
    return static_cast<KernelFn>(f);
  }

  absl::Status launch(KernelFn fn, int64_t blocks, int threads, void** params, int64_t blocksY,
                      absl::Span<const size_t>) override {
    if (blocks <= 0 || blocksY <= 0) return absl::OkStatus();
    return check(d_.cuLaunchKernel(static_cast<CUfunction>(fn), static_cast<unsigned>(blocks),
                                   static_cast<unsigned>(blocksY), 1,
                                   static_cast<unsigned>(threads), 1, 1, 0, stream_, params, nullptr),
                 "cuLaunchKernel");
  }
  absl::Status copyToDevice(DevicePtr dst, const void* src, int64_t bytes) override {
    if (bytes <= 0) return absl::OkStatus();
    return check(d_.cuMemcpyHtoDAsync(dst, src, static_cast<size_t>(bytes), stream_), "cuMemcpyHtoDAsync");
  }
  absl::Status copyToHost(void* dst, DevicePtr src, int64_t bytes) override {
    if (bytes <= 0) return absl::OkStatus();
    return check(d_.cuMemcpyDtoHAsync(dst, src, static_cast<size_t>(bytes), stream_), "cuMemcpyDtoHAsync");
  }
  absl::Status copyOnDevice(DevicePtr dst, DevicePtr src, int64_t bytes) override {
    if (bytes <= 0 || dst == src) return absl::OkStatus();
    return check(d_.cuMemcpyDtoDAsync(dst, src, static_cast<size_t>(bytes), stream_), "cuMemcpyDtoDAsync");
  }
  absl::Status fill32(DevicePtr dst, uint32_t value, int64_t count) override {
    if (count <= 0) return absl::OkStatus();
    return check(d_.cuMemsetD32Async(dst, value, static_cast<size_t>(count), stream_), "cuMemsetD32Async");
  }

  absl::StatusOr<GemmId> prepareGemm(const GemmPlan& p) override {
    const auto key = std::make_tuple(int(p.dtype), p.transA, p.transB, p.m, p.n, p.k, p.lda, p.ldb, p.ldc, p.batch,
                                     p.strideA, p.strideB, p.strideC, int(p.epilogue), p.accumulate, p.auxLd,
                                     std::make_tuple(p.alignment.a, p.alignment.b, p.alignment.d, p.alignment.bias,
                                                     p.alignment.aux));
    if (auto it = ids_.find(key); it != ids_.end()) return it->second;
    Gemm g;
    // Whatever was created is destroyed on every error path.
    struct Cleanup {
      const Driver& d;
      Gemm* g;
      cublasLtMatmulPreference_t pref = nullptr;
      ~Cleanup() {
        if (pref) d.cublasLtMatmulPreferenceDestroy(pref);
        if (g) destroyGemm(d, *g);
      }
    } cleanup{d_, &g};
    g.beta = p.accumulate ? 1.0f : 0.0f;
    const cudaDataType_t t = p.dtype == DType::BF16 ? CUDA_R_16BF : p.dtype == DType::F16 ? CUDA_R_16F : CUDA_R_32F;
    cublasStatus_t s = d_.cublasLtMatmulDescCreate(&g.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    if (s != CUBLAS_STATUS_SUCCESS) return failLt(s, "cublasLtMatmulDescCreate");
    const cublasOperation_t ta = p.transA ? CUBLAS_OP_T : CUBLAS_OP_N, tb = p.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasLtEpilogue_t epilogue = cublasEpilogue(p.epilogue);
    // The bias, and a bias gradient, in D's type (the plan's bias gradients have it).
    const bool biasPointer = epilogueReadsBias(p.epilogue) || epilogueWritesBiasGrad(p.epilogue);
    const bool auxPointer = epilogueAux(p.epilogue) != GemmAux::None;
    // The heuristic reads the bias and aux pointers' values (never what they point to) for their
    // alignment (GemmAlignment), so it is given stand-in addresses of that alignment; gemm() sets
    // the real ones.
    const uint64_t biasStandIn = static_cast<uint64_t>(p.alignment.bias), auxStandIn = static_cast<uint64_t>(p.alignment.aux);
    absl::Status st = AMP_LT_DESC(g.desc, CUBLASLT_MATMUL_DESC_TRANSA, ta);
    if (st.ok()) st = AMP_LT_DESC(g.desc, CUBLASLT_MATMUL_DESC_TRANSB, tb);
    if (st.ok()) st = AMP_LT_DESC(g.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue);
    if (st.ok() && biasPointer) st = AMP_LT_DESC(g.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, t);
    if (st.ok() && biasPointer) st = AMP_LT_DESC(g.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, biasStandIn);
    if (st.ok() && auxPointer) st = AMP_LT_DESC(g.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, p.auxLd);
    if (st.ok() && auxPointer) st = AMP_LT_DESC(g.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, auxStandIn);
    if (!st.ok()) return st;
    auto layout = [&](cublasLtMatrixLayout_t& l, const char* which, int64_t rows, int64_t cols, int64_t ld,
                      int64_t stride) -> absl::Status {
      if (cublasStatus_t r = d_.cublasLtMatrixLayoutCreate(&l, t, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), ld);
          r != CUBLAS_STATUS_SUCCESS)
        return failLt(r, absl::StrCat("cublasLtMatrixLayoutCreate (", which, ")"));
      if (p.batch <= 1) return absl::OkStatus();
      const int32_t count = static_cast<int32_t>(p.batch);
      absl::Status a = AMP_LT_LAYOUT(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, count);
      if (a.ok()) a = AMP_LT_LAYOUT(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, stride);
      if (!a.ok()) return absl::Status(a.code(), absl::StrCat(a.message(), " (layout ", which, ")"));
      return absl::OkStatus();
    };
    if (st.ok()) st = layout(g.a, "A", p.transA ? p.k : p.m, p.transA ? p.m : p.k, p.lda, p.strideA);
    if (st.ok()) st = layout(g.b, "B", p.transB ? p.n : p.k, p.transB ? p.k : p.n, p.ldb, p.strideB);
    if (st.ok()) st = layout(g.d, "D", p.m, p.n, p.ldc, p.strideC);
    if (!st.ok()) return st;
    if (cublasStatus_t r = d_.cublasLtMatmulPreferenceCreate(&cleanup.pref); r != CUBLAS_STATUS_SUCCESS)
      return failLt(r, "cublasLtMatmulPreferenceCreate");
    cublasLtMatmulPreference_t pref = cleanup.pref;
    // Split-K may add its partial sums in D's own type (the INPLACE and OUTPUT_TYPE schemes), which
    // would round a bf16/f16 result more than once. Only sums kept in f32 are allowed.
    const uint32_t reductions = CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    // Only algorithms that work at the calls' pointer alignments (GemmAlignment).
    const uint32_t alignA = static_cast<uint32_t>(p.alignment.a), alignB = static_cast<uint32_t>(p.alignment.b),
                   alignD = static_cast<uint32_t>(p.alignment.d);
    st = AMP_LT_PREF(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, workspaceBytes_);
    if (st.ok()) st = AMP_LT_PREF(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, reductions);
    if (st.ok()) st = AMP_LT_PREF(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignA);
    if (st.ok()) st = AMP_LT_PREF(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignB);
    if (st.ok()) st = AMP_LT_PREF(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, alignD);
    if (st.ok()) st = AMP_LT_PREF(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignD);
    if (!st.ok()) return st;
    cublasLtMatmulHeuristicResult_t result = {};
    int found = 0;
    s = d_.cublasLtMatmulAlgoGetHeuristic(lt_, g.desc, g.a, g.b, g.d, g.d, pref, 1, &result, &found);
    // NOT_SUPPORTED: no heuristic for this configuration, which is "no algorithm" as well; the
    // device answers both with a plainer call where it has one (GemmVariants.h).
    if ((s == CUBLAS_STATUS_SUCCESS && found == 0) || s == CUBLAS_STATUS_NOT_SUPPORTED) return noGemmAlgorithm(p);
    if (s != CUBLAS_STATUS_SUCCESS) return failLt(s, "cublasLtMatmulAlgoGetHeuristic");
    g.algo = result.algo;
    const GemmId id = static_cast<GemmId>(gemms_.size());
    gemms_.emplace(id, g);
    cleanup.g = nullptr;  // kept: the destructor destroys it
    ids_.emplace(key, id);
    return id;
  }

  absl::Status gemm(GemmId id, DevicePtr a, DevicePtr b, DevicePtr bias, DevicePtr d, DevicePtr aux) override {
    auto it = gemms_.find(id);
    if (it == gemms_.end()) return absl::InvalidArgumentError(absl::StrCat("cuBLASLt: GEMM ", id, " was never prepared"));
    Gemm& g = it->second;
    if (bias)
      if (auto st = AMP_LT_DESC(g.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias); !st.ok()) return st;
    if (aux)
      if (auto st = AMP_LT_DESC(g.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, aux); !st.ok()) return st;
    const float one = 1.0f;
    // cuBLASLt's A is the step's b and its B the step's a (GemmPlan.h). C is D: with beta = 1 the
    // product adds to D in place, which cuBLASLt allows when C and D share one layout.
    const cublasStatus_t s = d_.cublasLtMatmul(lt_, g.desc, &one, reinterpret_cast<const void*>(b), g.a,
                                               reinterpret_cast<const void*>(a), g.b, &g.beta,
                                               reinterpret_cast<void*>(d), g.d, reinterpret_cast<void*>(d), g.d,
                                               &g.algo, reinterpret_cast<void*>(workspace_), workspaceBytes_, stream_);
    return s == CUBLAS_STATUS_SUCCESS ? absl::OkStatus() : failLt(s, "cublasLtMatmul");
  }

  absl::Status beginCapture() override {
    return check(d_.cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "cuStreamBeginCapture");
  }
  absl::StatusOr<GraphId> endCapture() override {
    CUgraph graph = nullptr;
    if (CUresult r = d_.cuStreamEndCapture(stream_, &graph); r != CUDA_SUCCESS) return fail(r, "cuStreamEndCapture");
    CUgraphExec exec = nullptr;
    const CUresult r = d_.cuGraphInstantiateWithFlags(&exec, graph, 0);
    d_.cuGraphDestroy(graph);
    if (r != CUDA_SUCCESS) return fail(r, "cuGraphInstantiateWithFlags");
    graphs_.push_back(exec);
    return static_cast<GraphId>(graphs_.size() - 1);
  }
  absl::Status launchGraph(GraphId graph) override { return check(d_.cuGraphLaunch(graphs_.at(graph), stream_), "cuGraphLaunch"); }

  absl::Status recordEvent(int slot) override {
    while (static_cast<int>(events_.size()) <= slot) {
      CUevent e = nullptr;
      if (CUresult r = d_.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING); r != CUDA_SUCCESS) return fail(r, "cuEventCreate");
      events_.push_back(e);
    }
    return check(d_.cuEventRecord(events_[slot], stream_), "cuEventRecord");
  }
  bool eventDone(int slot) override { return slot < static_cast<int>(events_.size()) && d_.cuEventQuery(events_[slot]) == CUDA_SUCCESS; }
  absl::Status waitEvent(int slot) override {
    ++syncs_;
    if (slot >= static_cast<int>(events_.size())) return absl::OkStatus();
    return check(d_.cuEventSynchronize(events_[slot]), "cuEventSynchronize");
  }
  absl::Status synchronize() override {
    ++syncs_;
    return check(d_.cuStreamSynchronize(stream_), "the GPU's work");
  }
  absl::Status recordTimer(int timer) override {
    while (static_cast<int>(timers_.size()) <= timer) {
      CUevent e = nullptr;
      if (CUresult r = d_.cuEventCreate(&e, CU_EVENT_DEFAULT); r != CUDA_SUCCESS) return fail(r, "cuEventCreate");
      timers_.push_back(e);
    }
    return check(d_.cuEventRecord(timers_[timer], stream_), "cuEventRecord");
  }
  absl::StatusOr<float> elapsedMs(int from, int to) override {
    if (from < 0 || to < 0 || from >= static_cast<int>(timers_.size()) || to >= static_cast<int>(timers_.size()))
      return absl::InvalidArgumentError("elapsedMs: a timer never recorded");
    float ms = 0;
    if (auto s = check(d_.cuEventElapsedTime(&ms, timers_[from], timers_[to]), "cuEventElapsedTime"); !s.ok()) return s;
    return ms;
  }
  int64_t hostSyncs() const override { return syncs_; }

 private:

  absl::Status fail(CUresult r, const std::string& what) const {
    const char* name = nullptr;
    const char* text = nullptr;
    d_.cuGetErrorName(r, &name);
    d_.cuGetErrorString(r, &text);
    return absl::InternalError(absl::StrCat("cuda: ", what, " failed: ", name ? name : "?", " (", text ? text : "", ")"));
  }
  // "cuBLASLt: setting CUBLASLT_MATMUL_DESC_EPILOGUE failed: status 15 (CUBLAS_STATUS_NOT_SUPPORTED: ...)".
  absl::Status failLt(cublasStatus_t s, const std::string& what) const {
    const char* name = d_.cublasLtGetStatusName(s);
    const char* text = d_.cublasLtGetStatusString(s);
    return absl::InternalError(absl::StrCat("cuBLASLt: ", what, " failed: status ", static_cast<int>(s), " (",
                                            name ? name : "?", text && *text ? absl::StrCat(": ", text) : "", ")"));
  }
  // Each attribute set is checked and, on failure, named: the macros below pass its name.
  template <class T>
  absl::Status setDesc(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const char* name, const T& value) const {
    const cublasStatus_t s = d_.cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof value);
    return s == CUBLAS_STATUS_SUCCESS ? absl::OkStatus() : failLt(s, absl::StrCat("setting ", name));
  }
  template <class T>
  absl::Status setLayout(cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr, const char* name,
                         const T& value) const {
    const cublasStatus_t s = d_.cublasLtMatrixLayoutSetAttribute(layout, attr, &value, sizeof value);
    return s == CUBLAS_STATUS_SUCCESS ? absl::OkStatus() : failLt(s, absl::StrCat("setting ", name));
  }
  template <class T>
  absl::Status setPref(cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, const char* name,
                       const T& value) const {
    const cublasStatus_t s = d_.cublasLtMatmulPreferenceSetAttribute(pref, attr, &value, sizeof value);
    return s == CUBLAS_STATUS_SUCCESS ? absl::OkStatus() : failLt(s, absl::StrCat("setting ", name));
  }
  absl::Status check(CUresult r, const std::string& what) const { return r == CUDA_SUCCESS ? absl::OkStatus() : fail(r, what); }

  const Driver& d_;
  GpuInfo info_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
  CUmodule module_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  CUdeviceptr workspace_ = 0;
  size_t workspaceBytes_ = 0;
  std::map<GemmId, Gemm> gemms_;
  std::map<std::tuple<int, bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                      int64_t, int, bool, int64_t,
                      std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>>,
           GemmId>
      ids_;
  std::vector<CUgraphExec> graphs_;
  std::vector<CUevent> events_;
  std::vector<CUevent> timers_;  // profiling: timing enabled
  int64_t syncs_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<GpuApi>> openDriverApi(int ordinal) {
  auto driver = loadDriver();
  if (!driver.ok()) return driver.status();
  auto api = std::make_unique<DriverApi>(**driver);
  if (absl::Status s = api->open(ordinal); !s.ok()) return s;
  return std::unique_ptr<GpuApi>(std::move(api));
}

#endif  // AMP_HAVE_CUDA

}  // namespace amp::rt::cuda
