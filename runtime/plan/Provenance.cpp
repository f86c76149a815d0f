#include "runtime/plan/Provenance.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/io/Hmac.h"
#include "runtime/plan/Bundle.h"

namespace amp::rt {
namespace {

static_assert(std::char_traits<char>::length(kTagPrefix) + 8 == kTagOffset, "the tag follows the header's prefix");

std::string osError() { return std::strerror(errno); }

bool isLowerHex(const std::string& s) {
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

std::string toHex(const uint8_t* bytes, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    out += digits[bytes[i] >> 4];
    out += digits[bytes[i] & 15];
  }
  return out;
}

std::string fromHex(const std::string& hex) {
  std::string out;
  auto nibble = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out += static_cast<char>(nibble(hex[i]) << 4 | nibble(hex[i + 1]));
  return out;
}

absl::Status readFully(int fd, uint64_t offset, void* out, size_t n, const std::string& path) {
  size_t done = 0;
  while (done < n) {
    ssize_t r = pread(fd, static_cast<char*>(out) + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return absl::DataLossError(absl::StrCat(path, ": cannot read: ", osError()));
    if (r == 0) return absl::DataLossError(absl::StrCat(path, ": the file ends early (it changed while being read)"));
    done += static_cast<size_t>(r);
  }
  return absl::OkStatus();
}

// The fixed-place tag of an open bundle, or an error saying why the file has none.
absl::StatusOr<std::string> storedTag(int fd, uint64_t size, const std::string& path) {
  const std::string prefix = kTagPrefix;
  if (size < kTagOffset + kTagLength + 1)
    return absl::InvalidArgumentError("it is too short to carry an authentication tag");
  std::string head(kTagOffset + kTagLength + 1, '\0');
  if (auto s = readFully(fd, 0, head.data(), head.size(), path); !s.ok()) return s;
  if (head.compare(8, prefix.size(), prefix) != 0 || head.back() != '"')
    return absl::InvalidArgumentError("it carries no authentication tag (its header does not start with \"ampc.auth\")");
  std::string tag = head.substr(kTagOffset, kTagLength);
  if (!isLowerHex(tag)) return absl::InvalidArgumentError("its authentication tag is not 64 lowercase hex digits");
  return tag;
}

// Streams the file through the MAC (the tag's bytes read as '0'), calling `visit(offset, chunk)`
// on every chunk so callers can compare parts of the same bytes the MAC saw.
template <typename Visit>
absl::StatusOr<std::string> macOfFile(int fd, uint64_t size, const UserKey& key, const std::string& path,
                                      Visit visit) {
  HmacSha256 mac(key.secret.data(), key.secret.size());
  std::vector<char> chunk(1 << 20);
  for (uint64_t offset = 0; offset < size;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk.size(), size - offset));
    if (auto s = readFully(fd, offset, chunk.data(), n, path); !s.ok()) return s;
    if (!visit(offset, chunk.data(), n)) return absl::AbortedError("");
    for (uint64_t i = std::max<uint64_t>(offset, kTagOffset); i < std::min<uint64_t>(offset + n, kTagOffset + kTagLength); ++i)
      chunk[i - offset] = '0';
    mac.update(chunk.data(), n);
    offset += n;
  }
  return mac.hexDigest();
}

absl::Status keyFileError(const std::string& path, const std::string& problem) {
  return absl::PermissionDeniedError(absl::StrCat("the ampc key ", path, " ", problem));
}

absl::StatusOr<UserKey> readKeyAt(const std::string& path) {
  // O_NONBLOCK: a FIFO or device at the key's path is refused at once by the fstat below, never
  // waited on; O_NOFOLLOW: nor is a symlink followed to someone else's file.
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return absl::NotFoundError(absl::StrCat("the ampc key ", path, " does not exist"));
    if (errno == ELOOP) return keyFileError(path, "is a symbolic link; ampc reads its key only from a regular file");
    return keyFileError(path, absl::StrCat("cannot be opened: ", osError()));
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return keyFileError(path, "is not a regular file");
  }
  char text[66] = {};
  ssize_t n = read(fd, text, sizeof(text));
  close(fd);
  if (n < 0) return keyFileError(path, absl::StrCat("cannot be read: ", osError()));
  if (st.st_uid != geteuid()) return keyFileError(path, "belongs to another user");
  // As ssh does with private keys: a key others can read authenticates nothing.
  if (st.st_mode & 077) return keyFileError(path, "is accessible by other users; make it private with chmod 600");
  std::string hex(text, std::min<size_t>(static_cast<size_t>(n), 64));
  if (n != 65 || text[64] != '\n' || !isLowerHex(hex))
    return keyFileError(path, "does not hold a key (64 lowercase hex digits and a newline); delete it and let ampc "
                              "create a new one");
  return UserKey{path, fromHex(hex)};
}

