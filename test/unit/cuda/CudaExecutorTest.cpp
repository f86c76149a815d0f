// The cuda device without a GPU: the executor prepares the examples' cuda bundles (compiled by
// ampc at build time) over the dry-run GpuApi, which checks every kernel against the bundle's
// code object and every address against the allocations. What is checked here is the host half:
// each step lowered, one graph captured per entry and replayed, the steady-state host
// synchronisations, params and state resident on the device until the session asks for them.
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <regex>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "runtime/devices/cuda/CudaExecutor.h"
#include "runtime/devices/cuda/CudaReport.h"
#include "runtime/devices/cuda/DryRunApi.h"
#include "runtime/devices/cuda/NumericsChecks.h"
#include "runtime/kernels/cuda/MultiTensorArgs.h"
#include "runtime/exec/Session.h"
#include "runtime/plan/Bundle.h"
#include "runtime/plan/KernelBinding.h"
#include "runtime/train/Trainer.h"
#include "runtime/devices/Devices.h"
#include "test/unit/cuda/TestBundles.h"

namespace amp::rt::cuda {
namespace {

struct DrySession {
  DryRunApi* api = nullptr;
  std::optional<Session> session;
  std::map<std::string, Tensor> feeds;
};

DrySession open(const std::string& name, CudaOptions options = {}) {
  DrySession d;
  auto plan = loadTestBundle(name);  // from AMP_TEST_BUNDLE_DIR where set (TestBundles.h)
  if (!plan) return d;
  auto api = std::make_unique<DryRunApi>();
  d.api = api.get();
  auto session = Session::create(std::move(*plan), makeCudaExecutor(std::move(api), options));
  EXPECT_TRUE(session.ok()) << session.status();
  if (!session.ok()) return d;
  d.session.emplace(std::move(*session));
  for (const BufferDesc& b : d.session->plan().buffers)
    if (b.kind == BufferKind::Input || b.kind == BufferKind::Label) d.feeds.emplace(b.name, Tensor(b.dtype, b.shape));
  return d;
}

#define OPEN_OR_SKIP(var, name, ...)          \
  DrySession var = open(name, ##__VA_ARGS__); \
  AMP_SKIP_OR_FAIL_UNLESS_LOADED(var.session.has_value(), name)

// Whether preparing some entry of a hostile bundle fails (each refusal with a message).
bool anEntryIsRefused(Session& session) {
  bool refused = false;
  for (const EntryPoint& e : session.plan().entries) {
    auto p = session.prepared(e.name);
    if (!p.ok()) {
      refused = true;
      EXPECT_FALSE(p.status().message().empty());
    }
  }
  return refused;
}

// Sets `attr` of every `op` step of `plan` to `value`: plan validation refuses the edited plan,
// or the cuda device refuses to prepare an entry with it.
template <typename Value>
void expectEditRefused(Plan plan, const char* op, const char* attr, const Value& value) {
  bool changed = false;
  for (EntryPoint& e : plan.entries)
    for (PlanStep& st : e.steps)
      if (st.op == op) {
        st.attrs.set(attr, value);
        changed = true;
      }
  ASSERT_TRUE(changed);
  auto session = Session::create(std::move(plan), makeCudaExecutor(std::make_unique<DryRunApi>()));
  if (!session.ok()) return;  // plan validation refused the edit
  EXPECT_TRUE(anEntryIsRefused(*session)) << "an entry with the edited attribute was prepared";
}

int64_t count(const std::vector<std::string>& calls, const std::string& prefix) {
  int64_t n = 0;
  for (const std::string& c : calls) n += c.rfind(prefix, 0) == 0;
  return n;
}

// A steady-state call: its inputs and training step copied in, one graph launch and nothing else
// on the GPU (every kernel and GEMM inside the graph), then `end` ("sync": a synchronous call).
void expectOneReplay(const std::vector<std::string>& calls, const std::string& end) {
  EXPECT_EQ(count(calls, "graph "), 1);
  EXPECT_EQ(count(calls, "graph 0"), 1);
  EXPECT_EQ(count(calls, "launch"), 0);
  EXPECT_EQ(count(calls, "gemm"), 0);
  EXPECT_EQ(count(calls, "sync"), end == "sync" ? 1 : 0);
  ASSERT_GE(calls.size(), 3u);
  EXPECT_EQ(calls[0].rfind("copy to device", 0), 0u) << calls[0];
  EXPECT_EQ(calls[1], "copy to device 8") << "the training step";
  EXPECT_EQ(calls[2], "graph 0");
  EXPECT_EQ(calls.back(), end);
}

TEST(CudaExecutor, EveryStepOfTheMlpLowers) {
  for (const char* name : {"mlp_bf16_sm_90", "mlp_f16_sm_90", "mlp_sgd_clip_f16_sm_80"}) {
    SCOPED_TRACE(name);
    OPEN_OR_SKIP(d, name);
    for (const EntryPoint& e : d.session->plan().entries) {
      auto prepared = d.session->prepared(e.name);
      ASSERT_TRUE(prepared.ok()) << e.name << ": " << prepared.status();
      const EntryReport* r = &(**prepared).report();
      ASSERT_NE(r, nullptr);
      // 3 linear layers forward; training adds 5 weight/input-gradient matmuls.
      EXPECT_EQ(r->count(cuda::kGemms), e.name == "eval" ? 3 : 8) << e.name;
      EXPECT_GT(r->count(cuda::kGeneratedKernels), 0) << e.name;
      // Capture follows the plan's step order.
      int last = -1;
      const std::regex stepNumber("^step ([0-9]+) ");
      for (const std::string& a : r->actions) {
        std::smatch m;
        if (!std::regex_search(a, m, stepNumber)) continue;
        const int s = std::stoi(m[1]);
        EXPECT_GE(s, last) << a;
        last = s;
      }
    }
  }
}

TEST(CudaExecutor, TheTransformerLowersAndReplays) {
  OPEN_OR_SKIP(d, "transformer_lm_bf16_sm_90");
  for (const EntryPoint& e : d.session->plan().entries) {
    auto prepared = d.session->prepared(e.name);
    ASSERT_TRUE(prepared.ok()) << e.name << ": " << prepared.status();
  }
  ASSERT_TRUE(d.session->run("train_step", d.feeds).ok());
  d.api->clearCalls();
  ASSERT_TRUE(d.session->run("train_step", d.feeds).ok());
  expectOneReplay(d.api->calls(), "sync");
}

// amp.softmax_grad is one kernel per step. The transformer's attention softmax runs in f32 under
// bf16 training, so its gradient reads the bf16 cotangent widened (amp_softmax_grad_f32_bf16); the
// op-parity sequence's is f32 throughout. The memory planner gives dx y's storage, so the dry run
// checks the launch in place; an axis the kernel cannot take is refused before anything launches.
TEST(CudaExecutor, EachSoftmaxGradientIsOneKernelOverItsOutput) {
  const std::pair<const char*, const char*> cases[] = {{"transformer_lm_bf16_sm_90", "amp_softmax_grad_f32_bf16"},
                                                       {"op_parity_sequence_bf16_sm_90", "amp_softmax_grad_f32"}};
  for (const auto& [bundle, kernel] : cases) {
    SCOPED_TRACE(bundle);
    OPEN_OR_SKIP(d, bundle);
    const EntryPoint* train = d.session->plan().findEntry("train_step");
    ASSERT_NE(train, nullptr);
    ASSERT_TRUE(train->memory.has_value());
    // The buffer that owns `id`'s storage, through views (y may itself be a view of its softmax's
    // input, when the softmax runs in place).
    auto storage = [&](int32_t id) {
      for (bool found = true; found;) {
        found = false;
        for (const auto& [view, of] : train->memory->views)
          if (view == id) id = of, found = true;
      }
      return id;
    };
    int64_t steps = 0;
    for (const PlanStep& st : train->steps) {
      if (st.op != "amp.softmax_grad") continue;
      ++steps;
      EXPECT_EQ(storage(st.results[0]), storage(st.operands[0])) << "dx does not share y's storage";
    }
    EXPECT_EQ(steps, 1) << "one softmax, one gradient";
    auto prepared = d.session->prepared("train_step");
    ASSERT_TRUE(prepared.ok()) << prepared.status();
    int64_t launches = 0;
    for (const std::string& a : (**prepared).report().actions) {  // "step N amp.softmax_grad: <kernel>"
      const size_t at = a.find(" amp.softmax_grad: ");
      if (at == std::string::npos) continue;
      ++launches;
      EXPECT_EQ(a.substr(at + 19), kernel) << a;
    }
    EXPECT_EQ(launches, 1);
    ASSERT_TRUE(d.session->run("train_step", d.feeds).ok());
    expectEditRefused(d.session->plan(), "amp.softmax_grad", "axis", int64_t{7});
  }
}

// PyTorch's AMP recipe model: its MSE loss is a per-block tree of squares and a mean of the blocks.
TEST(CudaExecutor, TheAmpRecipeMlpLowersWithItsMseLoss) {
  OPEN_OR_SKIP(d, "amp_recipe_mlp_f16_sm_90");
  for (const char* entry : {"eval", "train_step"}) {
    auto prepared = d.session->prepared(entry);
    ASSERT_TRUE(prepared.ok()) << entry << ": " << prepared.status();
    const EntryReport* r = &(**prepared).report();
    ASSERT_NE(r, nullptr);
    int64_t partials = 0, means = 0;
    for (const std::string& a : r->actions) {
      partials += a.find("amp.mse_loss: amp_mse_partials_f32") != std::string::npos;
      means += a.find("amp.mse_loss: amp_mse_mean_f32") != std::string::npos;
    }
    EXPECT_EQ(partials, 1) << entry;
    EXPECT_EQ(means, 1) << entry;
  }
  ASSERT_TRUE(d.session->run("train_step", d.feeds).ok());
  d.api->clearCalls();
  ASSERT_TRUE(d.session->run("train_step", d.feeds).ok());
  expectOneReplay(d.api->calls(), "sync");
}

// The trainer on the simulated GPU: steps are enqueued, and the report counts the host
// synchronisations of the steady-state steps (those that neither evaluate nor checkpoint). A GPU
// a few polls behind costs no wait; one that never catches up makes the host wait whenever the
// log ring is full, and the count says so.
TEST(CudaExecutor, TheTrainerReportsZeroHostSyncsPerSteadyStateStep) {
  OPEN_OR_SKIP(d, "mlp_f16_sm_90");
  Dataset data;
  data.name = "zeros";
  data.inputs = Tensor(DType::F32, {512, 784});
  data.labels = Tensor(DType::I64, {512});
  TrainOptions options;
  options.steps = 12;
  options.evalEvery = 5;  // steps 5 and 10 wait for their evaluation and are not counted
  d.api->lagEvents(2);
  auto report = train(*d.session, data, &data, options, {});
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_TRUE(report->hostSyncsPerStep.has_value());
  EXPECT_EQ(*report->hostSyncsPerStep, 0.0);
  EXPECT_EQ(report->losses.size(), 12u);
  d.api->lagEvents(-1);
  options.evalEvery = 0;
  auto behind = train(*d.session, data, nullptr, options, {});
  ASSERT_TRUE(behind.ok()) << behind.status();
  ASSERT_TRUE(behind->hostSyncsPerStep.has_value());
  // Steps 1..10 are counted; from the fifth call on, each finds the ring's 4 slots in flight.
  EXPECT_EQ(*behind->hostSyncsPerStep, 0.7);
  EXPECT_EQ(behind->losses.size(), 12u);
  // A host device runs every call synchronously and reports no such count.
  auto cpu = openSession(d.session->plan(), Device::Cpu);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  options.steps = 3;
  auto onCpu = train(*cpu, data, nullptr, options, {});
  ASSERT_TRUE(onCpu.ok()) << onCpu.status();
  EXPECT_FALSE(onCpu->hostSyncsPerStep.has_value());
}

// --profile: each call runs as its graph between two timers, then operation by operation with a
// timer before each; the session's params and state are put back afterwards.
TEST(CudaExecutor, AProfileTimesEveryOperationAndPutsTheStateBack) {
  OPEN_OR_SKIP(d, "mlp_f16_sm_90");
  auto prepared = d.session->prepared("train_step");
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  const EntryReport* r = &(**prepared).report();
  ASSERT_TRUE(d.session->run("train_step", d.feeds).ok());
  ASSERT_TRUE(d.session->syncPersistent().ok());
  std::map<std::string, std::vector<uint8_t>> before;
  for (const NamedTensorRef& t : d.session->persistent())
    before[t.name].assign(t.tensor->data(), t.tensor->data() + t.tensor->nbytes());
  d.api->clearCalls();
  auto profile = d.session->profile("train_step", d.feeds, {}, 3);
  ASSERT_TRUE(profile.ok()) << profile.status();
  EXPECT_EQ(profile->calls, 3);
  std::map<std::string, int64_t> operations;
  int64_t total = 0;
  for (const EntryProfile::Category& c : profile->categories) {
    operations[c.name] = c.operations;
    total += c.operations;
    EXPECT_EQ(c.ms, 0.0) << "the dry run has no clock";
  }
  EXPECT_EQ(total, static_cast<int64_t>(r->actions.size()));
  EXPECT_EQ(operations["GEMM"], r->count(cuda::kGemms));
  EXPECT_GT(operations["fused"], 0);
  EXPECT_GT(operations["scaler/optimizer"], 0);
  // Per call: a timer on each side of the graph, one before each operation and one after the last.
  EXPECT_EQ(count(d.api->calls(), "timer "), 3 * (2 + total + 1));
  EXPECT_EQ(count(d.api->calls(), "graph 0"), 3);
  // The session's values are those before the profile, and go up again before the next call.
  for (const NamedTensorRef& t : d.session->persistent()) {
    const std::vector<uint8_t>& b = before[t.name];
    EXPECT_TRUE(std::equal(b.begin(), b.end(), t.tensor->data())) << t.name;
  }
  d.api->clearCalls();
  ASSERT_TRUE(d.session->syncPersistent().ok());
  EXPECT_EQ(count(d.api->calls(), "copy to host"), 0) << "the profiled calls' values never reach the session";
  ASSERT_TRUE(d.session->run("train_step", d.feeds).ok());
  EXPECT_GE(count(d.api->calls(), "copy to device"), static_cast<int64_t>(before.size()));
  // The trainer profiles train_step after training, on its last batch.
  Dataset data;
  data.name = "zeros";
  data.inputs = Tensor(DType::F32, {256, 784});
  data.labels = Tensor(DType::I64, {256});
  TrainOptions options;
  options.steps = 2;
  options.profileCalls = 2;
  auto report = train(*d.session, data, nullptr, options, {});
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_TRUE(report->profile.has_value());
  EXPECT_EQ(report->profile->calls, 2);
}

// A CNN: convolutions, pooling and their gradients as the direct kernels, in every entry.
// The actions of train_step that end in each of `names` (kernel names end an action's text).
std::map<std::string, int> actionsEndingIn(const EntryReport& r, std::initializer_list<const char*> names) {
  std::map<std::string, int> n;
  for (const std::string& a : r.actions)
    for (const char* k : names)
      if (a.size() >= std::strlen(k) && a.compare(a.size() - std::strlen(k), std::strlen(k), k) == 0) ++n[k];
  return n;
}

TEST(CudaExecutor, TheSmallCnnLowersWithItsConvolutionsAndPooling) {
  CudaOptions direct;
  direct.conv = ConvAlgorithm::Direct;
  OPEN_OR_SKIP(d, "small_cnn_f16_sm_90", direct);
  for (const EntryPoint& e : d.session->plan().entries) ASSERT_TRUE(d.session->run(e.name, d.feeds).ok()) << e.name;
  auto prepared = d.session->prepared("train_step");
  ASSERT_TRUE(prepared.ok());
  const EntryReport* r = &(**prepared).report();
  ASSERT_NE(r, nullptr);
  auto kernels = actionsEndingIn(*r, {"amp_conv2d_f16", "amp_conv2d_grad_input_f16", "amp_conv2d_grad_weight_f16",
                                      "amp_max_pool2d_f16", "amp_avg_pool2d_f16", "amp_max_pool2d_grad_f16",
                                      "amp_avg_pool2d_grad_f16"});
  EXPECT_EQ(kernels["amp_conv2d_f16"], 2);
  EXPECT_EQ(kernels["amp_conv2d_grad_weight_f16"], 2);
  EXPECT_EQ(kernels["amp_conv2d_grad_input_f16"], 1) << "the first conv's input is the image";
  EXPECT_EQ(kernels["amp_max_pool2d_f16"], 1);
  EXPECT_EQ(kernels["amp_max_pool2d_grad_f16"], 1);
  EXPECT_EQ(kernels["amp_avg_pool2d_f16"], 1);
  EXPECT_EQ(kernels["amp_avg_pool2d_grad_f16"], 1);
  EXPECT_EQ(r->count(cuda::kGemms), 3) << "the linear layer's three GEMMs, no convolution";
  d.api->clearCalls();
  ASSERT_TRUE(d.session->run("train_step", d.feeds).ok());
  EXPECT_EQ(count(d.api->calls(), "graph "), 1) << "a replay of train_step's graph";
  EXPECT_EQ(count(d.api->calls(), "launch"), 0);
  EXPECT_EQ(count(d.api->calls(), "sync"), 1);
}

// Batch norm (test/unit/cuda/models/op_parity_batch_norm.mlir, bf16): each amp.batch_norm and
// amp.batch_norm_grad step is one launch with a block per channel, over [N, C, H, W] (3 channels)
// and [N, C] (5 channels); train_step and grads run both in training mode, eval the forward with
// the running statistics; the train step copies the new running statistics over the buffers.
TEST(CudaExecutor, BatchNormsRunOneBlockPerChannel) {
  OPEN_OR_SKIP(d, "op_parity_batch_norm_bf16_sm_90");
  const std::map<std::string, std::pair<int, int>> expected = {{"train_step", {2, 2}}, {"grads", {2, 2}}, {"eval", {2, 0}}};
  for (const EntryPoint& e : d.session->plan().entries) {
    SCOPED_TRACE(e.name);
    d.api->clearCalls();
    ASSERT_TRUE(d.session->run(e.name, d.feeds).ok()) << e.name;  // prepared and captured here
    const std::vector<std::string>& calls = d.api->calls();
    const auto want = expected.find(e.name);
    if (want == expected.end()) continue;
    EXPECT_EQ(count(calls, "launch amp_batch_norm_bf16 3x256") + count(calls, "launch amp_batch_norm_bf16 5x256"),
              want->second.first);
    EXPECT_EQ(count(calls, "launch amp_batch_norm_grad_bf16 3x256") + count(calls, "launch amp_batch_norm_grad_bf16 5x256"),
              want->second.second);
    if (want->second.second > 0) {
      EXPECT_EQ(count(calls, "launch amp_batch_norm_grad_bf16 3x256"), 1) << "the conv output's channels";
      EXPECT_EQ(count(calls, "launch amp_batch_norm_grad_bf16 5x256"), 1) << "the [N, C] channels";
    }
    auto prepared = d.session->prepared(e.name);
    ASSERT_TRUE(prepared.ok());
    const EntryReport& r = (**prepared).report();
    const bool updatesStatistics =
        std::any_of(r.actions.begin(), r.actions.end(),
                    [](const std::string& a) { return a.find("update bn1.running_var <- ") != std::string::npos; });
    EXPECT_EQ(updatesStatistics, e.name == "train_step") << "only the train step updates the running statistics";
  }
  // The steady state: a replay of train_step's graph.
  d.api->clearCalls();
  ASSERT_TRUE(d.session->run("train_step", d.feeds).ok());
  EXPECT_EQ(count(d.api->calls(), "graph "), 1);
  EXPECT_EQ(count(d.api->calls(), "launch"), 0);
}

// Batch norm attributes the kernels cannot take are refused before anything launches, as the
// reference refuses them: a momentum outside [0, 1], an epsilon that is not > 0.
TEST(CudaExecutor, RefusesBatchNormAttributesOutOfRange) {
  OPEN_OR_SKIP(d, "op_parity_batch_norm_bf16_sm_90");
  struct Edit {
    const char* op;
    const char* attr;
    double value;
  };
  const Edit edits[] = {{"amp.batch_norm", "momentum", 1.5},
                        {"amp.batch_norm", "momentum", -0.1},
                        {"amp.batch_norm", "epsilon", 0.0},
                        {"amp.batch_norm_grad", "epsilon", -1e-5}};
  for (const Edit& edit : edits) {
    SCOPED_TRACE(testing::Message() << edit.op << " " << edit.attr << " " << edit.value);
    expectEditRefused(d.session->plan(), edit.op, edit.attr, edit.value);
  }
}

// By default each ungrouped convolution pass is its gathers and one cuBLASLt GEMM, with one
// columns workspace for the executor, the largest pass's, which every entry shares.
TEST(CudaExecutor, ConvolutionsRunAsImplicitGemmsByDefault) {
  OPEN_OR_SKIP(d, "small_cnn_f16_sm_90");
  ASSERT_TRUE(d.session->run("train_step", d.feeds).ok());
  auto prepared = d.session->prepared("train_step");
  ASSERT_TRUE(prepared.ok());
  const EntryReport* r = &(**prepared).report();
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->count(cuda::kGemms), 3 + 5) << "the linear layer's and one per convolution pass (2 forward, 2 weight, 1 input gradient)";
  int64_t implicit = 0, directKernels = 0, gathers = 0;
  for (const std::string& a : r->actions) {
    implicit += a.find(": implicit GEMM, cuBLASLt f16") != std::string::npos;
    directKernels += a.find("amp_conv2d_") != std::string::npos;
    gathers += a.find("amp_conv_gather_b16") != std::string::npos;
  }
  EXPECT_EQ(implicit, 5);
  EXPECT_EQ(directKernels, 0);
  EXPECT_EQ(gathers, 2 + 1 + 2 * 2 + 2) << "columns (and the first conv's bias rows) forward, two per gradient";
  // The workspace: the second conv's input gradient, the largest pass: dy's columns, R = 8·3·3
  // taps by the 6×6 input, for 4 images, and w by input channel (6 × R), each in f16 rounded up
  // to 256 bytes. It is in the entry's scratch.
  const int64_t largest = (4 * 72 * 36 * 2 + 255) / 256 * 256 + (6 * 72 * 2 + 255) / 256 * 256;
  EXPECT_GE(r->scratchBytes, largest);
  CudaOptions direct;
  direct.conv = ConvAlgorithm::Direct;
  OPEN_OR_SKIP(e, "small_cnn_f16_sm_90", direct);
  ASSERT_TRUE(e.session->run("train_step", e.feeds).ok());
  auto exact = e.session->prepared("train_step");
  ASSERT_TRUE(exact.ok());
  EXPECT_EQ((**exact).report().scratchBytes + largest, r->scratchBytes) << "one workspace, sized for the largest pass";
  // The grads entry, prepared after train_step, convolves through the same columns.
  ASSERT_TRUE(d.session->run("grads", d.feeds).ok());
  ASSERT_TRUE(e.session->run("grads", e.feeds).ok());
  auto grads = d.session->prepared("grads"), exactGrads = e.session->prepared("grads");
  ASSERT_TRUE(grads.ok() && exactGrads.ok());
  EXPECT_EQ((**grads).report().scratchBytes, (**exactGrads).report().scratchBytes) << "no second workspace";
  EXPECT_GT((**grads).report().count(cuda::kGemms), (**exactGrads).report().count(cuda::kGemms));
}

// Under a small columns limit the small CNN's forward and input-gradient convolutions run two
// images at a time (each chunk its gathers and its GEMM), and a weight gradient whose columns
// still exceed it runs the direct kernel.
TEST(CudaExecutor, ColumnsBeyondTheLimitRunInChunksOfImages) {
  CudaOptions small;
  small.convColumnsLimitBytes = 12 * 1024;  // two images of the second conv's input gradient: 11520 bytes
  OPEN_OR_SKIP(d, "small_cnn_f16_sm_90", small);
  ASSERT_TRUE(d.session->run("train_step", d.feeds).ok());
  auto prepared = d.session->prepared("train_step");
  ASSERT_TRUE(prepared.ok());
  int64_t chunkedGemms = 0, directWeightGrads = 0;
  for (const std::string& a : (**prepared).report().actions) {
    if (a.find("amp.conv2d_grad_input: implicit GEMM") != std::string::npos) {
      EXPECT_NE(a.find("in 2 batches"), std::string::npos) << a;
      chunkedGemms += a.find(", images 0..1") != std::string::npos || a.find(", images 2..3") != std::string::npos;
    }
    directWeightGrads += a.find("amp_conv2d_grad_weight_f16 (direct: its columns need") != std::string::npos;
  }
  EXPECT_EQ(chunkedGemms, 2);
  EXPECT_EQ(directWeightGrads, 1) << "the first conv's weight gradient: 17664 bytes of columns";
  // The limit the GPU test runs the conv parity model under: its second conv's input gradient,
  // one image at a time (4096 bytes of dy columns and 768 of w by input channel).
  CudaOptions parityLimit;
  parityLimit.convColumnsLimitBytes = 4864;
  OPEN_OR_SKIP(p, "op_parity_conv_f32_sm_90", parityLimit);
  ASSERT_TRUE(p.session->run("grads", p.feeds).ok());
  auto grads = p.session->prepared("grads");
  ASSERT_TRUE(grads.ok());
  int64_t oneImage = 0;
  for (const std::string& a : (**grads).report().actions)
    oneImage += a.find("amp.conv2d_grad_input: implicit GEMM") != std::string::npos &&
                (a.find(", images 0..0") != std::string::npos || a.find(", images 1..1") != std::string::npos);
  EXPECT_EQ(oneImage, 2);
}

// A grouped convolution has no single GEMM: it runs the direct kernel and says why.
TEST(CudaExecutor, AGroupedConvolutionRunsTheDirectKernel) {
  OPEN_OR_SKIP(d, "op_parity_conv_f32_sm_90");
  ASSERT_TRUE(d.session->run("grads", d.feeds).ok());
  auto prepared = d.session->prepared("grads");
  ASSERT_TRUE(prepared.ok());
  int64_t grouped = 0, implicit = 0;
  for (const std::string& a : (**prepared).report().actions) {
    grouped += a.find("(direct: a grouped convolution has no single GEMM)") != std::string::npos;
    implicit += a.find("implicit GEMM") != std::string::npos;
  }
  EXPECT_GE(grouped, 2) << "the grouped conv's forward and weight gradient";
  EXPECT_GE(implicit, 2) << "the ungrouped conv's passes";
}

TEST(CudaExecutor, TheGraphIsCapturedOnceAndReplayedWithOneWaitPerCall) {
  OPEN_OR_SKIP(d, "mlp_f16_sm_90");
  auto first = d.session->run("train_step", d.feeds);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(d.api->graphsCaptured(), 1);
  d.api->clearCalls();
  const int64_t syncs = d.api->hostSyncs();
  auto second = d.session->run("train_step", d.feeds);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(d.api->graphsCaptured(), 1) << "a steady-state call captures nothing";
  expectOneReplay(d.api->calls(), "sync");
  EXPECT_EQ(d.api->hostSyncs() - syncs, 1) << "a synchronous call waits once, for its results";
}

// The simulated GPU runs two of the host's polls behind: each log arrives a step or more late,
// from the slot its copy landed in, and the host never waits.
TEST(CudaExecutor, EnqueuedStepsNeverWaitAndDeliverTheirLogsInOrder) {
  OPEN_OR_SKIP(d, "mlp_f16_sm_90");
  d.api->lagEvents(2);
  Session::RunOptions options;
  ASSERT_TRUE(d.session->enqueue("train_step", d.feeds, options, 0).ok());  // captures the graph
  std::vector<int64_t> tickets;
  std::vector<double> scalesBefore, stepsAfter;
  auto collect = [&](const LoggedCall& c) {
    tickets.push_back(c.ticket());
    scalesBefore.push_back(c.stateBefore("amp.loss_scale").value_or(-1));
    stepsAfter.push_back(c.stateAfter("amp.step").value_or(-1));
    EXPECT_TRUE(c.result("loss").has_value());
    EXPECT_TRUE(c.result("found_inf").has_value());
  };
  ASSERT_TRUE(d.session->poll("train_step", false, collect).ok());
  EXPECT_TRUE(tickets.empty()) << "the first log is not there yet";
  d.api->clearCalls();
  const int64_t syncs = d.api->hostSyncs();
  size_t mostBehind = 0;
  for (int64_t t = 1; t <= 20; ++t) {
    options.step = t;
    ASSERT_TRUE(d.session->enqueue("train_step", d.feeds, options, t).ok());
    ASSERT_TRUE(d.session->poll("train_step", false, collect).ok());
    mostBehind = std::max(mostBehind, static_cast<size_t>(t + 1) - tickets.size());
  }
  EXPECT_EQ(d.api->hostSyncs(), syncs) << "a steady-state step does not wait for the GPU";
  EXPECT_GE(mostBehind, 1u) << "the logs arrive late";
  EXPECT_LT(mostBehind, 4u) << "the ring never filled";
  ASSERT_NE(d.session->executor().residency(), nullptr);
  EXPECT_EQ(d.session->executor().residency()->hostSyncs(), d.api->hostSyncs());
  // Each step: its inputs and training step in, the graph, its log out behind an event.
  const std::vector<std::string>& calls = d.api->calls();
  ASSERT_EQ(calls.size(), 20u * 5);
  for (size_t i = 0; i < calls.size(); i += 5) {
    EXPECT_EQ(calls[i].rfind("copy to device", 0), 0u) << calls[i];
    EXPECT_EQ(calls[i + 1], "copy to device 8");
    EXPECT_EQ(calls[i + 2], "graph 0");
    EXPECT_EQ(calls[i + 3].rfind("copy to host", 0), 0u) << calls[i + 3];
    EXPECT_EQ(calls[i + 4].rfind("event ", 0), 0u) << calls[i + 4];
  }
  ASSERT_TRUE(d.session->poll("train_step", true, collect).ok());  // the last ones, waited for
  ASSERT_EQ(tickets.size(), 21u);
  // The dry run executes no kernel, so the logged state is what the session uploaded; a slot read
  // before its copy landed would hold zeros or an older call's log.
  ASSERT_TRUE(d.session->syncPersistent().ok());
  double scale = -1, step = -1;
  for (const NamedTensorRef& t : d.session->persistent()) {
    if (t.name == "amp.loss_scale") scale = t.tensor->as<float>()[0];
    if (t.name == "amp.step") step = static_cast<double>(t.tensor->as<int64_t>()[0]);
  }
  for (size_t i = 0; i < tickets.size(); ++i) {
    EXPECT_EQ(tickets[i], static_cast<int64_t>(i));
    EXPECT_EQ(scalesBefore[i], scale);
    EXPECT_EQ(stepsAfter[i], step);
  }
  EXPECT_GT(scale, 1.0) << "the f16 bundle scales its loss";
}

// A GPU that never catches up by itself: the ring's 4 slots fill, and from then on each enqueued
// call waits for the oldest one (LogRing's back-pressure), counted as a host synchronisation, and
// no sooner; every log still arrives, in order, with the values its copy carried.
TEST(CudaExecutor, AHostAWholeRingAheadWaitsForTheOldestSlotOnly) {
  OPEN_OR_SKIP(d, "mlp_f16_sm_90");
  d.api->lagEvents(-1);
  Session::RunOptions options;
  std::vector<int64_t> tickets;
  std::vector<double> scalesBefore;
  auto collect = [&](const LoggedCall& c) {
    tickets.push_back(c.ticket());
    scalesBefore.push_back(c.stateBefore("amp.loss_scale").value_or(-1));
  };
  ASSERT_TRUE(d.session->enqueue("train_step", d.feeds, options, 0).ok());  // uploads, captures
  const int64_t syncs = d.api->hostSyncs();
  d.api->clearCalls();
  for (int64_t t = 1; t <= 10; ++t) {
    ASSERT_TRUE(d.session->enqueue("train_step", d.feeds, options, t).ok());
    ASSERT_TRUE(d.session->poll("train_step", false, collect).ok());
    const int64_t waited = std::max<int64_t>(0, t - 3);
    EXPECT_EQ(d.api->hostSyncs() - syncs, waited) << "call " << t;
    EXPECT_EQ(static_cast<int64_t>(tickets.size()), waited) << "call " << t << ": only the slots waited for";
  }
  EXPECT_EQ(count(d.api->calls(), "wait event "), 7);
  ASSERT_TRUE(d.session->poll("train_step", true, collect).ok());
  ASSERT_EQ(tickets.size(), 11u);
  for (size_t i = 0; i < tickets.size(); ++i) {
    EXPECT_EQ(tickets[i], static_cast<int64_t>(i));
    EXPECT_GT(scalesBefore[i], 1.0) << "call " << i << "'s log was read before its copy landed";
  }
}

TEST(CudaExecutor, AHostThatNeverPollsStillGetsEveryLogInOrder) {
  OPEN_OR_SKIP(d, "mlp_f16_sm_90");
  Session::RunOptions options;
  for (int64_t t = 0; t < 11; ++t) ASSERT_TRUE(d.session->enqueue("train_step", d.feeds, options, t).ok());
  std::vector<int64_t> tickets;
  ASSERT_TRUE(d.session->poll("train_step", true, [&](const LoggedCall& c) { tickets.push_back(c.ticket()); }).ok());
  ASSERT_EQ(tickets.size(), 11u) << "slots reclaimed before a poll keep their logs";
  for (size_t i = 0; i < tickets.size(); ++i) EXPECT_EQ(tickets[i], static_cast<int64_t>(i));
}

// Copies to the device a first call makes besides the persistent upload: each constant once at
// prepare, and the copies of the inputs and of the training step before the graph.
int64_t firstCallCopies(const Plan& plan, const std::string& entry) {
  int64_t n = 2;
  for (const PlanStep& s : plan.findEntry(entry)->steps) n += s.op == "amp.constant";
  return n;
}

TEST(CudaExecutor, ParamsAndStateStayOnTheDeviceUntilTheSessionAsks) {
  OPEN_OR_SKIP(d, "mlp_bf16_sm_90");
  const Plan& plan = d.session->plan();
  int64_t persistent = 0;
  for (const BufferDesc& b : plan.buffers) persistent += b.kind == BufferKind::Param || b.kind == BufferKind::State;
  ASSERT_TRUE(d.session->run("train_step", d.feeds).ok());
  EXPECT_EQ(count(d.api->calls(), "copy to device"), persistent + firstCallCopies(plan, "train_step"))
      << "params and state uploaded once, before the first call";
  d.api->clearCalls();
  ASSERT_TRUE(d.session->run("eval", d.feeds).ok());
  EXPECT_EQ(count(d.api->calls(), "copy to device"), firstCallCopies(plan, "eval"))
      << "eval reads the params train_step left on the device";
  // A logged scalar of state comes alone, and leaves the rest to download.
  d.api->clearCalls();
  ASSERT_TRUE(d.session->syncPersistent(*plan.findBuffer("amp.step")).ok());
  EXPECT_EQ(count(d.api->calls(), "copy to host"), 1);
  d.api->clearCalls();
  ASSERT_TRUE(d.session->syncPersistent().ok());
  EXPECT_EQ(count(d.api->calls(), "copy to host"), persistent);
  d.api->clearCalls();
  ASSERT_TRUE(d.session->syncPersistent().ok());
  EXPECT_TRUE(d.api->calls().empty()) << "nothing changed on the device since";
  // A restored checkpoint goes back to the device before the next call, which replays its graph.
  std::vector<NamedTensor> state;
  for (const NamedTensorRef& t : d.session->persistent()) state.push_back({t.name, *t.tensor});
  ASSERT_TRUE(d.session->restore(state).ok());
  d.api->clearCalls();
  ASSERT_TRUE(d.session->run("train_step", d.feeds).ok());
  EXPECT_EQ(count(d.api->calls(), "copy to device"), persistent + 2) << "the params and state, the inputs, the step";
  EXPECT_EQ(count(d.api->calls(), "graph 0"), 1);
  // Loading some params after a step first completes the session's copies of everything else:
  // the state the device holds is not lost when the params go up.
  std::vector<NamedTensor> one;
  for (const NamedTensorRef& t : d.session->params()) {
    one.push_back({t.name, *t.tensor});
    break;
  }
  d.api->clearCalls();
  ASSERT_TRUE(d.session->setParams(one, nullptr).ok());
  EXPECT_EQ(count(d.api->calls(), "copy to host"), persistent) << "the device's newer values, downloaded first";
}

TEST(CudaExecutor, SaysWhatItCannotRun) {
  OPEN_OR_SKIP(d, "mlp_f16_sm_90");
  // A bundle for a cpu target carries no CUDA code.
  Plan cpu = d.session->plan();
  cpu.code.clear();
  auto session = Session::create(std::move(cpu), makeCudaExecutor(std::make_unique<DryRunApi>()));
  ASSERT_TRUE(session.ok());
  auto prepared = session->prepared("eval");
  ASSERT_FALSE(prepared.ok());
  EXPECT_NE(prepared.status().message().find("carries no CUDA code"), std::string::npos) << prepared.status();
  // An sm_90 bundle on an Ampere GPU.
  GpuInfo a100 = DryRunApi::h200();
  a100.ccMajor = 8;
  auto older = Session::create(d.session->plan(), makeCudaExecutor(std::make_unique<DryRunApi>(a100)));
  ASSERT_TRUE(older.ok());
  auto refused = older->prepared("eval");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("recompile with --target=cuda:sm_80"), std::string::npos) << refused.status();
  // A GPU too small for the bundle: the allocation that does not fit is refused with the sizes.
  GpuInfo tiny = DryRunApi::h200();
  tiny.memoryBytes = int64_t{2} << 20;
  auto small = Session::create(d.session->plan(), makeCudaExecutor(std::make_unique<DryRunApi>(tiny)));
  ASSERT_TRUE(small.ok());
  auto full = small->prepared("train_step");
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(full.status().message().find("the GPU is out of memory"), std::string::npos) << full.status();
  EXPECT_NE(full.status().message().find("free of 2.0 MiB"), std::string::npos) << full.status();
}

// What a GPU would trust blindly is checked against the plan first: the code object's checksum,
// and every generated kernel's operands against the accesses compiled into it.
TEST(CudaExecutor, RefusesHostileBundlesBeforeLaunchingAnything) {
  OPEN_OR_SKIP(d, "mlp_bf16_sm_90");
  Plan corrupted = d.session->plan();
  for (CodeObject& c : corrupted.code) c.bytes[c.bytes.size() / 2] ^= 0x40;
  auto bad = Session::create(std::move(corrupted), makeCudaExecutor(std::make_unique<DryRunApi>()));
  ASSERT_TRUE(bad.ok());
  auto refused = bad->prepared("eval");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("fails its SHA-256 check"), std::string::npos) << refused.status();

