// Shared helpers of the libFuzzer targets (fuzz/*.cpp; docs/reliability.md).
#ifndef AMP_FUZZ_FUZZCOMMON_H
#define AMP_FUZZ_FUZZCOMMON_H

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace amp::fuzz {

// An in-memory file (memfd) whose path, /proc/self/fd/N, the readers open like any file: the
// readers take paths, and the input should not touch the disk.
class MemFile {
 public:
  MemFile() {
    fd_ = memfd_create("amp-fuzz-input", MFD_CLOEXEC);
    if (fd_ < 0) {
      std::perror("memfd_create");
      std::abort();
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~MemFile() { close(fd_); }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;

  // Replaces the contents; returns the path.
  const std::string& set(const uint8_t* data, size_t size) {
    if (ftruncate(fd_, 0) != 0) std::abort();
    size_t done = 0;
    while (done < size) {
      ssize_t n = pwrite(fd_, data + done, size - done, static_cast<off_t>(done));
      if (n <= 0) std::abort();
      done += static_cast<size_t>(n);
    }
    return path_;
  }
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

// A fixed memory limit for sessions built from fuzzed plans: large enough for the seed bundles,
// small enough that a hostile plan is refused instead of exhausting the fuzzer's RSS limit.
inline constexpr int64_t kSessionMemoryLimit = int64_t{256} << 20;

}  // namespace amp::fuzz

#endif  // AMP_FUZZ_FUZZCOMMON_H
