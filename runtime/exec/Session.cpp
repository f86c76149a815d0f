#include "runtime/exec/Session.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "runtime/numerics/Convert.h"
#include "runtime/plan/Init.h"
#include "runtime/plan/PlanValidation.h"
#include "runtime/plan/StateValidation.h"

namespace amp::rt {

absl::StatusOr<Session> Session::create(Plan plan, std::unique_ptr<Executor> executor, int64_t memoryLimitBytes) {
  if (auto status = validateBuffers(plan); !status.ok()) return status;
  if (auto status = validateMemory(plan, memoryLimitBytes); !status.ok()) return status;
  if (auto status = decodeSteps(plan); !status.ok()) return status;
  Session s(std::make_unique<Plan>(std::move(plan)), std::move(executor));
  const Plan& p = *s.plan_;
  s.persistent_.resize(p.buffers.size());
  s.persistentPtrs_.assign(p.buffers.size(), nullptr);
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    const BufferDesc& b = p.buffers[i];
    if (b.kind != BufferKind::Param && b.kind != BufferKind::State) continue;
    s.persistentPtrs_[i] = &s.persistent_[i];
    if (b.kind == BufferKind::State && b.init && b.init->kind == "cast") {
      s.persistent_[i] = Tensor(b.dtype, b.shape);  // filled by refreshCasts below
      continue;
    }
    if (b.kind == BufferKind::Param || b.init) {
      if (b.kind == BufferKind::Param && b.dtype != DType::F32)
        return absl::InvalidArgumentError(
            absl::StrCat("param '", b.name, "' is ", std::string(dtypeName(b.dtype)), "; params must be f32"));
      InitSpec spec = b.init.value_or(InitSpec{"zeros", 1.0, 0});
      auto t = initializeParam(spec, b.shape);
      if (!t.ok())
        return absl::InvalidArgumentError(absl::StrCat("param '", b.name, "': ", t.status().message()));
      if (b.dtype == DType::F32) {
        s.persistent_[i] = std::move(*t);
      } else {  // integer or low-precision state: initialise in f32, then convert exactly
        s.persistent_[i] = Tensor(b.dtype, b.shape);
        convertBuffer(DType::F32, t->data(), b.dtype, s.persistent_[i].data(), t->numel());
      }
    } else {
      s.persistent_[i] = Tensor(b.dtype, b.shape);
    }
  }
  if (auto status = s.refreshCasts(); !status.ok()) return status;
  return s;
}

absl::Status Session::refreshCasts() {
  const Plan& p = *plan_;
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    const BufferDesc& b = p.buffers[i];
    if (b.kind != BufferKind::State || !b.init || b.init->kind != "cast") continue;
    auto source = p.findBuffer(b.init->from);
    if (!source || p.buffers[*source].kind != BufferKind::Param || p.buffers[*source].shape != b.shape)
      return absl::InvalidArgumentError(absl::StrCat("state '", b.name, "' is a cast of '", b.init->from,
                                                     "', which is not a param of the same shape"));
    convertBuffer(DType::F32, persistent_[*source].data(), b.dtype, persistent_[i].data(), b.numel());
  }
  return absl::OkStatus();
}

absl::Status Session::setParams(const std::vector<NamedTensor>& tensors, std::vector<std::string>* loaded) {
  return setValues(tensors, loaded, /*modelBuffers=*/false);
}

absl::Status Session::setModelValues(const std::vector<NamedTensor>& tensors, std::vector<std::string>* loaded) {
  return setValues(tensors, loaded, /*modelBuffers=*/true);
}

absl::Status Session::setValues(const std::vector<NamedTensor>& tensors, std::vector<std::string>* loaded,
                                bool modelBuffers) {
  const std::vector<int32_t> bufferIds = modelBuffers ? modelBufferIds(*plan_) : std::vector<int32_t>();
  for (const NamedTensor& nt : tensors) {
    auto id = plan_->findBuffer(nt.name);
    const bool isParam = id && plan_->buffers[*id].kind == BufferKind::Param;
    const bool isModelBuffer = id && std::find(bufferIds.begin(), bufferIds.end(), *id) != bufferIds.end();
    if (!isParam && !isModelBuffer)
      return absl::InvalidArgumentError(absl::StrCat(
          modelBuffers ? "'" : "parameter file has '", nt.name, "', which is not a ",
          modelBuffers ? "param or buffer" : "param", " of the model"));
    const BufferDesc& b = plan_->buffers[*id];
    const DType expected = isParam ? DType::F32 : b.dtype;
    if (nt.tensor.shape() != b.shape || nt.tensor.dtype() != expected)
      return absl::InvalidArgumentError(absl::StrCat(
          isParam ? "param '" : "buffer '", nt.name, "': expected ", std::string(dtypeName(expected)), " ",
          shapeToString(b.shape), ", ", modelBuffers ? "got " : "the file has ",
          std::string(dtypeName(nt.tensor.dtype())), " ", shapeToString(nt.tensor.shape())));
  }
  // The same value checks as a checkpoint's (--resume): a NaN or inf master weight is refused.
  if (auto s = validatePersistentValues(*plan_, tensors); !s.ok()) return s;
  // The device's newer state must not be lost: the session's copies are completed first.
  if (auto s = syncPersistent(); !s.ok()) return s;
  // Copied into the existing storage: prepared entries keep the buffers' addresses.
  for (const NamedTensor& nt : tensors) {
    int32_t id = *plan_->findBuffer(nt.name);
    std::memcpy(persistent_[id].data(), nt.tensor.data(), nt.tensor.nbytes());
    if (loaded) loaded->push_back(nt.name);
  }
  if (DeviceResidency* r = executor_->residency()) r->persistentChanged();
  return refreshCasts();  // low-precision copies follow their new masters
}

