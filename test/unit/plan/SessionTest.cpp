// Session: binds params/inputs by name, runs plans on the reference device, reports errors
// with the entry, step and source location, and pinpoints the first non-finite producer.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "runtime/exec/Session.h"
#include "runtime/devices/Devices.h"

namespace amp::rt {
namespace {

// loss = mean(log(x @ w)) over a [2,2] x [2,2] product.
Plan logMatmulPlan() {
  Plan p;
  p.buffers.push_back({"x", DType::F32, {2, 2}, BufferKind::Input, std::nullopt});
  p.buffers.push_back({"w", DType::F32, {2, 2}, BufferKind::Param, InitSpec{"ones", 1, 0}});
  p.buffers.push_back({"t2", DType::F32, {2, 2}, BufferKind::Temp, std::nullopt});
  p.buffers.push_back({"t3", DType::F32, {2, 2}, BufferKind::Temp, std::nullopt});
  p.buffers.push_back({"t4", DType::F32, {}, BufferKind::Temp, std::nullopt});
  EntryPoint e;
  e.name = "eval";
  PlanStep mm{"amp.matmul", {0, 1}, {2}, {}, "m.mlir:2:3"};
  PlanStep lg{"amp.log", {2}, {3}, {}, "m.mlir:3:3"};
  PlanStep red{"amp.reduce_mean", {3}, {4}, {}, "m.mlir:4:3"};
  red.attrs.set("dims", std::vector<int64_t>{0, 1});
  red.attrs.set("keepdim", false);
  e.steps = {mm, lg, red};
  e.results = {4, 2};
  e.resultNames = {"loss", "logits"};
  p.entries.push_back(e);
  return p;
}

Tensor matrix(std::initializer_list<float> v) {
  Tensor t(DType::F32, {2, 2});
  int i = 0;
  for (float x : v) t.as<float>()[i++] = x;
  return t;
}

// A device's counts keep the order it declared them in, whatever order it adds to them; a count
// it does not keep reads 0.
TEST(EntryReport, CountsKeepTheDeclaredOrder) {
  EntryReport r;
  for (const char* name : {"kernels", "GEMMs", "copies"}) r.add(name, 0);
  r.add("copies");
  r.add("kernels", 3);
  r.add("copies");
  EXPECT_EQ(r.countsText(), "3 kernels, 0 GEMMs, 2 copies");
  EXPECT_EQ(r.count("copies"), 2);
  EXPECT_EQ(r.count("fills"), 0);
  r.add("fills", 5);
  EXPECT_EQ(r.countsText(), "3 kernels, 0 GEMMs, 2 copies, 5 fills");
}

TEST(Session, RunsWithInitialisedParams) {
  auto s = openSession(logMatmulPlan(), Device::Reference);
  ASSERT_TRUE(s.ok()) << s.status();
  auto out = s->run("eval", {{"x", matrix({1, 2, 3, 4})}});
  ASSERT_TRUE(out.ok()) << out.status();
  // w = ones: rows sum to 3 and 7 in both columns.
  double expected = (2 * std::log(3.0) + 2 * std::log(7.0)) / 4;
  ASSERT_EQ(out->size(), 2u);
  EXPECT_EQ((*out)[0].name, "loss");
  EXPECT_NEAR((*out)[0].tensor.as<float>()[0], expected, 1e-6);
  EXPECT_EQ((*out)[1].tensor.as<float>()[3], 7.0f);
}

// Found by scripts/sanitize.sh (UBSan: null pointer passed to memcpy in Session::run): on the cpu
// device an empty result has no storage, and copying its zero bytes from a null pointer is
// undefined. (Only a sanitizer build notices; a plain build runs it either way.)
TEST(Session, EmptyResultsOnEveryDevice) {
  Plan p;
  p.buffers.push_back({"x", DType::F32, {3, 0, 5}, BufferKind::Input, std::nullopt});
  p.buffers.push_back({"y", DType::F32, {3, 0, 5}, BufferKind::Temp, std::nullopt});
  EntryPoint e;
  e.name = "eval";
  e.steps = {{"amp.relu", {0}, {1}, {}, ""}};
  e.results = {1};
  e.resultNames = {"y"};
  p.entries.push_back(e);
  for (Device device : {Device::Reference, Device::Cpu}) {
    auto s = openSession(p, device);
    ASSERT_TRUE(s.ok()) << s.status();
    auto out = s->run("eval", {{"x", Tensor(DType::F32, {3, 0, 5})}});
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ(out->size(), 1u);
    EXPECT_EQ((*out)[0].tensor.shape(), (Shape{3, 0, 5}));
  }
}

// A fused step x*x with its column sums: iteration space [4, 8], results [4, 8] and [8], as
// codegen annotates it (row_length 8, reduced_results [1]).
Plan fusedColumnSumPlan() {
  Plan p;
  p.buffers.push_back({"x", DType::F32, {4, 8}, BufferKind::Input, std::nullopt});
  p.buffers.push_back({"sq", DType::F32, {4, 8}, BufferKind::Temp, std::nullopt});
  p.buffers.push_back({"colsum", DType::F32, {8}, BufferKind::Temp, std::nullopt});
  PlanStep fused{"amp.fused", {0}, {1, 2}, {}, "f.mlir:1:1"};
  fused.kind = StepKind::Fused;
  fused.attrs.set("kernel", std::string("k0"));
  fused.attrs.set("row_length", int64_t{8});
  fused.attrs.set("reduced_results", std::vector<int64_t>{1});
  fused.locals = {{DType::F32, {4, 8}}, {DType::F32, {4, 8}}, {DType::F32, {8}}};
  PlanStep sum{"amp.reduce_sum", {1}, {2}, {}, "f.mlir:2:1"};
  sum.attrs.set("dims", std::vector<int64_t>{0});
  sum.attrs.set("keepdim", false);
  fused.body = {{"amp.mul", {0, 0}, {1}, {}, "f.mlir:1:1"}, sum};
  fused.yields = {1, 2};
  EntryPoint e;
  e.name = "eval";
  e.steps = {fused};
  e.results = {1, 2};
  e.resultNames = {"sq", "colsum"};
  p.entries.push_back(e);
  return p;
}

// The layout attributes codegen gives a fused step are validated with the plan, once for every
// device: the reference device, which interprets the body and never reads them, refuses the
// edited values the cpu device refuses (issue 24), with the same message.
TEST(Session, EditedFusedLayoutIsRefusedOnEveryDevice) {
  Tensor x(DType::F32, {4, 8});
  for (int i = 0; i < 32; ++i) x.as<float>()[i] = static_cast<float>(i % 5);
  for (Device device : {Device::Reference, Device::Cpu}) {
    auto s = openSession(fusedColumnSumPlan(), device);
    ASSERT_TRUE(s.ok()) << s.status();
    auto out = s->run("eval", {{"x", x}});
    ASSERT_TRUE(out.ok()) << deviceName(device) << ": " << out.status();
    EXPECT_EQ((*out)[1].tensor.as<float>()[0], 26.0f);  // x[:, 0] = 0, 3, 1, 4
  }
  auto expectRefused = [&](const std::string& attr, AttrValue value, const std::string& message) {
    Plan p = fusedColumnSumPlan();
    p.entries[0].steps[0].attrs.set(attr, value);
    for (Device device : {Device::Reference, Device::Cpu}) {
      auto s = openSession(p, device);
      ASSERT_TRUE(s.ok()) << s.status();
      auto out = s->run("eval", {{"x", x}});
      ASSERT_FALSE(out.ok()) << deviceName(device) << " accepts " << attr;
      EXPECT_NE(out.status().message().find(message), std::string::npos) << deviceName(device) << ": " << out.status();
      EXPECT_NE(out.status().message().find("f.mlir:1:1: entry 'eval' step 0 (amp.fused)"), std::string::npos)
          << out.status();
    }
  };
  for (int64_t rows : {int64_t{0}, int64_t{1}, int64_t{1} << 31, int64_t{1} << 40, INT64_MAX})
    expectRefused("row_length", rows, rows == 1 ? "row_length = the iteration space's last dim"
                                                : absl::StrCat("row_length ", rows, " does not divide"));
  expectRefused("reduced_results", std::vector<int64_t>{-1}, "reduced_results names result -1");
  expectRefused("reduced_results", std::vector<int64_t>{int64_t{1} << 62}, "reduced_results names result 4611686018427387904");
  expectRefused("reduced_results", std::vector<int64_t>{INT64_MAX}, "reduced_results names result 9223372036854775807");
  expectRefused("reduced_results", std::vector<int64_t>{}, "reduced_results is empty");
  expectRefused("reduced_results", std::vector<int64_t>{0, 0}, "reduced_results names result 0 twice");
  expectRefused("reduced_results", std::vector<int64_t>{0}, "fused result 0 [4, 8] does not fit");
}

// A body value typed with more elements than int64 counts (found by fuzz/bundle_plan: UBSan
// signed overflow counting the iteration space) is refused with the other plan checks, located.
TEST(Session, FusedLocalsLargerThanAnyBufferAreRefused) {
  Tensor x(DType::F32, {4, 8});
  for (const Shape& shape : {Shape{6, int64_t{1} << 62}, Shape{int64_t{1} << 40, 1 << 20}, Shape{4, -8}}) {
    Plan p = fusedColumnSumPlan();
    p.entries[0].steps[0].locals[1].shape = shape;
    for (Device device : {Device::Reference, Device::Cpu}) {
      auto s = openSession(p, device);
      absl::Status st = s.ok() ? s->run("eval", {{"x", x}}).status() : s.status();
      ASSERT_FALSE(st.ok()) << deviceName(device) << " accepts local 1 " << shapeToString(shape);
      EXPECT_NE(st.message().find("local 1"), std::string::npos) << st;
      EXPECT_NE(st.message().find(shape[1] < 0 ? "negative dimension" : "larger than the runtime's limit"),
                std::string::npos)
          << st;
    }
  }
}

// A 3x3 convolution and a 3x3 max pool over [1, 1, 4, 4], whose window attributes a test edits.
Plan windowPlan(const std::string& op) {
  Plan p;
  p.buffers.push_back({"x", DType::F32, {1, 1, 4, 4}, BufferKind::Input, std::nullopt});
  p.buffers.push_back({"w", DType::F32, {1, 1, 3, 3}, BufferKind::Input, std::nullopt});
  p.buffers.push_back({"y", DType::F32, {1, 1, 4, 4}, BufferKind::Temp, std::nullopt});
  const bool conv = op == "amp.conv2d";
  PlanStep step{op, conv ? std::vector<int32_t>{0, 1} : std::vector<int32_t>{0}, {2}, {}, "w.mlir:1:1"};
  step.attrs.set("stride", std::vector<int64_t>{1, 1});
  step.attrs.set("padding", std::vector<int64_t>{1, 1});
  if (conv) {
    step.attrs.set("dilation", std::vector<int64_t>{1, 1});
    step.attrs.set("groups", int64_t{1});
  } else {
    step.attrs.set("kernel", std::vector<int64_t>{3, 3});
  }
  EntryPoint e;
  e.name = "eval";
  e.steps = {step};
  e.results = {2};
  e.resultNames = {"y"};
  p.entries.push_back(e);
  return p;
}

// Window attributes whose extent overflows int64 (found by fuzz/bundle_plan: UBSan signed overflow
// in the cpu device's convolution geometry, 2 * INT64_MAX) are a located error on every device.
TEST(Session, WindowAttributesThatOverflowAreRefusedOnEveryDevice) {
  Tensor x(DType::F32, {1, 1, 4, 4}), w(DType::F32, {1, 1, 3, 3});
  const int64_t big = INT64_MAX;
  const struct {
    std::string op, attr;
    std::vector<int64_t> value;
  } cases[] = {{"amp.conv2d", "padding", {big, 1}},
               {"amp.conv2d", "dilation", {1, big}},
               {"amp.conv2d", "padding", {big / 2, big / 2}},
               {"amp.max_pool2d", "padding", {big / 2, 1}},  // with kernel [INT64_MAX, 3] below
               {"amp.avg_pool2d", "padding", {1, big / 2}}};  // with kernel [3, INT64_MAX]
  for (const auto& k : cases) {
    Plan p = windowPlan(k.op);
    p.entries[0].steps[0].attrs.set(k.attr, k.value);
    if (k.op == "amp.max_pool2d") p.entries[0].steps[0].attrs.set("kernel", std::vector<int64_t>{big, 3});
    if (k.op == "amp.avg_pool2d") p.entries[0].steps[0].attrs.set("kernel", std::vector<int64_t>{3, big});
    for (Device device : {Device::Reference, Device::Cpu}) {
      SCOPED_TRACE(k.op + " " + k.attr + " on " + std::string(deviceName(device)));
      auto s = openSession(p, device);
      absl::Status st = s.ok() ? s->run("eval", {{"x", x}, {"w", w}}).status() : s.status();
      ASSERT_FALSE(st.ok());
      EXPECT_NE(st.message().find("overflows int64"), std::string::npos) << st;
      EXPECT_NE(st.message().find("w.mlir:1:1"), std::string::npos) << st;
    }
  }
  // The unedited plans run.
  for (const std::string op : {"amp.conv2d", "amp.max_pool2d"}) {
    auto s = openSession(windowPlan(op), Device::Cpu);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_TRUE(s->run("eval", {{"x", x}, {"w", w}}).ok()) << op;
  }
}

TEST(Session, SetParamsReplacesByName) {
  auto s = openSession(logMatmulPlan(), Device::Reference);
  ASSERT_TRUE(s.ok());
  std::vector<std::string> loaded;
  ASSERT_TRUE(s->setParams({{"w", matrix({1, 0, 0, 1})}}, &loaded).ok());
  EXPECT_EQ(loaded, std::vector<std::string>{"w"});
  auto out = s->run("eval", {{"x", matrix({1, 2, 3, 4})}});
  ASSERT_TRUE(out.ok());
  double expected = (std::log(1.0) + std::log(2.0) + std::log(3.0) + std::log(4.0)) / 4;
  EXPECT_NEAR((*out)[0].tensor.as<float>()[0], expected, 1e-6);

  auto bad = s->setParams({{"x", matrix({1, 0, 0, 1})}}, nullptr);
  EXPECT_NE(bad.message().find("'x', which is not a param"), std::string::npos) << bad;
  Tensor wrong(DType::F32, {3});
  bad = s->setParams({{"w", wrong}}, nullptr);
  EXPECT_NE(bad.message().find("expected f32 [2, 2]"), std::string::npos) << bad;
  // Non-finite values are refused, and nothing is replaced.
  bad = s->setParams({{"w", matrix({1, 0, std::nanf(""), 1})}}, nullptr);
  EXPECT_NE(bad.message().find("param 'w': element 2 is nan; parameter values must be finite"), std::string::npos)
      << bad;
  bad = s->setParams({{"w", matrix({1, 0, 0, -INFINITY})}}, nullptr);
  EXPECT_NE(bad.message().find("element 3 is -inf"), std::string::npos) << bad;
  out = s->run("eval", {{"x", matrix({1, 2, 3, 4})}});
  ASSERT_TRUE(out.ok());
  EXPECT_NEAR((*out)[0].tensor.as<float>()[0], expected, 1e-6);
}

TEST(Session, FeedErrorsNameTheInput) {
  auto s = openSession(logMatmulPlan(), Device::Reference);
  ASSERT_TRUE(s.ok());
  auto missing = s->run("eval", {});
  EXPECT_NE(missing.status().message().find("missing input 'x'"), std::string::npos) << missing.status();
  auto shape = s->run("eval", {{"x", Tensor(DType::F32, {4})}});
  EXPECT_NE(shape.status().message().find("expected shape [2, 2], got [4]"), std::string::npos)
      << shape.status();
  auto dtype = s->run("eval", {{"x", Tensor(DType::I64, {2, 2})}});
  EXPECT_NE(dtype.status().message().find("expected f32, got i64"), std::string::npos) << dtype.status();
  auto entry = s->run("train_step", {{"x", matrix({1, 2, 3, 4})}});
  EXPECT_NE(entry.status().message().find("no entry point 'train_step' (it has: eval)"), std::string::npos)
      << entry.status();
}

TEST(Session, FloatFeedsConvertToTheBufferType) {
  auto s = openSession(logMatmulPlan(), Device::Reference);
  ASSERT_TRUE(s.ok());
  Tensor x(DType::F64, {2, 2});
  for (int i = 0; i < 4; ++i) x.as<double>()[i] = i + 1;
  auto out = s->run("eval", {{"x", x}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[1].tensor.as<float>()[0], 3.0f);
}

TEST(Session, CheckNumericsNamesTheFirstProducer) {
  auto s = openSession(logMatmulPlan(), Device::Reference);
  ASSERT_TRUE(s.ok());
  Session::RunOptions options;
  options.checkNumerics = true;
  // x @ ones has a negative row -> log produces NaN; the log step is blamed, not the mean.
  auto out = s->run("eval", {{"x", matrix({1, -5, 3, 4})}}, options);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("m.mlir:3:3"), std::string::npos) << out.status();
  EXPECT_NE(out.status().message().find("(amp.log) produced a non-finite value at element 0"),
            std::string::npos)
      << out.status();
  // Without the check the NaN flows to the loss silently.
  auto quiet = s->run("eval", {{"x", matrix({1, -5, 3, 4})}});
  ASSERT_TRUE(quiet.ok());
  EXPECT_TRUE(std::isnan((*quiet)[0].tensor.as<float>()[0]));
  // Non-finite data is caught at the door.
  auto nanInput = s->run("eval", {{"x", matrix({1, NAN, 3, 4})}}, options);
  EXPECT_NE(nanInput.status().message().find("input 'x' holds a non-finite value at element 1"),
            std::string::npos)
      << nanInput.status();
}

TEST(Session, KernelErrorsCarryLocation) {
  Plan p = logMatmulPlan();
  p.entries[0].steps[2].attrs = AttrMap{{"dims", std::vector<int64_t>{7}}};  // reduce_mean over a dim x lacks
  auto s = openSession(std::move(p), Device::Reference);
  ASSERT_TRUE(s.ok());
  auto out = s->run("eval", {{"x", matrix({1, 2, 3, 4})}});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("m.mlir:4:3: entry 'eval' step 2"), std::string::npos)
      << out.status();
}

TEST(Session, DeviceNames) {
  EXPECT_TRUE(parseDevice("reference").ok());
  EXPECT_FALSE(parseDevice("tpu").ok());
  EXPECT_NE(parseDevice("tpu").status().message().find("unknown device 'tpu'"), std::string::npos);
}

}  // namespace
}  // namespace amp::rt

