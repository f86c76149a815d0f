#include "runtime/devices/cuda/CudaExecutor.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "runtime/dist/Communicator.h"
#include "runtime/io/Sha256.h"
#include "runtime/devices/cuda/CudaActions.h"
#include "runtime/devices/cuda/LaunchConfig.h"
#include "runtime/devices/cuda/LogRing.h"
#include "runtime/devices/cuda/NumericsChecks.h"
#include "runtime/exec/ScalarLog.h"
#include "runtime/numerics/Convert.h"
#include "runtime/plan/MemoryLayout.h"
#include "runtime/plan/MemoryPlan.h"
#include "runtime/plan/PlanValidation.h"

namespace amp::rt {
namespace cuda {
namespace {

std::string where(const EntryPoint& entry, size_t s) {
  const PlanStep& step = entry.steps[s];
  return absl::StrCat(step.loc.empty() ? "" : step.loc + ": ", "entry '", entry.name, "' step ", s, " (", step.op,
                      ")");
}

class CudaExecutor;

class CudaEntry final : public PreparedEntry, public AsyncEntry, public EntryProfiler {
 public:
  CudaEntry(CudaExecutor& exec, GpuApi& api, const Plan& plan, const EntryPoint& entry)
      : exec_(exec), api_(api), plan_(plan), entry_(entry), memory_(api) {}

  absl::Status prepare(const std::vector<DevicePtr>& mirrors, const std::string& code, int firstEvent);
  absl::Status run(const RunArgs& args) override;
  const void* resultData(size_t r) const override { return resultStaging_ + resultOffset_[r]; }
  int64_t workspaceBytes() const override { return report_.arenaBytes + report_.scratchBytes; }
  const EntryReport& report() const override { return report_; }

  AsyncEntry* async() override { return this; }
  EntryProfiler* profiler() override { return this; }
  absl::Status enqueue(const RunArgs& args, int64_t ticket) override;
  absl::Status poll(bool wait, LogSink deliver) override;
  absl::StatusOr<EntryProfile> profile(const RunArgs& args, int calls) override;

  // The ring's slots, each: the call's inputs, its training step, its scalar log.
  static constexpr int kLogDepth = 4;

 private:
  absl::Status prepareConstant(size_t s, DevicePtr& out);
  absl::Status prepareLog(const std::vector<DevicePtr>& ptr, const std::vector<DevicePtr>& mirrors, int firstEvent);
  absl::Status checkRunnable(const RunArgs& args);
  // The call's inputs and step from page-locked `feeds` and `step`, then the graph of `actions`
  // (captured into `graph` on its first call): the entry's, or its checked one.
  absl::Status launch(const uint8_t* feeds, const uint8_t* step) { return launch(feeds, step, actions_, graph_); }
  absl::Status launch(const uint8_t* feeds, const uint8_t* step, std::vector<Action>& actions, std::optional<GraphId>& graph);
  // CudaOptions::syncEachLaunch: `actions` enqueued one at a time, each followed by a wait; the
  // first failure names its operation (Action::origin).
  absl::Status runEagerly(std::vector<Action>& actions);
  // The call's inputs and training step into page-locked `feeds` and `step` (run's staging or a
  // ring slot), and from there to the device.
  void stage(const RunArgs& args, uint8_t* feeds, uint8_t* step) const;
  absl::Status copyIn(const uint8_t* feeds, const uint8_t* step);
  // --check-numerics: the entry's operations with a check of each float result after its step.
  absl::Status buildChecked();

  // The ring's events: the first error of a wait is kept for poll to return.
  struct RingEvents {
    GpuApi* api;
    int first;
    absl::Status* error;
    bool done(int slot) const { return api->eventDone(first + slot); }
    void wait(int slot) const {
      if (auto s = api->waitEvent(first + slot); !s.ok() && error->ok()) *error = s;
    }
  };