absl::Status makeDirectories(const std::string& dir) {
  if (dir.empty()) return absl::OkStatus();
  struct stat st;
  if (stat(dir.c_str(), &st) == 0) return absl::OkStatus();
  const size_t slash = dir.find_last_of('/');
  if (slash != std::string::npos && slash > 0)
    if (auto s = makeDirectories(dir.substr(0, slash)); !s.ok()) return s;
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return absl::PermissionDeniedError(absl::StrCat("cannot create ", dir, " for the ampc key: ", osError()));
  return absl::OkStatus();
}

}  // namespace

std::string unsealedTag() { return std::string(kTagLength, '0'); }

absl::StatusOr<std::string> userKeyPath() {
  if (const char* file = std::getenv("AMP_KEY_FILE"); file && *file) return std::string(file);
  if (const char* config = std::getenv("XDG_CONFIG_HOME"); config && *config == '/')
    return absl::StrCat(config, "/ampc/key");
  if (const char* home = std::getenv("HOME"); home && *home == '/') return absl::StrCat(home, "/.config/ampc/key");
  return absl::FailedPreconditionError(
      "no place for the ampc key: neither AMP_KEY_FILE, XDG_CONFIG_HOME nor HOME is set");
}

absl::StatusOr<UserKey> readUserKey() {
  auto path = userKeyPath();
  if (!path.ok()) return path.status();
  return readKeyAt(*path);
}

absl::StatusOr<UserKey> readOrCreateUserKey() {
  auto path = userKeyPath();
  if (!path.ok()) return path.status();
  auto existing = readKeyAt(*path);
  if (!absl::IsNotFound(existing.status())) return existing;
  const size_t slash = path->find_last_of('/');
  if (slash != std::string::npos)
    if (auto s = makeDirectories(path->substr(0, slash)); !s.ok()) return s;
  uint8_t secret[32];
  if (getrandom(secret, sizeof(secret), 0) != static_cast<ssize_t>(sizeof(secret)))
    return absl::InternalError(absl::StrCat("cannot draw random bytes for the ampc key: ", osError()));
  const std::string text = toHex(secret, sizeof(secret)) + "\n";
  // Written whole under a temporary name, then linked into place: link() fails if another ampc got
  // there first, and a reader never sees a half-written key.
  const std::string tmp = absl::StrCat(*path, ".tmp.", getpid());
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return keyFileError(*path, absl::StrCat("cannot be created (", tmp, "): ", osError()));
  const bool written = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && fsync(fd) == 0;
  close(fd);
  const bool linked = written && link(tmp.c_str(), path->c_str()) == 0;
  const int linkErrno = errno;
  unlink(tmp.c_str());
  if (!written) return keyFileError(*path, "cannot be written");
  if (!linked && linkErrno != EEXIST)
    return keyFileError(*path, absl::StrCat("cannot be created: ", std::strerror(linkErrno)));
  return readKeyAt(*path);
}

absl::Status sealBundle(const std::string& path, const UserKey& key) {
  int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return absl::PermissionDeniedError(absl::StrCat(path, ": cannot open to authenticate: ", osError()));
  struct stat st;
  absl::Status status = fstat(fd, &st) == 0 && S_ISREG(st.st_mode)
                            ? absl::OkStatus()
                            : absl::FailedPreconditionError(absl::StrCat(path, ": not a regular file"));
  absl::StatusOr<std::string> tag = status.ok() ? storedTag(fd, st.st_size, path) : status;
  if (tag.ok() && *tag != unsealedTag()) tag = absl::FailedPreconditionError("it is already authenticated");
  if (tag.ok()) tag = macOfFile(fd, st.st_size, key, path, [](uint64_t, const char*, size_t) { return true; });
  if (tag.ok() && (pwrite(fd, tag->data(), kTagLength, kTagOffset) != static_cast<ssize_t>(kTagLength) || fsync(fd) != 0))
    tag = absl::DataLossError(absl::StrCat("cannot write the tag: ", osError()));
  close(fd);
  if (!tag.ok()) return absl::Status(tag.status().code(), absl::StrCat(path, ": ", tag.status().message()));
  return absl::OkStatus();
}

