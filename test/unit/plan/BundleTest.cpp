// Bundles round-trip plans exactly, and every malformed bundle is a clear error.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <tuple>
#include <fstream>

#include "gtest/gtest.h"
#include "runtime/io/AtomicFile.h"
#include "runtime/io/Json.h"
#include "runtime/io/Safetensors.h"
#include "runtime/io/Sha256.h"
#include "runtime/plan/Bundle.h"
#include "runtime/plan/Init.h"

namespace amp::rt {
namespace {

std::string tempPath(const std::string& name) { return ::testing::TempDir() + "/" + name; }

Plan samplePlan() {
  Plan p;
  p.metadata = {{"model", "tiny"}, {"precision", "bf16"}};
  p.buffers.push_back({"x", DType::F32, {2, 3}, BufferKind::Input, std::nullopt});
  p.buffers.push_back({"w", DType::F32, {3, 4}, BufferKind::Param, InitSpec{"xavier_uniform", 0.5, 7}});
  p.buffers.push_back({"c", DType::BF16, {4}, BufferKind::Temp, std::nullopt});
  p.buffers.push_back({"t3", DType::F32, {2, 4}, BufferKind::Temp, std::nullopt});
  EntryPoint e;
  e.name = "eval";
  PlanStep k;
  k.op = "amp.constant";
  k.code = opCodeOf(k.op);
  k.results = {2};
  Tensor value(DType::BF16, {4});
  for (int i = 0; i < 4; ++i) value.as<uint16_t>()[i] = static_cast<uint16_t>(0x3f80 + i);
  k.attrs.set("value", value);
  PlanStep mm;
  mm.op = "amp.matmul";
  mm.code = opCodeOf(mm.op);
  mm.operands = {0, 1};
  mm.results = {3};
  mm.attrs.set("transpose_a", false);
  mm.attrs.set("eps", 1e-5);
  mm.attrs.set("groups", int64_t{1});
  mm.attrs.set("stride", std::vector<int64_t>{2, 2});
  mm.attrs.set("approximate", std::string("tanh"));
  mm.loc = "tiny.mlir:3:8";
  e.steps = {k, mm};
  e.results = {3};
  e.resultNames = {"loss"};
  p.entries.push_back(e);
  return p;
}

TEST(Bundle, RoundTripsEveryField) {
  Plan p = samplePlan();
  std::string path = tempPath("tiny.ampx");
  ASSERT_TRUE(writeBundle(path, p).ok());
  auto back = readBundle(path);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->version, kPlanFormatVersion);
  EXPECT_EQ(back->metadata, p.metadata);
  ASSERT_EQ(back->buffers.size(), p.buffers.size());
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    EXPECT_EQ(back->buffers[i].name, p.buffers[i].name);
    EXPECT_EQ(back->buffers[i].dtype, p.buffers[i].dtype);
    EXPECT_EQ(back->buffers[i].shape, p.buffers[i].shape);
    EXPECT_EQ(back->buffers[i].kind, p.buffers[i].kind);
  }
  ASSERT_TRUE(back->buffers[1].init.has_value());
  EXPECT_EQ(back->buffers[1].init->kind, "xavier_uniform");
  EXPECT_EQ(back->buffers[1].init->scale, 0.5);
  EXPECT_EQ(back->buffers[1].init->seed, 7);
  const EntryPoint* e = back->findEntry("eval");
  ASSERT_NE(e, nullptr);
  ASSERT_EQ(e->steps.size(), 2u);
  auto value = e->steps[0].attrs.getTensor("amp.constant", "value");
  ASSERT_TRUE(value.ok());
  EXPECT_EQ((*value)->dtype(), DType::BF16);
  EXPECT_EQ((*value)->as<uint16_t>()[3], 0x3f83);
  const AttrMap& a = e->steps[1].attrs;
  EXPECT_EQ(*a.getBool("m", "transpose_a"), false);
  EXPECT_EQ(*a.getDouble("m", "eps"), 1e-5);
  EXPECT_EQ(*a.getInt("m", "groups"), 1);  // stays an integer, not 1.0
  EXPECT_EQ(*a.getInts("m", "stride"), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(*a.getString("m", "approximate"), "tanh");
  EXPECT_EQ(e->steps[1].loc, "tiny.mlir:3:8");
  EXPECT_EQ(e->results, std::vector<int32_t>{3});
  EXPECT_EQ(e->resultNames, std::vector<std::string>{"loss"});
}

TEST(Bundle, RejectsPlainSafetensors) {
  std::string path = tempPath("plain.safetensors");
  Tensor t(DType::F32, {2});
  ASSERT_TRUE(writeSafetensors(path, {{"w", &t}}).ok());
  auto r = readBundle(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not an ampc bundle"), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find(path), std::string::npos);
}

// Bundles and --emit=plan store planJsonText; planToJson is its tree. Both name the same tensors.
TEST(Bundle, PlanTextIsTheTreeWritten) {
  Plan p = samplePlan();
  PlanStep fused;
  fused.op = "amp.fused";
  fused.code = opCodeOf(fused.op);
  fused.operands = {0};
  fused.results = {3};
  fused.phase = "forward";
  fused.locals = {{DType::F32, {2, 4}}, {DType::F32, {2, 4}}};
  PlanStep neg;
  neg.op = "amp.neg";
  neg.code = opCodeOf(neg.op);
  neg.operands = {0};
  neg.results = {1};
  fused.body = {neg};
  fused.yields = {1};
  p.entries[0].steps.push_back(fused);
  p.metadata.emplace_back("model", "renamed");  // a repeated key: first place, last value
  for (int indent : {-1, 2}) {
    std::vector<NamedTensorRef> fromTree, fromText;
    std::string tree = writeJson(planToJson(p, &fromTree), indent);
    EXPECT_EQ(planJsonText(p, &fromText, indent), tree);
    std::string pieces;
    std::vector<NamedTensorRef> fromPieces;
    writePlanInPieces(p, &fromPieces, [&](std::string_view piece) { pieces += piece; }, indent);
    EXPECT_EQ(pieces, tree);
    EXPECT_EQ(fromPieces.size(), fromTree.size());
    ASSERT_EQ(fromText.size(), fromTree.size());
    for (size_t i = 0; i < fromText.size(); ++i) {
      EXPECT_EQ(fromText[i].name, fromTree[i].name);
      EXPECT_EQ(fromText[i].tensor, fromTree[i].tensor);
    }
  }
  std::vector<NamedTensorRef> tensors;
  EXPECT_NE(planJsonText(p, &tensors).find(R"("metadata":{"model":"renamed","precision":"bf16"})"), std::string::npos);
}

TEST(Bundle, RejectsMissingFile) {
  auto r = readBundle(tempPath("does-not-exist.ampx"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("does-not-exist.ampx"), std::string::npos);
}

// Rewrites the plan JSON of a valid bundle through `edit`, then reads it back.
absl::Status readEdited(const std::function<void(JsonValue&)>& edit) {
  Plan p = samplePlan();
  std::vector<NamedTensorRef> tensors;
  JsonValue json = planToJson(p, &tensors);
  edit(json);
  std::string path = tempPath("edited.ampx");
  StringMap meta = {{"ampc.format", "ampx"}, {"ampc.version", "1"}, {"ampc.plan", writeJson(json)}};
  if (auto s = writeSafetensors(path, tensors, meta); !s.ok()) return s;
  return readBundle(path).status();
}

JsonValue& member(JsonValue& v, const std::string& key) {
  return const_cast<JsonValue&>(*v.find(key));
}

// x86 shared objects and the CUDA cubin + PTX live side by side as code/<isa>.<format>.
// A code record whose bytes pass the reader's checks (runtime/plan/CodeRecords.h) as far as a test
// without a compiler can make them: an ELF header of `machine`, or PTX text.
CodeObject codeRecord(const std::string& isa, const std::string& format, uint16_t machine, uint16_t type) {
  CodeObject c{isa, "", {}, format};
  if (format == "ptx") {
    const std::string text = ".version 8.0\n.target " + isa + "\n";
    c.bytes.assign(text.begin(), text.end());
  } else {
    c.bytes.assign(64, 0);  // Elf64_Ehdr: no program or section headers
    const uint8_t ident[] = {0x7f, 'E', 'L', 'F', 2 /*64-bit*/, 1 /*little-endian*/, 1};
    std::copy(std::begin(ident), std::end(ident), c.bytes.begin());
    c.bytes[16] = static_cast<uint8_t>(type);
    c.bytes[18] = static_cast<uint8_t>(machine & 0xff);
    c.bytes[19] = static_cast<uint8_t>(machine >> 8);
  }
  c.sha256 = sha256Hex(c.bytes.data(), c.bytes.size());
  return c;
}

TEST(Bundle, CodeObjectsOfEveryFormatRoundTrip) {
  Plan p = samplePlan();
  // An x86 object must also record its ISA level (refused below; real objects round-trip in
  // test/unit/cpu/NativeCodeSecurityTest.cpp).
  p.code.push_back(codeRecord("sm_90", "cubin", 190, 2));
  p.code.push_back(codeRecord("sm_90", "ptx", 0, 0));
  std::string path = tempPath("code.ampx");
  ASSERT_TRUE(writeBundle(path, p).ok());
  auto contents = readSafetensors(path);
  ASSERT_TRUE(contents.ok()) << contents.status();
  std::vector<std::string> names;
  for (const NamedTensor& t : contents->tensors)
    if (t.name.rfind("code/", 0) == 0) names.push_back(t.name);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"code/sm_90.cubin", "code/sm_90.ptx"}));
  auto back = readBundle(path);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->code.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back->code[i].isa, p.code[i].isa);
    EXPECT_EQ(back->code[i].format, p.code[i].format);
    EXPECT_EQ(back->code[i].sha256, p.code[i].sha256);
    EXPECT_EQ(back->code[i].bytes, p.code[i].bytes);
  }
  // A cpu bundle's plan has no "format" key: it reads as it did before CUDA code objects.
  std::vector<NamedTensorRef> constants;
  JsonValue json = planToJson(p, &constants);
  Plan cpu = samplePlan();
  cpu.code.push_back(codeRecord("x86-64-v3", "so", 62, 3));
  JsonValue cpuJson = planToJson(cpu, &constants);
  EXPECT_EQ(member(cpuJson, "code").items()[0].find("format"), nullptr);
  EXPECT_EQ(member(json, "code").items()[0].find("format")->asString(), "cubin");
  ASSERT_TRUE(writeBundle(tempPath("noisa.ampx"), cpu).ok());
  auto noIsa = readBundle(tempPath("noisa.ampx"));
  ASSERT_FALSE(noIsa.ok());
  EXPECT_NE(noIsa.status().message().find("code record 'code/x86-64-v3.so': records no ISA level"), std::string::npos)
      << noIsa.status();
  cpu.code[0] = codeRecord("x86-64-v3", "so", 190, 3);
  ASSERT_TRUE(writeBundle(tempPath("machine.ampx"), cpu).ok());
  EXPECT_NE(readBundle(tempPath("machine.ampx")).status().message().find("for machine 190, not x86-64"),
            std::string::npos);

  // An unknown format is refused.
  const std::string* plan = nullptr;
  for (const auto& [key, value] : contents->metadata)
    if (key == "ampc.plan") plan = &value;
  ASSERT_NE(plan, nullptr);
  auto parsed = parseJson(*plan);
  ASSERT_TRUE(parsed.ok());
  const_cast<JsonValue&>(member(*parsed, "code").items()[0]).set("format", JsonValue::string("fatbin"));
  std::vector<NamedTensorRef> refs;
  for (const NamedTensor& t : contents->tensors) refs.push_back({t.name, &t.tensor});
  StringMap meta = {{"ampc.format", "ampx"}, {"ampc.version", "1"}, {"ampc.plan", writeJson(*parsed)}};
  ASSERT_TRUE(writeSafetensors(tempPath("badformat.ampx"), refs, meta).ok());
  auto bad = readBundle(tempPath("badformat.ampx"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'format' must be"), std::string::npos) << bad.status();
}

TEST(Bundle, StructuralErrorsNameTheProblem) {
  struct Case {
    std::function<void(JsonValue&)> edit;
    std::string expected;
  };
  std::vector<Case> cases = {
      {[](JsonValue& j) { j.set("version", JsonValue::integer(99)); }, "version 99 is not supported"},
      {[](JsonValue& j) { j.set("buffers", JsonValue::string("x")); }, "missing array 'buffers'"},
      {[](JsonValue& j) {
         JsonValue& b = const_cast<JsonValue&>(member(j, "buffers").items()[0]);
         b.set("dtype", JsonValue::string("f128"));
       },
       "unknown dtype 'f128'"},
      {[](JsonValue& j) {
         JsonValue& b = const_cast<JsonValue&>(member(j, "buffers").items()[0]);
         b.set("kind", JsonValue::string("weights"));
       },
       "unknown buffer kind 'weights'"},
      {[](JsonValue& j) {
         JsonValue& e = const_cast<JsonValue&>(member(j, "entries").items()[0]);
         JsonValue& s = const_cast<JsonValue&>(member(e, "steps").items()[1]);
         JsonValue ops = JsonValue::array();
         ops.push(JsonValue::integer(0));
         ops.push(JsonValue::integer(42));
         s.set("operands", ops);
       },
       "refers to buffer 42"},
      {[](JsonValue& j) {
         JsonValue& e = const_cast<JsonValue&>(member(j, "entries").items()[0]);
         JsonValue& s = const_cast<JsonValue&>(member(e, "steps").items()[0]);
         JsonValue attrs = JsonValue::object();
         JsonValue ref = JsonValue::object();
         ref.set("tensor", JsonValue::string("nope"));
         attrs.set("value", ref);
         s.set("attrs", attrs);
       },
       "tensor 'nope' which the bundle does not contain"},
      {[](JsonValue& j) {
         JsonValue& e = const_cast<JsonValue&>(member(j, "entries").items()[0]);
         e.set("result_names", JsonValue::array());
       },
       "'result_names' must name every result"},
  };
  for (const Case& c : cases) {
    absl::Status s = readEdited(c.edit);
    ASSERT_FALSE(s.ok()) << c.expected;
    EXPECT_NE(s.message().find(c.expected), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("edited.ampx"), std::string::npos) << s.message();
  }
}

TEST(Bundle, CorruptPlanJsonIsLocated) {
  std::string path = tempPath("badjson.ampx");
  StringMap meta = {{"ampc.format", "ampx"}, {"ampc.version", "1"}, {"ampc.plan", "{\"version\": 1,"}};
  ASSERT_TRUE(writeSafetensors(path, {}, meta).ok());
  auto r = readBundle(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("badjson.ampx (plan):1:"), std::string::npos) << r.status();
}

// An imported model's weights travel in the bundle as the params' initial values.
TEST(Bundle, StoredInitialValuesRoundTripBitExactAndAreChecked) {
  auto planWith = [](Tensor values) {
    Plan p = samplePlan();
    p.buffers[1].init = InitSpec{"stored", 1.0, 0, "", std::make_shared<const Tensor>(std::move(values))};
    return p;
  };
  Tensor w(DType::F32, {3, 4});
  for (int i = 0; i < 12; ++i) w.as<float>()[i] = i == 5 ? -0.0f : 0.1f * static_cast<float>(i) - 0.55f;
  w.as<float>()[7] = 1e-40f;  // a subnormal survives too
  std::string path = tempPath("stored.ampx");
  ASSERT_TRUE(writeBundle(path, planWith(w)).ok());
  auto back = readBundle(path);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_TRUE(back->buffers[1].init.has_value());
  EXPECT_EQ(back->buffers[1].init->kind, "stored");
  auto values = initializeParam(*back->buffers[1].init, back->buffers[1].shape);
  ASSERT_TRUE(values.ok()) << values.status();
  ASSERT_EQ(values->nbytes(), w.nbytes());
  EXPECT_EQ(std::memcmp(values->data(), w.data(), w.nbytes()), 0);

  Tensor nan = w;
  nan.as<float>()[9] = std::nanf("");
  ASSERT_TRUE(writeBundle(tempPath("nan.ampx"), planWith(nan)).ok());
  auto refused = readBundle(tempPath("nan.ampx"));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("initial values 'init/w' hold a non-finite value at element 9"),
            std::string::npos)
      << refused.status();

  ASSERT_TRUE(writeBundle(tempPath("shape.ampx"), planWith(Tensor(DType::F32, {4, 3}))).ok());
  refused = readBundle(tempPath("shape.ampx"));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("initial values 'init/w' are f32 [4, 3], the buffer is f32 [3, 4]"),
            std::string::npos)
      << refused.status();
}

TEST(Bundle, AStoredInitNamesItsTensorAndOnlyItDoes) {
  auto edit = [](std::string kind, bool withTensor) {
    return [=](JsonValue& j) {
      JsonValue& b = const_cast<JsonValue&>(member(j, "buffers").items()[1]);
      JsonValue init = JsonValue::object();
      init.set("kind", JsonValue::string(kind));
      if (withTensor) init.set("tensor", JsonValue::string("const/eval/0/value"));
      b.set("init", init);
    };
  };
  for (auto [kind, withTensor, expected] :
       {std::tuple{"stored", false, "only that one names its values' 'tensor'"},
        std::tuple{"zeros", true, "are bf16 [4], the buffer is f32 [3, 4]"}}) {
    absl::Status s = readEdited(edit(kind, withTensor));
    ASSERT_FALSE(s.ok()) << kind;
    EXPECT_NE(s.message().find(expected), std::string::npos) << s.message();
  }
}

}  // namespace
}  // namespace amp::rt