  Plan edited = d.session->plan();
  bool changed = false;
  for (EntryPoint& e : edited.entries)
    for (PlanStep& st : e.steps)
      if (!changed && st.op == "amp.fused" && !st.operands.empty()) {
        Shape& shape = edited.buffers[st.operands[0]].shape;
        shape.back() += 1;  // one more column than the kernel was compiled for
        changed = true;
      }
  ASSERT_TRUE(changed);
  auto session = Session::create(std::move(edited), makeCudaExecutor(std::make_unique<DryRunApi>()));
  if (!session.ok()) return;  // plan validation already refused the edit: also fine
  EXPECT_TRUE(anEntryIsRefused(*session)) << "an entry with the edited shape was prepared";
}

// A generated kernel is found by the name its step's own region hashes to (KernelBinding.h), never
// by the plan's cuda_symbol: pointing a step at another kernel, at a name outside the module, or
// editing a region under its kernel is refused with the step named, before anything launches.
TEST(CudaExecutor, AStepRunsOnlyTheKernelGeneratedForItsRegion) {
  OPEN_OR_SKIP(d, "mlp_bf16_sm_90");
  const Plan& plan = d.session->plan();
  // Two fused steps with different kernels in one entry.
  const EntryPoint* entry = nullptr;
  size_t first = 0, second = 0;
  for (const EntryPoint& e : plan.entries) {
    std::vector<size_t> fused;
    for (size_t i = 0; i < e.steps.size(); ++i)
      if (e.steps[i].attrs.has("cuda_symbol")) {
        EXPECT_EQ(*e.steps[i].attrs.getString(e.steps[i].op, "cuda_symbol"), cudaKernelName(plan, e.steps[i]));
        if (fused.empty() || cudaKernelName(plan, e.steps[i]) != cudaKernelName(plan, e.steps[fused[0]]))
          fused.push_back(i);
      }
    if (!entry && fused.size() >= 2) {
      entry = &e;
      first = fused[0];
      second = fused[1];
    }
  }
  ASSERT_NE(entry, nullptr) << "no entry with two different generated kernels";
  auto refusedWith = [&](const std::function<void(PlanStep&)>& edit, const std::string& expected) {
    Plan edited = plan;
    for (EntryPoint& e : edited.entries)
      if (e.name == entry->name) edit(e.steps[first]);
    auto session = Session::create(std::move(edited), makeCudaExecutor(std::make_unique<DryRunApi>()));
    if (!session.ok()) return;  // plan validation refused it first: also fine
    auto prepared = session->prepared(entry->name);
    ASSERT_FALSE(prepared.ok()) << expected;
    EXPECT_NE(prepared.status().message().find(expected), std::string::npos) << prepared.status();
    EXPECT_NE(prepared.status().message().find("step " + std::to_string(first)), std::string::npos) << prepared.status();
  };
  const std::string other = *entry->steps[second].attrs.getString(entry->steps[second].op, "cuda_symbol");
  refusedWith([&](PlanStep& st) { st.attrs.set("cuda_symbol", other); }, "is not the kernel generated for its region");
  refusedWith([&](PlanStep& st) { st.attrs.set("cuda_symbol", std::string("amp_update_scale")); },
              "is not the kernel generated for its region");
  refusedWith([&](PlanStep& st) { st.attrs.set("cuda_vector_width", int64_t{1} + *st.attrs.getInt(st.op, "cuda_vector_width")); },
              "is not the kernel generated for its region");
  // The region changed and its recorded name updated to match: no such kernel in the module.
  refusedWith(
      [&](PlanStep& st) {
        st.attrs.set("row_length", int64_t{7});
        Plan probe = plan;
        st.attrs.set("cuda_symbol", cudaKernelName(probe, st));
      },
      "amp_k");
}