namespace amp::rt {
namespace {

TEST(Session, LowPrecisionCopiesFollowTheirMasters) {
  Plan p;
  p.buffers.push_back({"w", DType::F32, {3}, BufferKind::Param, InitSpec{"constant", 1.0 + 1.0 / 512, 0}});
  p.buffers.push_back({"w.bf16", DType::BF16, {3}, BufferKind::State, InitSpec{"cast", 1, 0, "w"}});
  p.entries.push_back({"eval", {}, {}, {}, {}});
  auto s = openSession(p, Device::Reference);
  ASSERT_TRUE(s.ok()) << s.status();
  auto copyOf = [&]() -> const Tensor& {
    for (const NamedTensorRef& r : s->persistent())
      if (r.name == "w.bf16") return *r.tensor;
    static Tensor none;
    return none;
  };
  // 1 + 2^-9 rounds to 1.0 in bf16 (ties-to-even): 0x3f80.
  EXPECT_EQ(copyOf().as<uint16_t>()[0], 0x3f80);
  Tensor w(DType::F32, {3});
  for (int i = 0; i < 3; ++i) w.as<float>()[i] = 2.5f;
  ASSERT_TRUE(s->setParams({{"w", w}}, nullptr).ok());
  EXPECT_EQ(copyOf().as<uint16_t>()[2], 0x4020);  // 2.5 in bf16

  Plan bad = p;
  bad.buffers[1].init->from = "nope";
  auto b = openSession(bad, Device::Reference);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("is a cast of 'nope', which is not a param"), std::string::npos);
}

}  // namespace
}  // namespace amp::rt