  CudaExecutor& exec_;
  GpuApi& api_;
  const Plan& plan_;
  const EntryPoint& entry_;  // the plan's: the device runs its steps as they are
  DeviceMemory memory_;
  std::vector<Action> actions_;
  std::vector<std::pair<int32_t, size_t>> feeds_;  // (buffer, offset in the feed staging)
  int64_t feedBytes_ = 0;
  DevicePtr feedDevice_ = 0, stepDevice_ = 0;
  uint8_t* feedStaging_ = nullptr;  // run's: the inputs and the training step, copied before the graph
  uint8_t* stepStaging_ = nullptr;
  uint8_t* resultStaging_ = nullptr;
  std::vector<size_t> resultOffset_;
  std::vector<std::pair<DevicePtr, int64_t>> resultCopies_;  // (source, bytes) per result
  std::optional<GraphId> graph_;
  bool communicates_ = false;  // some action is a collective: calls bind the job's collectives
  EntryReport report_;
  // Asynchronous calls: the scalar log the graph gathers into logDevice_, and the ring of
  // page-locked slots it is copied to behind each call.
  ScalarLogLayout log_;
  DevicePtr logDevice_ = 0;
  int64_t slotBytes_ = 0, slotStepOffset_ = 0, slotLogOffset_ = 0;
  absl::Status ringError_;
  std::optional<LogRing<RingEvents>> ring_;
  // Logs delivered early, when a call claimed a slot the caller had not polled yet.
  std::vector<std::pair<int64_t, std::vector<uint8_t>>> early_;
  // --check-numerics: each check's result, where its storage is at its step, and the action it
  // follows; the checked graph and the words its kernels leave (device and page-locked copies).
  std::vector<ResultCheck> checks_;
  std::vector<DevicePtr> checkPtr_;
  std::vector<size_t> checkAfter_;
  std::vector<Action> checkedActions_;
  std::optional<GraphId> checkedGraph_;
  DevicePtr checkWords_ = 0;
  uint64_t* checkHost_ = nullptr;
};

class CudaExecutor final : public Executor, public DeviceResidency {
 public:
  CudaExecutor(std::unique_ptr<GpuApi> api, CudaOptions options)
      : api_(std::move(api)), memory_(*api_), options_(options) {}
  const CudaOptions& options() const { return options_; }
  DeviceMemory& sharedMemory() { return memory_; }
  GpuCollectives* const* collectivesSlot() const { return &collectivesPtr_; }
  // The job's collectives, made on the first call that needs them (before any graph that uses them
  // is captured: NCCL's bootstrap blocks, a replay never does). Every later call must be in the same job.
  absl::Status bindCollectives(Communicator* job) {
    if (collectives_) {
      if (job == boundJob_) return absl::OkStatus();
      return absl::FailedPreconditionError("a cuda executor's collectives serve one data-parallel job (the first call's)");
    }
    auto made = options_.collectives ? options_.collectives(*api_, job) : defaultCollectives(*api_, job);
    if (!made.ok()) return made.status();
    collectives_ = std::move(*made);
    collectivesPtr_ = collectives_.get();
    boundJob_ = job;
    return absl::OkStatus();
  }
  ConvColumns& convColumns() { return convColumns_; }

  Device device() const override { return Device::Cuda; }
  std::string description() const override {
    const GpuInfo& g = api_->info();
    return absl::StrCat("cuda: ", g.name, " (sm_", g.ccMajor, g.ccMinor, ", ", g.multiprocessors,
                        " SMs), driver for CUDA ", cudaVersionString(g.driverVersion),
                        code_.empty() ? "" : "; code " + code_);
  }

  absl::StatusOr<std::unique_ptr<PreparedEntry>> prepare(const Plan& plan, const EntryPoint& entry) override {
    if (auto s = validateEntryStructure(plan, entry); !s.ok()) return s;
    if (plan_ && plan_ != &plan)
      return absl::FailedPreconditionError("a cuda executor runs the entries of one plan (one session)");
    if (!plan_) {
      auto choice = selectCudaCode(plan, api_->info());
      if (!choice.ok()) return choice.status();
      // A code object runs on the GPU unchecked: a corrupted or swapped one is refused first.
      const CodeObject& object = *choice->object;
      if (sha256Hex(object.bytes.data(), object.bytes.size()) != object.sha256)
        return absl::DataLossError(absl::StrCat("the bundle's code object ", object.tensorName(),
                                                " fails its SHA-256 check (the bundle is corrupted); recompile it"));
      if (auto s = api_->loadModule(choice->object->bytes, choice->jit); !s.ok()) return s;
      for (const CodeObject& c : plan.code)  // the kernels' parameter lists, for a checking GpuApi
        if (c.isa == object.isa && c.format == "ptx") api_->kernelSignatures(c.bytes);
      code_ = choice->summary;
      mirrors_.assign(plan.buffers.size(), 0);
      for (size_t id = 0; id < plan.buffers.size(); ++id) {
        const BufferDesc& b = plan.buffers[id];
        if (b.kind != BufferKind::Param && b.kind != BufferKind::State) continue;
        auto p = memory_.device(b.byteSize());
        if (!p.ok()) return p.status();
        mirrors_[id] = *p;
      }
      plan_ = &plan;
    }
    auto prepared = std::make_unique<CudaEntry>(*this, *api_, plan, entry);
    if (auto s = prepared->prepare(mirrors_, code_, nextEvent_); !s.ok()) return s;
    nextEvent_ += CudaEntry::kLogDepth;  // each entry's ring has events of its own
    return std::unique_ptr<PreparedEntry>(std::move(prepared));
  }