// Every launch passes exactly the parameter sizes the kernel's PTX declares: a struct or scalar
// that disagrees between host and kernel would be garbage on a GPU.
TEST(CudaExecutor, EveryLaunchMatchesItsKernelsParameterList) {
  for (const char* name : {"op_parity_sequence_bf16_sm_90", "op_parity_conv_f32_sm_90", "small_cnn_f16_sm_90",
                           "op_parity_batch_norm_bf16_sm_90"}) {
    SCOPED_TRACE(name);
    OPEN_OR_SKIP(every, name);
    for (const EntryPoint& e : every.session->plan().entries)
      ASSERT_TRUE(every.session->run(e.name, every.feeds).ok()) << e.name;
  }
  OPEN_OR_SKIP(d, "mlp_sgd_clip_f16_sm_80");
  for (const EntryPoint& e : d.session->plan().entries) ASSERT_TRUE(d.session->run(e.name, d.feeds).ok()) << e.name;
  EXPECT_GT(d.api->signaturesKnown(), 100u) << "the bundle's PTX lists every kernel";
  // The checker itself: the fused SGD kernel takes its tensor list by value and one pointer.
  const Plan& plan = d.session->plan();
  const CodeObject* ptx = nullptr;
  for (const CodeObject& c : plan.code)
    if (c.format == "ptx") ptx = &c;
  ASSERT_NE(ptx, nullptr);
  DryRunApi api;
  ASSERT_TRUE(api.loadModule(ptx->bytes, true).ok());
  api.kernelSignatures(ptx->bytes);
  auto fn = api.function("amp_mt_sgd_f16w_f16");
  ASSERT_TRUE(fn.ok()) << fn.status();
  std::vector<uint8_t> list(sizeof(AmpTensorList<4>)), pointer(8);
  void* params[] = {list.data(), pointer.data()};
  const size_t right[] = {sizeof(AmpTensorList<4>), 8}, shortList[] = {sizeof(AmpTensorList<4>) - 8, 8};
  EXPECT_TRUE(api.launch(*fn, 1, 256, params, 1, right).ok());
  auto wrong = api.launch(*fn, 1, 256, params, 1, shortList);
  EXPECT_FALSE(wrong.ok());
  EXPECT_NE(wrong.message().find("amp_mt_sgd_f16w_f16 takes parameters of"), std::string::npos) << wrong.message();
  EXPECT_FALSE(api.launch(*fn, 1, 256, params, 1, absl::MakeConstSpan(right, 1)).ok()) << "a missing argument";
  // A pointer argument into freed memory (between live allocations) is caught.
  auto zero = api.function("amp_zero_bytes");
  ASSERT_TRUE(zero.ok()) << zero.status();
  std::vector<DevicePtr> blocks;
  for (int i = 0; i < 3; ++i) {
    auto p = api.allocate(4096);
    ASSERT_TRUE(p.ok());
    blocks.push_back(*p);
  }
  std::sort(blocks.begin(), blocks.end());
  long long bytes = 4096;
  DevicePtr live = blocks[2];
  void* liveArgs[] = {&live, &bytes};
  const size_t sizes[] = {8, 8};
  EXPECT_TRUE(api.launch(*zero, 1, 256, liveArgs, 1, sizes).ok());
  api.release(blocks[1]);
  DevicePtr stale = blocks[1];
  void* staleArgs[] = {&stale, &bytes};
  auto caught = api.launch(*zero, 1, 256, staleArgs, 1, sizes);
  ASSERT_FALSE(caught.ok());
  EXPECT_NE(caught.message().find("points outside every live allocation"), std::string::npos) << caught.message();
}

