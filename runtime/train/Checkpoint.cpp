#include "runtime/train/Checkpoint.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "runtime/io/Hmac.h"
#include "runtime/io/Sha256.h"
#include "runtime/plan/StateValidation.h"
#include "runtime/train/RankAgreement.h"
#include "runtime/train/ShardedState.h"

namespace amp::rt {

std::string checkpointPath(const std::string& dir) { return dir + "/checkpoint.safetensors"; }

std::string checkpointHash(const std::vector<NamedTensorRef>& tensors) {
  std::vector<const NamedTensorRef*> sorted;
  for (const NamedTensorRef& t : tensors) sorted.push_back(&t);
  std::sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) { return a->name < b->name; });
  Sha256 hash;
  for (const NamedTensorRef* t : sorted) {
    std::string head = absl::StrCat(t->name, "|", std::string(dtypeName(t->tensor->dtype())), "|",
                                    shapeToString(t->tensor->shape()), "|");
    hash.update(head.data(), head.size());
    hash.update(t->tensor->data(), static_cast<size_t>(t->tensor->numel()) * dtypeSize(t->tensor->dtype()));
  }
  return hash.hexDigest();
}

std::string checkpointTag(const StringMap& metadata, const UserKey& key) {
  std::vector<std::pair<std::string, std::string>> fields;
  for (const auto& [k, v] : metadata)
    if (k != kAuthMetadataKey) fields.emplace_back(k, v);
  std::sort(fields.begin(), fields.end());
  // Length-prefixed, so no two metadata maps read alike.
  HmacSha256 mac(key.secret.data(), key.secret.size());
  const std::string head = "ampc checkpoint v1;";
  mac.update(head.data(), head.size());
  for (const auto& [k, v] : fields) {
    const std::string item = absl::StrCat(k.size(), ":", k, ";", v.size(), ":", v, ";");
    mac.update(item.data(), item.size());
  }
  return mac.hexDigest();
}

absl::Status saveCheckpoint(const Session& session, const std::string& dir, const CheckpointInfo& info,
                            const CheckpointAuth& auth) {
  auto whole = wholeState(session, nullptr);
  if (!whole.ok()) return whole.status();
  return saveCheckpoint(session.plan(), whole->tensors, dir, info, auth);
}

absl::Status saveCheckpoint(const Plan& plan, const std::vector<NamedTensorRef>& tensors, const std::string& dir,
                            const CheckpointInfo& info, const CheckpointAuth& auth) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::InvalidArgumentError(absl::StrCat(dir, ": cannot create checkpoint directory: ", ec.message()));
  // A writer killed mid-write (SIGKILL, power loss) leaves its temporary file; the checkpoint it
  // was replacing is intact. One trainer owns the directory, so earlier temporaries are stale.
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
    if (entry.path().filename().string().rfind("checkpoint.safetensors.tmp.", 0) == 0)
      std::filesystem::remove(entry.path(), ec);
  StringMap meta = {{"ampc.checkpoint", "1"},
                    {"sha256", checkpointHash(tensors)},
                    {"step", std::to_string(info.step)},
                    {"seed", std::to_string(info.seed)},
                    {"shuffle", info.shuffle ? "true" : "false"},
                    {"world_size", std::to_string(info.worldSize)},
                    {"model", plan.metadataValue("model")}};
  meta.emplace_back(kAuthMetadataKey, auth.key ? checkpointTag(meta, *auth.key) : unsealedTag());
  absl::Status s = writeSafetensors(checkpointPath(dir), tensors, meta);
  if (s.ok()) return s;
  // The writer replaces the file atomically, so a failed save (full disk, file-size limit)
  // leaves the previous checkpoint as it was: say so, it is what the user needs to know.
  return absl::Status(s.code(), absl::StrCat(s.message(), " (saving the checkpoint of step ", info.step,
                                             "; the previous checkpoint, if any, is unchanged)"));
}

namespace {

// A decimal integer of at most `max`, digits only: no sign, space or "0x" (SimpleAtoi would take
// " 5" and "+5"; a seed of "-1" must not wrap around to 2^64 - 1).
bool parseDecimal(const std::string& s, uint64_t max, uint64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    if (__builtin_mul_overflow(v, uint64_t{10}, &v) || __builtin_add_overflow(v, uint64_t(c - '0'), &v)) return false;
  }
  if (v > max) return false;
  *out = v;
  return true;
}

// The metadata fields, each parsed strictly; an error names the field and its value.
absl::StatusOr<CheckpointInfo> readCheckpointInfo(const StringMap& metadata, const std::string& path,
                                                  const std::string& model) {
  CheckpointInfo info;
  bool tagged = false, haveStep = false, haveSeed = false, haveShuffle = false;
  auto bad = [&](const std::string& key, const std::string& value, const std::string& rule) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": metadata '", key, "' is '", value, "'; ", rule));
  };
  for (const auto& [k, v] : metadata) {
    uint64_t n = 0;
    if (k == "ampc.checkpoint") tagged = true;
    if (k == "step") {
      if (!parseDecimal(v, uint64_t(kMaxCheckpointStep), &n))
        return !v.empty() && v.find_first_not_of("0123456789") == std::string::npos
                   ? absl::InvalidArgumentError(absl::StrCat(path, ": step ", v, " is out of range [0, 2^62]"))
                   : bad(k, v, "the step is a decimal in [0, 2^62]");
      info.step = int64_t(n);
      haveStep = true;
    }
    if (k == "seed") {
      if (!parseDecimal(v, UINT64_MAX, &info.seed)) return bad(k, v, "the seed is an unsigned 64-bit decimal");
      haveSeed = true;
    }
    if (k == "shuffle") {
      if (v != "true" && v != "false") return bad(k, v, "shuffle is 'true' or 'false'");
      info.shuffle = v == "true";
      haveShuffle = true;
    }
    if (k == "world_size") {
      if (!parseDecimal(v, INT32_MAX, &n) || n < 1) return bad(k, v, "world_size is a positive integer");
      info.worldSize = int64_t(n);
    }
    if (k == "model" && v != model)
      return absl::InvalidArgumentError(absl::StrCat(path, ": checkpoint of model '", v, "', not '", model, "'"));
  }
  if (!tagged || !haveStep)
    return absl::InvalidArgumentError(absl::StrCat(path, ": not an ampc checkpoint (missing step metadata)"));
  // Every checkpoint ampc writes records the data order; without it a resumed run would silently
  // continue with another one.
  if (!haveSeed || !haveShuffle)
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": the checkpoint lacks its '", haveSeed ? "shuffle" : "seed", "' metadata (the data order)"));
  return info;
}

