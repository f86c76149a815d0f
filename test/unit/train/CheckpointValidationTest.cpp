// A checkpoint whose sha256 matches its contents can still hold a state no run produces. Each case
// below rewrites one value of a valid checkpoint, recomputes the hash, and expects --resume's
// loader (and, for params, --params' setParams) to refuse it with an error naming the field,
// leaving the session unchanged. The loader is told to accept any author (--trust-checkpoint), so
// only the value checks can catch these; the authentication tag has its own tests at the end.
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>

#include "gtest/gtest.h"
#include "runtime/devices/Devices.h"
#include "runtime/io/Safetensors.h"
#include "runtime/numerics/Convert.h"
#include "runtime/train/Checkpoint.h"

namespace amp::rt {
namespace {

// The state of a loss-scaled Adam step with a bf16 weight copy, as ampc --train names it; the
// train_step holds the dynamic scaler's update (growth interval 2000), which sets the tracker's
// bound.
Plan scaledAdamPlan() {
  Plan p;
  p.metadata = {{"model", "scaled"}};
  auto add = [&](std::string name, DType t, Shape s, BufferKind k, std::optional<InitSpec> init = std::nullopt) {
    p.buffers.push_back({std::move(name), t, std::move(s), k, std::move(init)});
    return static_cast<int32_t>(p.buffers.size() - 1);
  };
  add("w", DType::F32, {3}, BufferKind::Param, InitSpec{"ones", 1, 0});
  add("w.exp_avg", DType::F32, {3}, BufferKind::State, InitSpec{"zeros", 1, 0});
  add("w.exp_avg_sq", DType::F32, {3}, BufferKind::State, InitSpec{"zeros", 1, 0});
  add("w.bf16", DType::BF16, {3}, BufferKind::State, InitSpec{"cast", 1, 0, "w"});
  int32_t scale = add("amp.loss_scale", DType::F32, {}, BufferKind::State, InitSpec{"constant", 65536, 0});
  int32_t tracker = add("amp.growth_tracker", DType::I32, {}, BufferKind::State, InitSpec{"zeros", 1, 0});
  add("amp.step", DType::I64, {}, BufferKind::State, InitSpec{"zeros", 1, 0});
  add("amp.skipped_steps", DType::I64, {}, BufferKind::State, InitSpec{"zeros", 1, 0});
  int32_t found = add("found", DType::F32, {}, BufferKind::Temp);
  int32_t newScale = add("new_scale", DType::F32, {}, BufferKind::Temp);
  int32_t newTracker = add("new_tracker", DType::I32, {}, BufferKind::Temp);
  Tensor zero(DType::F32, {});
  AttrMap constant;
  constant.set("value", zero);
  AttrMap update;
  update.set("growth_factor", 2.0);
  update.set("backoff_factor", 0.5);
  update.set("growth_interval", int64_t{2000});
  EntryPoint e;
  e.name = "train_step";
  e.steps = {{"amp.constant", {}, {found}, constant, ""},
             {"amp.update_scale", {scale, tracker, found}, {newScale, newTracker}, update, ""}};
  e.updates = {{newScale, scale}, {newTracker, tracker}};
  p.entries.push_back(e);
  return p;
}

// A consistent state after 2 applied and 1 skipped steps.
std::map<std::string, Tensor> validState() {
  std::map<std::string, Tensor> s;
  auto f32 = [](Shape shape, std::vector<float> v) {
    Tensor t(DType::F32, std::move(shape));
    for (size_t i = 0; i < v.size(); ++i) t.as<float>()[i] = v[i];
    return t;
  };
  s["w"] = f32({3}, {0.5f, -1.25f, 3.0f});
  s["w.exp_avg"] = f32({3}, {0.1f, -0.2f, 0.0f});
  s["w.exp_avg_sq"] = f32({3}, {0.01f, 0.04f, 0.0f});
  s["w.bf16"] = Tensor(DType::BF16, {3});
  convertBuffer(DType::F32, s["w"].data(), DType::BF16, s["w.bf16"].data(), 3);
  s["amp.loss_scale"] = f32({}, {32768.0f});
  s["amp.growth_tracker"] = Tensor(DType::I32, {});
  s["amp.growth_tracker"].as<int32_t>()[0] = 2;
  s["amp.step"] = Tensor(DType::I64, {});
  s["amp.step"].as<int64_t>()[0] = 2;
  s["amp.skipped_steps"] = Tensor(DType::I64, {});
  s["amp.skipped_steps"].as<int64_t>()[0] = 1;
  return s;
}

// --trust-checkpoint: the tag is not checked, the values are.
const CheckpointAuth kTrustAny{std::nullopt, true};

std::map<std::string, std::string> validMetadata() {
  return {{"ampc.checkpoint", "1"}, {"step", "3"}, {"seed", "7"}, {"shuffle", "true"}, {"world_size", "1"},
          {"model", "scaled"}};
}

// Writes the checkpoint with its sha256 recomputed, so only a check of the values can catch it.
void writeRehashed(const std::string& dir, const std::map<std::string, Tensor>& state,
                   const std::map<std::string, std::string>& metadata) {
  std::filesystem::create_directories(dir);
  std::vector<NamedTensorRef> refs;
  for (const auto& [name, t] : state) refs.push_back({name, &t});
  StringMap meta(metadata.begin(), metadata.end());
  meta.push_back({"sha256", checkpointHash(refs)});
  ASSERT_TRUE(writeSafetensors(checkpointPath(dir), refs, meta).ok());
}

class CheckpointValidation : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/ckpt-validation-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    auto s = openSession(scaledAdamPlan(), Device::Reference);
    ASSERT_TRUE(s.ok()) << s.status();
    session_.emplace(std::move(*s));
  }

