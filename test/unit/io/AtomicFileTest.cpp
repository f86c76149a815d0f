#include "runtime/io/AtomicFile.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test/unit/io/IoTestUtil.h"

namespace amp::rt {
namespace {

using testing::expectError;
using testing::readBytes;
using testing::TempDir;
using testing::writeBytes;

bool exists(const std::string& p) { return ::access(p.c_str(), F_OK) == 0; }

TEST(IoAtomicFile, CommitReplacesAndLeavesNoTemp) {
  TempDir dir;
  std::string path = dir.file("ck.safetensors");
  writeBytes(path, "old");
  absl::StatusOr<AtomicFile> f = AtomicFile::create(path);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->tempPath(), path + ".tmp." + std::to_string(::getpid()));
  ASSERT_TRUE(f->write("new ").ok());
  ASSERT_TRUE(f->write("contents").ok());
  EXPECT_EQ(readBytes(path), "old") << "the destination is untouched until commit";
  EXPECT_TRUE(exists(f->tempPath()));
  ASSERT_TRUE(f->commit().ok());
  EXPECT_EQ(readBytes(path), "new contents");
  EXPECT_FALSE(exists(f->tempPath()));
  expectError(f->write("x"), absl::StatusCode::kFailedPrecondition, {"ck.safetensors", "after commit"});
}

TEST(IoAtomicFile, AbandonedWriteKeepsTheOldFile) {
  // A writer that fails half way (or a crash) must leave the previous file intact.
  TempDir dir;
  std::string path = dir.file("ck.safetensors");
  writeBytes(path, "old");
  std::string tmp;
  {
    absl::StatusOr<AtomicFile> f = AtomicFile::create(path);
    ASSERT_TRUE(f.ok());
    tmp = f->tempPath();
    ASSERT_TRUE(f->write("half-writ").ok());
  }
  EXPECT_EQ(readBytes(path), "old");
  EXPECT_FALSE(exists(tmp));
}

TEST(IoAtomicFile, ErrorsNameThePath) {
  TempDir dir;
  std::string path = dir.file("no/such/dir/out.npy");
  expectError(AtomicFile::create(path).status(), absl::StatusCode::kNotFound, {"out.npy", "cannot create"});
  expectError(writeFileAtomically(dir.path(), "x"), absl::StatusCode::kFailedPrecondition,
              {dir.path(), "cannot rename"});
  ASSERT_TRUE(writeFileAtomically(dir.file("a.txt"), "hello").ok());
  EXPECT_EQ(readBytes(dir.file("a.txt")), "hello");
  expectError(InputFile::open(dir.path()).status(), absl::StatusCode::kInvalidArgument, {"not a regular file"});
  absl::StatusOr<InputFile> in = InputFile::open(dir.file("a.txt"));
  ASSERT_TRUE(in.ok());
  char buf[8];
  expectError(in->readAt(3, buf, 3), absl::StatusCode::kDataLoss, {"a.txt", "truncated"});
  EXPECT_TRUE(in->readAt(2, buf, 3).ok());
  EXPECT_EQ(std::string(buf, 3), "llo");
}

}  // namespace
}  // namespace amp::rt
