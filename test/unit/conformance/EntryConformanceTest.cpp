// The conformance suite: every entry of every example bundle, and of the suite's own bundles that
// hold the ops no example uses, on each device, against the reference executor run from the same
// params, state and batches; and a check that every op of the catalog runs in it.
//
//  - cpu: every result of every call, and the state after it, within the summation-order bound of
//    the bundle's precision (GEMMs sum in their own order; every other kernel is bit-exact, which
//    the per-op parity tests in test/unit/cpu check);
//  - cuda-dry-run: every entry prepares, lowers with no step left over and replays on the
//    simulated GPU (it computes nothing, so there are no values to compare);
//  - cuda: as cpu, on GPU 0; skipped only where the machine has no GPU driver.
//
// A bundle that fails to load, a device that fails to start and an entry that fails to run fail the
// test: only an absent device skips (the rule of IREE's hal/cts).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/devices/Devices.h"
#include "runtime/devices/cuda/CudaExecutor.h"
#include "runtime/devices/cuda/DryRunApi.h"
#include "runtime/devices/cuda/GpuApi.h"
#include "runtime/exec/Session.h"
#include "runtime/numerics/Convert.h"
#include "runtime/plan/Bundle.h"
#include "runtime/plan/OpCode.h"
#include "test/unit/common/RandomBatch.h"

namespace amp::rt {
namespace {

enum class Dut { Cpu, CudaDryRun, Cuda };

const char* dutName(Dut d) {
  switch (d) {
    case Dut::Cpu: return "cpu";
    case Dut::CudaDryRun: return "cuda_dry_run";
    case Dut::Cuda: return "cuda";
  }
  return "?";
}

struct Param {
  Dut device;
  std::string dir;
  std::string bundle;
};
void PrintTo(const Param& p, std::ostream* os) { *os << dutName(p.device) << " " << p.bundle; }

// Where the bundles are: as built, or all in AMP_TEST_BUNDLE_DIR (scripts/gpu-check.sh's package).
std::string bundleDir(const char* built) {
  const char* dir = std::getenv("AMP_TEST_BUNDLE_DIR");
  return dir ? dir : built;
}

std::vector<Param> params() {
  std::vector<Param> out;
  for (const char* name : {"mlp_f32", "mlp_bf16", "mlp_f16", "mlp_sgd_bf16", "transformer_lm_f32", "transformer_lm_bf16",
                           "transformer_lm_f16"})
    out.push_back({Dut::Cpu, bundleDir(AMP_TEST_CPU_BUNDLE_DIR), name});
  for (const char* name : {"pointwise_ops_f32", "pointwise_ops_bf16", "batch_norm_f32", "batch_norm_bf16",
                           "mlp_clip_unfused_f32"})
    out.push_back({Dut::Cpu, bundleDir(AMP_TEST_CONFORMANCE_BUNDLE_DIR), name});
#ifdef AMP_TEST_CUDA_BUNDLE_DIR
  for (const char* name : {"pointwise_ops_f32_sm_90", "pointwise_ops_bf16_sm_90", "batch_norm_f32_sm_90",
                           "batch_norm_bf16_sm_90", "mlp_clip_unfused_f16_sm_80"})
    for (Dut d : {Dut::Cpu, Dut::CudaDryRun, Dut::Cuda}) out.push_back({d, bundleDir(AMP_TEST_CONFORMANCE_BUNDLE_DIR), name});
  // The cuda bundles run on the cpu device too: it interprets their fused regions.
  for (const char* name : {"mlp_f32_sm_90", "mlp_bf16_sm_90", "mlp_f16_sm_90", "mlp_sgd_clip_f16_sm_80",
                           "transformer_lm_bf16_sm_90", "amp_recipe_mlp_f16_sm_90", "small_cnn_f16_sm_90",
                           "op_parity_sequence_bf16_sm_90", "op_parity_conv_f32_sm_90",
                           // amp.gemm_epilogue (ampc --gemm-epilogues=cublaslt): relu and tanh-gelu layers
                           "mlp_epilogues_f32_sm_90", "transformer_lm_epilogues_bf16_sm_90"})
    for (Dut d : {Dut::Cpu, Dut::CudaDryRun, Dut::Cuda}) out.push_back({d, bundleDir(AMP_TEST_CUDA_BUNDLE_DIR), name});
#endif
  return out;
}

// The device under test, or why this machine does not have it (then the test skips).
struct Opened {
  std::optional<Session> session;
  std::string absent;
};

Opened open(const Plan& plan, Dut d) {
  Opened o;
  absl::StatusOr<std::unique_ptr<Executor>> executor = absl::UnknownError("");
  switch (d) {
    case Dut::Cpu: executor = makeExecutor(Device::Cpu); break;
    case Dut::CudaDryRun: executor = cuda::makeCudaExecutor(std::make_unique<cuda::DryRunApi>()); break;
    case Dut::Cuda: {
      auto api = cuda::openDriverApi(0);
      if (!api.ok()) {
        o.absent = std::string(api.status().message());
        return o;
      }
      executor = cuda::makeCudaExecutor(std::move(*api));
      break;
    }
  }
  EXPECT_TRUE(executor.ok()) << executor.status();
  if (!executor.ok()) return o;
  auto session = Session::create(plan, std::move(*executor));
  EXPECT_TRUE(session.ok()) << session.status();
  if (session.ok()) o.session.emplace(std::move(*session));
  return o;
}

std::map<std::string, Tensor> batch(const Plan& plan, int call) { return test::randomBatch(plan, 2000 + call); }

// The summation-order bound of a bundle, relative to the largest magnitude of the reference value:
// a few units in the last place of the precision its GEMMs round to.
double boundOf(const std::string& bundle) {
  if (bundle.find("bf16") != std::string::npos) return 3e-2;
  if (bundle.find("f16") != std::string::npos) return 5e-3;
  return 1e-4;
}

// Every element of `got` within `relative` of `want`'s largest magnitude, plus `absolute` (NaN
// only where the reference has NaN); integer values exactly.
void expectClose(const std::string& what, const Tensor& want, const Tensor& got, double relative, double absolute) {
  ASSERT_EQ(want.dtype(), got.dtype()) << what;
  ASSERT_EQ(want.shape(), got.shape()) << what;
  if (!isFloat(want.dtype())) {
    EXPECT_TRUE(want.bitwiseEquals(got)) << what;
    return;
  }
  double largest = 0.0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double w = loadAsF32(want.dtype(), want.data(), i);
    if (std::isfinite(w)) largest = std::max(largest, std::fabs(w));
  }
  int differ = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double w = loadAsF32(want.dtype(), want.data(), i), g = loadAsF32(got.dtype(), got.data(), i);
    const bool ok = std::isnan(w) ? std::isnan(g) : std::isinf(w) ? g == w : std::fabs(w - g) <= relative * largest + absolute;
    if (!ok && ++differ <= 3)
      ADD_FAILURE() << what << "[" << i << "]: reference " << w << ", device " << g << " (bound " << relative
                    << " of " << largest << " + " << absolute << ")";
  }
}

