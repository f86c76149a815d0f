// The training loop's mechanics on a hand-built plan (linear regression with a hand-written
// gradient step): seeded shuffling, batching, checkpoints, and bitwise-exact resume.
#include <algorithm>
#include <cmath>
#include <filesystem>

#include "gtest/gtest.h"
#include "runtime/io/Safetensors.h"
#include "runtime/train/CurvePlot.h"
#include "runtime/train/Trainer.h"
#include "runtime/devices/Devices.h"

namespace amp::rt {
namespace {

// train_step: pred = x*w; loss = mse(pred, y); w -= 0.1 * mean((pred - y) * x) * 2; count += 1.
Plan regressionPlan() {
  Plan p;
  p.metadata = {{"model", "linreg"}};
  auto add = [&](std::string name, DType t, Shape s, BufferKind k, std::optional<InitSpec> init = std::nullopt) {
    p.buffers.push_back({std::move(name), t, std::move(s), k, std::move(init)});
    return static_cast<int32_t>(p.buffers.size() - 1);
  };
  int32_t x = add("x", DType::F32, {4}, BufferKind::Input);
  int32_t y = add("y", DType::F32, {4}, BufferKind::Label);
  int32_t w = add("w", DType::F32, {1}, BufferKind::Param, InitSpec{"zeros", 1, 0});
  int32_t count = add("count", DType::F32, {1}, BufferKind::State, InitSpec{"zeros", 1, 0});
  int32_t pred = add("pred", DType::F32, {4}, BufferKind::Temp);
  int32_t loss = add("loss", DType::F32, {}, BufferKind::Temp);
  int32_t err = add("err", DType::F32, {4}, BufferKind::Temp);
  int32_t ex = add("ex", DType::F32, {4}, BufferKind::Temp);
  int32_t g = add("g", DType::F32, {1}, BufferKind::Temp);
  int32_t lr = add("lr", DType::F32, {1}, BufferKind::Temp);
  int32_t step = add("stepv", DType::F32, {1}, BufferKind::Temp);
  int32_t w2 = add("w2", DType::F32, {1}, BufferKind::Temp);
  int32_t one = add("one", DType::F32, {1}, BufferKind::Temp);
  int32_t count2 = add("count2", DType::F32, {1}, BufferKind::Temp);
  auto constant = [](float v) {
    Tensor t(DType::F32, {1});
    t.as<float>()[0] = v;
    AttrMap a;
    a.set("value", t);
    return a;
  };
  AttrMap mean;
  mean.set("dims", std::vector<int64_t>{0});
  mean.set("keepdim", true);
  EntryPoint e;
  e.name = "train_step";
  e.steps = {{"amp.mul", {x, w}, {pred}, {}, ""},
             {"amp.mse_loss", {pred, y}, {loss}, {}, ""},
             {"amp.sub", {pred, y}, {err}, {}, ""},
             {"amp.mul", {err, x}, {ex}, {}, ""},
             {"amp.reduce_mean", {ex}, {g}, mean, ""},
             {"amp.constant", {}, {lr}, constant(0.2f), ""},
             {"amp.mul", {g, lr}, {step}, {}, ""},
             {"amp.sub", {w, step}, {w2}, {}, ""},
             {"amp.constant", {}, {one}, constant(1.0f), ""},
             {"amp.add", {count, one}, {count2}, {}, ""}};
  e.results = {loss};
  e.resultNames = {"loss"};
  e.updates = {{w2, w}, {count2, count}};
  p.entries.push_back(e);
  return p;
}

Dataset lineData(int64_t n) {
  Dataset d;
  d.name = "line";
  d.inputs = Tensor(DType::F32, {n});
  d.labels = Tensor(DType::F32, {n});
  for (int64_t i = 0; i < n; ++i) {
    float x = static_cast<float>((i * 37) % 17) / 8.0f - 1.0f;
    d.inputs.as<float>()[i] = x;
    d.labels.as<float>()[i] = 3.0f * x + 0.01f * static_cast<float>(i % 5);
  }
  return d;
}

const Tensor& persistentNamed(const Session& s, const std::string& name) {
  for (const NamedTensorRef& r : s.persistent())
    if (r.name == name) return *r.tensor;
  static Tensor none;
  return none;
}

TEST(EpochOrder, IsASeededPermutation) {
  auto a = epochOrder(1000, 7, 0);
  auto b = epochOrder(1000, 7, 0);
  auto c = epochOrder(1000, 7, 1);
  auto d = epochOrder(1000, 8, 0);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, d);
  std::vector<int64_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 1000; ++i) ASSERT_EQ(sorted[i], i);
  int64_t fixedPoints = 0;
  for (int64_t i = 0; i < 1000; ++i) fixedPoints += a[i] == i;
  EXPECT_LT(fixedPoints, 10);  // a shuffle, not the identity (expected ~1)
}