  DeviceResidency* residency() override { return this; }
  const DeviceResidency* residency() const override { return this; }
  absl::Status downloadPersistent(absl::Span<Tensor* const> persistent, int32_t only) override {
    if (!deviceNewer_) return absl::OkStatus();
    for (size_t id = 0; id < mirrors_.size() && id < persistent.size(); ++id) {
      if (!mirrors_[id] || !persistent[id] || (only >= 0 && static_cast<int32_t>(id) != only)) continue;
      if (auto s = api_->copyToHost(persistent[id]->data(), mirrors_[id], static_cast<int64_t>(persistent[id]->nbytes()));
          !s.ok())
        return s;
    }
    if (auto s = api_->synchronize(); !s.ok()) return s;
    if (only < 0) deviceNewer_ = false;  // one buffer read leaves the others stale
    return absl::OkStatus();
  }
  void persistentChanged() override {
    hostNewer_ = true;
    deviceNewer_ = false;
  }
  int64_t hostSyncs() const override { return api_->hostSyncs(); }

  // Before a run: the session's values reach the device once, and again only after it changed them.
  absl::Status uploadIfChanged(absl::Span<Tensor* const> persistent) {
    if (!hostNewer_) return absl::OkStatus();
    for (size_t id = 0; id < mirrors_.size() && id < persistent.size(); ++id)
      if (mirrors_[id] && persistent[id])
        if (auto s = api_->copyToDevice(mirrors_[id], persistent[id]->data(), static_cast<int64_t>(persistent[id]->nbytes()));
            !s.ok())
          return s;
    if (auto s = api_->synchronize(); !s.ok()) return s;  // the copies read pageable host memory
    hostNewer_ = false;
    return absl::OkStatus();
  }
  void ranAnUpdate() { deviceNewer_ = true; }

