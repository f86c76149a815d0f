// Crash-safe file writing. Every tensor writer goes through AtomicFile: bytes go to
// "<path>.tmp.<pid>", which is fsync'ed and then rename()d over <path> (and the directory is
// fsync'ed), so a reader sees either the old file or the complete new one, never a torn one.
// Checkpoints rely on this.
//
// Every failure (short writes are retried; write, fsync, close and rename errors) is an error
// naming the path and the OS error, and leaves the previous file as it was. Two kinds of
// destination are not replaced by a rename:
//  - a device, FIFO or socket (/dev/full, /dev/stdout, a pipe): nothing can be replaced atomically,
//    and a rename would swap the device node itself for a regular file, so bytes are written
//    through it (no temporary, no fsync);
//  - a symbolic link: the file it points to is replaced, and the link stays.
#ifndef AMP_RUNTIME_IO_ATOMICFILE_H
#define AMP_RUNTIME_IO_ATOMICFILE_H

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace amp::rt {

class AtomicFile {
 public:
  // Creates the temporary file next to `path` (same directory, so rename is atomic).
  // Callers that write large files should ignore SIGXFSZ (amp-run does), so that a file-size
  // limit (RLIMIT_FSIZE) is an EFBIG error here rather than a kill.
  static absl::StatusOr<AtomicFile> create(const std::string& path);

  AtomicFile(AtomicFile&& o) noexcept;
  AtomicFile& operator=(AtomicFile&& o) = delete;
  AtomicFile(const AtomicFile&) = delete;
  // Not committed: closes and deletes the temporary; `path` is untouched.
  ~AtomicFile();

  absl::Status write(const void* data, size_t n);
  absl::Status write(std::string_view s) { return write(s.data(), s.size()); }
  uint64_t bytesWritten() const { return written_; }
  // fsync, close, rename over the destination, fsync the directory.
  absl::Status commit();

  const std::string& tempPath() const { return tmp_; }

 private:
  AtomicFile(std::string path, std::string dest, std::string tmp, int fd)
      : path_(std::move(path)), dest_(std::move(dest)), tmp_(std::move(tmp)), fd_(fd) {}
  std::string path_;  // as given (messages)
  std::string dest_;  // what the rename replaces: path_, or the file a symlink points to
  std::string tmp_;   // empty when writing through a device or FIFO
  int fd_ = -1;
  uint64_t written_ = 0;
};

// Convenience: atomically replaces `path` with `bytes`.
absl::Status writeFileAtomically(const std::string& path, std::string_view bytes);

// Read side: a file opened for random access with bounds-checked reads. Errors name the path.
class InputFile {
 public:
  // NotFound when missing; other errno values map through absl::ErrnoToStatus.
  static absl::StatusOr<InputFile> open(const std::string& path);
  InputFile(InputFile&& o) noexcept;
  InputFile& operator=(InputFile&&) = delete;
  InputFile(const InputFile&) = delete;
  ~InputFile();

  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }
  int fd() const { return fd_; }
  // Reads exactly n bytes at offset. A range past the end is a DataLoss "truncated" error
  // (files are checked against their own size before reading, so this is a last line of defence).
  absl::Status readAt(uint64_t offset, void* dst, size_t n) const;
  absl::StatusOr<std::string> readString(uint64_t offset, size_t n) const;

 private:
  InputFile(std::string path, int fd, uint64_t size) : path_(std::move(path)), fd_(fd), size_(size) {}
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

}  // namespace amp::rt

#endif  // AMP_RUNTIME_IO_ATOMICFILE_H
