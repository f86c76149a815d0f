// The cuda device without a GPU: the executor prepares the examples' cuda bundles (compiled by
// ampc at build time) over the dry-run GpuApi, which checks every kernel against the bundle's
// code object and every address against the allocations. What is checked here is the host half:
// each step lowered, one graph captured per entry and replayed, the steady-state host
// synchronisations, params and state resident on the device until the session asks for them.
#include <unistd.h>

#include <map>
#include <regex>

#include "gtest/gtest.h"
#include "runtime/devices/cuda/CudaExecutor.h"
#include "runtime/devices/cuda/DryRunApi.h"
#include "runtime/exec/Session.h"
#include "runtime/plan/Bundle.h"

namespace amp::rt::cuda {
namespace {

std::string bundlePath(const std::string& name) { return std::string(AMP_TEST_CUDA_BUNDLE_DIR) + "/" + name + ".ampx"; }

struct DrySession {
  DryRunApi* api = nullptr;
  std::optional<Session> session;
  std::map<std::string, Tensor> feeds;
};

DrySession open(const std::string& name) {
  DrySession d;
  if (access(bundlePath(name).c_str(), R_OK) != 0) return d;
  auto plan = readBundle(bundlePath(name));
  EXPECT_TRUE(plan.ok()) << plan.status();
  if (!plan.ok()) return d;
  auto api = std::make_unique<DryRunApi>();
  d.api = api.get();
  auto session = Session::create(std::move(*plan), makeCudaExecutor(std::move(api)));
  EXPECT_TRUE(session.ok()) << session.status();
  if (!session.ok()) return d;
  d.session.emplace(std::move(*session));
  for (const BufferDesc& b : d.session->plan().buffers)
    if (b.kind == BufferKind::Input || b.kind == BufferKind::Label) d.feeds.emplace(b.name, Tensor(b.dtype, b.shape));
  return d;
}

#define OPEN_OR_SKIP(var, name)                                                           \
  DrySession var = open(name);                                                            \
  if (!var.session) GTEST_SKIP() << "no " << bundlePath(name) << " (built without NVRTC)"

int64_t count(const std::vector<std::string>& calls, const std::string& prefix) {
  int64_t n = 0;
  for (const std::string& c : calls) n += c.rfind(prefix, 0) == 0;
  return n;
}

TEST(CudaExecutor, EveryStepOfTheMlpLowers) {
  for (const char* name : {"mlp_bf16_sm_90", "mlp_f16_sm_90", "mlp_sgd_clip_f16_sm_80"}) {
    SCOPED_TRACE(name);
    OPEN_OR_SKIP(d, name);
    for (const EntryPoint& e : d.session->plan().entries) {
      auto prepared = d.session->prepared(e.name);
      ASSERT_TRUE(prepared.ok()) << e.name << ": " << prepared.status();
      const EntryReport* r = reportOf(**prepared);
      ASSERT_NE(r, nullptr);
      // 3 linear layers forward; training adds 5 weight/input-gradient matmuls.
      EXPECT_EQ(r->gemms, e.name == "eval" ? 3 : 8) << e.name;
      EXPECT_GT(r->kernels, 0) << e.name;
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
  EXPECT_EQ(d.api->calls(), (std::vector<std::string>{"graph 0", "sync"}));
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
  EXPECT_EQ(d.api->calls(), (std::vector<std::string>{"graph 0", "sync"}))
      << "a steady-state call is one graph launch and the wait for its results";
  EXPECT_EQ(d.api->hostSyncs() - syncs, 1);
}

// Copies to the device a first call makes besides the persistent upload: each constant once at
// prepare, and the copies of the inputs and of the training step the captured graph starts with.
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
  EXPECT_EQ(count(d.api->calls(), "copy to device"), persistent);
  EXPECT_EQ(count(d.api->calls(), "graph 0"), 1);
}

TEST(CudaExecutor, SaysWhatItCannotRun) {
  OPEN_OR_SKIP(d, "mlp_f16_sm_90");
  Session::RunOptions numerics;
  numerics.checkNumerics = true;
  auto r = d.session->run("train_step", d.feeds, numerics);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--check-numerics is not available on the cuda device"), std::string::npos);
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
  bool anyRefused = false;
  for (const EntryPoint& e : session->plan().entries) {
    auto p = session->prepared(e.name);
    if (!p.ok()) {
      anyRefused = true;
      EXPECT_FALSE(p.status().message().empty());
    }
  }
  EXPECT_TRUE(anyRefused) << "an entry with the edited shape was prepared";
}

TEST(CudaExecutor, WithoutADriverTheDeviceSaysSo) {
  if (access("/dev/nvidiactl", F_OK) == 0) GTEST_SKIP() << "this machine has an NVIDIA driver";
  auto e = ::amp::rt::makeCudaExecutor();
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("use --device=cpu"), std::string::npos) << e.status();
}

}  // namespace
}  // namespace amp::rt::cuda
