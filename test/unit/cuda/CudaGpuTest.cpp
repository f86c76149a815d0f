// The cuda device on a GPU (ctest label "gpu"; each test skips itself where the driver sees no GPU,
// which is every machine the suite usually runs on, and only there; scripts/gpu-check.sh runs them
// on one, each in its own process): what only a GPU shows beyond the conformance suite (test/unit/conformance, where every
// bundle's entries and a run of training steps agree with the reference). On the examples' cuda
// bundles: a step whose gradients overflow changes no state bit, a steady-state synchronous call is
// one graph launch and one wait, an enqueued one waits for nothing and logs the cpu device's losses,
// and --check-numerics gives the cpu device's verdict; the library kernels give the reference's bits.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <random>

#include "gtest/gtest.h"
#include "runtime/devices/cuda/CudaExecutor.h"
#include "runtime/devices/cuda/NcclCollectives.h"
#include "runtime/dist/Communicator.h"
#include "runtime/exec/Session.h"
#include "runtime/numerics/Convert.h"
#include "runtime/plan/Bundle.h"
#include "runtime/devices/Devices.h"
#include "test/unit/common/RandomBatch.h"
#include "test/unit/cuda/TestBundles.h"

namespace amp::rt::cuda {
namespace {

std::string bundlePath(const std::string& name) { return testBundlePath(name); }

// Only a machine whose driver sees no GPU skips. On one where it does, a bundle that fails to
// load or a device that fails to start fails the test.
#define SKIP_WITHOUT_A_GPU()                                                                    \
  if (!cudaDriverSeesAGpu()) {                                                                  \
    auto api = openDriverApi(0);                                                                \
    GTEST_SKIP() << "the NVIDIA driver sees no GPU here"                                        \
                 << (api.ok() ? std::string() : ": " + std::string(api.status().message())); \
  }

// The GPU's session for a bundle, with the raw GpuApi for counting; no session (and a failure)
// when the device does not open.
struct GpuSession {
  GpuApi* api = nullptr;
  std::optional<Session> session;
};

GpuSession openGpu(const Plan& plan, CudaOptions options = {}) {
  GpuSession g;
  auto api = openDriverApi(0);
  EXPECT_TRUE(api.ok()) << "the driver sees a GPU, but the cuda device does not open: " << api.status();
  if (!api.ok()) return g;
  g.api = api->get();
  auto session = Session::create(plan, makeCudaExecutor(std::move(*api), options));
  EXPECT_TRUE(session.ok()) << session.status();
  if (session.ok()) g.session.emplace(std::move(*session));
  return g;
}

// Deterministic batches, seeded by the step.
std::map<std::string, Tensor> batch(const Plan& plan, int step) { return test::randomBatch(plan, 1000 + step); }

double lossOf(const std::vector<NamedTensor>& out) {
  for (const NamedTensor& t : out)
    if (t.name == "loss") return loadAsF32(t.tensor.dtype(), t.tensor.data(), 0);
  return NAN;
}

class CudaGpu : public ::testing::TestWithParam<std::string> {};
// The bundles with dynamic loss scaling (f16), whose steps can overflow.
class CudaGpuDynamicScaling : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaGpuDynamicScaling, AnOverflowedStepChangesNoStateBit) {
  SKIP_WITHOUT_A_GPU();
  auto plan = readBundle(bundlePath(GetParam()));
  ASSERT_TRUE(plan.ok()) << plan.status();  // with a GPU, a missing bundle is a broken package
  ASSERT_EQ(plan->trainingConfig()->lossScaling, ScalingKind::Dynamic);
  GpuSession gpu = openGpu(*plan);
  ASSERT_TRUE(gpu.session.has_value());
  for (int step = 0; step < 3; ++step) ASSERT_TRUE(gpu.session->run("train_step", batch(*plan, step)).ok());
  ASSERT_TRUE(gpu.session->syncPersistent().ok());
  std::map<std::string, std::vector<uint8_t>> before;
  for (const NamedTensorRef& t : gpu.session->persistent())
    before[t.name].assign(t.tensor->data(), t.tensor->data() + t.tensor->nbytes());
  auto poisoned = batch(*plan, 3);
  for (auto& [name, t] : poisoned)
    if (t.dtype() == DType::F32) t.as<float>()[0] = INFINITY;
  ASSERT_TRUE(gpu.session->run("train_step", poisoned).ok());
  ASSERT_TRUE(gpu.session->syncPersistent().ok());
  for (const NamedTensorRef& t : gpu.session->persistent()) {
    const std::vector<uint8_t>& b = before[t.name];
    const bool same = std::equal(b.begin(), b.end(), t.tensor->data());
    if (t.name == "amp.loss_scale" || t.name == "amp.growth_tracker" || t.name == "amp.skipped_steps") {
      EXPECT_FALSE(same && t.name != "amp.growth_tracker") << t.name << " records the skipped step";
    } else {
      EXPECT_TRUE(same) << t.name << " changed on a skipped step";
    }
  }
}

TEST_P(CudaGpu, ASteadyStateCallIsOneGraphLaunchAndOneWait) {
  SKIP_WITHOUT_A_GPU();
  auto plan = readBundle(bundlePath(GetParam()));
  ASSERT_TRUE(plan.ok()) << plan.status();  // with a GPU, a missing bundle is a broken package
  GpuSession gpu = openGpu(*plan);
  ASSERT_TRUE(gpu.session.has_value());
  auto feeds = batch(*plan, 0);
  ASSERT_TRUE(gpu.session->run("train_step", feeds).ok());
  const int64_t before = gpu.api->hostSyncs();
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(gpu.session->run("train_step", feeds).ok());
  EXPECT_EQ(gpu.api->hostSyncs() - before, 10) << "one wait per call: the results' copy";
}

// Training as amp-run does it: each step enqueued, its scalar log read when the GPU has written
// it. A host that never gets ahead of the GPU (here: it waits for the previous step's log by
// polling, which never blocks) makes no host synchronisation at all, and the logged losses are
// the cpu device's.
TEST_P(CudaGpu, EnqueuedTrainingNeverWaitsAndLogsTheCpuLosses) {
  SKIP_WITHOUT_A_GPU();
  auto plan = readBundle(bundlePath(GetParam()));
  ASSERT_TRUE(plan.ok()) << plan.status();  // with a GPU, a missing bundle is a broken package
  GpuSession gpu = openGpu(*plan);
  ASSERT_TRUE(gpu.session.has_value());
  auto cpu = openSession(*plan, Device::Cpu);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  constexpr int kSteps = 20;
  std::vector<double> cpuLoss, gpuLoss;
  for (int step = 0; step < kSteps; ++step) {
    Session::RunOptions options;
    options.step = step + 1;
    auto c = cpu->run("train_step", batch(*plan, step % 4), options);
    ASSERT_TRUE(c.ok()) << c.status();
    cpuLoss.push_back(lossOf(*c));
  }
  auto deliver = [&](const LoggedCall& call) {
    EXPECT_EQ(call.ticket(), static_cast<int64_t>(gpuLoss.size())) << "logs arrive in call order";
    gpuLoss.push_back(call.result("loss").value_or(NAN));
  };
  int64_t syncsAfterFirst = 0;
  for (int step = 0; step < kSteps; ++step) {
    Session::RunOptions options;
    options.step = step + 1;
    const int64_t before = gpu.api->hostSyncs();
    ASSERT_TRUE(gpu.session->enqueue("train_step", batch(*plan, step % 4), options, step).ok());
    for (int spin = 0; spin < 1000000 && static_cast<int>(gpuLoss.size()) < step + 1; ++spin)
      ASSERT_TRUE(gpu.session->poll("train_step", false, deliver).ok());
    if (step > 0) syncsAfterFirst += gpu.api->hostSyncs() - before;
  }
  ASSERT_TRUE(gpu.session->poll("train_step", true, deliver).ok());
  EXPECT_EQ(syncsAfterFirst, 0) << "a steady-state step waits for nothing";
  ASSERT_EQ(gpuLoss.size(), cpuLoss.size());
  for (int step = 0; step < kSteps; ++step)
    EXPECT_NEAR(gpuLoss[step], cpuLoss[step], 0.02 * std::fabs(cpuLoss[step]) + 1e-3) << "step " << step;
}

// --check-numerics gives the cpu device's verdict: an input of 1e30 overflows wherever the model
// casts it to f16 (the same step and message on both devices), and a failed call changes no
// param or state bit.
TEST_P(CudaGpu, CheckNumericsGivesTheCpuDevicesVerdict) {
  SKIP_WITHOUT_A_GPU();
  auto plan = readBundle(bundlePath(GetParam()));
  ASSERT_TRUE(plan.ok()) << plan.status();  // with a GPU, a missing bundle is a broken package
  GpuSession gpu = openGpu(*plan);
  ASSERT_TRUE(gpu.session.has_value());
  auto cpu = openSession(*plan, Device::Cpu);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  Session::RunOptions checked;
  checked.checkNumerics = true;
  auto clean = batch(*plan, 0);
  auto g = gpu.session->run("train_step", clean, checked);
  auto c = cpu->run("train_step", clean, checked);
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_NEAR(lossOf(*g), lossOf(*c), 0.02 * std::fabs(lossOf(*c)) + 1e-3);
  ASSERT_TRUE(gpu.session->syncPersistent().ok());
  std::map<std::string, std::vector<uint8_t>> before;
  for (const NamedTensorRef& t : gpu.session->persistent())
    before[t.name].assign(t.tensor->data(), t.tensor->data() + t.tensor->nbytes());
  auto poisoned = batch(*plan, 1);
  for (auto& [name, t] : poisoned)
    if (t.dtype() == DType::F32) t.as<float>()[0] = 1e30f;
  auto gp = gpu.session->run("train_step", poisoned, checked);
  auto cp = cpu->run("train_step", poisoned, checked);
  ASSERT_EQ(gp.ok(), cp.ok()) << (gp.ok() ? cp.status() : gp.status());
  if (!gp.ok()) {
    EXPECT_EQ(gp.status().message(), cp.status().message());
    ASSERT_TRUE(gpu.session->syncPersistent().ok());
    for (const NamedTensorRef& t : gpu.session->persistent()) {
      const std::vector<uint8_t>& b = before[t.name];
      EXPECT_TRUE(std::equal(b.begin(), b.end(), t.tensor->data())) << t.name << " changed by a failed checked call";
    }
  }
}

// Per-op parity: models that use every library kernel once and no GEMM (test/unit/cuda/models/
// op_parity_*.mlir), their eval and grads entries on the GPU and on the reference executor from the
// same params and batch: every result bit for bit (a NaN matches any NaN), except mse_loss's value,
// which the GPU sums in a tree (docs/cuda-device.md).
// The eval and grads entries of `plan` on the GPU and on the reference executor from the same
// batch; `check(name, gpuResult, referenceResult)` for each pair of results.
template <class Check>
void compareWithTheReference(GpuSession& gpu, const Plan& plan, const Check& check) {
  auto ref = openSession(plan, Device::Reference);
  ASSERT_TRUE(ref.ok()) << ref.status();
  const auto feeds = batch(plan, 0);
  for (const char* entry : {"eval", "grads"}) {
    SCOPED_TRACE(entry);
    auto g = gpu.session->run(entry, feeds);
    auto r = ref->run(entry, feeds);
    ASSERT_TRUE(g.ok()) << g.status();
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(g->size(), r->size());
    for (size_t k = 0; k < g->size(); ++k) {
      ASSERT_EQ((*g)[k].tensor.shape(), (*r)[k].tensor.shape()) << (*g)[k].name;
      check((*g)[k].name, (*g)[k].tensor, (*r)[k].tensor);
    }
  }
}

// A check that every element is within `relative` of the expected result's largest magnitude.
std::function<void(const std::string&, const Tensor&, const Tensor&)> withinBound(double relative) {
  return [relative](const std::string& result, const Tensor& a, const Tensor& b) {
    double largest = 0;
    for (int64_t i = 0; i < b.numel(); ++i) largest = std::max(largest, std::fabs(double(loadAsF32(b.dtype(), b.data(), i))));
    int64_t differ = 0;
    for (int64_t i = 0; i < a.numel(); ++i) {
      const double x = loadAsF32(a.dtype(), a.data(), i), y = loadAsF32(b.dtype(), b.data(), i);
      if (!(std::fabs(x - y) <= relative * largest + 1e-7) && ++differ <= 3)
        ADD_FAILURE() << result << "[" << i << "]: GPU " << x << ", reference " << y;
    }
    EXPECT_EQ(differ, 0) << result;
  };
}

// One test per family of library kernels, so that scripts/gpu-check.sh runs each in its own process
// (with AMP_CUDA_SYNC_EACH_LAUNCH=1): a fault in one family leaves the others' verdicts standing.
struct KernelFamily {
  const char* name;    // the test's name
  const char* bundle;  // a model that runs every kernel of the family once
};
void PrintTo(const KernelFamily& f, std::ostream* os) { *os << f.bundle; }
class LibraryKernels : public ::testing::TestWithParam<KernelFamily> {};

TEST_P(LibraryKernels, GiveTheReferencesBits) {
  const std::string name = GetParam().bundle;
  SKIP_WITHOUT_A_GPU();
  auto plan = readBundle(bundlePath(name));
  ASSERT_TRUE(plan.ok()) << plan.status();  // with a GPU, a missing bundle is a broken package
  CudaOptions exact;
  exact.conv = ConvAlgorithm::Direct;  // the implicit GEMMs sum in cuBLASLt's order (a test below)
  GpuSession gpu = openGpu(*plan, exact);
  ASSERT_TRUE(gpu.session.has_value());
  compareWithTheReference(gpu, *plan, [&](const std::string& result, const Tensor& a, const Tensor& b) {
    const bool summedInATree = result == "loss" && name.find("sequence") != std::string::npos;
    int64_t differ = 0;
    for (int64_t i = 0; i < a.numel(); ++i) {
      const float x = loadAsF32(a.dtype(), a.data(), i), y = loadAsF32(b.dtype(), b.data(), i);
      if (std::isnan(x) && std::isnan(y)) continue;
      const bool same = summedInATree ? std::fabs(x - y) <= 1e-5f * std::fabs(y)
                                      : std::memcmp(a.data() + i * dtypeSize(a.dtype()), b.data() + i * dtypeSize(b.dtype()),
                                                    dtypeSize(a.dtype())) == 0;
      if (!same && ++differ <= 3) ADD_FAILURE() << result << "[" << i << "]: GPU " << x << ", reference " << y;
    }
    EXPECT_EQ(differ, 0) << result;
  });
}

// Sequence: embedding, transpose, softmax, log_softmax, layer/rms norm, gelu, slice, concat, reductions,
// mse_loss. Image: direct convolutions, pooling, reductions, cross-entropy. BatchNorm: batch_norm over
// [N, C, H, W] and [N, C].
INSTANTIATE_TEST_SUITE_P(CudaGpuParity, LibraryKernels,
                         ::testing::Values(KernelFamily{"Sequence", "op_parity_sequence_bf16_sm_90"},
                                           KernelFamily{"Image", "op_parity_conv_f32_sm_90"},
                                           KernelFamily{"BatchNorm", "op_parity_batch_norm_bf16_sm_90"}),
                         [](const ::testing::TestParamInfo<KernelFamily>& info) { return std::string(info.param.name); });

// The running statistics a train step writes (op_parity_batch_norm: [N, C, H, W] and [N, C], momentum
// 0.1 and 0.3) are the reference's bits: batch statistics in f32 in the reference's order, and
// PyTorch's unbiased update, over the direct convolutions' exact output. One step, from the same
// initial params and state.
TEST(CudaGpuParity, BatchNormRunningStatisticsAreTheReferencesBits) {
  SKIP_WITHOUT_A_GPU();
  auto plan = readBundle(bundlePath("op_parity_batch_norm_bf16_sm_90"));
  ASSERT_TRUE(plan.ok()) << plan.status();  // with a GPU, a missing bundle is a broken package
  CudaOptions exact;
  exact.conv = ConvAlgorithm::Direct;
  GpuSession gpu = openGpu(*plan, exact);
  ASSERT_TRUE(gpu.session.has_value());
  auto ref = openSession(*plan, Device::Reference);
  ASSERT_TRUE(ref.ok()) << ref.status();
  Session::RunOptions options;
  options.step = 1;
  ASSERT_TRUE(gpu.session->run("train_step", batch(*plan, 0), options).ok());
  ASSERT_TRUE(ref->run("train_step", batch(*plan, 0), options).ok());
  ASSERT_TRUE(gpu.session->syncPersistent().ok());
  std::map<std::string, const Tensor*> want;
  for (const NamedTensorRef& t : ref->persistent()) want[t.name] = t.tensor;
  int compared = 0;
  for (const NamedTensorRef& t : gpu.session->persistent()) {
    if (t.name.find(".running_") == std::string::npos) continue;
    ++compared;
    ASSERT_EQ(want.count(t.name), 1u) << t.name;
    EXPECT_EQ(std::memcmp(t.tensor->data(), want[t.name]->data(), t.tensor->nbytes()), 0) << t.name;
  }
  EXPECT_EQ(compared, 4) << "bn1 and bn2, mean and variance";
}

// The implicit-GEMM convolutions (the default) against the reference: every result of eval and
// grads of the f32 conv model within a summation-order bound of the result's largest magnitude
// (cuBLASLt adds the same f32 products in its own order; f32 inputs, no TF32).
// Also under a columns limit that runs the second conv's input gradient one image at a time
// (CudaExecutor.ColumnsBeyondTheLimitRunInChunksOfImages checks that it does).
TEST(CudaGpuParity, ImplicitGemmConvolutionsAgreeWithTheReferenceWithinSummationOrder) {
  SKIP_WITHOUT_A_GPU();
  auto plan = readBundle(bundlePath("op_parity_conv_f32_sm_90"));
  ASSERT_TRUE(plan.ok()) << plan.status();  // with a GPU, a missing bundle is a broken package
  CudaOptions chunked;
  chunked.convColumnsLimitBytes = 4864;
  for (const CudaOptions& options : {CudaOptions{}, chunked}) {
    SCOPED_TRACE(options.convColumnsLimitBytes);
    GpuSession gpu = openGpu(*plan, options);
    ASSERT_TRUE(gpu.session.has_value());
    compareWithTheReference(gpu, *plan, withinBound(1e-5));
  }
}

// Bundles compiled with `ampc --gemm-epilogues=cublaslt` (amp.gemm_epilogue steps) against the
// reference, which runs each such step as the unfused ops it replaces: f32 within the GEMMs'
// summation-order bound; bf16 within the bound the host emulation of the same epilogues reaches
// (test/unit/cuda/GemmEpiloguesTest.cpp: 0.0077 of a result's largest magnitude), so a cuBLASLt
// whose epilogues differ from their documented meaning (a mask of other bits, another GELU, a
// bias gradient over the wrong axis) fails here.
TEST(CudaGpuParity, CublasLtTrainingEpiloguesAgreeWithTheReferenceWithinBounds) {
  for (const auto& [name, bound] : {std::pair<const char*, double>{"mlp_epilogues_f32_sm_90", 1e-5},
                                    {"mlp_epilogues_bf16_sm_90", 0.02}, {"transformer_lm_epilogues_bf16_sm_90", 0.02}}) {
    SCOPED_TRACE(name);
    SKIP_WITHOUT_A_GPU();
    auto plan = readBundle(bundlePath(name));
    ASSERT_TRUE(plan.ok()) << plan.status();  // with a GPU, a missing bundle is a broken package
    GpuSession gpu = openGpu(*plan, CudaOptions{});
    ASSERT_TRUE(gpu.session.has_value());
    compareWithTheReference(gpu, *plan, withinBound(bound));
  }
}

// NCCL on one GPU, for real (the multi-GPU path is checked only up to ncclCommInitRank, by the
// dry run and test/unit/cuda/NcclBootstrapMpi.cpp): a job of one rank through the library gives
// every operand back bit for bit, and a data-parallel step through it the bits of the same step
// through plain copies. scripts/gpu-check.sh runs these in its nccl stage.
CollectivesFactory ncclForOneRank() {
  return [](GpuApi& api, Communicator*) -> absl::StatusOr<std::unique_ptr<GpuCollectives>> {
    auto job = makeSingleProcessCommunicator();  // the bootstrap's only use of it
    return openNcclCollectives(api, *job);
  };
}

TEST(CudaGpuNccl, OneRankCollectivesGiveTheirOperandsBitForBit) {
  SKIP_WITHOUT_A_GPU();
  auto api = openDriverApi(0);
  ASSERT_TRUE(api.ok()) << api.status();
  auto made = ncclForOneRank()(**api, nullptr);
  ASSERT_TRUE(made.ok()) << made.status();
  GpuCollectives& nccl = **made;
  EXPECT_EQ(nccl.worldSize(), 1);
  EXPECT_NE(nccl.description().find("nccl"), std::string::npos) << nccl.description();
  constexpr int64_t n = 4099;  // not a multiple of any vector width
  std::vector<float> host(n);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  for (float& x : host) x = normal(rng);
  host[5] = -0.0f;
  auto send = (*api)->allocate(n * 4), recv = (*api)->allocate(n * 4);
  ASSERT_TRUE(send.ok() && recv.ok());
  auto expectOperand = [&](DevicePtr where, const char* call) {
    std::vector<float> back(n);
    ASSERT_TRUE((*api)->copyToHost(back.data(), where, n * 4).ok());
    ASSERT_TRUE((*api)->synchronize().ok()) << call;
    EXPECT_EQ(std::memcmp(back.data(), host.data(), n * 4), 0) << call << " changed its operand";
  };
  ASSERT_TRUE((*api)->copyToDevice(*send, host.data(), n * 4).ok());
  ASSERT_TRUE((*api)->synchronize().ok());
  ASSERT_TRUE(nccl.allReduce(*send, *recv, n, DType::F32, ReduceOp::Sum).ok());
  expectOperand(*recv, "allReduce sum");
  ASSERT_TRUE(nccl.allReduce(*recv, *recv, n, DType::F32, ReduceOp::Mean).ok());
  expectOperand(*recv, "allReduce mean, in place");
  ASSERT_TRUE(nccl.allReduce(*send, *recv, n, DType::F32, ReduceOp::Max).ok());
  expectOperand(*recv, "allReduce max");
  ASSERT_TRUE(nccl.reduceScatter(*send, *recv, n, DType::F32, ReduceOp::Sum).ok());
  expectOperand(*recv, "reduceScatter");
  ASSERT_TRUE(nccl.allGather(*send, *recv, n, DType::F32).ok());
  expectOperand(*recv, "allGather");
  (*api)->release(*send);
  (*api)->release(*recv);
}

TEST(CudaGpuNccl, ADataParallelStepThroughNcclGivesTheBitsOfOneWithoutIt) {
  SKIP_WITHOUT_A_GPU();
  auto plan = readBundle(bundlePath("mlp_dp_f16_sm_90"));
  ASSERT_TRUE(plan.ok()) << plan.status();
  CudaOptions throughNccl;
  throughNccl.collectives = ncclForOneRank();
  GpuSession nccl = openGpu(*plan, throughNccl), local = openGpu(*plan);
  ASSERT_TRUE(nccl.session.has_value() && local.session.has_value());
  for (int step = 0; step < 3; ++step) {
    auto a = nccl.session->run("train_step", batch(*plan, step));
    auto b = local.session->run("train_step", batch(*plan, step));
    ASSERT_TRUE(a.ok()) << a.status();
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(lossOf(*a), lossOf(*b)) << "step " << step;
  }
  ASSERT_TRUE(nccl.session->syncPersistent().ok());
  ASSERT_TRUE(local.session->syncPersistent().ok());
  std::map<std::string, const Tensor*> expected;
  for (const NamedTensorRef& t : local.session->persistent()) expected[t.name] = t.tensor;
  int compared = 0;
  for (const NamedTensorRef& t : nccl.session->persistent()) {
    const Tensor* e = expected[t.name];
    ASSERT_NE(e, nullptr) << t.name;
    ASSERT_EQ(e->nbytes(), t.tensor->nbytes()) << t.name;
    EXPECT_EQ(std::memcmp(e->data(), t.tensor->data(), e->nbytes()), 0) << t.name << " differs after 3 steps";
    ++compared;
  }
  EXPECT_GT(compared, 0);
}

INSTANTIATE_TEST_SUITE_P(Bundles, CudaGpu,
                         ::testing::Values("mlp_bf16_sm_90", "mlp_f16_sm_90", "mlp_sgd_clip_f16_sm_80",
                                           "transformer_lm_bf16_sm_90", "amp_recipe_mlp_f16_sm_90", "small_cnn_f16_sm_90"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });
INSTANTIATE_TEST_SUITE_P(Bundles, CudaGpuDynamicScaling,
                         ::testing::Values("mlp_f16_sm_90", "mlp_sgd_clip_f16_sm_80", "amp_recipe_mlp_f16_sm_90",
                                           "small_cnn_f16_sm_90"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace amp::rt::cuda
