// Bundle provenance (runtime/plan/Provenance.h): the per-user key is created once, private, and
// refused when others can read it; ampc's tag sits at its fixed place, verifies under the key that
// sealed it and under no other, and a change of any byte of the bundle fails it; the code amp-run
// would load must be the authenticated bytes; CUDA code without provenance is an error, not a
// silent fallback; PTX records name their target.
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/io/Sha256.h"
#include "runtime/plan/Bundle.h"
#include "runtime/plan/Provenance.h"

namespace amp::rt {
namespace {

std::string scratch(const std::string& name) { return ::testing::TempDir() + "/provenance-" + name; }

std::string readFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}
void writeFile(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

int modeOf(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? static_cast<int>(st.st_mode & 0777) : -1;
}

CodeObject ptx(const std::string& arch, const std::string& target) {
  CodeObject c;
  c.isa = arch;
  c.format = "ptx";
  const std::string text = ".version 8.0\n.target " + target + "\n.address_size 64\n";
  c.bytes.assign(text.begin(), text.end());
  c.sha256 = sha256Hex(c.bytes.data(), c.bytes.size());
  return c;
}

Plan tinyPlan() {
  Plan p;
  p.metadata = {{"model", "tiny"}};
  p.buffers.push_back({"x", DType::F32, {2, 3}, BufferKind::Input, std::nullopt});
  EntryPoint e;
  e.name = "eval";
  e.results = {0};
  e.resultNames = {"x"};
  p.entries.push_back(e);
  p.code.push_back(ptx("sm_90", "sm_90"));
  return p;
}

// A fresh key at AMP_KEY_FILE=`name`.
UserKey freshKey(const std::string& name) {
  const std::string path = scratch(name);
  std::remove(path.c_str());
  setenv("AMP_KEY_FILE", path.c_str(), 1);
  auto key = readOrCreateUserKey();
  EXPECT_TRUE(key.ok()) << key.status();
  return key.ok() ? *key : UserKey{};
}

TEST(Provenance, KeyIsCreatedOncePrivateAndRefusedWhenOthersCanReadIt) {
  const std::string dir = scratch("config-" + std::to_string(getpid()));
  const std::string path = dir + "/ampc/key";
  setenv("AMP_KEY_FILE", path.c_str(), 1);
  EXPECT_TRUE(absl::IsNotFound(readUserKey().status()));
  auto created = readOrCreateUserKey();
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->path, path);
  EXPECT_EQ(created->secret.size(), 32u);
  EXPECT_EQ(modeOf(path), 0600);
  EXPECT_EQ(modeOf(dir + "/ampc"), 0700);
  EXPECT_EQ(readFile(path).size(), 65u);
  auto again = readOrCreateUserKey();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->secret, created->secret) << "a second ampc must reuse the key";
  chmod(path.c_str(), 0640);
  auto shared = readUserKey();
  ASSERT_FALSE(shared.ok());
  EXPECT_NE(shared.status().message().find("accessible by other users"), std::string::npos) << shared.status();
  chmod(path.c_str(), 0600);
  writeFile(path, "not a key\n");
  EXPECT_NE(readUserKey().status().message().find("does not hold a key"), std::string::npos);
}

TEST(Provenance, KeyPathFollowsAmpKeyFileThenXdgThenHome) {
  // The process's environment is put back afterwards for the other tests.
  struct Restore {
    std::vector<std::pair<std::string, std::optional<std::string>>> saved;
    Restore() {
      for (const char* name : {"AMP_KEY_FILE", "XDG_CONFIG_HOME", "HOME"}) {
        const char* v = std::getenv(name);
        saved.emplace_back(name, v ? std::optional<std::string>(v) : std::nullopt);
      }
    }
    ~Restore() {
      for (const auto& [name, v] : saved) v ? setenv(name.c_str(), v->c_str(), 1) : unsetenv(name.c_str());
    }
  } restore;
  setenv("AMP_KEY_FILE", "/k/file", 1);
  setenv("XDG_CONFIG_HOME", "/xdg", 1);
  setenv("HOME", "/home/u", 1);
  EXPECT_EQ(*userKeyPath(), "/k/file");
  unsetenv("AMP_KEY_FILE");
  EXPECT_EQ(*userKeyPath(), "/xdg/ampc/key");
  unsetenv("XDG_CONFIG_HOME");
  EXPECT_EQ(*userKeyPath(), "/home/u/.config/ampc/key");
  unsetenv("HOME");
  EXPECT_FALSE(userKeyPath().ok());
}