std::vector<NamedTensorRef> Session::params() const {
  std::vector<NamedTensorRef> out;
  for (size_t i = 0; i < plan_->buffers.size(); ++i)
    if (plan_->buffers[i].kind == BufferKind::Param) out.push_back({plan_->buffers[i].name, &persistent_[i]});
  return out;
}

std::vector<NamedTensorRef> Session::modelValues() const {
  std::vector<bool> buffer(plan_->buffers.size(), false);
  for (int32_t id : modelBufferIds(*plan_)) buffer[static_cast<size_t>(id)] = true;
  std::vector<NamedTensorRef> out;
  for (size_t i = 0; i < plan_->buffers.size(); ++i)
    if (plan_->buffers[i].kind == BufferKind::Param || buffer[i]) out.push_back({plan_->buffers[i].name, &persistent_[i]});
  return out;
}

std::vector<NamedTensorRef> Session::persistent() const {
  std::vector<NamedTensorRef> out;
  for (size_t i = 0; i < plan_->buffers.size(); ++i)
    if (persistentPtrs_[i]) out.push_back({plan_->buffers[i].name, &persistent_[i]});
  return out;
}

int64_t Session::persistentBytes() const {
  int64_t bytes = 0;
  for (size_t i = 0; i < plan_->buffers.size(); ++i)
    if (persistentPtrs_[i]) bytes += static_cast<int64_t>(persistent_[i].nbytes());
  return bytes;
}

absl::Status Session::restore(const std::vector<NamedTensor>& tensors) {
  std::map<std::string, const Tensor*> byName;
  for (const NamedTensor& t : tensors) byName[t.name] = &t.tensor;
  for (size_t i = 0; i < plan_->buffers.size(); ++i) {
    const BufferDesc& b = plan_->buffers[i];
    if (!persistentPtrs_[i]) continue;
    auto it = byName.find(b.name);
    if (it == byName.end())
      return absl::InvalidArgumentError(absl::StrCat("checkpoint lacks ", std::string(bufferKindName(b.kind)),
                                                     " '", b.name, "'"));
    if (it->second->dtype() != b.dtype || it->second->shape() != b.shape)
      return absl::InvalidArgumentError(absl::StrCat(
          "checkpoint has '", b.name, "' as ", std::string(dtypeName(it->second->dtype())), " ",
          shapeToString(it->second->shape()), ", the model needs ", std::string(dtypeName(b.dtype)), " ",
          shapeToString(b.shape)));
  }
  for (size_t i = 0; i < plan_->buffers.size(); ++i)
    if (persistentPtrs_[i])
      std::memcpy(persistent_[i].data(), byName[plan_->buffers[i].name]->data(), persistent_[i].nbytes());
  if (DeviceResidency* r = executor_->residency()) r->persistentChanged();
  return absl::OkStatus();
}

absl::StatusOr<PreparedEntry*> Session::prepared(std::string_view name) {
  if (auto it = prepared_.find(name); it != prepared_.end()) return it->second.get();
  const EntryPoint* entry = plan_->findEntry(name);
  if (!entry) {
    std::string names;
    for (const EntryPoint& e : plan_->entries) absl::StrAppend(&names, names.empty() ? "" : ", ", e.name);
    return absl::NotFoundError(
        absl::StrCat("the bundle has no entry point '", std::string(name), "' (it has: ", names, ")"));
  }
  auto p = executor_->prepare(*plan_, *entry);
  if (!p.ok()) return p.status();
  PreparedEntry* raw = p->get();
  prepared_.emplace(std::string(name), std::move(*p));
  return raw;
}

