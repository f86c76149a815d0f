// Faults localised and GEMMs without an algorithm, on the simulated GPU (DryRunApi's failAfterLaunch
// and algorithmUnavailable): with CudaOptions::syncEachLaunch (amp-run --debug-sync,
// AMP_CUDA_SYNC_EACH_LAUNCH=1) a call runs its operations one by one, waits after each, and a fault
// names its kernel, plan step and source location; without it the graph runs as before. A linear
// layer or matmul whose cuBLASLt call has no algorithm runs a plainer one (GemmVariants.h) and says
// so; its relu is its own pass, which keeps the reference's NaN, and the --check-numerics check of
// its result follows that pass.
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "runtime/devices/cuda/CudaExecutor.h"
#include "runtime/devices/cuda/CudaReport.h"
#include "runtime/devices/cuda/DryRunApi.h"
#include "runtime/exec/Session.h"
#include "test/unit/cuda/TestBundles.h"

namespace amp::rt::cuda {
namespace {

struct Dry {
  DryRunApi* api = nullptr;
  std::optional<Session> session;
  std::map<std::string, Tensor> feeds;
};

Dry openDry(Plan plan, CudaOptions options = {}, const std::function<void(DryRunApi&)>& knobs = {}) {
  Dry d;
  auto api = std::make_unique<DryRunApi>();
  d.api = api.get();
  if (knobs) knobs(*api);
  auto session = Session::create(std::move(plan), makeCudaExecutor(std::move(api), options));
  EXPECT_TRUE(session.ok()) << session.status();
  if (!session.ok()) return d;
  d.session.emplace(std::move(*session));
  for (const BufferDesc& b : d.session->plan().buffers)
    if (b.kind == BufferKind::Input || b.kind == BufferKind::Label) d.feeds.emplace(b.name, Tensor(b.dtype, b.shape));
  return d;
}

int64_t count(const std::vector<std::string>& lines, const std::string& prefix) {
  int64_t n = 0;
  for (const std::string& l : lines) n += l.rfind(prefix, 0) == 0;
  return n;
}

bool anyContains(const std::vector<std::string>& lines, const std::string& part) {
  for (const std::string& l : lines)
    if (l.find(part) != std::string::npos) return true;
  return false;
}

// The first amp.linear of `entry` with a relu: the step a relu pass's fault must name.
size_t firstReluLinear(const EntryPoint& entry) {
  for (size_t s = 0; s < entry.steps.size(); ++s) {
    const PlanStep& step = entry.steps[s];
    if (step.op == "amp.linear" && step.attrs.getString(step.op, "activation", "none").value_or("") == "relu") return s;
  }
  return entry.steps.size();
}

CudaOptions debugSync() {
  CudaOptions o;
  o.syncEachLaunch = true;
  return o;
}

TEST(CudaFaults, DebugSyncNamesTheFailingKernelItsPlanStepAndItsLocation) {
  LOAD_OR_SKIP(plan, "mlp_bf16_sm_90");
  Dry d = openDry(std::move(*plan), debugSync());
  ASSERT_TRUE(d.session);
  const EntryPoint& eval = *d.session->plan().findEntry("eval");
  const size_t s = firstReluLinear(eval);
  ASSERT_LT(s, eval.steps.size());
  ASSERT_FALSE(eval.steps[s].loc.empty()) << "ampc records each step's location in the model";
  d.api->failAfterLaunch("amp_relu_inplace_bf16");
  auto failed = d.session->run("eval", d.feeds);
  ASSERT_FALSE(failed.ok());
  const std::string message(failed.status().message());
  EXPECT_NE(message.find(absl::StrCat("kernel amp_relu_inplace_bf16 (plan step ", s, " 'amp.linear', ", eval.steps[s].loc, ")")),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos) << "the driver's error: " << message;
  EXPECT_EQ(count(d.api->calls(), "begin capture"), 0) << "nothing is captured";
  EXPECT_EQ(count(d.api->calls(), "graph"), 0);
  // The fault was the relu's: everything up to it ran, one operation and one wait at a time.
  EXPECT_GT(count(d.api->calls(), "gemm"), 0);
  // A GEMM's fault names the cuBLASLt call.
  d.api->failAfterLaunch("");
  ASSERT_TRUE(d.session->run("eval", d.feeds).ok());
}

TEST(CudaFaults, DebugSyncWaitsAfterEveryOperationAndCapturesNothing) {
  LOAD_OR_SKIP(plan, "mlp_bf16_sm_90");
  Dry d = openDry(std::move(*plan), debugSync());
  ASSERT_TRUE(d.session);
  auto prepared = d.session->prepared("eval");
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  const int64_t operations = static_cast<int64_t>((**prepared).report().actions.size());
  ASSERT_TRUE(d.session->run("eval", d.feeds).ok());
  d.api->clearCalls();
  const int64_t syncs = d.api->hostSyncs();
  ASSERT_TRUE(d.session->run("eval", d.feeds).ok());
  // The inputs' wait, one after each operation, then the call's own for its results.
  EXPECT_EQ(d.api->hostSyncs() - syncs, operations + 2);
  EXPECT_EQ(count(d.api->calls(), "launch"), (**prepared).report().count(cuda::kGeneratedKernels));
  EXPECT_EQ(count(d.api->calls(), "gemm"), 3);
  EXPECT_EQ(d.api->graphsCaptured(), 0);
  // Enqueued training runs the same way and still delivers its log.
  ASSERT_TRUE(d.session->enqueue("train_step", d.feeds, {}, 5).ok());
  int delivered = 0;
  ASSERT_TRUE(d.session->poll("train_step", true, [&](const LoggedCall& c) { delivered += c.ticket() == 5; }).ok());
  EXPECT_EQ(delivered, 1);
  EXPECT_EQ(d.api->graphsCaptured(), 0);
  // A fault in an enqueued call is named there too.
  d.api->failAfterLaunch("amp_relu_inplace_bf16");
  auto failed = d.session->enqueue("train_step", d.feeds, {}, 6);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.message().find("kernel amp_relu_inplace_bf16 (plan step "), std::string::npos) << failed;
}

// Without debug-sync nothing changes: one graph, and a fault surfaces at the call's one wait
// without a kernel named (what a GPU reports).
TEST(CudaFaults, WithoutDebugSyncTheGraphRunsAndAFaultSurfacesAtTheCallsWait) {
  LOAD_OR_SKIP(plan, "mlp_bf16_sm_90");
  Dry d = openDry(std::move(*plan));
  ASSERT_TRUE(d.session);
  ASSERT_TRUE(d.session->run("eval", d.feeds).ok());  // captures graph 0
  d.api->failAfterLaunch("amp_relu_inplace_bf16");
  d.api->clearCalls();
  auto failed = d.session->run("eval", d.feeds);
  ASSERT_FALSE(failed.ok());
  const std::string message(failed.status().message());
  EXPECT_NE(message.find("the GPU's work failed"), std::string::npos) << message;
  EXPECT_EQ(message.find("amp_relu_inplace"), std::string::npos) << "a graph's fault names no kernel: " << message;
  EXPECT_EQ(message.find("plan step"), std::string::npos) << message;
  EXPECT_EQ(count(d.api->calls(), "graph 0"), 1);
  EXPECT_EQ(count(d.api->calls(), "launch"), 0);
  d.api->failAfterLaunch("");
  d.api->clearCalls();
  ASSERT_TRUE(d.session->run("eval", d.feeds).ok());
  EXPECT_EQ(count(d.api->calls(), "graph 0"), 1);
  EXPECT_EQ(count(d.api->calls(), "sync"), 1);
}

TEST(CudaFaults, TheEnvironmentTurnsDebugSyncOn) {
  LOAD_OR_SKIP(plan, "mlp_bf16_sm_90");
  const char* before = std::getenv("AMP_CUDA_SYNC_EACH_LAUNCH");
  const std::optional<std::string> saved = before ? std::optional<std::string>(before) : std::nullopt;
  for (const char* value : {"1", "0"}) {
    SCOPED_TRACE(value);
    setenv("AMP_CUDA_SYNC_EACH_LAUNCH", value, 1);
    EXPECT_EQ(syncEachLaunchFromEnvironment(), std::string(value) == "1");
    Dry d = openDry(*plan);
    ASSERT_TRUE(d.session);
    ASSERT_TRUE(d.session->run("eval", d.feeds).ok());
    EXPECT_EQ(d.api->graphsCaptured(), std::string(value) == "1" ? 0 : 1);
  }
  if (saved) setenv("AMP_CUDA_SYNC_EACH_LAUNCH", saved->c_str(), 1);
  else unsetenv("AMP_CUDA_SYNC_EACH_LAUNCH");
}

// The relu of a linear layer is a pass after its BIAS GEMM (cuBLASLt's RELU_BIAS would turn NaN
// into 0), and a checked call checks the layer's result after that pass.
TEST(CudaFaults, ALinearsReluRunsAsAPassBeforeItsResultIsChecked) {
  LOAD_OR_SKIP(plan, "mlp_bf16_sm_90");
  Dry d = openDry(std::move(*plan));
  ASSERT_TRUE(d.session);
  auto prepared = d.session->prepared("eval");
  ASSERT_TRUE(prepared.ok());
  const std::vector<std::string>& actions = (**prepared).report().actions;
  EXPECT_FALSE(anyContains(actions, "RELU")) << "no relu epilogue";
  size_t gemm = actions.size();
  for (size_t i = 0; i < actions.size(); ++i)
    if (actions[i].find("amp.linear: cuBLASLt bf16 256 x 128 x 784 BIAS") != std::string::npos) gemm = i;
  ASSERT_LT(gemm + 1, actions.size());
  EXPECT_NE(actions[gemm + 1].find("amp.linear: amp_relu_inplace_bf16"), std::string::npos) << actions[gemm + 1];
  Session::RunOptions numerics;
  numerics.checkNumerics = true;
  d.api->clearCalls();
  ASSERT_TRUE(d.session->run("eval", d.feeds, numerics).ok());
  const std::vector<std::string>& calls = d.api->calls();
  size_t relu = calls.size();
  for (size_t i = 0; i < calls.size() && relu == calls.size(); ++i)
    if (calls[i].rfind("launch amp_relu_inplace_bf16", 0) == 0) relu = i;
  ASSERT_LT(relu + 1, calls.size());
  EXPECT_EQ(calls[relu + 1].rfind("launch amp_check_finite_bf16", 0), 0u) << "the check reads the relu's result: " << calls[relu + 1];
}

TEST(CudaFaults, ALinearWithoutABiasAlgorithmRunsOntoTheBiasRowsAndSaysSoOnce) {
  LOAD_OR_SKIP(plan, "mlp_f16_sm_90");
  auto noBias = [](DryRunApi& api) { api.algorithmUnavailable([](const GemmPlan& g) { return g.epilogue == GemmEpilogue::Bias; }); };
  testing::internal::CaptureStderr();
  Dry d = openDry(*plan, {}, noBias);
  ASSERT_TRUE(d.session);
  auto prepared = d.session->prepared("eval");
  const std::string said = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  EXPECT_NE(said.find("cuBLASLt has no algorithm for a f16 GEMM of 256 x 128 x 784 with epilogue BIAS"), std::string::npos) << said;
  EXPECT_NE(said.find("it runs as DEFAULT onto the bias rows, with the same results"), std::string::npos) << said;
  const std::vector<std::string>& actions = (**prepared).report().actions;
  EXPECT_EQ((**prepared).report().count(cuda::kGemms), 3);
  EXPECT_FALSE(anyContains(actions, " BIAS")) << "no call with the epilogue";
  EXPECT_TRUE(anyContains(actions, "DEFAULT onto the bias rows (fallback: DEFAULT onto the bias rows)"));
  // Each layer: its bias rows, the GEMM accumulating onto them, then (the hidden layers) the relu.
  d.api->clearCalls();
  ASSERT_TRUE(d.session->run("eval", d.feeds).ok());
  std::vector<std::string> work;
  for (const std::string& c : d.api->calls())
    if (c.rfind("launch amp_bias_rows", 0) == 0 || c.rfind("gemm", 0) == 0 || c.rfind("launch amp_relu", 0) == 0) work.push_back(c);
  ASSERT_GE(work.size(), 3u);
  EXPECT_EQ(work[0].rfind("launch amp_bias_rows_b16", 0), 0u) << work[0];
  EXPECT_EQ(work[1], "gemm 256x128x784 DEFAULT");
  EXPECT_EQ(work[2].rfind("launch amp_relu_inplace_f16", 0), 0u) << work[2];
  // Said once per process, however many sessions meet it.
  testing::internal::CaptureStderr();
  Dry again = openDry(*plan, {}, noBias);
  ASSERT_TRUE(again.session);
  ASSERT_TRUE(again.session->prepared("eval").ok());
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

TEST(CudaFaults, ABatchedMatmulWithoutAnAlgorithmRunsOneCallPerBatch) {
  LOAD_OR_SKIP(plan, "transformer_lm_bf16_sm_90");
  Dry d = openDry(std::move(*plan), {}, [](DryRunApi& api) {
    api.algorithmUnavailable([](const GemmPlan& g) { return g.batch > 1; });
  });
  ASSERT_TRUE(d.session);
  testing::internal::CaptureStderr();
  auto prepared = d.session->prepared("eval");
  testing::internal::GetCapturedStderr();
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  const std::vector<std::string>& actions = (**prepared).report().actions;
  EXPECT_FALSE(anyContains(actions, " batches")) << "no strided batch is called";
  EXPECT_TRUE(anyContains(actions, ", batch 1 of ")) << "attention's batched GEMMs, one call per batch";
  ASSERT_TRUE(d.session->run("eval", d.feeds).ok());
}

TEST(CudaFaults, AGemmWithNoAlgorithmInAnyFormIsRefusedWithEveryReason) {
  LOAD_OR_SKIP(plan, "mlp_bf16_sm_90");
  Dry d = openDry(std::move(*plan), {}, [](DryRunApi& api) { api.algorithmUnavailable([](const GemmPlan&) { return true; }); });
  ASSERT_TRUE(d.session);
  auto prepared = d.session->prepared("eval");
  ASSERT_FALSE(prepared.ok());
  const std::string message(prepared.status().message());
  EXPECT_TRUE(absl::IsUnimplemented(prepared.status())) << message;
  EXPECT_NE(message.find("entry 'eval' step"), std::string::npos) << message;
  EXPECT_NE(message.find("with epilogue BIAS"), std::string::npos) << message;
  EXPECT_NE(message.find("with epilogue DEFAULT (accumulating)"), std::string::npos) << message;
}

}  // namespace
}  // namespace amp::rt::cuda
