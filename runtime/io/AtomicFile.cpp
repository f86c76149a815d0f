#include "runtime/io/AtomicFile.h"

#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace amp::rt {

static absl::Status errnoStatus(int err, const std::string& path, const std::string& what) {
  return absl::ErrnoToStatus(err, absl::StrCat(path, ": ", what));
}

absl::StatusOr<AtomicFile> AtomicFile::create(const std::string& path) {
  if (path.empty()) return absl::InvalidArgumentError("empty output path");
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
    // A device or FIFO: renaming over it would replace the node (as root, /dev/full itself).
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return errnoStatus(errno, path, "cannot open");
    return AtomicFile(path, path, "", fd);
  }
  std::string dest = path;
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    // Replace the file the link names; a rename over the link would turn it into a file.
    if (char* real = ::realpath(path.c_str(), nullptr)) {
      dest = real;
      std::free(real);
    }
  }
  std::string tmp = absl::StrCat(dest, ".tmp.", ::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errnoStatus(errno, path, absl::StrCat("cannot create '", tmp, "'"));
  return AtomicFile(path, std::move(dest), std::move(tmp), fd);
}

AtomicFile::AtomicFile(AtomicFile&& o) noexcept
    : path_(std::move(o.path_)), dest_(std::move(o.dest_)), tmp_(std::move(o.tmp_)), fd_(o.fd_),
      written_(o.written_) {
  o.fd_ = -1;
  o.tmp_.clear();
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
}

absl::Status AtomicFile::write(const void* data, size_t n) {
  if (fd_ < 0) return absl::FailedPreconditionError(absl::StrCat(path_, ": write after commit"));
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t k = ::write(fd_, p, n);
    if (k < 0) {
      if (errno == EINTR) continue;
      return errnoStatus(errno, path_, absl::StrCat("write failed after ", written_, " bytes"));
    }
    if (k == 0)  // write(2) never does this for n > 0 on a file; do not spin if a device does
      return absl::DataLossError(absl::StrCat(path_, ": write failed after ", written_, " bytes: wrote nothing"));
    p += k;
    n -= static_cast<size_t>(k);
    written_ += static_cast<uint64_t>(k);
  }
  return absl::OkStatus();
}

absl::Status AtomicFile::commit() {
  if (fd_ < 0) return absl::FailedPreconditionError(absl::StrCat(path_, ": committed twice"));
  if (tmp_.empty()) {  // written through a device or FIFO: nothing to sync or rename
    int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) return errnoStatus(errno, path_, "close failed");
    return absl::OkStatus();
  }
  // Data must be on disk before the rename makes it visible, or a crash could expose a file
  // whose name is new but whose blocks are not.
  if (::fsync(fd_) != 0) return errnoStatus(errno, path_, "fsync failed");
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) return errnoStatus(errno, path_, "close failed");
  if (::rename(tmp_.c_str(), dest_.c_str()) != 0)
    return errnoStatus(errno, path_, absl::StrCat("cannot rename '", tmp_, "' into place"));
  tmp_.clear();
  // Make the rename itself durable. Failure here is not an error for the caller's data.
  size_t slash = dest_.rfind('/');
  std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : dest_.substr(0, slash));
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return absl::OkStatus();
}

absl::Status writeFileAtomically(const std::string& path, std::string_view bytes) {
  absl::StatusOr<AtomicFile> f = AtomicFile::create(path);
  if (!f.ok()) return f.status();
  if (absl::Status s = f->write(bytes); !s.ok()) return s;
  return f->commit();
}

// ---------------------------------------------------------------------------------------------

absl::StatusOr<InputFile> InputFile::open(const std::string& path) {
  // O_NONBLOCK: a FIFO (or a device) at the path is refused below instead of blocking the open;
  // it changes nothing for the regular files read here.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    int err = errno;
    return errnoStatus(err, path, err == ENOENT ? "no such file" : "cannot open");
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return errnoStatus(err, path, "cannot stat");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file"));
  }
  return InputFile(path, fd, static_cast<uint64_t>(st.st_size));
}

InputFile::InputFile(InputFile&& o) noexcept : path_(std::move(o.path_)), fd_(o.fd_), size_(o.size_) {
  o.fd_ = -1;
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

absl::Status InputFile::readAt(uint64_t offset, void* dst, size_t n) const {
  if (offset > size_ || n > size_ - offset)
    return absl::DataLossError(absl::StrCat(path_, ": truncated: need ", n, " bytes at offset ",
                                            offset, ", file has ", size_));
  char* p = static_cast<char*>(dst);
  while (n > 0) {
    ssize_t k = ::pread(fd_, p, n, static_cast<off_t>(offset));
    if (k < 0) {
      if (errno == EINTR) continue;
      return errnoStatus(errno, path_, "read failed");
    }
    if (k == 0)  // the file shrank under us
      return absl::DataLossError(absl::StrCat(path_, ": unexpected end of file at offset ", offset));
    p += k;
    n -= static_cast<size_t>(k);
    offset += static_cast<uint64_t>(k);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> InputFile::readString(uint64_t offset, size_t n) const {
  if (offset > size_ || n > size_ - offset)  // check before allocating n bytes
    return absl::DataLossError(absl::StrCat(path_, ": truncated: need ", n, " bytes at offset ",
                                            offset, ", file has ", size_));
  std::string s(n, '\0');
  if (absl::Status st = readAt(offset, s.data(), n); !st.ok()) return st;
  return s;
}

}  // namespace amp::rt
