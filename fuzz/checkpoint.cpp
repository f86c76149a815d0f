// loadCheckpoint into a session of a small fixed training plan (fuzz/models/tiny.mlir, compiled
// by ampc at build time; AMP_FUZZ_CHECKPOINT_BUNDLE overrides the path), on arbitrary bytes.
//
// A checkpoint carries a sha256 of its tensors, which no byte-level mutation keeps valid; so each
// input is tried twice: as given (the hash check and everything before it), and, when it is a
// well-formed safetensors file, re-encoded with its hash recomputed, which reaches the metadata
// checks and Session::restore. A checkpoint that loads is then resumed for one training step on
// the reference device: restored state (any step, seed, loss scale, tracker or moments) must
// not crash training either.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "fuzz/FuzzCommon.h"
#include "runtime/io/Safetensors.h"
#include "runtime/plan/Bundle.h"
#include "runtime/train/Trainer.h"
#include "runtime/devices/Devices.h"

#ifndef AMP_FUZZ_DEFAULT_BUNDLE
#define AMP_FUZZ_DEFAULT_BUNDLE ""
#endif

namespace {

using namespace amp::rt;

struct Fixture {
  Plan plan;
  Dataset data;
  std::string dir, file;
};

Fixture* fixture = nullptr;

void removeDir() {
  if (fixture) {
    std::error_code ec;
    std::filesystem::remove_all(fixture->dir, ec);
  }
}

void writeFile(const std::string& path, const void* data, size_t size) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || (size && std::fwrite(data, 1, size, f) != size) || std::fclose(f) != 0) {
    std::perror(path.c_str());
    std::abort();
  }
}

// Loads the checkpoint now in fixture->file into a fresh session; on success, one more step.
void tryLoad() {
  auto session = openSession(fixture->plan, Device::Reference, amp::fuzz::kSessionMemoryLimit);
  if (!session.ok()) std::abort();  // the fixed plan is valid
  // Any author (--trust-checkpoint): the fuzzer's inputs carry no valid tag, and what it tests is
  // the reading and validation of what a trusted file may still hold.
  const CheckpointAuth trustAny{std::nullopt, true};
  auto info = loadCheckpoint(*session, fixture->dir, trustAny);
  if (!info.ok()) return;
  TrainOptions options;
  options.steps = 1;
  options.resume = true;
  options.checkpointDir = fixture->dir;
  options.checkpointAuth = trustAny;
  (void)train(*session, fixture->data, nullptr, options, {});
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* env = std::getenv("AMP_FUZZ_CHECKPOINT_BUNDLE");
  std::string bundle = env && *env ? env : AMP_FUZZ_DEFAULT_BUNDLE;
  auto plan = readBundle(bundle);
  if (!plan.ok()) {
    std::fprintf(stderr, "checkpoint fuzzer: cannot read its bundle '%s': %s\n", bundle.c_str(),
                 std::string(plan.status().message()).c_str());
    std::exit(1);
  }
  fixture = new Fixture;
  fixture->plan = std::move(*plan);
  // Eight examples of the model's input and label (two batches of four).
  const BufferDesc* input = nullptr;
  const BufferDesc* label = nullptr;
  for (const BufferDesc& b : fixture->plan.buffers) {
    if (b.kind == BufferKind::Input) input = &b;
    if (b.kind == BufferKind::Label) label = &b;
  }
  if (!input || !label || input->dtype != DType::F32 || label->dtype != DType::I64 || input->shape.size() != 2) {
    std::fprintf(stderr, "checkpoint fuzzer: the bundle must take an f32 [B, F] input and i64 [B] labels\n");
    std::exit(1);
  }
  const int64_t n = 2 * input->shape[0], features = input->shape[1];
  fixture->data.name = "fuzz";
  fixture->data.inputs = Tensor(DType::F32, {n, features});
  fixture->data.labels = Tensor(DType::I64, {n});
  for (int64_t i = 0; i < n * features; ++i) fixture->data.inputs.as<float>()[i] = static_cast<float>(i % 7) / 7.0f;
  for (int64_t i = 0; i < n; ++i) fixture->data.labels.as<int64_t>()[i] = i % 4;
  fixture->dir = "/dev/shm/amp-fuzz-checkpoint-" + std::to_string(getpid());
  std::filesystem::create_directories(fixture->dir);
  fixture->file = fixture->dir + "/checkpoint.safetensors";
  std::atexit(removeDir);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  writeFile(fixture->file, data, size);
  tryLoad();
  // Again with the hash made valid: past the integrity check into the metadata and restore.
  static amp::fuzz::MemFile memfile;
  auto contents = readSafetensors(memfile.set(data, size));
  if (!contents.ok()) return 0;
  std::vector<NamedTensorRef> refs;
  for (const NamedTensor& t : contents->tensors) refs.push_back({t.name, &t.tensor});
  StringMap meta;
  bool hashed = false;
  for (auto [k, v] : contents->metadata) {
    if (k == "sha256") v = checkpointHash(refs), hashed = true;
    meta.emplace_back(std::move(k), std::move(v));
  }
  if (!hashed) meta.emplace_back("sha256", checkpointHash(refs));
  auto bytes = encodeSafetensors(refs, meta);
  if (!bytes.ok()) return 0;
  writeFile(fixture->file, bytes->data(), bytes->size());
  tryLoad();
  return 0;
}