// Each test: the bundle, the device under test (skipped where absent) and the reference, opened on
// the same plan.
class EntryConformance : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    const Param& p = GetParam();
    const std::string path = p.dir + "/" + p.bundle + ".ampx";
    auto read = readBundle(path);
    ASSERT_TRUE(read.ok()) << path << ": " << read.status();
    plan = std::move(*read);
    dut = open(plan, p.device);
    if (!dut.absent.empty()) GTEST_SKIP() << dutName(p.device) << " is absent: " << dut.absent;
    ASSERT_TRUE(dut.session.has_value());
    auto opened = openSession(plan, Device::Reference);
    ASSERT_TRUE(opened.ok()) << opened.status();
    reference.emplace(std::move(*opened));
    computes = p.device != Dut::CudaDryRun;
    // An optimizer step moves a param by at most about lr; a gradient near zero may change its sign
    // between summation orders, which Adam turns into a step of lr either way.
    auto training = plan.trainingConfig();
    ASSERT_TRUE(training.ok()) << training.status();
    stepSlack = training->lr ? 2.5 * *training->lr : 0.0;
  }

  Plan plan;
  Opened dut;
  std::optional<Session> reference;
  bool computes = false;   // the dry run executes nothing: no values to compare
  double stepSlack = 0.0;  // how far one optimizer step may move a param between summation orders
};

TEST_P(EntryConformance, EveryEntryAgreesWithTheReference) {
  const double relative = boundOf(GetParam().bundle);
  int call = 0;
  bool stepped = false;  // a call has updated params: they carry the slack from then on
  for (const EntryPoint& entry : plan.entries) {
    SCOPED_TRACE("entry " + entry.name);
    const std::map<std::string, Tensor> feeds = batch(plan, call++);
    auto want = reference->run(entry.name, feeds);
    ASSERT_TRUE(want.ok()) << want.status();
    auto got = dut.session->run(entry.name, feeds);
    ASSERT_TRUE(got.ok()) << dutName(GetParam().device) << ": " << got.status();
    ASSERT_EQ(got->size(), want->size());
    if (!computes) continue;
    for (size_t r = 0; r < want->size(); ++r)
      expectClose(entry.name + " result " + (*want)[r].name, (*want)[r].tensor, (*got)[r].tensor, relative, 0.0);
    stepped |= !entry.updates.empty();
    // The cuda device keeps params and state on the GPU: bring the host copies up to date first.
    ASSERT_TRUE(dut.session->syncPersistent().ok());
    const std::vector<NamedTensorRef> wantState = reference->persistent(), gotState = dut.session->persistent();
    ASSERT_EQ(wantState.size(), gotState.size());
    for (size_t s = 0; s < wantState.size(); ++s)
      expectClose(entry.name + " state " + wantState[s].name, *wantState[s].tensor, *gotState[s].tensor, relative,
                  stepped ? stepSlack : 0.0);
  }
}

