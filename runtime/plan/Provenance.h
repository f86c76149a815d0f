// Provenance of bundles (docs/plan-format.md, "Authentication"; docs/kernels.md, "Threat model").
// ampc authenticates every bundle it writes with an HMAC-SHA256 tag under a per-user key, and
// amp-run loads a bundle's native code only when that tag verifies (or the user says
// --trust-native-code). The tag is the first metadata value of the bundle's safetensors header,
// so it sits at a fixed place: bytes [kTagOffset, kTagOffset + 64) of the file hold it as lowercase
// hex, and it covers every byte of the file with those 64 bytes read as ASCII '0'.
#ifndef AMP_RUNTIME_PLAN_PROVENANCE_H
#define AMP_RUNTIME_PLAN_PROVENANCE_H

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/plan/Plan.h"

namespace amp::rt {

// The metadata key of the tag, and what an unsealed bundle holds there (64 '0's: no HMAC output
// is all zeros in practice, and amp-run reads it as "not authenticated").
inline constexpr const char* kAuthMetadataKey = "ampc.auth";
std::string unsealedTag();
// The header starts {"__metadata__":{"ampc.auth":"  after the 8-byte header length.
inline constexpr const char* kTagPrefix = "{\"__metadata__\":{\"ampc.auth\":\"";
inline constexpr size_t kTagOffset = 8 + 30;
inline constexpr size_t kTagLength = 64;

// The user's key: AMP_KEY_FILE, else $XDG_CONFIG_HOME/ampc/key, else $HOME/.config/ampc/key. The
// file holds 32 random bytes as 64 hex digits and a newline, mode 0600, owned by the user.
struct UserKey {
  std::string path;
  std::string secret;  // the 32 raw bytes
};
absl::StatusOr<std::string> userKeyPath();
// NotFound when the file does not exist; an error naming the file when it is not a regular file
// owned by this user, is readable or writable by others, or does not hold a key.
absl::StatusOr<UserKey> readUserKey();
// Creates the key on first use (directories 0700, the file 0600, atomically: two ampc processes
// racing end up with the same key).
absl::StatusOr<UserKey> readOrCreateUserKey();

// Writes the tag of the bundle at `path` (written by writeBundle, whose header starts with the
// unsealed tag) in place.
absl::Status sealBundle(const std::string& path, const UserKey& key);

// Whether `bytes`, the whole of a bundle read once (readBundle(path, &bytes)), are what `key`
// authenticated: the tag at its fixed place verifies over these same bytes, from which the plan
// was parsed, so nothing done to the file at `path` (which only names it in messages) between
// the parse and the check can change what runs. `reason` says why not, for the user.
struct ProvenanceCheck {
  bool authenticated = false;
  std::string reason;
};
ProvenanceCheck checkProvenance(std::string_view bytes, const UserKey& key);

// amp-run's rule for native code (--trust-native-code, --native-code=off).
enum class NativeCodePolicy { Authenticated, Trust, Off };
// Applies `policy` to `plan`, parsed from `bytes`, the bundle at `path` read once: when its code
// may not be loaded, the code objects are dropped (the cpu device then interprets the fused
// regions) and the returned notice (one line; empty when nothing was dropped or the user asked
// for it) says why and names the flags. A plan whose code is CUDA code (the cuda device has no
// interpreted path) gets an error instead of a notice.
absl::StatusOr<std::string> applyNativeCodePolicy(const std::string& path, std::string_view bytes, Plan& plan,
                                                  NativeCodePolicy policy);
// For a caller that parsed `plan` from `path` itself (readBundle(path)): under the Authenticated
// policy the bundle is read once more, and the plan parsed from those bytes replaces `plan`
// before the policy above is applied to it, so the plan that keeps its code is always the one
// the tag covers, even if the file changed after the caller's read. Trust and Off act on `plan`
// as given. Prefer readBundle(path, &bytes) and the overload above: one read instead of two.
absl::StatusOr<std::string> applyNativeCodePolicy(const std::string& path, Plan& plan, NativeCodePolicy policy);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_PLAN_PROVENANCE_H
