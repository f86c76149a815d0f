// Bundle provenance (runtime/plan/Provenance.h): the per-user key is created once, private, and
// refused when others can read it; ampc's tag sits at its fixed place, verifies under the key that
// sealed it and under no other, and a change of any byte of the bundle fails it; the plan amp-run
// runs is parsed from the very bytes the tag was checked on; CUDA code without provenance is an error, not a
// silent fallback; PTX records name their target.
#include <sys/stat.h>
#include <unistd.h>

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
  ProvenanceCheck check = checkProvenance(unsealed, key);
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
  EXPECT_TRUE(checkProvenance(sealed, key).authenticated) << checkProvenance(sealed, key).reason;
  EXPECT_FALSE(sealBundle(path, key).ok()) << "sealing twice";

  UserKey other = key;
  other.secret[31] ^= 0x80;
  check = checkProvenance(sealed, other);
  EXPECT_FALSE(check.authenticated);
  EXPECT_NE(check.reason.find("does not verify"), std::string::npos) << check.reason;

  // One flipped bit anywhere: the header length, the tag, the plan text, the code's bytes, the end.
  for (size_t at : {size_t{0}, kTagOffset, kTagOffset + 63, sealed.find("tiny"), sealed.find(".target"),
                    sealed.size() - 1}) {
    std::string edited = sealed;
    edited[at] ^= 1;
    EXPECT_FALSE(checkProvenance(edited, key).authenticated) << "byte " << at;
  }
}

// Earlier, amp-run parsed the plan from one open of the path and checked the tag from a
// second, so a bundle swapped in between ran an edited plan with native code. Now the bytes are
// read once: the plan comes from them and the tag is checked on them, whatever the path holds by
// then.
TEST(Provenance, PlanIsParsedFromTheBytesTheTagCovers) {
  const UserKey key = freshKey("swap.key");
  const std::string path = scratch("swap.ampx"), editedPath = scratch("swap-edited.ampx");
  Plan plan = tinyPlan();
  ASSERT_TRUE(writeBundle(path, plan).ok());
  ASSERT_TRUE(sealBundle(path, key).ok());
  // The attacker's copy: the same code, an edited plan (another model name), sealed under no key.
  Plan edited = plan;
  edited.metadata = {{"model", "evil"}};
  ASSERT_TRUE(writeBundle(editedPath, edited).ok());

  std::string bytes;
  auto read = readBundle(path, &bytes);
  ASSERT_TRUE(read.ok()) << read.status();
  // The swap happens after the read, before the check: the check must not look at the path.
  ASSERT_EQ(std::rename(editedPath.c_str(), path.c_str()), 0);
  EXPECT_EQ(read->metadataValue("model"), "tiny");
  EXPECT_TRUE(checkProvenance(bytes, key).authenticated) << checkProvenance(bytes, key).reason;
  auto kept = applyNativeCodePolicy(path, bytes, *read, NativeCodePolicy::Authenticated);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(read->code.size(), 1u) << "the authenticated plan keeps its code";

  // What the path holds now is read, parsed and refused as one: its own bytes carry no tag.
  std::string swappedBytes;
  auto swapped = readBundle(path, &swappedBytes);
  ASSERT_TRUE(swapped.ok()) << swapped.status();
  EXPECT_EQ(swapped->metadataValue("model"), "evil");
  EXPECT_FALSE(checkProvenance(swappedBytes, key).authenticated);
  EXPECT_FALSE(applyNativeCodePolicy(path, swappedBytes, *swapped, NativeCodePolicy::Authenticated).ok())
      << "CUDA code without a verified tag is an error";
}

// The older two-read form, for callers that parsed the plan themselves (readBundle(path)): the
// T1 attack the other way round. The caller parsed an edited, unsealed plan; then the genuine
// sealed bundle is renamed over the path before the check. The check used to authenticate the
// genuine file and compare only the code bytes (the same), so the edited plan kept its code. Now
// the plan parsed from the authenticated bytes replaces the caller's.
TEST(Provenance, TwoReadFormRunsThePlanTheTagCovers) {
  const UserKey key = freshKey("tworead.key");
  const std::string path = scratch("tworead.ampx"), genuinePath = scratch("tworead-genuine.ampx");
  Plan plan = tinyPlan();
  ASSERT_TRUE(writeBundle(genuinePath, plan).ok());
  ASSERT_TRUE(sealBundle(genuinePath, key).ok());
  Plan edited = plan;
  edited.metadata = {{"model", "evil"}};
  ASSERT_TRUE(writeBundle(path, edited).ok());
  auto parsed = readBundle(path);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->metadataValue("model"), "evil");
  ASSERT_EQ(std::rename(genuinePath.c_str(), path.c_str()), 0);
  auto notice = applyNativeCodePolicy(path, *parsed, NativeCodePolicy::Authenticated);
  ASSERT_TRUE(notice.ok()) << notice.status();
  EXPECT_EQ(parsed->metadataValue("model"), "tiny") << "the edited plan must not run with the code";
  EXPECT_EQ(parsed->code.size(), 1u);
  // And a path that no longer holds a bundle: CUDA code is an error, not run.
  std::remove(path.c_str());
  EXPECT_FALSE(applyNativeCodePolicy(path, *parsed, NativeCodePolicy::Authenticated).ok());
}

// A key path that is a FIFO hung ampc and amp-run in open(). Now it is refused at
// once (a blocking open would hang this test until ctest's timeout), as is a symlink and a FIFO
// given as the bundle.
TEST(Provenance, FifoOrSymlinkKeyAndFifoBundleAreRefusedAtOnce) {
  const std::string fifo = scratch("fifo.key." + std::to_string(getpid()));
  std::remove(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  setenv("AMP_KEY_FILE", fifo.c_str(), 1);
  auto key = readUserKey();
  ASSERT_FALSE(key.ok());
  EXPECT_NE(key.status().message().find("is not a regular file"), std::string::npos) << key.status();
  EXPECT_FALSE(readOrCreateUserKey().ok());
  std::string bytes;
  auto bundle = readBundle(fifo, &bytes);
  ASSERT_FALSE(bundle.ok());
  EXPECT_NE(bundle.status().message().find("not a regular file"), std::string::npos) << bundle.status();
  std::remove(fifo.c_str());

  const UserKey real = freshKey("target.key");
  const std::string link = scratch("link.key." + std::to_string(getpid()));
  std::remove(link.c_str());
  ASSERT_EQ(symlink(real.path.c_str(), link.c_str()), 0);
  setenv("AMP_KEY_FILE", link.c_str(), 1);
  key = readUserKey();
  ASSERT_FALSE(key.ok());
  EXPECT_NE(key.status().message().find("symbolic link"), std::string::npos) << key.status();
  std::remove(link.c_str());
}

TEST(Provenance, UnauthenticatedCudaCodeIsAnErrorNamingTheFlag) {
  freshKey("cuda.key");
  const std::string path = scratch("cuda.ampx");
  Plan plan = tinyPlan();
  ASSERT_TRUE(writeBundle(path, plan).ok());  // unsealed
  auto refused = applyNativeCodePolicy(path, readFile(path), plan, NativeCodePolicy::Authenticated);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("--trust-native-code"), std::string::npos) << refused.status();
  EXPECT_EQ(plan.code.size(), 1u);
  auto trusted = applyNativeCodePolicy(path, readFile(path), plan, NativeCodePolicy::Trust);
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