double lossOf(const std::vector<NamedTensor>& out) {
  for (const NamedTensor& t : out)
    if (t.name == "loss") return loadAsF32(t.tensor.dtype(), t.tensor.data(), 0);
  return NAN;
}

// Many optimizer steps in a row, where summation-order differences compound: the loss of every step
// within 2% of the reference's, the loss falls on the device where it falls on the reference, and
// the params after the last step within 2% of their largest magnitude plus the steps' drift.
TEST_P(EntryConformance, TrainingStaysWithTheReference) {
  constexpr int kSteps = 12;
  if (!plan.findEntry("train_step")) GTEST_SKIP() << "no train_step entry";
  double firstLoss = 0, lastLoss = 0, firstWant = 0, lastWant = 0;
  for (int step = 0; step < kSteps; ++step) {
    const std::map<std::string, Tensor> feeds = batch(plan, 100 + step % 4);
    Session::RunOptions options;
    options.step = step + 1;
    auto want = reference->run("train_step", feeds, options);
    ASSERT_TRUE(want.ok()) << want.status();
    auto got = dut.session->run("train_step", feeds, options);
    ASSERT_TRUE(got.ok()) << dutName(GetParam().device) << ": " << got.status();
    if (!computes) continue;
    const double w = lossOf(*want), g = lossOf(*got);
    EXPECT_NEAR(g, w, 0.02 * std::fabs(w) + 1e-3) << "step " << step + 1;
    (step == 0 ? firstLoss : lastLoss) = g;
    (step == 0 ? firstWant : lastWant) = w;
  }
  if (!computes) return;
  if (lastWant < firstWant) {
    EXPECT_LT(lastLoss, firstLoss) << "the loss falls on the reference but not on the device";
  }
  ASSERT_TRUE(dut.session->syncPersistent().ok());
  const std::vector<NamedTensorRef> want = reference->params(), got = dut.session->params();
  ASSERT_EQ(want.size(), got.size());
  const double drift = kSteps * stepSlack;  // the params may part by up to a step's slack per step
  for (size_t i = 0; i < want.size(); ++i)
    expectClose("param " + want[i].name, *want[i].tensor, *got[i].tensor, 0.02, drift + 1e-4);
}

std::string paramName(const ::testing::TestParamInfo<Param>& info) {
  return std::string(dutName(info.param.device)) + "_" + info.param.bundle;
}

INSTANTIATE_TEST_SUITE_P(Devices, EntryConformance, ::testing::ValuesIn(params()), paramName);

// Ops no single-process bundle can hold, and where they are checked instead.
const std::map<std::string_view, std::string_view>& notInTheSuite() {
  static const std::map<std::string_view, std::string_view> ops = {
      {"amp.all_reduce", "a collective: needs a job of several ranks (e2e data_parallel tests)"},
      {"amp.reduce_scatter", "a collective: needs a job of several ranks (e2e data_parallel zero1 tests)"},
      {"amp.all_gather", "a collective: needs a job of several ranks (e2e data_parallel zero1 tests)"},
      {"amp.rank_chunk", "reads the rank of a job of several ranks (e2e data_parallel zero1 tests)"},
      {"amp.yield", "the terminator of a fused region, not a computation"},
  };
  return ops;
}

void collectOps(const std::vector<PlanStep>& steps, std::map<std::string, int>& seen) {
  for (const PlanStep& s : steps) {
    ++seen[s.code ? std::string(opName(*s.code)) : s.op];
    collectOps(s.body, seen);
  }
}

// Every op of the catalog runs on every device in the suite above (in a plan step or inside a fused
// region), or is listed in notInTheSuite with the place that checks it. An op added to the dialect
// fails this test until a bundle of the suite uses it. Prints the table op x device.
TEST(Conformance, EveryOpRunsOnEveryDevice) {
  std::map<std::string, std::map<std::string, int>> perDevice;  // device -> op -> steps
  for (const Param& p : params()) {
    const std::string path = p.dir + "/" + p.bundle + ".ampx";
    auto plan = readBundle(path);
    ASSERT_TRUE(plan.ok()) << path << ": " << plan.status();
    for (const EntryPoint& e : plan->entries) collectOps(e.steps, perDevice[dutName(p.device)]);
  }
  std::string table = "op";
  for (const auto& [device, ops] : perDevice) table += " | " + device;
  table += "\n";
  for (size_t c = 0; c < kOpCodeCount; ++c) {
    const std::string op(opName(static_cast<OpCode>(c)));
    table += op;
    const auto excused = notInTheSuite().find(op);
    for (const auto& [device, ops] : perDevice) {
      const auto it = ops.find(op);
      if (it != ops.end()) {
        table += " | " + std::to_string(it->second) + " steps";
      } else if (excused != notInTheSuite().end()) {
        table += " | not here: " + std::string(excused->second);
      } else {
        table += " | MISSING";
        ADD_FAILURE() << op << " runs in no conformance bundle on " << device
                      << ": use it in a model of test/unit/conformance/models";
      }
    }
    table += "\n";
  }
  std::printf("%s", table.c_str());
}

}  // namespace
}  // namespace amp::rt