  // Loads the checkpoint of `state` and `metadata`; expects a refusal containing `message` that
  // leaves the session's loss scale at its initial 65536.
  void expectRefused(const std::map<std::string, Tensor>& state, const std::map<std::string, std::string>& metadata,
                     const std::string& message) {
    writeRehashed(dir_, state, metadata);
    auto info = loadCheckpoint(*session_, dir_, kTrustAny);
    ASSERT_FALSE(info.ok()) << "accepted; expected: " << message;
    EXPECT_NE(info.status().message().find(message), std::string::npos) << info.status();
    EXPECT_NE(info.status().message().find("checkpoint.safetensors"), std::string::npos) << info.status();
    for (const NamedTensorRef& r : session_->persistent())
      if (r.name == "amp.loss_scale") EXPECT_EQ(r.tensor->as<float>()[0], 65536.0f);
  }
  void expectRefusedWithScale(float scale) {
    auto state = validState();
    state["amp.loss_scale"].as<float>()[0] = scale;
    expectRefused(state, validMetadata(), "state 'amp.loss_scale' holds ");
  }
  void expectRefusedWithMetadata(const std::string& key, const std::string& value, const std::string& message) {
    auto metadata = validMetadata();
    metadata[key] = value;
    expectRefused(validState(), metadata, message);
  }

  std::string dir_;
  std::optional<Session> session_;
};

TEST_F(CheckpointValidation, AValidStateLoads) {
  writeRehashed(dir_, validState(), validMetadata());
  auto info = loadCheckpoint(*session_, dir_, kTrustAny);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->step, 3);
  EXPECT_EQ(info->seed, 7u);
  for (const NamedTensorRef& r : session_->persistent())
    if (r.name == "amp.loss_scale") EXPECT_EQ(r.tensor->as<float>()[0], 32768.0f);
  // The largest seed is valid.
  auto metadata = validMetadata();
  metadata["seed"] = "18446744073709551615";
  writeRehashed(dir_, validState(), metadata);
  info = loadCheckpoint(*session_, dir_, kTrustAny);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->seed, std::numeric_limits<uint64_t>::max());
}

TEST_F(CheckpointValidation, LossScaleMustBeFiniteAndPositive) {
  expectRefusedWithScale(-1.0f);
  expectRefusedWithScale(0.0f);
  expectRefusedWithScale(std::numeric_limits<float>::infinity());
  expectRefusedWithScale(std::nanf(""));
  auto state = validState();
  state["amp.loss_scale"].as<float>()[0] = -1.0f;
  expectRefused(state, validMetadata(), "state 'amp.loss_scale' holds -1; the loss scale must be finite and > 0");
}

TEST_F(CheckpointValidation, ParamsMustBeFinite) {
  auto state = validState();
  state["w"].as<float>()[1] = std::nanf("");
  expectRefused(state, validMetadata(), "param 'w': element 1 is nan; parameter values must be finite");
  state = validState();
  for (int i = 0; i < 3; ++i) state["w"].as<float>()[i] = std::numeric_limits<float>::infinity();
  convertBuffer(DType::F32, state["w"].data(), DType::BF16, state["w.bf16"].data(), 3);  // a consistent copy
  expectRefused(state, validMetadata(), "param 'w': element 0 is inf");
  // --params applies the same rule, through the same validation.
  std::vector<NamedTensor> file;
  file.push_back({"w", state["w"]});
  absl::Status s = session_->setParams(file, nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("param 'w': element 0 is inf; parameter values must be finite"), std::string::npos) << s;
}

TEST_F(CheckpointValidation, CountersMustBeInRangeAndAgreeWithTheRecordedStep) {
  auto state = validState();
  state["amp.growth_tracker"].as<int32_t>()[0] = -1;
  expectRefused(state, validMetadata(), "state 'amp.growth_tracker' holds -1");
  state["amp.growth_tracker"].as<int32_t>()[0] = 2000;
  expectRefused(state, validMetadata(), "below the growth interval (2000)");
  state = validState();
  state["amp.skipped_steps"].as<int64_t>()[0] = -1;
  expectRefused(state, validMetadata(), "state 'amp.skipped_steps' holds -1");
  state["amp.skipped_steps"].as<int64_t>()[0] = std::numeric_limits<int64_t>::min();
  expectRefused(state, validMetadata(), "state 'amp.skipped_steps' holds ");
  // The case: a recorded step of 0 while amp.step holds 2.
  expectRefusedWithMetadata("step", "0", "metadata step 0 disagrees with the state's step counters (amp.step 2 + "
                                         "amp.skipped_steps 1)");
}