ProvenanceCheck checkProvenance(std::string_view bytes, const UserKey& key) {
  ProvenanceCheck check;
  const std::string prefix = kTagPrefix;
  if (bytes.size() < kTagOffset + kTagLength + 1) {
    check.reason = "it is too short to carry an authentication tag";
    return check;
  }
  if (bytes.compare(8, prefix.size(), prefix) != 0 || bytes[kTagOffset + kTagLength] != '"') {
    check.reason = "it carries no authentication tag (its header does not start with \"ampc.auth\")";
    return check;
  }
  const std::string tag(bytes.substr(kTagOffset, kTagLength));
  if (!isLowerHex(tag)) {
    check.reason = "its authentication tag is not 64 lowercase hex digits";
    return check;
  }
  if (tag == unsealedTag()) {
    check.reason = "it carries no authentication tag (ampc had no key when it wrote it, or another tool wrote it)";
    return check;
  }
  // The MAC of these bytes with the tag's own read as '0': the same bytes the plan was parsed from.
  HmacSha256 mac(key.secret.data(), key.secret.size());
  mac.update(bytes.data(), kTagOffset);
  mac.update(unsealedTag().data(), kTagLength);
  mac.update(bytes.data() + kTagOffset + kTagLength, bytes.size() - kTagOffset - kTagLength);
  if (!constantTimeEqual(mac.hexDigest(), tag)) {
    check.reason = absl::StrCat("its tag does not verify under the key ", key.path,
                                " (another user or machine compiled it, or it was changed since)");
    return check;
  }
  check.authenticated = true;
  return check;
}

absl::StatusOr<std::string> applyNativeCodePolicy(const std::string& path, std::string_view bytes, Plan& plan,
                                                  NativeCodePolicy policy) {
  if (plan.code.empty() || policy == NativeCodePolicy::Trust) return std::string();
  bool cuda = false;
  for (const CodeObject& c : plan.code) cuda |= c.format != "so";
  std::string reason = "--native-code=off was given";
  if (policy == NativeCodePolicy::Authenticated) {
    auto key = readUserKey();
    if (!key.ok()) {
      reason = absl::IsNotFound(key.status())
                   ? absl::StrCat("there is no ampc key to check its tag with (", key.status().message(),
                                  "; ampc creates it when it writes a bundle)")
                   : std::string(key.status().message());
    } else {
      ProvenanceCheck check = checkProvenance(bytes, *key);
      if (check.authenticated) return std::string();
      reason = check.reason;
    }
  }
  if (cuda)
    return absl::PermissionDeniedError(absl::StrCat(
        path, ": not running its CUDA code: ", reason,
        ". The cuda device has no interpreted path; if you trust where this bundle came from, pass "
        "--trust-native-code (or recompile it with your ampc)"));
  plan.code.clear();
  if (policy == NativeCodePolicy::Off) return std::string();  // the user asked: nothing to tell
  return absl::StrCat(path, ": its native kernels are not loaded, because ", reason,
                      "; its fused regions run interpreted (slower, same results). Pass --trust-native-code if you "
                      "trust where it came from, or --native-code=off to silence this");
}

absl::StatusOr<std::string> applyNativeCodePolicy(const std::string& path, Plan& plan, NativeCodePolicy policy) {
  if (policy != NativeCodePolicy::Authenticated || plan.code.empty())
    return applyNativeCodePolicy(path, std::string_view(), plan, policy);
  std::string bytes;
  auto reread = readBundle(path, &bytes);
  if (!reread.ok()) {
    // Nothing authenticated to run: the caller's plan keeps no code (CUDA code has no fallback).
    const bool cuda = std::any_of(plan.code.begin(), plan.code.end(), [](const CodeObject& c) { return c.format != "so"; });
    if (cuda)
      return absl::PermissionDeniedError(absl::StrCat(path, ": not running its CUDA code: it cannot be read again to "
                                                      "check its tag: ", reread.status().message()));
    plan.code.clear();
    return absl::StrCat(path, ": its native kernels are not loaded, because it cannot be read again to check its tag (",
                        reread.status().message(), "); its fused regions run interpreted (slower, same results)");
  }
  auto notice = applyNativeCodePolicy(path, bytes, *reread, policy);
  if (!notice.ok()) return notice;
  plan = std::move(*reread);
  return notice;
}

}  // namespace amp::rt