RunArgs Session::args(absl::Span<const Tensor* const> feeds, const RunOptions& options) const {
  RunArgs a;
  a.persistent = absl::MakeConstSpan(persistentPtrs_);
  a.feeds = feeds;
  a.step = options.step;
  a.checkNumerics = options.checkNumerics;
  a.gradientOverflow = options.gradientOverflow;
  a.communicator = options.communicator;
  return a;
}

int64_t Session::workspaceBytes() const {
  int64_t bytes = 0;
  for (const auto& [name, entry] : prepared_) bytes += entry->workspaceBytes();
  return bytes + executor_->sharedWorkspaceBytes();
}

static bool isIntegral(DType t) { return t == DType::I64 || t == DType::I32 || t == DType::U8; }

absl::Status Session::bindFeeds(const std::map<std::string, Tensor>& feeds, const RunOptions& options,
                               std::vector<Tensor>& converted, std::vector<const Tensor*>& bound) const {
  const Plan& p = *plan_;
  converted.assign(p.buffers.size(), Tensor());
  bound.assign(p.buffers.size(), nullptr);
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    const BufferDesc& b = p.buffers[i];
    if (b.kind != BufferKind::Input && b.kind != BufferKind::Label) continue;
    auto it = feeds.find(b.name);
    if (it == feeds.end())
      return absl::InvalidArgumentError(absl::StrCat("missing ", std::string(bufferKindName(b.kind)), " '", b.name,
                                                     "' (", std::string(dtypeName(b.dtype)), " ",
                                                     shapeToString(b.shape), ")"));
    const Tensor& fed = it->second;
    if (fed.shape() != b.shape)
      return absl::InvalidArgumentError(absl::StrCat(std::string(bufferKindName(b.kind)), " '", b.name,
                                                     "': expected shape ", shapeToString(b.shape), ", got ",
                                                     shapeToString(fed.shape())));
    if (options.checkNumerics && isFloat(fed.dtype()))
      for (int64_t e = 0; e < fed.numel(); ++e)
        if (!std::isfinite(loadAsF32(fed.dtype(), fed.data(), e)))
          return absl::OutOfRangeError(absl::StrCat(std::string(bufferKindName(b.kind)), " '", b.name,
                                                    "' holds a non-finite value at element ", e));
    if (fed.dtype() == b.dtype) {
      bound[i] = &fed;
    } else if ((isFloat(fed.dtype()) && isFloat(b.dtype)) || (isIntegral(fed.dtype()) && isIntegral(b.dtype))) {
      converted[i] = Tensor(b.dtype, b.shape);
      convertBuffer(fed.dtype(), fed.data(), b.dtype, converted[i].data(), fed.numel());
      bound[i] = &converted[i];
    } else {
      return absl::InvalidArgumentError(absl::StrCat(std::string(bufferKindName(b.kind)), " '", b.name,
                                                     "': expected ", std::string(dtypeName(b.dtype)), ", got ",
                                                     std::string(dtypeName(fed.dtype()))));
    }
  }
  return absl::OkStatus();
}