TEST_F(CheckpointValidation, MetadataIsParsedStrictly) {
  for (const char* seed : {"-1", "x", "18446744073709551616", "", " 7", "+7"})
    expectRefusedWithMetadata("seed", seed, "the seed is an unsigned 64-bit decimal");
  for (const char* shuffle : {"maybe", "", "True"})
    expectRefusedWithMetadata("shuffle", shuffle, "shuffle is 'true' or 'false'");
  expectRefusedWithMetadata("step", "-3", "metadata 'step' is '-3'");
  expectRefusedWithMetadata("world_size", "0", "world_size is a positive integer");
  auto metadata = validMetadata();
  metadata.erase("seed");
  expectRefused(validState(), metadata, "lacks its 'seed' metadata");
}

TEST_F(CheckpointValidation, OptimizerMomentsAndWeightCopiesMustBeReachable) {
  auto state = validState();
  state["w.exp_avg_sq"].as<float>()[2] = -0.5f;
  expectRefused(state, validMetadata(), "state 'w.exp_avg_sq' holds -0.5 at element 2");
  state = validState();
  state["w.exp_avg"].as<float>()[0] = std::numeric_limits<float>::infinity();
  expectRefused(state, validMetadata(), "state 'w.exp_avg' holds inf at element 0");
  state = validState();
  state["w.bf16"].as<uint16_t>()[1] ^= 1;  // one ulp off the master's rounding
  expectRefused(state, validMetadata(), "state 'w.bf16' differs from the bf16 rounding of its master 'w' at element 1");
}

// The tag: a checkpoint amp-run wrote under the user's key loads under that key; under another
// key, untagged, or with any metadata value changed since (the sha256 recomputed), it is refused
// before anything is read into the session, unless --trust-checkpoint.
TEST_F(CheckpointValidation, OnlyACheckpointTaggedWithTheUsersKeyIsTrusted) {
  const UserKey mine{"/home/me/.config/ampc/key", std::string(32, '\x11')};
  const UserKey theirs{"/home/them/.config/ampc/key", std::string(32, '\x22')};
  auto state = validState();
  std::vector<NamedTensorRef> refs;
  for (const auto& [name, t] : state) refs.push_back({name, &t});
  Plan plan = scaledAdamPlan();
  ASSERT_TRUE(saveCheckpoint(plan, refs, dir_, {3, 7, true, 1}, {mine, false}).ok());
  auto lossScale = [&] {
    for (const NamedTensorRef& r : session_->persistent())
      if (r.name == "amp.loss_scale") return r.tensor->as<float>()[0];
    return 0.0f;
  };
  auto expectRefusedBy = [&](const CheckpointAuth& auth, const std::string& message) {
    const float before = lossScale();
    auto info = loadCheckpoint(*session_, dir_, auth);
    ASSERT_FALSE(info.ok()) << "accepted; expected: " << message;
    EXPECT_EQ(info.status().code(), absl::StatusCode::kPermissionDenied);
    EXPECT_NE(info.status().message().find(message), std::string::npos) << info.status();
    EXPECT_NE(info.status().message().find("--trust-checkpoint"), std::string::npos) << info.status();
    EXPECT_EQ(lossScale(), before) << "a refused checkpoint changed the session";
  };
  expectRefusedBy({theirs, false}, "its tag does not verify under the key /home/them/.config/ampc/key");
  expectRefusedBy({std::nullopt, false}, "there is no ampc key to check its tag with");

  // One metadata value changed, the content hash still right: the tag covers the metadata.
  auto contents = readSafetensors(checkpointPath(dir_));
  ASSERT_TRUE(contents.ok()) << contents.status();
  StringMap edited = contents->metadata;
  for (auto& [k, v] : edited)
    if (k == "seed") v = "8";
  std::vector<NamedTensorRef> read;
  for (const NamedTensor& t : contents->tensors) read.push_back({t.name, &t.tensor});
  ASSERT_TRUE(writeSafetensors(checkpointPath(dir_), read, edited).ok());
  expectRefusedBy({mine, false}, "its tag does not verify under the key /home/me/.config/ampc/key");
  auto trusted = loadCheckpoint(*session_, dir_, kTrustAny);  // the user vouches for it: values checked, loaded
  ASSERT_TRUE(trusted.ok()) << trusted.status();
  EXPECT_EQ(trusted->seed, 8u);

  // Written without a key: an all-zero tag, which nothing verifies.
  ASSERT_TRUE(saveCheckpoint(plan, refs, dir_, {3, 7, true, 1}, {std::nullopt, false}).ok());
  expectRefusedBy({mine, false}, "it carries no authentication tag");

  ASSERT_TRUE(saveCheckpoint(plan, refs, dir_, {3, 7, true, 1}, {mine, false}).ok());
  auto info = loadCheckpoint(*session_, dir_, {mine, false});
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->step, 3);
  EXPECT_EQ(info->seed, 7u);
}

}  // namespace
}  // namespace amp::rt