// Whether the checkpoint's tag verifies under the user's key; the error says why not and names the
// flag that accepts it anyway.
absl::Status checkAuthenticity(const StringMap& metadata, const std::string& path, const CheckpointAuth& auth) {
  if (auth.trustAny) return absl::OkStatus();
  std::string tag;
  for (const auto& [k, v] : metadata)
    if (k == kAuthMetadataKey) tag = v;
  std::string reason;
  if (tag.empty() || tag == unsealedTag())
    reason = "it carries no authentication tag (written without an ampc key, or by another tool)";
  else if (!auth.key)
    reason = "there is no ampc key to check its tag with";
  else if (!constantTimeEqual(checkpointTag(metadata, *auth.key), tag))
    reason = absl::StrCat("its tag does not verify under the key ", auth.key->path,
                          " (another user or machine wrote it, or it was changed since)");
  else
    return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat(
      path, ": not resuming from it: ", reason,
      ". Pass --trust-checkpoint if you trust where it came from (its values are still checked)"));
}

}  // namespace

absl::StatusOr<CheckpointInfo> loadCheckpoint(Session& session, const std::string& dir, const CheckpointAuth& auth,
                                              int rank) {
  std::string path = checkpointPath(dir);
  auto contents = readSafetensors(path);
  if (!contents.ok()) return contents.status();
  if (auto s = checkAuthenticity(contents->metadata, path, auth); !s.ok()) return s;
  auto info = readCheckpointInfo(contents->metadata, path, session.plan().metadataValue("model"));
  if (!info.ok()) return info.status();
  std::string recordedHash;
  for (const auto& [k, v] : contents->metadata)
    if (k == "sha256") recordedHash = v;
  if (recordedHash.empty())
    return absl::DataLossError(absl::StrCat(path, ": the checkpoint carries no sha256 of its contents, so its "
                                                  "integrity cannot be checked"));
  std::vector<NamedTensorRef> tensors;
  for (const NamedTensor& t : contents->tensors) tensors.push_back({t.name, &t.tensor});
  if (std::string actual = checkpointHash(tensors); actual != recordedHash)
    return absl::DataLossError(absl::StrCat(path, ": the contents do not match the checkpoint's sha256 (recorded ",
                                            recordedHash.substr(0, 16), "..., computed ", actual.substr(0, 16),
                                            "...): the file is corrupted"));
  if (auto s = takeRankChunks(session.plan(), rank, contents->tensors); !s.ok())
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", s.message()));
  // The hash matches whatever was written; the values must also be ones a run can reach (the
  // same checks as --params), before anything in the session changes.
  if (auto s = validatePersistentValues(session.plan(), contents->tensors); !s.ok())
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", s.message()));
  if (auto s = validateRecordedStep(session.plan(), contents->tensors, info->step); !s.ok())
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", s.message()));
  if (auto s = session.restore(contents->tensors); !s.ok())
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", s.message()));
  return info;
}

absl::Status createCheckpointDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir))
    return absl::InvalidArgumentError(
        absl::StrCat(dir, ": cannot create checkpoint directory: ", ec ? ec.message() : "not a directory"));
  return absl::OkStatus();
}

absl::Status saveJobCheckpoint(const Session& session, Communicator* comm, const std::string& dir,
                               const CheckpointInfo& info, const CheckpointAuth& auth) {
  auto whole = wholeState(session, comm);
  if (!whole.ok()) return whole.status();
  if (comm && comm->worldSize() > 1)
    if (auto s = checkReplicasAgree(checkpointHash(whole->tensors), *comm, info.step); !s.ok()) return s;
  if (comm && comm->rank() != 0) return absl::OkStatus();
  return saveCheckpoint(session.plan(), whole->tensors, dir, info, auth);
}

absl::StatusOr<CheckpointInfo> loadJobCheckpoint(Session& session, const std::string& dir, const CheckpointAuth& auth,
                                                 int rank, int worldSize) {
  auto info = loadCheckpoint(session, dir, auth, rank);
  if (!info.ok()) return info.status();
  if (info->worldSize != worldSize)
    return absl::InvalidArgumentError(absl::StrCat(
        dir, ": the checkpoint was written by a job of ", info->worldSize, " rank(s), this job has ", worldSize,
        "; resume with the same number of ranks (mpirun -np ", info->worldSize,
        "): each rank's share of the data order depends on it"));
  return info;
}

}  // namespace amp::rt
