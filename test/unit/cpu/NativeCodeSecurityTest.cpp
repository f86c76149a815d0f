// The reproducers of a hostile bundle's native code (docs/kernels.md, "Threat model"), each as a
// test: a foreign shared object whose constructor writes a file never runs (its file is never
// created), whether it carries no "ampc" note (refused before dlopen) or a forged one (its bundle's
// provenance tag does not verify, so its code is dropped and the run is interpreted, with the
// reference's bits); a plan naming `system` or binding a kernel to another region is refused; a
// relabelled x86-64-v4 object, a truncated object and a wrong `bytes` are located errors naming
// the code record; an authenticated bundle keeps its native code.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>

#include "codegen/Toolchain.h"
#include "codegen/emit/KernelEmitter.h"
#include "gtest/gtest.h"
#include "runtime/devices/Devices.h"
#include "runtime/exec/Session.h"
#include "runtime/io/Json.h"
#include "runtime/io/Safetensors.h"
#include "runtime/io/Sha256.h"
#include "runtime/plan/Bundle.h"
#include "runtime/plan/CodeRecords.h"
#include "runtime/plan/Provenance.h"
#include "runtime/schema/CpuFeatures.h"
#include "test/unit/common/FusedPlan.h"

namespace amp::rt {
namespace {

bool exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

std::string scratch(const std::string& name) { return testing::TempDir() + "/native-security-" + name; }

std::string hostIsa() { return CpuFeatures::host().isaLevel() == "x86-64-v4" ? "x86-64-v4" : "x86-64-v3"; }

CodeObject object(const std::string& isa, std::vector<uint8_t> bytes) {
  CodeObject c;
  c.isa = isa;
  c.bytes = std::move(bytes);
  c.sha256 = sha256Hex(c.bytes.data(), c.bytes.size());
  return c;
}

// A one-step plan (x + bias) with its kernels compiled for `isas`, as ampc does.
Plan compiledPlan(const std::vector<std::string>& isas) {
  Plan plan = fusedPlan({{{DType::F32, {8, 16}}, {DType::F32, {16}}}, {8, 16}, {{"amp.add", {0, 1}, DType::F32}}, {2}});
  std::string source, error;
  EXPECT_TRUE(codegen::emitCpuSource(plan, source, error)) << error;
  std::vector<std::vector<uint8_t>> objects;
  EXPECT_TRUE(codegen::compileSharedObjects("c++", source, isas, objects, error)) << error;
  for (size_t i = 0; i < isas.size(); ++i) plan.code.push_back(object(isas[i], std::move(objects[i])));
  return plan;
}

// A shared object that is not ampc's: its constructor creates `marker`. With `forgedIsa`, it also
// carries the "ampc" note claiming that level, as a forger would add.
std::vector<uint8_t> foreignObject(const std::string& marker, const std::string& forgedIsa) {
  std::string source = "#include <stdio.h>\n__attribute__((constructor)) static void run() {\n  FILE* f = fopen(\"" +
                       marker + "\", \"w\");\n  if (f) fclose(f);\n}\n";
  if (!forgedIsa.empty())
    source += "__asm__(\".pushsection .note.ampc.isa,\\\"a\\\",@note\\n.balign 4\\n.long 5\\n.long 2f - 1f\\n.long 1\\n"
              ".asciz \\\"ampc\\\"\\n.balign 4\\n1: .asciz \\\"" + forgedIsa + "\\\"\\n2: .balign 4\\n.popsection\\n\");\n";
  std::vector<uint8_t> bytes;
  std::string error;
  EXPECT_TRUE(codegen::compileSharedObject("c++", source, "x86-64-v3", bytes, error)) << error;
  return bytes;
}

std::map<std::string, Tensor> feeds(const Plan& plan) {
  std::map<std::string, Tensor> f;
  for (const BufferDesc& b : plan.buffers) {
    if (b.kind != BufferKind::Input) continue;
    Tensor t(b.dtype, b.shape);
    for (int64_t i = 0; i < t.numel(); ++i) t.as<float>()[i] = 0.25f * static_cast<float>(i % 13) - 1.0f;
    f.emplace(b.name, std::move(t));
  }
  return f;
}

struct Outcome {
  absl::Status status;
  std::vector<Tensor> results;
  int64_t referenceSteps = -1;  // steps interpreted by the reference kernels
};

Outcome runOn(const Plan& plan, Device device) {
  Outcome r;
  auto session = openSession(plan, device);
  if (!session.ok()) return {session.status()};
  auto out = session->run("eval", feeds(plan));
  if (!out.ok()) return {out.status()};
  for (auto& named : *out) r.results.push_back(named.tensor);
  if (auto prepared = session->prepared("eval"); prepared.ok()) r.referenceSteps = (**prepared).report().referenceSteps;
  return r;
}

void expectSameBits(const Outcome& a, const Outcome& b) {
  ASSERT_EQ(a.results.size(), b.results.size());
  for (size_t i = 0; i < a.results.size(); ++i) {
    ASSERT_EQ(a.results[i].nbytes(), b.results[i].nbytes());
    EXPECT_EQ(std::memcmp(a.results[i].data(), b.results[i].data(), a.results[i].nbytes()), 0) << "result " << i;
  }
}

// The user's key for this test, in a scratch file (AMP_KEY_FILE).
UserKey testKey(const std::string& name) {
  const std::string path = scratch(name + ".key");
  std::remove(path.c_str());
  setenv("AMP_KEY_FILE", path.c_str(), 1);
  auto key = readOrCreateUserKey();
  EXPECT_TRUE(key.ok()) << key.status();
  return *key;
}

class NativeCodeSecurity : public testing::Test {
 protected:
  void SetUp() override {
    if (CpuFeatures::host().isaLevel() == "x86-64") GTEST_SKIP() << "no x86-64-v3 on this CPU: no native code runs";
  }
};

TEST_F(NativeCodeSecurity, ForeignObjectWithoutTheNoteIsRefusedBeforeDlopen) {
  const std::string marker = scratch("constructor-ran-1");
  std::remove(marker.c_str());
  Plan plan = compiledPlan({hostIsa()});
  plan.code[0] = object(hostIsa(), foreignObject(marker, ""));  // re-hashed, as the attacker did
  Outcome run = runOn(plan, Device::Cpu);
  ASSERT_FALSE(run.status.ok());
  EXPECT_NE(run.status.message().find("code record 'code/" + hostIsa() + ".so': records no ISA level"), std::string::npos)
      << run.status;
  EXPECT_FALSE(exists(marker)) << "the foreign object's constructor ran";
}

TEST_F(NativeCodeSecurity, ForeignObjectInAnUnauthenticatedBundleNeverRunsAndTheRunIsInterpreted) {
  const UserKey key = testKey("foreign");
  const std::string marker = scratch("constructor-ran-2");
  std::remove(marker.c_str());
  Plan genuine = compiledPlan({hostIsa()});
  // The attacker swaps in an object with a forged note and re-hashes it; the bundle is resealed
  // with the attacker's own key (or left unsealed): neither verifies under the user's key.
  Plan forged = genuine;
  forged.code[0] = object(hostIsa(), foreignObject(marker, hostIsa()));
  const std::string path = scratch("forged.ampx");
  ASSERT_TRUE(writeBundle(path, forged).ok());
  UserKey attacker = key;
  attacker.secret[0] ^= 1;
  ASSERT_TRUE(sealBundle(path, attacker).ok());
  for (bool sealed : {true, false}) {
    SCOPED_TRACE(sealed ? "sealed by another key" : "unsealed");
    if (!sealed) {
      ASSERT_TRUE(writeBundle(path, forged).ok());
    }
    std::string bytes;
    auto plan = readBundle(path, &bytes);
    ASSERT_TRUE(plan.ok()) << plan.status();
    auto notice = applyNativeCodePolicy(path, bytes, *plan, NativeCodePolicy::Authenticated);
    ASSERT_TRUE(notice.ok()) << notice.status();
    EXPECT_NE(notice->find(sealed ? "does not verify" : "carries no authentication tag"), std::string::npos) << *notice;
    EXPECT_NE(notice->find("--trust-native-code"), std::string::npos) << *notice;
    EXPECT_TRUE(plan->code.empty());
    Outcome interpreted = runOn(*plan, Device::Cpu);
    ASSERT_TRUE(interpreted.status.ok()) << interpreted.status;
    EXPECT_EQ(interpreted.referenceSteps, 1);
    EXPECT_FALSE(exists(marker)) << "the foreign object's constructor ran";
    // Interpreted, the run gives the native kernel's bits (and the reference's).
    Outcome native = runOn(genuine, Device::Cpu);
    ASSERT_TRUE(native.status.ok()) << native.status;
    EXPECT_EQ(native.referenceSteps, 0);
    expectSameBits(interpreted, native);
    expectSameBits(interpreted, runOn(genuine, Device::Reference));
  }
  // What --trust-native-code means: the same bundle's object is loaded, and its constructor runs
  // (which also shows the marker above would have caught it), before the missing table refuses it.
  std::string bytes;
  auto plan = readBundle(path, &bytes);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(*applyNativeCodePolicy(path, bytes, *plan, NativeCodePolicy::Trust), "");
  Outcome trusted = runOn(*plan, Device::Cpu);
  EXPECT_NE(trusted.status.message().find("exports no kernel table"), std::string::npos) << trusted.status;
  EXPECT_TRUE(exists(marker));
  std::remove(marker.c_str());
}

TEST_F(NativeCodeSecurity, AuthenticatedBundleKeepsItsNativeCodeAndTrustKeepsAnyBundles) {
  const UserKey key = testKey("genuine");
  Plan genuine = compiledPlan({hostIsa()});
  const std::string path = scratch("genuine.ampx");
  ASSERT_TRUE(writeBundle(path, genuine).ok());
  ASSERT_TRUE(sealBundle(path, key).ok());
  std::string bytes;
  auto plan = readBundle(path, &bytes);
  ASSERT_TRUE(plan.ok()) << plan.status();
  auto notice = applyNativeCodePolicy(path, bytes, *plan, NativeCodePolicy::Authenticated);
  ASSERT_TRUE(notice.ok()) << notice.status();
  EXPECT_EQ(*notice, "");
  ASSERT_EQ(plan->code.size(), 1u);
  Outcome native = runOn(*plan, Device::Cpu);
  ASSERT_TRUE(native.status.ok()) << native.status;
  EXPECT_EQ(native.referenceSteps, 0);
  // --native-code=off drops it silently; --trust-native-code keeps an unsealed bundle's code.
  auto off = readBundle(path, &bytes);
  ASSERT_EQ(*applyNativeCodePolicy(path, bytes, *off, NativeCodePolicy::Off), "");
  EXPECT_TRUE(off->code.empty());
  ASSERT_TRUE(writeBundle(path, genuine).ok());
  auto trusted = readBundle(path, &bytes);
  ASSERT_EQ(*applyNativeCodePolicy(path, bytes, *trusted, NativeCodePolicy::Trust), "");
  EXPECT_EQ(trusted->code.size(), 1u);
  EXPECT_EQ(runOn(*trusted, Device::Cpu).referenceSteps, 0);
}

TEST_F(NativeCodeSecurity, PlanSuppliedSymbolsAreNeverLookedUp) {
  Plan plan = compiledPlan({hostIsa()});
  for (const char* symbol : {"system", "exit", "puts", "dlopen", "__cxa_finalize", "abort", "environ", "stdout",
                             "amp_kernel_table"}) {
    Plan edited = plan;
    edited.entries[0].steps[0].attrs.set("symbol", std::string(symbol));
    Outcome run = runOn(edited, Device::Cpu);
    ASSERT_FALSE(run.status.ok()) << symbol;
    EXPECT_NE(run.status.message().find("has no kernel '" + std::string(symbol) + "' in its kernel table"),
              std::string::npos)
        << run.status;
  }
  // The right id, but the step's region edited (the kernel was generated for x + bias, not x * bias).
  Plan edited = plan;
  edited.entries[0].steps[0].body[0].op = "amp.mul";
  edited.entries[0].steps[0].body[0].code = opCodeOf("amp.mul");
  Outcome run = runOn(edited, Device::Cpu);
  ASSERT_FALSE(run.status.ok());
  EXPECT_NE(run.status.message().find("was generated for another region"), std::string::npos) << run.status;
  EXPECT_NE(run.status.message().find("step 0"), std::string::npos) << run.status;
}

// The records written into a bundle and read back: every error names the record.
absl::Status readBack(const Plan& plan, const std::string& name) {
  const std::string path = scratch(name);
  if (auto s = writeBundle(path, plan); !s.ok()) return s;
  return readBundle(path).status();
}

TEST_F(NativeCodeSecurity, RelabelledObjectIsALocatedError) {
  Plan plan = compiledPlan({"x86-64-v3", "x86-64-v4"});
  EXPECT_EQ(recordedIsa(plan.code[0].bytes), "x86-64-v3");
  EXPECT_EQ(recordedIsa(plan.code[1].bytes), "x86-64-v4");
  ASSERT_TRUE(readBack(plan, "both.ampx").ok());
  std::swap(plan.code[0].isa, plan.code[1].isa);  // records swapped, no byte changed
  absl::Status s = readBack(plan, "relabelled.ampx");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("relabelled.ampx: code record 'code/"), std::string::npos) << s;
  EXPECT_NE(s.message().find("but is labelled"), std::string::npos) << s;
  // The device refuses it as well (plans built in memory), whichever object this CPU would pick.
  Outcome run = runOn(plan, Device::Cpu);
  EXPECT_NE(run.status.message().find("but is labelled"), std::string::npos) << run.status;
}

TEST_F(NativeCodeSecurity, TruncatedObjectIsALocatedError) {
  Plan plan = compiledPlan({hostIsa()});
  for (size_t keep : {plan.code[0].bytes.size() / 2, plan.code[0].bytes.size() - 1, size_t{100}, size_t{0}}) {
    Plan cut = plan;
    cut.code[0].bytes.resize(keep);
    cut.code[0] = object(hostIsa(), cut.code[0].bytes);  // hash updated
    absl::Status s = readBack(cut, "truncated.ampx");
    ASSERT_FALSE(s.ok()) << keep;
    EXPECT_NE(s.message().find("code record 'code/" + hostIsa() + ".so'"), std::string::npos) << s;
    Outcome run = runOn(cut, Device::Cpu);
    ASSERT_FALSE(run.status.ok()) << keep;
    EXPECT_NE(run.status.message().find("code record"), std::string::npos) << run.status;
  }
}

TEST_F(NativeCodeSecurity, WrongBytesAndWrongHashAreRefused) {
  Plan plan = compiledPlan({hostIsa()});
  const std::string path = scratch("bytes.ampx");
  ASSERT_TRUE(writeBundle(path, plan).ok());
  auto contents = readSafetensors(path);
  ASSERT_TRUE(contents.ok());
  for (const char* field : {"bytes", "sha256"}) {
    SCOPED_TRACE(field);
    StringMap metadata = contents->metadata;
    for (auto& [k, v] : metadata) {
      if (k != "ampc.plan") continue;
      auto json = parseJson(v, "plan");
      ASSERT_TRUE(json.ok());
      JsonValue code = JsonValue::array();
      for (JsonValue record : json->find("code")->items()) {
        if (std::string(field) == "bytes") record.set("bytes", JsonValue::integer(*record.find("bytes")->asInt64() + 1));
        else record.set("sha256", JsonValue::string(std::string(64, 'a')));
        code.push(std::move(record));
      }
      json->set("code", std::move(code));
      v = writeJson(*json);
    }
    std::vector<NamedTensorRef> refs;
    for (const NamedTensor& t : contents->tensors) refs.push_back({t.name, &t.tensor});
    ASSERT_TRUE(writeSafetensors(path, refs, metadata).ok());
    auto back = readBundle(path);
    ASSERT_FALSE(back.ok());
    EXPECT_NE(back.status().message().find("code record 'code/" + hostIsa() + ".so': " +
                                           (std::string(field) == "bytes" ? "'bytes' is" : "fails its SHA-256")),
              std::string::npos)
        << back.status();
  }
}

}  // namespace
}  // namespace amp::rt