// DistributedSampler(drop_last=False): pad with the order's first examples to a multiple of the
// world size, then rank r takes every world-th position from r.
TEST(RankShard, DistributedSamplerSemantics) {
  const std::vector<int64_t> order = {9, 4, 7, 1, 0, 3, 8};
  EXPECT_EQ(rankShard(order, 0, 1), order);
  EXPECT_EQ(rankShard(order, 0, 2), (std::vector<int64_t>{9, 7, 0, 8}));
  EXPECT_EQ(rankShard(order, 1, 2), (std::vector<int64_t>{4, 1, 3, 9}));  // padded with order[0]
  EXPECT_EQ(rankShard(order, 2, 3), (std::vector<int64_t>{7, 3, 4}));     // padded with order[1]
  // Every example is visited; only the padding repeats.
  std::vector<int64_t> all;
  for (int r = 0; r < 4; ++r)
    for (int64_t i : rankShard(order, r, 4)) all.push_back(i);
  EXPECT_EQ(all.size(), 8u);
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::unique(all.begin(), all.end()) - all.begin(), 7);
}

TEST(GatherBatch, ReshapesAndConverts) {
  Tensor src(DType::I64, {3, 2});
  for (int i = 0; i < 6; ++i) src.as<int64_t>()[i] = i;
  auto b = gatherBatch(src, {2, 0}, DType::I32, {4}, "ids");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->as<int32_t>()[0], 4);
  EXPECT_EQ(b->as<int32_t>()[1], 5);
  EXPECT_EQ(b->as<int32_t>()[2], 0);
  auto bad = gatherBatch(src, {0}, DType::I32, {4}, "ids");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("do not fill the model's i32 [4]"), std::string::npos) << bad.status();
  auto kind = gatherBatch(src, {0, 1}, DType::F32, {4}, "ids");
  EXPECT_NE(kind.status().message().find("data is i64 but the model expects f32"), std::string::npos);
}

