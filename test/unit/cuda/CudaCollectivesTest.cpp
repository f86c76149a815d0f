// Data-parallel bundles on the cuda device without a GPU: the dry-run GpuApi with collectives that
// record their calls (GpuCollectivesDryRun.h). Checked: every collective of the plan is lowered
// into the step's captured graph in plan order, buckets as one call, found_inf's max before every
// optimizer update, ZeRO-1's reduce-scatter before its all-gather with the blocks the bucket's
// chunks make, no host synchronisation in a steady-state step, and the job-size refusals.
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <string>

#include "gtest/gtest.h"
#include "runtime/devices/cuda/CudaExecutor.h"
#include "runtime/devices/cuda/GpuCollectivesDryRun.h"
#include "runtime/dist/Chunks.h"
#include "runtime/exec/Session.h"
#include "runtime/plan/Bundle.h"
#include "runtime/train/Trainer.h"

namespace amp::rt::cuda {
namespace {

std::string bundlePath(const std::string& name) { return std::string(AMP_TEST_CUDA_BUNDLE_DIR) + "/" + name + ".ampx"; }

struct DpSession {
  DryRunApi* api = nullptr;
  RecordingCollectives* recorder = nullptr;  // made on the first call that communicates
  std::optional<Session> session;
  std::map<std::string, Tensor> feeds;
};

// `worldSize` 0: the recorder plays the caller's job; otherwise rank `rank` of `worldSize`.
// `record` false: the executor's default collectives.
void open(DpSession& d, const std::string& name, int worldSize = 0, int rank = 0, bool record = true) {
#if defined(AMP_TEST_CUDA_BUNDLES_BUILT)
  ASSERT_EQ(access(bundlePath(name).c_str(), R_OK), 0) << bundlePath(name) << " was not built";
#else
  if (access(bundlePath(name).c_str(), R_OK) != 0) GTEST_SKIP() << "no " << bundlePath(name) << " (built without NVRTC)";
#endif
  auto plan = readBundle(bundlePath(name));
  ASSERT_TRUE(plan.ok()) << plan.status();
  auto api = std::make_unique<DryRunApi>();
  d.api = api.get();
  CudaOptions options;
  if (record) options.collectives = recordingCollectives(*api, &d.recorder, worldSize, rank);
  auto session = Session::create(std::move(*plan), makeCudaExecutor(std::move(api), options));
  ASSERT_TRUE(session.ok()) << session.status();
  d.session.emplace(std::move(*session));
  for (const BufferDesc& b : d.session->plan().buffers)
    if (b.kind == BufferKind::Input || b.kind == BufferKind::Label) d.feeds.emplace(b.name, Tensor(b.dtype, b.shape));
}

const EntryPoint& entryNamed(const Plan& plan, const std::string& name) {
  for (const EntryPoint& e : plan.entries)
    if (e.name == name) return e;
  ADD_FAILURE() << "no entry " << name;
  return plan.entries.front();
}

// Index of the first dry-run call at or after `from` that starts with `prefix` (calls.size() if none).
size_t findCall(const std::vector<std::string>& calls, const std::string& prefix, size_t from = 0) {
  for (size_t i = from; i < calls.size(); ++i)
    if (calls[i].rfind(prefix, 0) == 0) return i;
  return calls.size();
}

TEST(CudaCollectives, EveryAllReduceOfTheStepIsInItsGraphInPlanOrderAndBucketsAreOneCall) {
  DpSession d;
  open(d, "mlp_dp_f16_sm_90");
  if (!d.session) return;
  const Plan& plan = d.session->plan();
  // What the plan asks for, in order: one call per amp.all_reduce, a bucket's count the sum of its tensors'.
  std::vector<std::string> expected;
  for (const PlanStep& step : entryNamed(plan, "train_step").steps) {
    if (step.code != OpCode::AllReduce) continue;
    int64_t count = 0;
    for (int32_t id : step.operands) count += plan.buffers[id].numel();
    auto kind = step.attrs.getString(step.op, "kind");
    ASSERT_TRUE(kind.ok());
    expected.push_back(absl::StrCat("all_reduce ", *kind, " ", count, " x ",
                                    std::string(dtypeName(plan.buffers[step.operands[0]].dtype)),
                                    step.operands.size() > 1 ? " in place" : ""));
  }
  ASSERT_GE(expected.size(), 3u);  // gradient bucket(s), found_inf, loss
  ASSERT_TRUE(std::any_of(expected.begin(), expected.end(), [](const std::string& e) { return e.find("in place") != std::string::npos; }))
      << "the bundle should have a bucket of several gradients";
  auto first = d.session->run("train_step", d.feeds);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_NE(d.recorder, nullptr);
  std::vector<std::string> lines;
  for (const auto& c : d.recorder->calls()) lines.push_back(c.line);
  EXPECT_EQ(lines, expected);
  // All of them while the step's graph was being captured.
  const auto& calls = d.api->calls();
  const size_t begin = findCall(calls, "begin capture"), end = findCall(calls, "end capture");
  ASSERT_LT(end, calls.size());
  for (const auto& c : d.recorder->calls()) {
    EXPECT_GT(c.apiCallsBefore, begin) << c.line;
    EXPECT_LE(c.apiCallsBefore, end) << c.line;
  }
  // found_inf's max precedes every optimizer launch and the scale update.
  const auto maxCall = std::find_if(d.recorder->calls().begin(), d.recorder->calls().end(),
                                    [](const auto& c) { return c.line.rfind("all_reduce max", 0) == 0; });
  ASSERT_NE(maxCall, d.recorder->calls().end());
  size_t optimizerLaunches = 0;
  for (size_t i = begin; i < end; ++i)
    if (calls[i].find("adam") != std::string::npos || calls[i].find("update_scale") != std::string::npos) {
      EXPECT_GE(i, maxCall->apiCallsBefore) << calls[i] << " runs before found_inf is reduced";
      ++optimizerLaunches;
    }
  EXPECT_GT(optimizerLaunches, 0u);
  // A bucket is packed into one buffer and unpacked from it by copies on the device.
  auto prepared = d.session->prepared("train_step");
  ASSERT_TRUE(prepared.ok());
  const auto& actions = (**prepared).report().actions;
  EXPECT_TRUE(std::any_of(actions.begin(), actions.end(), [](const std::string& a) { return a.find("bucket <- ") != std::string::npos; }));
  EXPECT_TRUE(std::any_of(actions.begin(), actions.end(), [](const std::string& a) { return a.find("<- bucket") != std::string::npos; }));
  // The next call replays the graph: no collective is issued from the host again.
  const size_t issued = d.recorder->calls().size();
  d.api->clearCalls();
  ASSERT_TRUE(d.session->run("train_step", d.feeds).ok());
  EXPECT_EQ(d.recorder->calls().size(), issued);
  EXPECT_EQ(findCall(d.api->calls(), "begin capture"), d.api->calls().size());
}

TEST(CudaCollectives, ADataParallelStepNeverWaitsForTheHost) {
  DpSession d;
  open(d, "mlp_dp_f16_sm_90");
  if (!d.session) return;
  Dataset data;
  data.name = "zeros";
  data.inputs = Tensor(DType::F32, {512, 784});
  data.labels = Tensor(DType::I64, {512});
  TrainOptions options;
  options.steps = 8;
  options.evalEvery = 100;
  auto job = makeSingleProcessCommunicator();
  options.communicator = job.get();
  auto report = train(*d.session, data, nullptr, options, {});
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_TRUE(report->hostSyncsPerStep.has_value());
  EXPECT_EQ(*report->hostSyncsPerStep, 0.0);
  ASSERT_NE(d.recorder, nullptr);
  EXPECT_EQ(d.recorder->worldSize(), 1);
}

TEST(CudaCollectives, ZeroOneReduceScattersTheRankMajorBlocksThenGathersThem) {
  DpSession d;
  open(d, "mlp_zero1_bf16_sm_90", /*worldSize=*/2, /*rank=*/1);
  if (!d.session) return;
  const Plan& plan = d.session->plan();
  const EntryPoint& step = entryNamed(plan, "train_step");
  int64_t scatterBlock = 0, gatherBlock = 0;
  size_t tensors = 0;
  for (const PlanStep& s : step.steps) {
    if (s.code == OpCode::ReduceScatter) {
      for (int32_t id : s.operands) scatterBlock += chunkLength(plan.buffers[id].numel(), 2);
      tensors = s.operands.size();
    }
    if (s.code == OpCode::AllGather)
      for (int32_t id : s.results) gatherBlock += chunkLength(plan.buffers[id].numel(), 2);
  }
  ASSERT_GT(scatterBlock, 0);
  auto run = d.session->run("train_step", d.feeds);
  ASSERT_TRUE(run.ok()) << run.status();
  std::vector<std::string> lines;
  for (const auto& c : d.recorder->calls()) lines.push_back(c.line);
  ASSERT_EQ(lines.size(), 4u) << ::testing::PrintToString(lines);
  EXPECT_EQ(lines[0], absl::StrCat("reduce_scatter mean ", scatterBlock, " x f32 per rank"));
  EXPECT_EQ(lines[1], "all_reduce max 1 x f32");
  EXPECT_EQ(lines[2], absl::StrCat("all_gather ", gatherBlock, " x f32 per rank"));
  EXPECT_EQ(lines[3], "all_reduce mean 1 x f32");
  // The reduce-scatter sends 2 blocks and keeps rank 1's: the send buffer is twice the block.
  const auto& scatter = d.recorder->calls()[0];
  EXPECT_EQ(scatter.recv - scatter.send, static_cast<DevicePtr>(2 * scatterBlock * 4));
  // Each tensor's two chunks are packed into the blocks, each block unpacked into the results.
  auto prepared = d.session->prepared("train_step");
  ASSERT_TRUE(prepared.ok());
  int packed = 0, unpacked = 0, gathered = 0;
  for (const std::string& a : (**prepared).report().actions) {
    packed += a.find("copy: block ") != std::string::npos;
    unpacked += a.find("<- this rank's block") != std::string::npos;
    gathered += a.find(" <- block ") != std::string::npos;
  }
  EXPECT_EQ(packed, static_cast<int>(2 * tensors));
  EXPECT_EQ(unpacked, static_cast<int>(tensors));
  EXPECT_EQ(gathered, static_cast<int>(2 * tensors));
}

TEST(CudaCollectives, AZeroOneStepForTwoRanksIsRefusedInAJobOfOne) {
  DpSession d;
  open(d, "mlp_zero1_bf16_sm_90", 0, 0, /*record=*/false);
  if (!d.session) return;
  auto run = d.session->run("train_step", d.feeds);
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.status().message().find("compiled for 2 rank(s)"), std::string::npos) << run.status();
  EXPECT_NE(run.status().message().find("mpirun -np 2"), std::string::npos) << run.status();
}

TEST(CudaCollectives, AnExecutorServesOneJob) {
  DpSession d;
  open(d, "mlp_dp_f16_sm_90");
  if (!d.session) return;
  auto one = makeSingleProcessCommunicator(), other = makeSingleProcessCommunicator();
  Session::RunOptions first, second;
  first.communicator = one.get();
  second.communicator = other.get();
  ASSERT_TRUE(d.session->run("train_step", d.feeds, first).ok());
  auto refused = d.session->run("train_step", d.feeds, second);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("serve one data-parallel job"), std::string::npos) << refused.status();
}

}  // namespace
}  // namespace amp::rt::cuda