 private:
  std::unique_ptr<GpuApi> api_;
  DeviceMemory memory_;
  CudaOptions options_;
  // Destroyed before the GpuApi (NCCL's communicator lives in its context).
  std::unique_ptr<GpuCollectives> collectives_;
  GpuCollectives* collectivesPtr_ = nullptr;  // what the collective actions read
  const Communicator* boundJob_ = nullptr;
  ConvColumns convColumns_;
  const Plan* plan_ = nullptr;
  std::string code_;
  std::vector<DevicePtr> mirrors_;  // by buffer id: params and state in device memory
  int nextEvent_ = 0;               // the first event slot of the next entry's ring
  bool hostNewer_ = true;           // the session's tensors hold values the device has not seen
  bool deviceNewer_ = false;        // the device holds values the session's tensors have not seen
};

absl::Status CudaEntry::prepareConstant(size_t s, DevicePtr& out) {
  const PlanStep& step = entry_.steps[s];
  auto value = step.withAttrsOf<ConstantAttrs>([](const auto& a) { return a.value.get(); });
  if (!value.ok()) return absl::Status(value.status().code(), absl::StrCat(where(entry_, s), ": ", value.status().message()));
  if (step.results.size() != 1 || !step.operands.empty() || (*value)->shape() != plan_.buffers[step.results[0]].shape)
    return absl::InvalidArgumentError(absl::StrCat(where(entry_, s), ": the value's shape must be the result's"));
  const BufferDesc& b = plan_.buffers[step.results[0]];
  std::vector<uint8_t> data(static_cast<size_t>(b.byteSize()) + 1);
  convertBuffer((*value)->dtype(), (*value)->data(), b.dtype, data.data(), b.numel());
  auto p = memory_.device(b.byteSize());
  if (!p.ok()) return p.status();
  if (auto st = api_.copyToDevice(*p, data.data(), b.byteSize()); !st.ok()) return st;
  if (auto st = api_.synchronize(); !st.ok()) return st;  // `data` is freed on return
  report_.scratchBytes += b.byteSize();
  out = *p;
  return absl::OkStatus();
}

absl::Status CudaEntry::prepare(const std::vector<DevicePtr>& mirrors, const std::string& code, int firstEvent) {
  report_.code = code;
  const size_t count = plan_.buffers.size();
  auto planned = entryMemoryPlan(plan_, entry_);
  if (!planned.ok()) return planned.status();
  MemoryPlan memory = std::move(*planned);
  std::vector<DevicePtr> ptr(count, 0);
  for (size_t id = 0; id < count; ++id) ptr[id] = mirrors[id];
  report_.arenaBytes = memory.arenaBytes;
  if (memory.arenaBytes > 0) {
    auto arena = memory_.device(memory.arenaBytes);
    if (!arena.ok()) return arena.status();
    for (size_t id = 0; id < count; ++id)
      if (memory.offset[id] >= 0) ptr[id] = *arena + static_cast<DevicePtr>(memory.offset[id]);
  }
  // Inputs and labels: device buffers filled from one page-locked staging area before the graph
  // (run's, or the ring slot of an enqueued call).
  size_t feedBytes = 0;
  std::vector<char> isFed(count, 0);
  for (const PlanStep& step : entry_.steps)
    for (int32_t id : step.operands)
      if ((plan_.buffers[id].kind == BufferKind::Input || plan_.buffers[id].kind == BufferKind::Label) && !isFed[id]) {
        isFed[id] = 1;
        feeds_.emplace_back(id, feedBytes);
        feedBytes += static_cast<size_t>((plan_.buffers[id].byteSize() + 255) / 256 * 256);
      }
  if (!feeds_.empty()) {
    auto staging = memory_.pinned(static_cast<int64_t>(feedBytes));
    if (!staging.ok()) return staging.status();
    feedStaging_ = *staging;
    auto device = memory_.device(static_cast<int64_t>(feedBytes));
    if (!device.ok()) return device.status();
    feedDevice_ = *device;
    feedBytes_ = static_cast<int64_t>(feedBytes);
    for (const auto& [id, offset] : feeds_) ptr[id] = *device + offset;
    report_.scratchBytes += static_cast<int64_t>(feedBytes);
  }
  for (const auto& [src, tgt] : memory.inPlaceUpdates) ptr[src] = ptr[tgt];
  // The call's training step (dropout's RNG counter) reaches the device with every replay.
  auto stepHost = memory_.pinned(8);
  auto stepDevice = memory_.device(8);
  if (!stepHost.ok()) return stepHost.status();
  if (!stepDevice.ok()) return stepDevice.status();
  stepStaging_ = *stepHost;
  stepDevice_ = *stepDevice;

  for (std::string_view count : kCountsInOrder) report_.add(count, 0);
  ActionBuilder builder(api_, plan_, entry_, memory_, ptr, actions_, report_, *stepDevice,
                        exec_.options(), exec_.sharedMemory(), exec_.convColumns());
  builder.bindCollectives(exec_.collectivesSlot());
  std::map<std::string, int> unsupported;
  checks_ = resultChecks(plan_, entry_);
  checkPtr_.assign(checks_.size(), 0);
  checkAfter_.assign(checks_.size(), 0);
  size_t nextCheck = 0;
  size_t s = 0;
  while (s < entry_.steps.size()) {
    const PlanStep& step = entry_.steps[s];
    // Views (reshapes, elementwise results written over a dying operand) take their source's
    // storage as of this step.
    for (int32_t id : step.results)
      if (memory.aliasOf[id] >= 0) ptr[id] = ptr[memory.aliasOf[id]];
    if (step.code == OpCode::Constant) {
      if (auto st = prepareConstant(s, ptr[step.results[0]]); !st.ok()) return st;
      ++s;
      continue;
    }
    auto consumed = builder.lower(s);
    if (!consumed.ok())
      return absl::Status(consumed.status().code(), absl::StrCat(where(entry_, s), ": ", consumed.status().message()));
    if (*consumed == 0) {
      ++unsupported[step.op];
      ++s;
      continue;
    }
    // The checks of the steps just lowered follow their operations.
    for (; nextCheck < checks_.size() && checks_[nextCheck].step < s + *consumed; ++nextCheck) {
      checkPtr_[nextCheck] = ptr[checks_[nextCheck].buffer];
      checkAfter_[nextCheck] = actions_.size();
    }
    s += *consumed;
  }
  if (!unsupported.empty()) {
    std::string ops;
    for (const auto& [op, n] : unsupported) absl::StrAppend(&ops, ops.empty() ? "" : ", ", op, " (", n, ")");
    return absl::UnimplementedError(absl::StrCat("entry '", entry_.name, "': the cuda device has no kernel yet for ", ops,
                                                 "; run this model with --device=cpu"));
  }
  for (const auto& [src, tgt] : entry_.updates)
    if (ptr[src] != ptr[tgt])
      builder.copy(ptr[tgt], ptr[src], plan_.buffers[tgt].byteSize(),
                   absl::StrCat("update ", plan_.buffers[tgt].name, " <- ", plan_.buffers[src].name));
  // The entry's results go to pinned memory at the graph's end.
  size_t resultBytes = 0;
  for (int32_t id : entry_.results) {
    resultOffset_.push_back(resultBytes);
    resultBytes += static_cast<size_t>((plan_.buffers[id].byteSize() + 255) / 256 * 256);
  }
  auto staging = memory_.pinned(static_cast<int64_t>(resultBytes > 0 ? resultBytes : 1));
  if (!staging.ok()) return staging.status();
  resultStaging_ = *staging;
  for (int32_t id : entry_.results) resultCopies_.emplace_back(ptr[id], plan_.buffers[id].byteSize());
  if (auto st = prepareLog(ptr, mirrors, firstEvent); !st.ok()) return st;
  // prepareLog put the "before" half of the log ahead of every operation.
  size_t logAhead = 0;
  for (const ScalarLogItem& item : log_.items) logAhead += item.when == ScalarLogItem::When::Before;
  for (size_t& at : checkAfter_) at += logAhead;
  for (const Action& a : actions_) {
    report_.actions.push_back(a.what);
    communicates_ = communicates_ || a.kind == Action::Kind::Collective;
  }
  return absl::OkStatus();
}

absl::Status CudaEntry::prepareLog(const std::vector<DevicePtr>& ptr, const std::vector<DevicePtr>& mirrors,
                                   int firstEvent) {
  log_ = scalarLogLayout(plan_, entry_);
  if (log_.bytes > 0) {
    auto block = memory_.device(log_.bytes);
    if (!block.ok()) return block.status();
    logDevice_ = *block;
    report_.scratchBytes += log_.bytes;
  }
  // The graph gathers the log: state before its first kernel, results and state after its last.
  std::vector<Action> before;
  for (const ScalarLogItem& item : log_.items) {
    const BufferDesc& b = plan_.buffers[item.buffer];
    Action a;
    a.kind = Action::Kind::Copy;
    a.dst = logDevice_ + static_cast<DevicePtr>(item.offset);
    a.src = item.when == ScalarLogItem::When::Result ? ptr[item.buffer] : mirrors[item.buffer];
    a.bytes = b.byteSize();
    const char* when = item.when == ScalarLogItem::When::Result  ? "result "
                       : item.when == ScalarLogItem::When::Before ? "state before the call: "
                                                                  : "state after the call: ";
    const bool named = item.when == ScalarLogItem::When::Result && static_cast<size_t>(item.result) < entry_.resultNames.size();
    a.what = absl::StrCat("log ", when, named ? entry_.resultNames[item.result] : b.name);
    (item.when == ScalarLogItem::When::Before ? before : actions_).push_back(std::move(a));
  }
  actions_.insert(actions_.begin(), std::make_move_iterator(before.begin()), std::make_move_iterator(before.end()));
  // The ring: per slot the inputs, the training step and the log, each 256-byte aligned.
  auto round = [](int64_t n) { return (n + 255) / 256 * 256; };
  slotStepOffset_ = round(feedBytes_);
  slotLogOffset_ = slotStepOffset_ + 256;
  slotBytes_ = slotLogOffset_ + round(log_.bytes);
  auto ring = memory_.pinned(kLogDepth * slotBytes_);
  if (!ring.ok()) return ring.status();
  ring_.emplace(kLogDepth, *ring, slotBytes_, RingEvents{&api_, firstEvent, &ringError_});
  return absl::OkStatus();
}

absl::Status CudaEntry::checkRunnable(const RunArgs& args) {
  if (communicates_)
    if (auto s = exec_.bindCollectives(args.communicator); !s.ok())
      return absl::Status(s.code(), absl::StrCat("entry '", entry_.name, "': ", s.message()));
  return exec_.uploadIfChanged(args.persistent);
}

void CudaEntry::stage(const RunArgs& args, uint8_t* feeds, uint8_t* step) const {
  for (const auto& [id, offset] : feeds_)
    std::memcpy(feeds + offset, args.feeds[id]->data(), static_cast<size_t>(plan_.buffers[id].byteSize()));
  std::memcpy(step, &args.step, sizeof args.step);
}

absl::Status CudaEntry::copyIn(const uint8_t* feeds, const uint8_t* step) {
  if (feedBytes_ > 0)
    if (auto s = api_.copyToDevice(feedDevice_, feeds, feedBytes_); !s.ok()) return s;
  return api_.copyToDevice(stepDevice_, step, 8);
}

absl::Status CudaEntry::launch(const uint8_t* feeds, const uint8_t* step, std::vector<Action>& actions,
                               std::optional<GraphId>& graph) {
  if (auto s = copyIn(feeds, step); !s.ok()) return s;
  if (exec_.options().syncEachLaunch) {
    if (auto s = runEagerly(actions); !s.ok()) return s;
    if (!entry_.updates.empty()) exec_.ranAnUpdate();
    return absl::OkStatus();
  }
  if (!graph) {
    if (auto s = api_.beginCapture(); !s.ok()) return s;
    for (Action& a : actions)
      if (auto s = a.enqueue(api_); !s.ok()) {
        (void)api_.endCapture();  // leave the stream out of capture mode
        return absl::Status(s.code(), absl::StrCat("entry '", entry_.name, "': ", a.what, ": ", s.message()));
      }
    auto captured = api_.endCapture();
    if (!captured.ok()) return captured.status();
    graph = *captured;
  }
  if (auto s = api_.launchGraph(*graph); !s.ok()) return s;
  if (!entry_.updates.empty()) exec_.ranAnUpdate();
  return absl::OkStatus();
}

absl::Status CudaEntry::runEagerly(std::vector<Action>& actions) {
  if (auto s = api_.synchronize(); !s.ok())  // the call's input copies
    return absl::Status(s.code(), absl::StrCat("entry '", entry_.name, "': copying the call's inputs in failed: ", s.message()));
  for (Action& a : actions) {
    absl::Status s = a.enqueue(api_);
    if (s.ok()) s = api_.synchronize();
    if (!s.ok())
      return absl::Status(s.code(), absl::StrCat("cuda: entry '", entry_.name, "': ", a.origin(), " failed: ", s.message()));
  }
  return absl::OkStatus();
}

absl::Status CudaEntry::enqueue(const RunArgs& args, int64_t ticket) {
  if (args.checkNumerics)  // the session runs checked calls synchronously
    return absl::InvalidArgumentError("a --check-numerics call waits for its verdict: run it, do not enqueue it");
  if (auto s = checkRunnable(args); !s.ok()) return s;
  // A slot whose call the caller has not polled yet is delivered here and kept for its poll.
  const int slot = ring_->claim([&](int64_t t, absl::Span<const uint8_t> bytes) {
    early_.emplace_back(t, std::vector<uint8_t>(bytes.begin() + slotLogOffset_, bytes.begin() + slotLogOffset_ + log_.bytes));
  });
  if (!ringError_.ok()) return ringError_;
  uint8_t* base = ring_->slotData(slot);
  stage(args, base, base + slotStepOffset_);
  if (auto s = launch(base, base + slotStepOffset_); !s.ok()) return s;
  if (log_.bytes > 0)
    if (auto s = api_.copyToHost(base + slotLogOffset_, logDevice_, log_.bytes); !s.ok()) return s;
  if (auto s = api_.recordEvent(ring_->events().first + slot); !s.ok()) return s;
  ring_->filled(slot, ticket);
  return absl::OkStatus();
}

absl::Status CudaEntry::poll(bool wait, LogSink deliver) {
  for (const auto& [ticket, bytes] : early_) deliver(ticket, bytes);
  early_.clear();
  auto sink = [&](int64_t ticket, absl::Span<const uint8_t> slot) {
    deliver(ticket, slot.subspan(static_cast<size_t>(slotLogOffset_), static_cast<size_t>(log_.bytes)));
  };
  if (wait) {
    ring_->drain(sink);
  } else {
    ring_->poll(sink);
  }
  if (!ringError_.ok()) return absl::Status(ringError_.code(), absl::StrCat("entry '", entry_.name, "': ", ringError_.message()));
  return absl::OkStatus();
}

absl::Status CudaEntry::buildChecked() {
  const int64_t bytes = static_cast<int64_t>(8 * std::max<size_t>(checks_.size(), 1));
  auto words = memory_.device(bytes);
  if (!words.ok()) return words.status();
  auto host = memory_.pinned(bytes);
  if (!host.ok()) return host.status();
  checkWords_ = *words;
  checkHost_ = reinterpret_cast<uint64_t*>(*host);
  report_.scratchBytes += bytes;
  Action fill;
  fill.kind = Action::Kind::Fill;
  fill.dst = checkWords_;
  fill.bytes = bytes;
  fill.value = 0xffffffffu;  // kAllFinite in every word
  fill.what = "check-numerics: every result finite so far";
  checkedActions_.push_back(fill);
  std::map<DType, KernelFn> kernels;
  for (const char* type : {"f32", "bf16", "f16"}) {
    auto fn = api_.function(std::string("amp_check_finite_") + type);
    if (!fn.ok()) return fn.status();
    kernels[std::string(type) == "f32" ? DType::F32 : std::string(type) == "bf16" ? DType::BF16 : DType::F16] = *fn;
  }
  size_t k = 0;
  for (size_t i = 0; i <= actions_.size(); ++i) {
    for (; k < checks_.size() && checkAfter_[k] == i; ++k) {
      const BufferDesc& b = plan_.buffers[checks_[k].buffer];
      Action a;
      a.kind = Action::Kind::Launch;
      a.fn = kernels.at(b.dtype);
      a.threads = 256;
      a.blocks = std::max<int64_t>(1, std::min<int64_t>((b.numel() + 255) / 256, int64_t{8} * api_.info().multiprocessors));
      a.arg(checkPtr_[k]);
      a.arg(static_cast<long long>(b.numel()));
      a.arg(checkWords_ + static_cast<DevicePtr>(8 * k));
      a.what = absl::StrCat("check-numerics: ", b.name);
      checkedActions_.push_back(std::move(a));
    }
    if (i < actions_.size()) checkedActions_.push_back(actions_[i]);
  }
  return absl::OkStatus();
}

// A synchronous call: its inputs and step, the entry's graph (or with checkNumerics its checked
// graph, whose check words come back with the results), then the call's one wait. A checked
// call's verdict is the first failing check in plan order; the session restores params and state
// when it fails.
absl::Status CudaEntry::run(const RunArgs& args) {
  if (auto s = checkRunnable(args); !s.ok()) return s;
  const bool checked = args.checkNumerics;
  if (checked && checkedActions_.empty())
    if (auto s = buildChecked(); !s.ok()) return s;
  stage(args, feedStaging_, stepStaging_);
  if (auto s = launch(feedStaging_, stepStaging_, checked ? checkedActions_ : actions_, checked ? checkedGraph_ : graph_);
      !s.ok())
    return s;
  for (size_t r = 0; r < resultCopies_.size(); ++r)
    if (auto s = api_.copyToHost(resultStaging_ + resultOffset_[r], resultCopies_[r].first, resultCopies_[r].second); !s.ok())
      return s;
  if (checked && !checks_.empty())
    if (auto s = api_.copyToHost(checkHost_, checkWords_, static_cast<int64_t>(8 * checks_.size())); !s.ok()) return s;
  // The caller reads the results when run returns: the one wait of a synchronous call.
  if (auto s = api_.synchronize(); !s.ok()) return absl::Status(s.code(), absl::StrCat("entry '", entry_.name, "': ", s.message()));
  return checked ? judgeChecks(plan_, entry_, checks_, checkHost_, args.gradientOverflow) : absl::OkStatus();
}

// Each profiled call runs twice on the stream: once as its graph, between two timers (the call's
// time as training runs it), then operation by operation with a timer before each and one after
// the last. A launch from the host takes a few microseconds, so an operation shorter than that
// may include some of the wait for the next launch; the graph's time has no such gaps.
absl::StatusOr<EntryProfile> CudaEntry::profile(const RunArgs& args, int calls) {
  if (auto s = checkRunnable(args); !s.ok()) return s;
  stage(args, feedStaging_, stepStaging_);
  constexpr int kCategories = 4;
  const int n = static_cast<int>(actions_.size());
  std::vector<std::vector<double>> categoryMs(kCategories);
  std::vector<double> callMs;
  std::vector<int64_t> operations(kCategories, 0);
  for (const Action& a : actions_) ++operations[static_cast<int>(a.category)];
  auto failed = [&](const absl::Status& s) { return absl::Status(s.code(), absl::StrCat("entry '", entry_.name, "' (profile): ", s.message())); };
  for (int c = 0; c < calls; ++c) {
    if (auto s = api_.recordTimer(0); !s.ok()) return failed(s);
    if (auto s = launch(feedStaging_, stepStaging_); !s.ok()) return failed(s);  // captures on a first call
    if (auto s = api_.recordTimer(1); !s.ok()) return failed(s);
    if (auto s = copyIn(feedStaging_, stepStaging_); !s.ok()) return failed(s);
    for (int i = 0; i < n; ++i) {
      if (auto s = api_.recordTimer(2 + i); !s.ok()) return failed(s);
      if (auto s = actions_[static_cast<size_t>(i)].enqueue(api_); !s.ok())
        return absl::Status(s.code(), absl::StrCat("entry '", entry_.name, "': ", actions_[static_cast<size_t>(i)].what, ": ", s.message()));
    }
    if (auto s = api_.recordTimer(2 + n); !s.ok()) return failed(s);
    if (auto s = api_.synchronize(); !s.ok()) return failed(s);
    auto graph = api_.elapsedMs(0, 1);
    if (!graph.ok()) return failed(graph.status());
    callMs.push_back(*graph);
    std::vector<double> sums(kCategories, 0.0);
    for (int i = 0; i < n; ++i) {
      auto ms = api_.elapsedMs(2 + i, 3 + i);
      if (!ms.ok()) return failed(ms.status());
      sums[static_cast<size_t>(actions_[static_cast<size_t>(i)].category)] += *ms;
    }
    for (int k = 0; k < kCategories; ++k) categoryMs[static_cast<size_t>(k)].push_back(sums[static_cast<size_t>(k)]);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  };
  EntryProfile out;
  out.calls = calls;
  out.callMs = median(callMs);
  for (int k = 0; k < kCategories; ++k)
    out.categories.push_back({Action::categoryName(static_cast<Action::Category>(k)), median(categoryMs[static_cast<size_t>(k)]),
                              operations[static_cast<size_t>(k)]});
  return out;
}

}  // namespace

bool syncEachLaunchFromEnvironment() {
  const char* value = std::getenv("AMP_CUDA_SYNC_EACH_LAUNCH");
  return value && *value && std::string(value) != "0";
}

std::unique_ptr<Executor> makeCudaExecutor(std::unique_ptr<GpuApi> api, CudaOptions options) {
  options.syncEachLaunch = options.syncEachLaunch || syncEachLaunchFromEnvironment();
  return std::make_unique<CudaExecutor>(std::move(api), options);
}

}  // namespace cuda

absl::StatusOr<std::unique_ptr<Executor>> makeCudaExecutor(cuda::CudaOptions options) {
  auto api = cuda::openDriverApi(0);
  if (!api.ok()) return api.status();
  return cuda::makeCudaExecutor(std::move(*api), options);
}

}  // namespace amp::rt