// --check-numerics: a checked graph with one check kernel per float result after its step, the
// words read back with the results in one wait, and a steady-state checked call replays it.
TEST(CudaExecutor, ACheckedCallTestsEveryFloatResultAfterItsStep) {
  OPEN_OR_SKIP(d, "mlp_f16_sm_90");
  ASSERT_TRUE(d.session->run("train_step", d.feeds).ok());  // graph 0: the entry's own
  Session::RunOptions numerics;
  numerics.checkNumerics = true;
  d.api->clearCalls();
  auto first = d.session->run("train_step", d.feeds, numerics);
  ASSERT_TRUE(first.ok()) << first.status();
  const int64_t checkLaunches = count(d.api->calls(), "launch amp_check_finite_");
  d.api->clearCalls();
  auto again = d.session->run("train_step", d.feeds, numerics);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(count(d.api->calls(), "graph 1"), 1) << "the checked graph, captured once";
  EXPECT_EQ(count(d.api->calls(), "begin capture"), 0);
  // Two waits: params and state come to the session first (what a failed call restores), then
  // the results and the check words.
  EXPECT_EQ(count(d.api->calls(), "sync"), 2);
  EXPECT_GT(count(d.api->calls(), "copy to host"), 0);
  const Plan& plan = d.session->plan();
  auto prepared = d.session->prepared("train_step");
  ASSERT_TRUE(prepared.ok());
  // Every float result of the entry is checked (ampc fused the gradient pipeline: the unscaled
  // gradients are not results any more).
  const std::vector<ResultCheck> checks = resultChecks(plan, *plan.findEntry("train_step"));
  EXPECT_GT(checks.size(), 20u);
  EXPECT_EQ(checkLaunches, static_cast<int64_t>(checks.size())) << "one check kernel per float result";
  // The normal graph is untouched: an unchecked call still replays graph 0.
  d.api->clearCalls();
  ASSERT_TRUE(d.session->run("train_step", d.feeds).ok());
  expectOneReplay(d.api->calls(), "sync");
  // Enqueued checked calls run synchronously (the session's choice), and still deliver logs.
  ASSERT_TRUE(d.session->enqueue("train_step", d.feeds, numerics, 7).ok());
  int delivered = 0;
  ASSERT_TRUE(d.session->poll("train_step", true, [&](const LoggedCall& c) { delivered += c.ticket() == 7; }).ok());
  EXPECT_EQ(delivered, 1);
}