TEST(Trainer, LearnsAndCountsSteps) {
  auto s = openSession(regressionPlan(), Device::Reference);
  ASSERT_TRUE(s.ok());
  TrainOptions o;
  o.steps = 200;
  o.seed = 3;
  auto r = train(*s, lineData(64), nullptr, o, {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->steps, 200);
  EXPECT_EQ(r->losses.size(), 200u);
  EXPECT_NEAR(persistentNamed(*s, "w").as<float>()[0], 3.0f, 0.05f);
  EXPECT_EQ(persistentNamed(*s, "count").as<float>()[0], 200.0f);
  ASSERT_TRUE(r->finalLoss.has_value());
  EXPECT_LT(*r->finalLoss, 0.01 * r->losses.front());
}

TEST(Trainer, ResumeIsBitwiseIdenticalToNotStopping) {
  std::string dir = ::testing::TempDir() + "/ckpt-resume";
  std::filesystem::remove_all(dir);
  Dataset data = lineData(60);  // 15 steps per epoch: the 23 steps cross an epoch boundary

  auto straight = openSession(regressionPlan(), Device::Reference);
  ASSERT_TRUE(straight.ok());
  TrainOptions all;
  all.steps = 23;
  all.seed = 11;
  all.checkpointAuth.key = UserKey{"(test key)", std::string(32, '\x5a')};  // tags what it saves, verifies the resume
  ASSERT_TRUE(train(*straight, data, nullptr, all, {}).ok());

  auto first = openSession(regressionPlan(), Device::Reference);
  ASSERT_TRUE(first.ok());
  TrainOptions part = all;
  part.steps = 9;
  part.checkpointDir = dir;
  ASSERT_TRUE(train(*first, data, nullptr, part, {}).ok());

  auto second = openSession(regressionPlan(), Device::Reference);  // a fresh process
  ASSERT_TRUE(second.ok());
  TrainOptions rest = all;
  rest.steps = 14;
  rest.seed = 999;  // ignored: the checkpoint's seed wins, so the data order is the same
  rest.checkpointDir = dir;
  rest.resume = true;
  auto r = train(*second, data, nullptr, rest, {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->steps, 23);
  EXPECT_EQ(r->firstStep, 9);
  for (const char* name : {"w", "count"})
    EXPECT_TRUE(persistentNamed(*second, name).bitwiseEquals(persistentNamed(*straight, name))) << name;
}

TEST(Trainer, CheckpointErrors) {
  auto s = openSession(regressionPlan(), Device::Reference);
  ASSERT_TRUE(s.ok());
  std::string dir = ::testing::TempDir() + "/ckpt-missing";
  std::filesystem::remove_all(dir);
  auto missing = loadCheckpoint(*s, dir, {std::nullopt, true});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("checkpoint.safetensors"), std::string::npos);

  std::filesystem::create_directories(dir);
  Tensor w(DType::F32, {1});
  ASSERT_TRUE(writeSafetensors(dir + "/checkpoint.safetensors", {{"w", &w}},
                               {{"ampc.checkpoint", "1"}, {"step", "4"}, {"seed", "0"}, {"shuffle", "true"}, {"model", "linreg"}})
                  .ok());
  auto unhashed = loadCheckpoint(*s, dir, {std::nullopt, true});
  ASSERT_FALSE(unhashed.ok());
  EXPECT_NE(unhashed.status().message().find("carries no sha256"), std::string::npos) << unhashed.status();
  ASSERT_TRUE(writeSafetensors(dir + "/checkpoint.safetensors", {{"w", &w}},
                               {{"ampc.checkpoint", "1"},
                                {"step", "4"},
                                {"seed", "0"},
                                {"shuffle", "true"},
                                {"model", "linreg"},
                                {"sha256", checkpointHash({{"w", &w}})}})
                  .ok());
  auto partial = loadCheckpoint(*s, dir, {std::nullopt, true});
  ASSERT_FALSE(partial.ok());
  EXPECT_NE(partial.status().message().find("checkpoint lacks state 'count'"), std::string::npos)
      << partial.status();
  EXPECT_EQ(persistentNamed(*s, "w").as<float>()[0], 0.0f);  // nothing was changed

  TrainOptions o;
  o.steps = 1;
  o.resume = true;
  auto noDir = train(*s, lineData(8), nullptr, o, {});
  EXPECT_NE(noDir.status().message().find("--resume needs --checkpoint"), std::string::npos);

  // A job of another size cannot continue a checkpoint: each rank's share of the data order
  // depends on the number of ranks.
  std::string job = ::testing::TempDir() + "/ckpt-job-of-two";
  std::filesystem::remove_all(job);
  ASSERT_TRUE(saveCheckpoint(*s, job, {3, 0, true, 2}, {}).ok());
  o.checkpointDir = job;
  o.checkpointAuth.trustAny = true;
  auto otherSize = train(*s, lineData(8), nullptr, o, {});
  EXPECT_NE(otherSize.status().message().find("written by a job of 2 rank(s), this job has 1"), std::string::npos)
      << otherSize.status();
}

TEST(Trainer, RejectsPlansWithoutTrainStepAndTooLittleData) {
  Plan p = regressionPlan();
  p.entries[0].name = "eval";
  auto s = openSession(p, Device::Reference);
  ASSERT_TRUE(s.ok());
  TrainOptions o;
  o.steps = 1;
  EXPECT_NE(train(*s, lineData(8), nullptr, o, {}).status().message().find("compile it with ampc --train"),
            std::string::npos);
  auto t = openSession(regressionPlan(), Device::Reference);
  auto small = train(*t, lineData(3), nullptr, o, {});
  EXPECT_NE(small.status().message().find("fewer than one step"), std::string::npos) << small.status();
}

TEST(CurvePlot, DrawsBothPanels) {
  std::string svg = renderCurveSvg({2.3, 1.0, 0.5}, {65536, 32768, 65536}, {false, true, false}, 0, "mlp (f16)");
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find("training loss"), std::string::npos);
  EXPECT_NE(svg.find("loss scale (log2)"), std::string::npos);
  EXPECT_NE(svg.find("2^15"), std::string::npos);
  EXPECT_NE(svg.find("2^16"), std::string::npos);
  EXPECT_EQ(std::count(svg.begin(), svg.end(), '\n') > 5, true);
  // The one skipped step is marked, and counted.
  size_t marks = 0;
  for (size_t at = svg.find("class='skipped'"); at != std::string::npos; at = svg.find("class='skipped'", at + 1)) ++marks;
  EXPECT_EQ(marks, 1u);
  EXPECT_NE(svg.find("1 skipped step (overflow)"), std::string::npos);
}

}  // namespace
}  // namespace amp::rt