absl::Status Session::runBound(PreparedEntry& entry, absl::Span<const Tensor* const> bound, const RunOptions& options) {
  // Devices update state in place; a numerics failure may stop a call after an update, so a
  // checked call keeps a copy of params and state to restore (all or nothing, as documented). A
  // device holding its own copies (cuda) is synced first and given the restored values after.
  std::vector<Tensor> snapshot;
  if (options.checkNumerics) {
    if (auto s = syncPersistent(); !s.ok()) return s;
    snapshot = persistent_;
  }
  if (auto status = entry.run(args(bound, options)); !status.ok()) {
    for (size_t i = 0; i < snapshot.size(); ++i)
      if (persistentPtrs_[i]) std::memcpy(persistent_[i].data(), snapshot[i].data(), persistent_[i].nbytes());
    if (DeviceResidency* r = executor_->residency(); r && !snapshot.empty()) r->persistentChanged();
    return status;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<NamedTensor>> Session::run(std::string_view entryName,
                                                      const std::map<std::string, Tensor>& feeds,
                                                      const RunOptions& options) {
  auto entry = prepared(entryName);
  if (!entry.ok()) return entry.status();
  const Plan& p = *plan_;
  std::vector<Tensor> converted;
  std::vector<const Tensor*> bound;
  if (auto s = bindFeeds(feeds, options, converted, bound); !s.ok()) return s;
  if (auto s = runBound(**entry, bound, options); !s.ok()) return s;
  const EntryPoint& e = *p.findEntry(entryName);
  std::vector<NamedTensor> out;
  for (size_t r = 0; r < e.results.size(); ++r) {
    const BufferDesc& b = p.buffers[e.results[r]];
    Tensor t(b.dtype, b.shape);
    // An empty result may have no storage at all (resultData null): memcpy must not see it.
    if (t.nbytes()) std::memcpy(t.data(), (*entry)->resultData(r), t.nbytes());
    out.push_back({e.resultNames[r], std::move(t)});
  }
  return out;
}

absl::StatusOr<EntryProfile> Session::profile(std::string_view entryName, const std::map<std::string, Tensor>& feeds,
                                              const RunOptions& options, int calls) {
  auto entry = prepared(entryName);
  if (!entry.ok()) return entry.status();
  if (calls < 1) return absl::InvalidArgumentError("profile at least one call");
  std::vector<Tensor> converted;
  std::vector<const Tensor*> bound;
  if (auto s = bindFeeds(feeds, options, converted, bound); !s.ok()) return s;
  // The values before: synced from the device and kept, written back after the profiled calls.
  if (auto s = syncPersistent(); !s.ok()) return s;
  std::vector<Tensor> snapshot = persistent_;
  EntryProfiler* profiler = (*entry)->profiler();
  if (!profiler)
    return absl::UnimplementedError(absl::StrCat("the ", std::string(deviceName(executor_->device())),
                                                 " device has no profiler"));
  auto result = profiler->profile(args(bound, options), calls);
  for (size_t i = 0; i < snapshot.size(); ++i)
    if (persistentPtrs_[i]) std::memcpy(persistent_[i].data(), snapshot[i].data(), persistent_[i].nbytes());
  if (DeviceResidency* r = executor_->residency()) r->persistentChanged();
  return result;
}

Session::EntryLog& Session::logOf(std::string_view entryName) {
  auto it = logs_.find(entryName);
  if (it == logs_.end()) {
    EntryLog log;
    log.entry = plan_->findEntry(entryName);
    log.layout = scalarLogLayout(*plan_, *log.entry);
    it = logs_.emplace(std::string(entryName), std::move(log)).first;
  }
  return it->second;
}

absl::Status Session::enqueue(std::string_view entryName, const std::map<std::string, Tensor>& feeds,
                              const RunOptions& options, int64_t ticket) {
  auto entry = prepared(entryName);
  if (!entry.ok()) return entry.status();
  std::vector<Tensor> converted;
  std::vector<const Tensor*> bound;
  if (auto s = bindFeeds(feeds, options, converted, bound); !s.ok()) return s;
  EntryLog& log = logOf(entryName);
  if (AsyncEntry* async = (*entry)->async(); async && !options.checkNumerics)
    return async->enqueue(args(bound, options), ticket);
  std::vector<uint8_t> bytes(static_cast<size_t>(log.layout.bytes), 0);
  auto logState = [&](ScalarLogItem::When when) {
    for (const ScalarLogItem& item : log.layout.items)
      if (item.when == when)
        std::memcpy(bytes.data() + item.offset, persistent_[item.buffer].data(), persistent_[item.buffer].nbytes());
  };
  // A device holding params and state (a checked cuda call runs here) brings them over first, as
  // the checked call's restore point needs anyway, and the logged ones again after the call.
  if (auto s = syncPersistent(); !s.ok()) return s;
  logState(ScalarLogItem::When::Before);
  if (auto s = runBound(**entry, bound, options); !s.ok()) return s;
  for (const ScalarLogItem& item : log.layout.items)
    if (item.when == ScalarLogItem::When::After)
      if (auto s = syncPersistent(item.buffer); !s.ok()) return s;
  logState(ScalarLogItem::When::After);
  for (const ScalarLogItem& item : log.layout.items)
    if (item.when == ScalarLogItem::When::Result)
      std::memcpy(bytes.data() + item.offset, (*entry)->resultData(item.result),
                  static_cast<size_t>(plan_->buffers[item.buffer].byteSize()));
  log.ready.emplace_back(ticket, std::move(bytes));
  return absl::OkStatus();
}

absl::Status Session::poll(std::string_view entryName, bool wait, absl::FunctionRef<void(const LoggedCall&)> deliver) {
  auto it = prepared_.find(entryName);
  if (it == prepared_.end()) return absl::OkStatus();  // never enqueued
  EntryLog& log = logOf(entryName);
  while (!log.ready.empty()) {
    deliver(LoggedCall(*plan_, *log.entry, log.layout, log.ready.front().first, log.ready.front().second));
    log.ready.pop_front();
  }
  AsyncEntry* async = it->second->async();
  if (!async) return absl::OkStatus();  // synchronous calls are all delivered above
  return async->poll(wait, [&](int64_t ticket, absl::Span<const uint8_t> bytes) {
    deliver(LoggedCall(*plan_, *log.entry, log.layout, ticket, bytes));
  });
}

}  // namespace amp::rt