// What a check word says: the first failing check in plan order decides, with the plan's numbers.
TEST(CudaExecutor, CheckWordsAreJudgedLikeTheCpuDevice) {
  OPEN_OR_SKIP(d, "mlp_f16_sm_90");
  const Plan& plan = d.session->plan();
  const EntryPoint& train = *plan.findEntry("train_step");
  const std::vector<ResultCheck> checks = resultChecks(plan, train);
  std::vector<uint64_t> words(checks.size(), kAllFinite);
  GradientOverflow overflow;
  EXPECT_TRUE(judgeChecks(plan, train, checks, words.data(), &overflow).ok());
  EXPECT_FALSE(overflow.seen);
  size_t forward = checks.size(), backward = checks.size(), update = checks.size();
  for (size_t k = 0; k < checks.size(); ++k) {
    const std::string& phase = train.steps[checks[k].step].phase;
    if (phase == "forward" && forward == checks.size()) forward = k;
    if (phase == "backward" && backward == checks.size()) backward = k;
    if (phase == "update" && update == checks.size() && plan.buffers[checks[k].buffer].numel() > 1) update = k;
  }
  ASSERT_LT(forward, checks.size());
  ASSERT_LT(backward, checks.size());
  ASSERT_LT(update, checks.size());
  // A gradient overflow of this loss-scaled plan is recorded; the call goes on.
  words[backward] = 5;
  EXPECT_TRUE(judgeChecks(plan, train, checks, words.data(), &overflow).ok());
  EXPECT_TRUE(overflow.seen);
  EXPECT_EQ(overflow.buffer, plan.buffers[checks[backward].buffer].name);
  // Then a non-finite updated param is an error, named with the plan's step number.
  words[update] = 3;
  auto updateError = judgeChecks(plan, train, checks, words.data(), &overflow);
  ASSERT_FALSE(updateError.ok());
  const size_t planUpdate = checks[update].step;
  EXPECT_NE(updateError.message().find(absl::StrCat("step ", planUpdate, " (")), std::string::npos) << updateError.message();
  EXPECT_NE(updateError.message().find("at element 3 of"), std::string::npos) << updateError.message();
  EXPECT_NE(updateError.message().find("in the optimizer step"), std::string::npos) << updateError.message();
  // A forward overflow comes first and says no loss scale cures it.
  words[forward] = 0;
  auto forwardError = judgeChecks(plan, train, checks, words.data(), &overflow);
  ASSERT_FALSE(forwardError.ok());
  EXPECT_NE(forwardError.message().find("in the forward pass"), std::string::npos) << forwardError.message();
}

