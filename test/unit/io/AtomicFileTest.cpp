#include "runtime/io/AtomicFile.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <functional>

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

// The child of a fork runs `body` and sends back its status's message ("" when ok).
std::string messageFromChild(const std::function<absl::Status()>& body) {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    absl::Status s = body();
    std::string m = s.ok() ? "" : s.ToString();
    ssize_t unused = ::write(fds[1], m.data(), m.size());
    (void)unused;
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string m;
  char buf[512];
  for (ssize_t k; (k = ::read(fds[0], buf, sizeof buf)) > 0;) m.append(buf, size_t(k));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child died: " << status;
  return m;
}

TEST(IoAtomicFile, FileSizeLimitIsALocatedErrorAndKeepsTheOldFile) {
  // RLIMIT_FSIZE stands in for a full disk: the write that crosses it is short, the next one
  // fails with EFBIG (SIGXFSZ ignored, as amp-run does).
  TempDir dir;
  std::string path = dir.file("ck.safetensors");
  writeBytes(path, "old contents");
  std::string m = messageFromChild([&] {
    ::signal(SIGXFSZ, SIG_IGN);
    struct rlimit limit = {4096, 4096};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    return writeFileAtomically(path, std::string(100000, 'x'));
  });
  EXPECT_NE(m.find("OUT_OF_RANGE: " + path + ": write failed after 4096 bytes: File too large"), std::string::npos) << m;
  EXPECT_EQ(readBytes(path), "old contents");
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) files += 1, (void)e;
  EXPECT_EQ(files, 1u) << "the temporary of the failed write is removed";
}

TEST(IoAtomicFile, WritesThroughAFifoInsteadOfReplacingIt) {
  TempDir dir;
  std::string fifo = dir.file("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);  // so the writer's open does not block
  ASSERT_GE(reader, 0);
  ASSERT_TRUE(writeFileAtomically(fifo, "through the pipe").ok());
  char buf[64];
  ssize_t k = ::read(reader, buf, sizeof buf);
  ::close(reader);
  EXPECT_EQ(std::string(buf, k > 0 ? size_t(k) : 0), "through the pipe");
  struct stat st;
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode)) << "a rename replaced the FIFO with a regular file";
}

TEST(IoAtomicFile, DevFullIsANoSpaceErrorAndStaysADevice) {
  struct stat st;
  if (::stat("/dev/full", &st) != 0 || !S_ISCHR(st.st_mode)) GTEST_SKIP() << "no /dev/full";
  {
    absl::StatusOr<AtomicFile> f = AtomicFile::create("/dev/full");
    ASSERT_TRUE(f.ok()) << f.status();
    // Checked before writing: a temporary here would be renamed over the device node (as root).
    ASSERT_EQ(f->tempPath(), "");
  }
  expectError(writeFileAtomically("/dev/full", "{}"), absl::StatusCode::kResourceExhausted,
              {"/dev/full: write failed after 0 bytes: No space left on device"});
  ASSERT_EQ(::stat("/dev/full", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

TEST(IoAtomicFile, ReplacesTheFileASymlinkNamesAndKeepsTheLink) {
  TempDir dir;
  std::string target = dir.file("real.json"), link = dir.file("link.json");
  writeBytes(target, "old");
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  ASSERT_TRUE(writeFileAtomically(link, "new").ok());
  struct stat st;
  ASSERT_EQ(::lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(readBytes(target), "new");
}

}  // namespace
}  // namespace amp::rt
