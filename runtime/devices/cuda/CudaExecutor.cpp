#include "runtime/devices/cuda/CudaExecutor.h"

#include <cstring>
#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "runtime/dist/Communicator.h"
#include "runtime/io/Sha256.h"
#include "runtime/devices/cuda/CudaActions.h"
#include "runtime/devices/cuda/LaunchConfig.h"
#include "runtime/numerics/Convert.h"
#include "runtime/plan/MemoryLayout.h"
#include "runtime/plan/MemoryPlan.h"
#include "runtime/plan/PlanValidation.h"

namespace amp::rt {
namespace cuda {
namespace {

std::string where(const EntryPoint& entry, size_t s) {
  const PlanStep& step = entry.steps[s];
  return absl::StrCat(step.loc.empty() ? "" : step.loc + ": ", "entry '", entry.name, "' step ", s, " (", step.op, ")");
}

class CudaExecutor;

class CudaEntry final : public PreparedEntry {
 public:
  CudaEntry(CudaExecutor& exec, GpuApi& api, const Plan& plan, const EntryPoint& entry)
      : exec_(exec), api_(api), plan_(plan), entry_(entry), memory_(api) {}

  absl::Status prepare(const std::vector<DevicePtr>& mirrors, const std::string& code);
  absl::Status run(const RunArgs& args) override;
  const void* resultData(size_t r) const override { return resultStaging_ + resultOffset_[r]; }
  int64_t workspaceBytes() const override { return report_.arenaBytes + report_.scratchBytes; }
  const EntryReport& report() const { return report_; }

 private:
  absl::Status prepareConstant(size_t s, DevicePtr& out);

  CudaExecutor& exec_;
  GpuApi& api_;
  const Plan& plan_;
  const EntryPoint& entry_;
  DeviceMemory memory_;
  std::vector<Action> actions_;
  std::vector<std::pair<int32_t, size_t>> feeds_;  // (buffer, offset in the feed staging)
  uint8_t* feedStaging_ = nullptr;
  uint8_t* stepStaging_ = nullptr;  // the call's training step, copied in at every replay
  uint8_t* resultStaging_ = nullptr;
  std::vector<size_t> resultOffset_;
  std::optional<GraphId> graph_;
  EntryReport report_;
};

class CudaExecutor final : public Executor {
 public:
  explicit CudaExecutor(std::unique_ptr<GpuApi> api) : api_(std::move(api)), memory_(*api_) {}

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
    if (auto s = prepared->prepare(mirrors_, code_); !s.ok()) return s;
    return std::unique_ptr<PreparedEntry>(std::move(prepared));
  }

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
  void persistentChanged() override { hostNewer_ = true; }

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
  const Plan* plan_ = nullptr;
  std::string code_;
  std::vector<DevicePtr> mirrors_;  // by buffer id: params and state in device memory
  bool hostNewer_ = true;           // the session's tensors hold values the device has not seen
  bool deviceNewer_ = false;        // the device holds values the session's tensors have not seen
};

absl::Status CudaEntry::prepareConstant(size_t s, DevicePtr& out) {
  const PlanStep& step = entry_.steps[s];
  auto value = step.attrs.getTensor(step.op, "value");
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

absl::Status CudaEntry::prepare(const std::vector<DevicePtr>& mirrors, const std::string& code) {
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
  // Inputs and labels: device buffers filled from one pinned staging area at the graph's start.
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
    for (const auto& [id, offset] : feeds_) ptr[id] = *device + offset;
    actions_.push_back(Action::hostToDevice(*device, feedStaging_, static_cast<int64_t>(feedBytes), "the step's inputs"));
    report_.scratchBytes += static_cast<int64_t>(feedBytes);
  }
  for (const auto& [src, tgt] : memory.inPlaceUpdates) ptr[src] = ptr[tgt];
  // The call's training step (dropout's RNG counter) reaches the device with every replay.
  auto stepHost = memory_.pinned(8);
  auto stepDevice = memory_.device(8);
  if (!stepHost.ok()) return stepHost.status();
  if (!stepDevice.ok()) return stepDevice.status();
  stepStaging_ = *stepHost;
  actions_.push_back(Action::hostToDevice(*stepDevice, stepStaging_, 8, "the training step"));

  ActionBuilder builder(api_, plan_, entry_, memory_, ptr, actions_, report_, *stepDevice);
  std::map<std::string, int> unsupported;
  size_t s = 0;
  while (s < entry_.steps.size()) {
    const PlanStep& step = entry_.steps[s];
    // Views (reshapes, elementwise results written over a dying operand) take their source's
    // storage as of this step.
    for (int32_t id : step.results)
      if (memory.aliasOf[id] >= 0) ptr[id] = ptr[memory.aliasOf[id]];
    if (step.op == "amp.constant") {
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
  for (size_t r = 0; r < entry_.results.size(); ++r) {
    const int32_t id = entry_.results[r];
    actions_.push_back(Action::deviceToHost(resultStaging_ + resultOffset_[r], ptr[id], plan_.buffers[id].byteSize(),
                                            absl::StrCat("result ", entry_.resultNames.size() > r ? entry_.resultNames[r] : "")));
  }
  for (const Action& a : actions_) report_.actions.push_back(a.what);
  return absl::OkStatus();
}

absl::Status CudaEntry::run(const RunArgs& args) {
  if (args.checkNumerics)
    return absl::UnimplementedError("--check-numerics is not available on the cuda device yet; use --device=cpu");
  if (args.communicator && args.communicator->worldSize() > 1)
    return absl::UnimplementedError("data-parallel training on the cuda device needs NCCL, which is not built yet");
  if (auto s = exec_.uploadIfChanged(args.persistent); !s.ok()) return s;
  for (const auto& [id, offset] : feeds_)
    std::memcpy(feedStaging_ + offset, args.feeds[id]->data(), static_cast<size_t>(plan_.buffers[id].byteSize()));
  std::memcpy(stepStaging_, &args.step, sizeof args.step);
  if (!graph_) {
    if (auto s = api_.beginCapture(); !s.ok()) return s;
    for (Action& a : actions_)
      if (auto s = a.enqueue(api_); !s.ok()) {
        (void)api_.endCapture();  // leave the stream out of capture mode
        return absl::Status(s.code(), absl::StrCat("entry '", entry_.name, "': ", a.what, ": ", s.message()));
      }
    auto graph = api_.endCapture();
    if (!graph.ok()) return graph.status();
    graph_ = *graph;
  }
  if (auto s = api_.launchGraph(*graph_); !s.ok()) return s;
  // The results are read by the caller when run returns: the one wait of a step.
  if (auto s = api_.synchronize(); !s.ok()) return absl::Status(s.code(), absl::StrCat("entry '", entry_.name, "': ", s.message()));
  if (!entry_.updates.empty()) exec_.ranAnUpdate();
  return absl::OkStatus();
}

}  // namespace

std::unique_ptr<Executor> makeCudaExecutor(std::unique_ptr<GpuApi> api) {
  return std::make_unique<CudaExecutor>(std::move(api));
}

const EntryReport* reportOf(const PreparedEntry& entry) {
  auto* e = dynamic_cast<const CudaEntry*>(&entry);
  return e ? &e->report() : nullptr;
}

}  // namespace cuda

absl::StatusOr<std::unique_ptr<Executor>> makeCudaExecutor() {
  auto api = cuda::openDriverApi(0);
  if (!api.ok()) return api.status();
  return cuda::makeCudaExecutor(std::move(*api));
}

}  // namespace amp::rt