// Edited convolution and pooling attributes never reach a kernel whose index math assumes
// them: plan validation or the lowering refuses each with a message.
TEST(CudaExecutor, RefusesConvolutionAndPoolingAttributesThatDisagreeWithTheShapes) {
  OPEN_OR_SKIP(d, "small_cnn_f16_sm_90");
  struct Edit {
    const char* op;
    const char* attr;
    std::vector<int64_t> value;
  };
  const Edit edits[] = {{"amp.conv2d", "stride", {3, 3}},     {"amp.conv2d", "padding", {0, 0}},
                        {"amp.conv2d", "dilation", {0, 1}},   {"amp.conv2d_grad_weight", "stride", {1, 1}},
                        {"amp.max_pool2d", "kernel", {3, 3}}, {"amp.max_pool2d", "padding", {2, 2}},
                        {"amp.avg_pool2d_grad", "kernel", {3, 3}}};
  for (const Edit& edit : edits) {
    SCOPED_TRACE(std::string(edit.op) + " " + edit.attr);
    expectEditRefused(d.session->plan(), edit.op, edit.attr, edit.value);
  }
}

// cuBLASLt's heuristic picks an algorithm for the plan's pointer alignments; the dry run refuses
// a call whose pointer is less aligned than that, and the lowering gives every GEMM of the
// bundles the alignments its calls have (the other tests here run them all).
TEST(CudaExecutor, AGemmPointerLessAlignedThanItsAlgorithmIsRefused) {
  DryRunApi api;
  GemmProblem p;
  p.dtype = DType::F32;
  p.a = {4, 4};
  p.b = {4, 4};
  auto plan = planGemm(p);
  ASSERT_TRUE(plan.ok());
  auto buffer = api.allocate(4096);
  ASSERT_TRUE(buffer.ok());
  const DevicePtr a = *buffer, b = *buffer + 1024, d = *buffer + 2048 + 64;
  auto strict = api.prepareGemm(*plan);
  ASSERT_TRUE(strict.ok());
  auto refused = api.gemm(*strict, a, b, 0, d, 0);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("result is 64-byte aligned; its algorithm was chosen for 256"), std::string::npos)
      << refused;
  alignForCall(*plan, a, b, 0, d, 0);
  auto relaxed = api.prepareGemm(*plan);
  ASSERT_TRUE(relaxed.ok());
  EXPECT_TRUE(api.gemm(*relaxed, a, b, 0, d, 0).ok());
}

// Where the driver sees a GPU (scripts/gpu-check.sh's machine) the device opens: a skip there would
// hide a device that cannot start (cuBLASLt missing, say).
TEST(CudaExecutor, WithoutADriverTheDeviceSaysSoAndWithAGpuItOpens) {
  auto e = ::amp::rt::makeCudaExecutor();
  if (cudaDriverSeesAGpu()) {
    EXPECT_TRUE(e.ok()) << e.status();
    return;
  }
  if (access("/dev/nvidiactl", F_OK) == 0) GTEST_SKIP() << "this machine has an NVIDIA driver but no GPU it can use";
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("use --device=cpu"), std::string::npos) << e.status();
}

}  // namespace
}  // namespace amp::rt::cuda