TEST(Provenance, TagVerifiesUnderItsKeyOnlyAndCoversEveryByte) {
  const UserKey key = freshKey("tag.key");
  const std::string path = scratch("tag.ampx");
  Plan plan = tinyPlan();
  ASSERT_TRUE(writeBundle(path, plan).ok());
  const std::string unsealed = readFile(path);
  ASSERT_EQ(unsealed.compare(8, 30, kTagPrefix), 0);
  EXPECT_EQ(unsealed.substr(kTagOffset, kTagLength), unsealedTag());
  ProvenanceCheck check = checkProvenance(path, plan, key);
  EXPECT_FALSE(check.authenticated);
  EXPECT_NE(check.reason.find("carries no authentication tag"), std::string::npos) << check.reason;

  ASSERT_TRUE(sealBundle(path, key).ok());
  const std::string sealed = readFile(path);
  ASSERT_EQ(sealed.size(), unsealed.size());
  EXPECT_NE(sealed.substr(kTagOffset, kTagLength), unsealedTag());
  // Only the tag's bytes changed.
  EXPECT_EQ(sealed.substr(0, kTagOffset) + sealed.substr(kTagOffset + kTagLength),
            unsealed.substr(0, kTagOffset) + unsealed.substr(kTagOffset + kTagLength));
  EXPECT_TRUE(readBundle(path).ok()) << "a sealed bundle is a valid bundle";
  EXPECT_TRUE(checkProvenance(path, plan, key).authenticated) << checkProvenance(path, plan, key).reason;
  EXPECT_FALSE(sealBundle(path, key).ok()) << "sealing twice";

  UserKey other = key;
  other.secret[31] ^= 0x80;
  check = checkProvenance(path, plan, other);
  EXPECT_FALSE(check.authenticated);
  EXPECT_NE(check.reason.find("does not verify"), std::string::npos) << check.reason;

  // One flipped bit anywhere: the header length, the tag, the plan text, the code's bytes, the end.
  for (size_t at : {size_t{0}, kTagOffset, kTagOffset + 63, sealed.find("tiny"), sealed.find(".target"),
                    sealed.size() - 1}) {
    std::string edited = sealed;
    edited[at] ^= 1;
    writeFile(path, edited);
    EXPECT_FALSE(checkProvenance(path, plan, key).authenticated) << "byte " << at;
  }
  writeFile(path, sealed);
  // The code amp-run would load must be the bytes the tag covers.
  Plan swapped = plan;
  swapped.code[0].bytes.back() ^= 1;
  check = checkProvenance(path, swapped, key);
  EXPECT_FALSE(check.authenticated);
  EXPECT_NE(check.reason.find("code objects changed"), std::string::npos) << check.reason;
}

TEST(Provenance, UnauthenticatedCudaCodeIsAnErrorNamingTheFlag) {
  freshKey("cuda.key");
  const std::string path = scratch("cuda.ampx");
  Plan plan = tinyPlan();
  ASSERT_TRUE(writeBundle(path, plan).ok());  // unsealed
  auto refused = applyNativeCodePolicy(path, plan, NativeCodePolicy::Authenticated);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("--trust-native-code"), std::string::npos) << refused.status();
  EXPECT_EQ(plan.code.size(), 1u);
  auto trusted = applyNativeCodePolicy(path, plan, NativeCodePolicy::Trust);
  ASSERT_TRUE(trusted.ok());
  EXPECT_EQ(plan.code.size(), 1u);
}

TEST(Provenance, PtxRecordMustTargetItsLabel) {
  Plan plan = tinyPlan();
  plan.code[0] = ptx("sm_90", "sm_80");
  const std::string path = scratch("ptx.ampx");
  ASSERT_TRUE(writeBundle(path, plan).ok());
  auto back = readBundle(path);
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.status().message().find("code record 'code/sm_90.ptx': is PTX without '.target sm_90'"),
            std::string::npos)
      << back.status();
}

}  // namespace
}  // namespace amp::rt
