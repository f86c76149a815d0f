// amp-run: runs an entry point of a compiled model (bundle, or .mlir compiled on the fly by
// the ampc next to this binary) on a device. No LLVM/MLIR: this tool links only the runtime.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "runtime/io/AtomicFile.h"
#include "runtime/io/Idx.h"
#include "runtime/io/Json.h"
#include "runtime/io/Npy.h"
#include "runtime/io/Npz.h"
#include "runtime/io/Safetensors.h"
#include "runtime/numerics/Convert.h"
#include "runtime/dist/Communicator.h"
#include "runtime/plan/Bundle.h"
#include "runtime/plan/Provenance.h"
#include "runtime/exec/Session.h"
#include "runtime/train/CurvePlot.h"
#include "runtime/train/MetricsLog.h"
#include "runtime/train/RunSummary.h"
#include "runtime/train/Trainer.h"
#include "runtime/devices/Devices.h"
#include "tools/amp-run/DryRun.h"
#include "tools/amp-run/ProfileReport.h"
#include "tools/amp-run/Options.h"

namespace fs = std::filesystem;
using namespace amp::rt;

namespace {

// The cuda device with amp-run's device options (--conv, --debug-sync).
absl::StatusOr<Session> makeCudaSession(Plan plan, const cuda::CudaOptions& options, int64_t memoryLimit) {
  auto executor = makeCudaExecutor(options);
  if (!executor.ok()) return executor.status();
  return Session::create(std::move(plan), std::move(*executor), memoryLimit);
}

// Seeded random initialisation runs at tens of millions of values per second: a param of 2^29
// values takes most of a minute before the first step. Above this many such values the wait is
// announced (and timed), so a large model is not mistaken for a hung one.
constexpr int64_t kAnnouncedInitValues = int64_t{1} << 26;

int64_t randomInitValues(const Plan& plan) {
  int64_t n = 0;
  for (const BufferDesc& b : plan.buffers)
    if (b.init && b.init->kind != "zeros" && b.init->kind != "ones" && b.init->kind != "constant" &&
        b.init->kind != "cast" && b.init->kind != "stored")
      n += b.numel();  // each < 2^36 bytes (validated), so the sum cannot overflow
  return n;
}

bool endsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Compiles a .mlir with the ampc that sits next to this binary, into a temporary bundle.
absl::StatusOr<Plan> compileOnTheFly(const std::string& model) {
  fs::path self = fs::read_symlink("/proc/self/exe");
  fs::path ampc = self.parent_path() / "ampc";
  if (!fs::exists(ampc))
    return absl::FailedPreconditionError(absl::StrCat(
        model, ": amp-run compiles .mlir models with ampc, but there is no ampc next to ", self.string(),
        "; compile it first (ampc ", model, " -o MODEL.ampx)"));
  char tmpl[] = "/tmp/amp-run-XXXXXX";
  int fd = mkstemp(tmpl);
  if (fd < 0) return absl::InternalError("cannot create a temporary file for the bundle");
  close(fd);
  std::string bundle = std::string(tmpl) + ".ampx";
  std::rename(tmpl, bundle.c_str());
  pid_t pid = fork();
  if (pid == 0) {
    execl(ampc.c_str(), "ampc", model.c_str(), "-o", bundle.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::remove(bundle.c_str());
    return absl::InvalidArgumentError(absl::StrCat(model, ": compilation with ampc failed (see above)"));
  }
  auto plan = readBundle(bundle);
  std::remove(bundle.c_str());
  return plan;
}

// Reads FILE (npy / npz / safetensors); for containers, the member NAME or the only member.
absl::StatusOr<Tensor> readTensorFile(const std::string& name, const std::string& file) {
  if (endsWith(file, ".npy")) return readNpy(file);
  std::vector<NamedTensor> members;
  if (endsWith(file, ".npz")) {
    auto r = readNpz(file);
    if (!r.ok()) return r.status();
    members = std::move(*r);
  } else if (endsWith(file, ".safetensors")) {
    auto r = readSafetensors(file);
    if (!r.ok()) return r.status();
    members = std::move(r->tensors);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(file, ": unknown tensor file type (expected .npy, .npz or .safetensors)"));
  }
  for (NamedTensor& m : members)
    if (m.name == name) return std::move(m.tensor);
  if (members.size() == 1) return std::move(members[0].tensor);
  return absl::NotFoundError(absl::StrCat(file, ": has no tensor named '", name, "'"));
}

// Feeds buffer `name` with the first examples of `source` ([N, ...]): as many as the buffer holds.
// A tensor that is not a named input/label, or already has the buffer's shape, is fed as it is.
absl::Status feedFirstExamples(const Plan& plan, const std::string& name, Tensor source,
                               const std::string& what, std::map<std::string, Tensor>& feeds) {
  auto id = plan.findBuffer(name);
  if (id && source.rank() > 0 && source.shape() != plan.buffers[*id].shape) {
    const BufferDesc& b = plan.buffers[*id];
    int64_t rowElems = source.numel() / std::max<int64_t>(1, source.shape()[0]);
    int64_t rows = rowElems ? numElements(b.shape) / rowElems : 0;
    if (rows > 0 && rows <= source.shape()[0]) {
      std::vector<int64_t> first(static_cast<size_t>(rows));
      for (int64_t i = 0; i < rows; ++i) first[i] = i;
      auto batch = gatherBatch(source, first, b.dtype, b.shape, what + ": " + name);
      if (!batch.ok()) return batch.status();
      source = std::move(*batch);
    }
  }
  feeds[name] = std::move(source);
  return absl::OkStatus();
}

// "fashion-mnist" or "fashion-mnist:DIR" -> the dataset directory; nullopt for other data.
std::optional<std::string> fashionMnistDir(const std::string& data) {
  if (data == "fashion-mnist") return std::string(kFashionMnistDir);
  if (data.rfind("fashion-mnist:", 0) == 0) return data.substr(14);
  return std::nullopt;
}

// The data-parallel job this process is a rank of (one rank without mpirun).
std::unique_ptr<Communicator> job;
bool multiRank() { return job && job->worldSize() > 1; }
bool rankZero() { return !job || job->rank() == 0; }

// An error on one rank of a job ends every rank: the others would otherwise wait for a collective
// this one never joins (until their timeout).
int fail(const absl::Status& status) {
  if (multiRank()) {
    std::cerr << "amp-run: rank " << job->rank() << " of " << job->worldSize() << ": " << status.message() << "\n";
    std::cerr.flush();
    job->abortJob(1);
  }
  std::cerr << "amp-run: " << status.message() << "\n";
  return 1;
}

// The key --checkpoint tags checkpoints with (created on first use, as ampc does for bundles) and
// which checkpoints --resume accepts. Without a usable key the run goes on: its checkpoints are
// written untagged, and the notice says what resuming from them will need.
CheckpointAuth checkpointAuth(const RunCommandLine& cl) {
  CheckpointAuth auth;
  auth.trustAny = cl.trustCheckpoint;
  if (cl.checkpoint.empty()) return auth;
  auto key = readOrCreateUserKey();
  if (key.ok()) {
    auth.key = std::move(*key);
  } else if (rankZero()) {
    std::cerr << "amp-run: checkpoints are written without an authentication tag (" << key.status().message()
              << "); resuming from them will need --trust-checkpoint\n";
  }
  return auth;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// SIGINT/SIGTERM during training: finish the current step, checkpoint, exit. A second signal
// kills as usual (SA_RESETHAND). SA_RESTART: the handler only sets a flag the loop polls between
// steps, so nothing needs a blocking call to fail with EINTR, and the libraries blocked in one
// (OpenMP barriers, oneDNN, Open MPI) need not all retry it correctly.
std::atomic<bool> stopRequested{false};
std::atomic<int> stopSignal{0};
static_assert(std::atomic<bool>::is_always_lock_free && std::atomic<int>::is_always_lock_free,
              "set from a signal handler");

void requestStop(int sig) {
  stopSignal.store(sig);
  stopRequested.store(true);
}

void installStopHandlers() {
  struct sigaction action = {};
  action.sa_handler = requestStop;
  action.sa_flags = SA_RESETHAND | SA_RESTART;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

// The bundle's recipe; the bundle reader validated it, and a model compiled on the fly has
// ampc's own, so a decoding error leaves the defaults.
TrainingConfig configOf(const Plan& plan) { return plan.trainingConfig().value_or(TrainingConfig()); }

void printProgress(const TrainProgress& p) {
  constexpr int kWidth = 24;
  int filled = p.totalSteps > 0 ? static_cast<int>(kWidth * p.step / p.totalSteps) : kWidth;
  std::string bar = "[" + std::string(filled, '=') + std::string(kWidth - filled, ' ') + "] ";
  char scale[32];
  std::snprintf(scale, sizeof scale, "%g", p.scale);
  std::string line = absl::StrCat(bar, "step ", p.step, "/", p.totalSteps, " | epoch ", p.epoch + 1, " | loss ",
                                  fixed(p.loss, 4), " | scale ", scale, " | skipped ", p.skippedSteps, " | ",
                                  fixed(p.samplesPerSecond, 0), " samples/s");
  if (p.evalAccuracy) absl::StrAppend(&line, " | test acc ", fixed(*p.evalAccuracy * 100, 2), "%");
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

// What a finished run prints before its summary: why it stopped early, the host
// synchronisations of a device with a stream, the profile, and where gradients overflowed.
void printRunNotes(const TrainReport& report, const RunCommandLine& cl) {
  if (report.interrupted)
    std::printf("%s: stopped after step %lld%s\n",
                stopSignal.load() ? absl::StrCat("interrupted by signal ", stopSignal.load()).c_str()
                                  : "interrupted: another rank of the job was signalled",
                static_cast<long long>(report.steps),
                cl.checkpoint.empty() ? " (no --checkpoint, so nothing was saved)"
                                      : absl::StrCat(", checkpoint saved in ", cl.checkpoint).c_str());
  if (report.hostSyncsPerStep)
    std::printf("host synchronisations per steady-state step: %.2f (steps that neither evaluate nor checkpoint)\n",
                *report.hostSyncsPerStep);
  if (report.profile) printProfile("train_step", *report.profile, true);
  if (cl.checkNumerics && report.firstGradientOverflowStep) {
    const GradientOverflow& g = report.firstGradientOverflow;
    std::printf("check-numerics: the gradients overflowed in %lld of %zu steps (first at step %lld: %s at %s, "
                "%s). Loss scaling handles this: those steps were skipped and the scale backed off; the "
                "forward pass stayed finite.\n",
                static_cast<long long>(report.gradientOverflowSteps), report.losses.size(),
                static_cast<long long>(*report.firstGradientOverflowStep), g.op.c_str(), g.loc.c_str(),
                g.dtype.c_str());
  }
}

// --export: the model's params and buffers under their state_dict names, with each batch norm's
// num_batches_tracked (PyTorch counts training forward passes: `forwardPasses`), and nothing of
// the optimizer or the scaler (Session::modelValues).
absl::Status exportStateDict(const Session& session, int64_t forwardPasses, const std::string& path) {
  if (auto s = session.syncPersistent(); !s.ok()) return s;
  std::vector<NamedTensorRef> refs;
  std::vector<std::unique_ptr<Tensor>> counters;
  for (const NamedTensorRef& r : session.modelValues()) {
    refs.push_back(r);
    constexpr std::string_view kMean = ".running_mean";
    if (r.name.size() > kMean.size() && r.name.compare(r.name.size() - kMean.size(), kMean.size(), kMean) == 0) {
      counters.push_back(std::make_unique<Tensor>(DType::I64, Shape{}));
      counters.back()->as<int64_t>()[0] = forwardPasses;
      refs.push_back({r.name.substr(0, r.name.size() - kMean.size()) + ".num_batches_tracked", counters.back().get()});
    }
  }
  return writeSafetensors(path, refs);
}

int runTraining(Session& session, const RunCommandLine& cl, Device device) {
  const Plan& plan = session.plan();
  const TrainingConfig config = configOf(plan);
  std::string inputName, labelName;
  int64_t batch = 0;
  for (const BufferDesc& b : plan.buffers) {
    if (b.kind == BufferKind::Input) inputName = b.name, batch = b.shape.empty() ? 0 : b.shape[0];
    if (b.kind == BufferKind::Label) labelName = b.name;
  }
  if (cl.batch > 0 && cl.batch != batch)
    return fail(absl::InvalidArgumentError(absl::StrCat(
        "--batch=", cl.batch, " but the model was compiled for batch ", batch,
        " (batch size is part of the static shapes: edit the model and recompile)")));
  absl::StatusOr<Dataset> trainData, evalData;
  bool haveEval = false;
  // FILE.npz is read whole; a folder of .npy files is streamed (runtime/train/Dataset.h).
  auto load = [&](const std::string& path) -> absl::StatusOr<Dataset> {
    std::error_code ec;
    if (fs::is_directory(path, ec)) return openNpyFolderDataset(path, inputName, labelName);
    return loadNpzDataset(path, inputName, labelName, cl.memoryLimit);
  };
  if (auto dir = fashionMnistDir(cl.data)) {
    trainData = loadFashionMnistDataset(*dir, "train");
    if (cl.evalData.empty()) evalData = loadFashionMnistDataset(*dir, "test");
    haveEval = true;
  } else {
    trainData = load(cl.data);
  }
  if (!trainData.ok()) return fail(trainData.status());
  if (!cl.evalData.empty()) evalData = load(cl.evalData), haveEval = true;
  if (haveEval && !evalData.ok()) return fail(evalData.status());

  TrainOptions options;
  options.epochs = cl.epochs;
  options.steps = cl.steps;
  options.seed = cl.seed;
  options.shuffle = cl.shuffle;
  options.logEvery = cl.logEvery;
  options.profileCalls = cl.profile ? 10 : 0;
  options.evalEvery = cl.evalEvery;
  options.checkpointDir = cl.checkpoint;
  options.checkpointEvery = cl.checkpointEvery;
  options.checkpointAuth = checkpointAuth(cl);
  options.resume = cl.resume;
  options.checkNumerics = cl.checkNumerics;
  options.communicator = job.get();
  const std::string precision(precisionKeyword(config.precision));
  const std::string optimizer(config.optimizer ? optimizerKindKeyword(*config.optimizer) : "");
  const int world = job ? job->worldSize() : 1;
  const int64_t accumulate = config.accumulate;
  if (rankZero()) {
    std::printf("device %s\n", session.executor().description().c_str());
    if (multiRank())
      std::printf("data-parallel: %d ranks (%s), global batch %lld = %d x batch %lld x accumulate %lld\n", world,
                  job->description().c_str(), static_cast<long long>(world * batch * accumulate), world,
                  static_cast<long long>(batch), static_cast<long long>(accumulate));
    std::printf("training %s (%s, %s) on %s: batch %lld, %lld train / %lld test examples\n",
                config.model.c_str(), precision.c_str(),
                optimizer.c_str(), std::string(deviceName(device)).c_str(),
                static_cast<long long>(batch), static_cast<long long>(trainData->size()),
                static_cast<long long>(haveEval ? evalData->size() : 0));
  }
  TrainCallbacks callbacks;
  if (rankZero()) callbacks.onProgress = printProgress;
  std::optional<MetricsLog> metrics;
  if (!cl.metrics.empty() && rankZero()) {
    auto log = MetricsLog::open(cl.metrics, cl.resume);
    if (!log.ok()) return fail(log.status());
    metrics = std::move(*log);
    callbacks.onStep = [&](const StepRecord& r) { return metrics->write(r); };
    callbacks.onEval = [&](const EvalRecord& r) { return metrics->write(r); };
  }
  options.stopRequested = &stopRequested;
  installStopHandlers();
  auto report = train(session, *trainData, haveEval ? &*evalData : nullptr, options, callbacks);
  if (!report.ok()) return fail(report.status());
  if (!rankZero()) return report->interrupted ? 128 + stopSignal.load() : 0;
  printRunNotes(*report, cl);
  if (!cl.exportWeights.empty()) {
    if (auto s = exportStateDict(session, report->steps * accumulate, cl.exportWeights); !s.ok()) return fail(s);
    std::printf("weights saved to %s (state_dict names)\n", cl.exportWeights.c_str());
  }
  const JsonValue summary =
      runSummary(*report, config, {std::string(deviceName(device)), batch, cl.shuffle, cl.checkNumerics});
  std::string text = writeJson(summary, 2) + "\n";
  std::printf("summary: %s", text.c_str());
  if (!cl.summary.empty()) {
    if (auto s = writeFileAtomically(cl.summary, text); !s.ok()) return fail(s);
    // The curve goes next to a summary file; a summary sent to a device (/dev/stdout) has no
    // "next to" (it would land in /dev).
    std::error_code ec;
    if (!std::filesystem::is_regular_file(cl.summary, ec)) return report->interrupted ? 128 + stopSignal.load() : 0;
    std::string svg = cl.summary;
    if (endsWith(svg, ".json")) svg.resize(svg.size() - 5);
    svg += ".svg";
    std::string title = absl::StrCat(config.model, " (", precision, ")");
    if (auto s = writeFileAtomically(
            svg, renderCurveSvg(report->losses, report->scales, report->skipped, report->firstStep, title));
        !s.ok())
      return fail(s);
  }
  return report->interrupted ? 128 + stopSignal.load() : 0;
}

// Feeds for one entry: the first batch of --data, then every --input.
absl::StatusOr<std::map<std::string, Tensor>> entryFeeds(const Plan& plan, const RunCommandLine& cl) {
  std::map<std::string, Tensor> feeds;
  if (!cl.data.empty()) {
    if (auto dir = fashionMnistDir(cl.data)) {  // the first test batch
      auto test = loadFashionMnistDataset(*dir, "test");
      if (!test.ok()) return test.status();
      for (const BufferDesc& b : plan.buffers) {
        if (b.kind != BufferKind::Input && b.kind != BufferKind::Label) continue;
        Tensor& source = b.kind == BufferKind::Input ? test->inputs : test->labels;
        if (auto s = feedFirstExamples(plan, b.name, std::move(source), test->name, feeds); !s.ok()) return s;
      }
    } else {
      NpzReadOptions npzOptions;
      npzOptions.maxTotalBytes = cl.memoryLimit > 0 ? uint64_t(cl.memoryLimit) : 0;
      auto members = readNpz(cl.data, npzOptions);
      if (!members.ok()) return members.status();
      for (NamedTensor& m : *members)
        if (auto s = feedFirstExamples(plan, m.name, std::move(m.tensor), cl.data, feeds); !s.ok()) return s;
    }
  }
  for (const auto& [name, file] : cl.inputs) {
    // Only inputs and labels are fed; a param named here would be ignored without a word.
    const std::optional<int32_t> id = plan.findBuffer(name);
    const BufferKind kind = id ? plan.buffers[*id].kind : BufferKind::Temp;
    if (kind == BufferKind::Param || kind == BufferKind::State)
      return absl::InvalidArgumentError(absl::StrCat("--input ", name, "=", file, ": '", name, "' is a ",
                                                     std::string(bufferKindName(kind)),
                                                     " of the model, not an input; load params with --params "
                                                     "FILE.safetensors"));
    if (kind != BufferKind::Input && kind != BufferKind::Label) {
      std::string names;
      for (const BufferDesc& b : plan.buffers)
        if (b.kind == BufferKind::Input || b.kind == BufferKind::Label)
          absl::StrAppend(&names, names.empty() ? "" : ", ", b.name);
      return absl::InvalidArgumentError(
          absl::StrCat("--input ", name, "=", file, ": the model has no input '", name, "' (it has: ", names, ")"));
    }
    auto t = readTensorFile(name, file);
    if (!t.ok()) return t.status();
    feeds[name] = std::move(*t);
  }
  return feeds;
}

// Runs one entry once. An entry that updates state (train_step, accumulate) leaves the updated
// state in the session; --checkpoint saves it (after --resume: the checkpoint's state, one step on).
int runEntry(Session& session, const RunCommandLine& cl, Device device) {
  const Plan& plan = session.plan();
  std::string entry = cl.entry.empty() ? "eval" : cl.entry;
  const EntryPoint* ep = plan.findEntry(entry);
  if (!ep) {
    std::string names;
    for (const EntryPoint& e : plan.entries) absl::StrAppend(&names, names.empty() ? "" : ", ", e.name);
    return fail(absl::InvalidArgumentError(absl::StrCat("no entry point '", entry, "' (it has: ", names, ")")));
  }
  CheckpointInfo position{0, 0, true};
  const CheckpointAuth auth = checkpointAuth(cl);
  if (cl.resume) {
    auto info = loadCheckpoint(session, cl.checkpoint, auth);
    if (!info.ok()) return fail(info.status());
    position = *info;
  }
  auto feeds = entryFeeds(plan, cl);
  if (!feeds.ok()) return fail(feeds.status());

  Session::RunOptions run;
  run.checkNumerics = cl.checkNumerics;
  run.step = position.step;
  GradientOverflow overflow;
  run.gradientOverflow = &overflow;
  auto outputs = session.run(entry, *feeds, run);
  if (!outputs.ok()) return fail(outputs.status());
  if (overflow.seen)
    std::printf("check-numerics: a gradient overflowed (%s at %s, %s); loss scaling handles it: a training step "
                "would be skipped and the scale backed off\n",
                overflow.op.c_str(), overflow.loc.c_str(), overflow.dtype.c_str());

  JsonValue summary = JsonValue::object();
  summary.set("entry", JsonValue::string(entry));
  summary.set("device", JsonValue::string(std::string(deviceName(device))));
  JsonValue values = JsonValue::object();
  for (const NamedTensor& out : *outputs) {
    if (out.tensor.numel() == 1 && isFloat(out.tensor.dtype())) {
      double v = loadAsF32(out.tensor.dtype(), out.tensor.data(), 0);
      std::printf("%s = %.9g\n", out.name.c_str(), v);
      values.set(out.name, floatValue(v));
    } else {
      std::printf("%s: %s %s\n", out.name.c_str(), std::string(dtypeName(out.tensor.dtype())).c_str(),
                  shapeToString(out.tensor.shape()).c_str());
    }
  }
  summary.set("outputs", std::move(values));
  if (!cl.output.empty()) {
    std::vector<NamedTensorRef> refs;
    for (const NamedTensor& out : *outputs) refs.push_back({out.name, &out.tensor});
    if (auto s = writeSafetensors(cl.output, refs); !s.ok()) return fail(s);
  }
  if (!cl.checkpoint.empty()) {
    if (ep->updates.empty() && !cl.resume)
      return fail(absl::InvalidArgumentError(absl::StrCat(
          "--checkpoint: entry '", entry, "' updates no state, so there is nothing to save (with --resume it "
          "reads the checkpoint's state)")));
    if (!ep->updates.empty()) {
      position.step += entry == "train_step" ? 1 : 0;
      if (auto s = saveCheckpoint(session, cl.checkpoint, position, auth); !s.ok()) return fail(s);
      std::printf("state saved to %s/checkpoint.safetensors (step %lld)\n", cl.checkpoint.c_str(),
                  static_cast<long long>(position.step));
    }
  }
  if (!cl.summary.empty()) {
    if (auto s = writeFileAtomically(cl.summary, writeJson(summary, 2) + "\n"); !s.ok()) return fail(s);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // A file-size limit (ulimit -f) then makes writes fail with EFBIG, reported with the file's
  // name like a full disk, instead of killing the process mid-checkpoint.
  signal(SIGXFSZ, SIG_IGN);
  auto options = parseRunOptions(argc, argv);
  if (!options.ok()) return fail(options.status());
  if (options->help) {
    std::cout << options->helpText;
    return 0;
  }
  auto device = parseDevice(options->device);
  if (!device.ok()) return fail(device.status());
  auto communicator = makeCommunicator(options->commTimeout);
  if (!communicator.ok()) return fail(communicator.status());
  job = std::move(*communicator);
  if (multiRank() && options->mode != RunMode::Train)
    return fail(absl::InvalidArgumentError(
        "under mpirun amp-run trains (--epochs/--steps); run one entry in a single process"));

  // A bundle is read once: the plan is parsed from these bytes and their tag checked on them.
  std::string bundleBytes;
  absl::StatusOr<Plan> plan = endsWith(options->model, ".mlir")
                                  ? compileOnTheFly(options->model)
                                  : readBundle(options->model, &bundleBytes);
  if (!plan.ok()) return fail(plan.status());
  // Native code only from a bundle the user's ampc authenticated (docs/kernels.md, threat model),
  // checked before anything is loaded. A model amp-run just compiled with the user's ampc is the
  // user's own; a dry run loads and runs no code.
  if (!options->dryRun) {
    const bool compiledHere = endsWith(options->model, ".mlir");
    const NativeCodePolicy policy = options->nativeCode == "off"                 ? NativeCodePolicy::Off
                                    : options->trustNativeCode || compiledHere ? NativeCodePolicy::Trust
                                                                               : NativeCodePolicy::Authenticated;
    auto notice = applyNativeCodePolicy(options->model, bundleBytes, *plan, policy);
    if (!notice.ok()) return fail(notice.status());
    if (!notice->empty() && rankZero()) std::cerr << "amp-run: " << *notice << "\n";
  }
  bundleBytes = std::string();
  cuda::CudaOptions cudaOptions;
  cudaOptions.conv = options->conv == "direct" ? cuda::ConvAlgorithm::Direct : cuda::ConvAlgorithm::ImplicitGemm;
  cudaOptions.syncEachLaunch = options->debugSync;
  if (options->dryRun) return dryRunCuda(std::move(*plan), options->memoryLimit, options->profile, cudaOptions);
  const int64_t initValues = randomInitValues(*plan);
  const auto initStart = std::chrono::steady_clock::now();
  if (initValues > kAnnouncedInitValues)
    std::fprintf(stderr, "amp-run: initialising %lld parameter values from their seeded random initialisers...\n",
                 static_cast<long long>(initValues));
  auto session = *device == Device::Cuda ? makeCudaSession(std::move(*plan), cudaOptions, options->memoryLimit)
                                         : openSession(std::move(*plan), *device, options->memoryLimit);
  if (!session.ok()) return fail(session.status());
  if (initValues > kAnnouncedInitValues)
    std::fprintf(stderr, "amp-run: parameters initialised in %.1f s\n",
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - initStart).count());

  if (!options->params.empty()) {
    auto contents = readSafetensors(options->params);
    if (!contents.ok()) return fail(contents.status());
    std::vector<std::string> loaded;
    if (auto s = session->setParams(contents->tensors, &loaded); !s.ok())
      return fail(absl::InvalidArgumentError(absl::StrCat(options->params, ": ", s.message())));
  }
  return options->mode == RunMode::Train ? runTraining(*session, *options, *device)
                                         : runEntry(*session, *options, *device);
}
