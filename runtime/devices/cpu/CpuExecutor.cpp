#include "runtime/devices/cpu/CpuExecutor.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"
#include "runtime/schema/CpuFeatures.h"
#include "runtime/devices/cpu/CpuReport.h"
#include "runtime/devices/cpu/CpuStep.h"
#include "runtime/devices/cpu/NativeCode.h"
#include "runtime/devices/cpu/SharedArena.h"
#include "runtime/devices/cpu/kernels/CopyBandwidth.h"
#include "runtime/exec/NumericsCheck.h"
#include "runtime/exec/StepProfile.h"
#include "runtime/reference/ReferenceExecutor.h"
#include "runtime/numerics/Convert.h"
#include "runtime/plan/MemoryLayout.h"
#include "runtime/plan/MemoryPlan.h"
#include "runtime/plan/PlanValidation.h"
#include "runtime/plan/StepScratch.h"

namespace amp::rt {
namespace cpu {
namespace {

// A step without a cpu kernel: the reference kernel on copies of its operands. Correct for every
// op, but it allocates; EntryReport::referenceOps lists such steps.
class ReferenceStep final : public CpuStep {
 public:
  ReferenceStep(const Plan& plan, const PlanStep& step, const int64_t* callStep, Communicator* const* communicator)
      : plan_(plan), step_(step), callStep_(callStep), communicator_(communicator) {}
  absl::Status run(BufferPtrs ptr) override {
    std::vector<Tensor> operands;
    std::vector<const Tensor*> refs;
    operands.reserve(step_.operands.size());
    for (int32_t id : step_.operands) {
      const BufferDesc& b = plan_.buffers[id];
      operands.emplace_back(b.dtype, b.shape);
      std::memcpy(operands.back().data(), ptr[id], operands.back().nbytes());
    }
    for (const Tensor& t : operands) refs.push_back(&t);
    EvalContext ctx;
    ctx.step = *callStep_;
    ctx.communicator = *communicator_;
    auto results = evalReferenceStep(plan_, step_, refs, ctx);
    if (!results.ok()) return results.status();
    for (size_t r = 0; r < step_.results.size(); ++r)
      std::memcpy(ptr[step_.results[r]], (*results)[r].data(), (*results)[r].nbytes());
    return absl::OkStatus();
  }

 private:
  const Plan& plan_;
  const PlanStep& step_;
  const int64_t* callStep_;
  Communicator* const* communicator_;
};

std::string where(const EntryPoint& entry, size_t s) {
  const PlanStep& step = entry.steps[s];
  return absl::StrCat(step.loc.empty() ? "" : step.loc + ": ", "entry '", entry.name, "' step ", s);
}

class CpuEntry final : public PreparedEntry, public EntryProfiler {
 public:
  CpuEntry(const Plan& plan, const EntryPoint& entry, std::shared_ptr<SharedArena> arena)
      : plan_(plan), entry_(entry), arena_(std::move(arena)) {}

  absl::Status prepare(const CpuFeatures& features, const NativeLibrary* native) {
    const size_t count = plan_.buffers.size();
    ptr_.assign(count, nullptr);
    steps_.resize(entry_.steps.size());
    report_.steps = static_cast<int64_t>(entry_.steps.size());
    for (std::string_view count : kCountsInOrder) report_.add(count, 0);
    for (size_t s = 0; s < entry_.steps.size(); ++s) {
      const PlanStep& step = entry_.steps[s];
      const std::optional<OpCode> code = step.code;  // resolved by Session::create
      if (!code) return absl::InvalidArgumentError(absl::StrCat(where(entry_, s), ": '", step.op, "' is not an amp op"));
      if (*code == OpCode::Reshape) {
        if (step.operands.size() != 1 || step.results.size() != 1 ||
            plan_.buffers[step.operands[0]].dtype != plan_.buffers[step.results[0]].dtype ||
            plan_.buffers[step.operands[0]].numel() != plan_.buffers[step.results[0]].numel())
          return absl::InvalidArgumentError(
              absl::StrCat(where(entry_, s), ": amp.reshape: the result must have the operand's element type and count"));
        report_.add(kViewSteps);  // the memory plan makes it a view of its operand
        continue;
      }
      if (*code == OpCode::Constant) {
        auto status = prepareConstant(s);
        if (!status.ok()) return status;
        continue;
      }
      StepContext c{plan_, step, *code, features, &callStep_, native, &callCommunicator_};
      std::unique_ptr<CpuStep> prepared;
      const StepFactories factories = factoriesFor(*code);
      for (StepFactory factory : {factories.first, factories.then}) {
        if (!factory) break;
        auto made = factory(c);
        if (!made.ok())
          return absl::Status(made.status().code(), absl::StrCat(where(entry_, s), ": ", made.status().message()));
        if (*made) {
          prepared = std::move(*made);
          break;
        }
      }
      if (prepared) {
        report_.add(kOwnSteps);
        if (std::string_view count = prepared->reportCount(); !count.empty()) report_.add(count);
      } else {
        prepared = std::make_unique<ReferenceStep>(plan_, step, &callStep_, &callCommunicator_);
        ++report_.referenceSteps;
        report_.referenceOps.push_back(step.op);
      }
      steps_[s] = std::move(prepared);
    }
    // The bundle's layout once it is proven sound for this entry; plans built in memory without
    // one get the same planner's layout here.
    auto planned = entryMemoryPlan(plan_, entry_);
    if (!planned.ok()) return planned.status();
    MemoryPlan memory = std::move(*planned);
    inPlace_ = memory.inPlaceUpdates;
    report_.add(kInPlaceUpdates, static_cast<int64_t>(inPlace_.size()));
    // Views (reshapes, elementwise results over a dying operand) resolve in step order, so a view
    // of a view, or of a persistent buffer, sees its source's storage of the current call.
    for (size_t s = 0; s < entry_.steps.size(); ++s)
      for (int32_t id : entry_.steps[s].results)
        if (memory.aliasOf[id] >= 0) {
          aliases_.emplace_back(id, memory.aliasOf[id]);
          aliasStep_.push_back(s);
        }
    report_.add(kInPlaceResults, static_cast<int64_t>(aliases_.size()) - report_.count(kViewSteps));
    report_.arenaBytes = memory.arenaBytes;
    report_.add(kUnplannedBytes, memory.unplannedBytes);
    // Each step's run-only scratch goes into arena bytes no buffer live at that step holds
    // (runtime/plan/StepScratch.h); what the arena grows by for it counts as scratch.
    std::vector<int64_t> scratchPerStep(steps_.size(), 0);
    for (size_t s = 0; s < steps_.size(); ++s)
      if (steps_[s]) {
        privateScratchBytes_ += steps_[s]->scratchBytes();
        scratchPerStep[s] = steps_[s]->sharedScratchBytes();
      }
    const StepScratch scratch = placeStepScratch(plan_, memory, scratchPerStep);
    // The arena is the executor's, shared with its other entries (SharedArena.h).
    if (auto status = arena_->reserve(scratch.arenaBytes); !status.ok()) return status;
    report_.scratchBytes = privateScratchBytes_ + scratch.arenaBytes - memory.arenaBytes;
    for (size_t id = 0; id < count; ++id)
      if (memory.offset[id] >= 0) arenaBuffers_.emplace_back(static_cast<int32_t>(id), memory.offset[id]);
    for (size_t s = 0; s < steps_.size(); ++s)
      if (scratch.offset[s] >= 0) scratchOffset_.emplace_back(s, scratch.offset[s]);
    for (auto& [id, data] : constants_) ptr_[id] = data.data();
    bindArena();
    return absl::OkStatus();
  }

  absl::Status run(const RunArgs& args) override { return runSteps(args, nullptr); }

  EntryProfiler* profiler() override { return this; }
  // Each profiled call runs as a normal call does, with a clock read around every step.
  absl::StatusOr<EntryProfile> profile(const RunArgs& args, int calls) override {
    auto profile = profileHostCalls(plan_, entry_, calls, [&](double* stepMs) { return runSteps(args, stepMs); });
    if (profile.ok()) profile->copyGbPerS = measureCopyBandwidth();
    return profile;
  }

  const void* resultData(size_t r) const override { return ptr_[entry_.results[r]]; }
  // What the entry holds alone; the shared arena is CpuExecutor::sharedWorkspaceBytes.
  int64_t workspaceBytes() const override {
    int64_t constants = 0;
    for (const auto& [id, data] : constants_) constants += static_cast<int64_t>(data.size());
    return privateScratchBytes_ + constants;
  }
  const EntryReport& report() const override { return report_; }

 private:
  // One call; with `stepMs`, each step's time goes to stepMs[step].
  absl::Status runSteps(const RunArgs& args, double* stepMs) {
    if (boundGeneration_ != arena_->generation()) bindArena();  // an entry prepared later grew it
    callStep_ = args.step;
    callCommunicator_ = args.communicator;
    for (size_t id = 0; id < plan_.buffers.size(); ++id) {
      if (args.persistent[id]) ptr_[id] = args.persistent[id]->data();
      else if (args.feeds[id]) ptr_[id] = const_cast<uint8_t*>(args.feeds[id]->data());
    }
    for (const auto& [src, tgt] : inPlace_) ptr_[src] = ptr_[tgt];
    size_t nextAlias = 0;
    for (size_t s = 0; s < steps_.size(); ++s) {
      // Aliases are resolved in step order: a reshape of a reshape sees its source's storage.
      while (nextAlias < aliasStep_.size() && aliasStep_[nextAlias] <= s) {
        const auto& [id, source] = aliases_[nextAlias++];
        ptr_[id] = ptr_[source];
      }
      if (!steps_[s]) continue;
      const ProfileClock::time_point start = stepMs ? ProfileClock::now() : ProfileClock::time_point{};
      absl::Status status = steps_[s]->run(ptr_.data());
      if (stepMs) stepMs[s] = profileMsSince(start);
      if (!status.ok()) return absl::Status(status.code(), absl::StrCat(where(entry_, s), ": ", status.message()));
      if (args.checkNumerics) {
        for (int32_t id : entry_.steps[s].results) {
          const BufferDesc& b = plan_.buffers[id];
          if (int64_t bad = firstNonFinite(b.dtype, ptr_[id], b.numel()); bad >= 0)
            if (auto st = nonFiniteResult(plan_, entry_, s, id, bad, args.gradientOverflow); !st.ok()) return st;
        }
      }
    }
    while (nextAlias < aliases_.size()) {
      const auto& [id, source] = aliases_[nextAlias++];
      ptr_[id] = ptr_[source];
    }
    for (const auto& [src, tgt] : entry_.updates)
      if (ptr_[src] != ptr_[tgt]) std::memcpy(ptr_[tgt], ptr_[src], static_cast<size_t>(plan_.buffers[tgt].byteSize()));
    return absl::OkStatus();
  }

  // Points the arena's buffers and the steps' scratch at the shared arena's current storage.
  void bindArena() {
    uint8_t* base = arena_->base();
    for (const auto& [id, offset] : arenaBuffers_) ptr_[id] = base + offset;
    for (const auto& [s, offset] : scratchOffset_) steps_[s]->bindSharedScratch(base + offset);
    boundGeneration_ = arena_->generation();
  }

  absl::Status prepareConstant(size_t s) {
    const PlanStep& step = entry_.steps[s];
    auto value = step.withAttrsOf<ConstantAttrs>([](const auto& a) { return a.value.get(); });
    if (!value.ok()) return absl::Status(value.status().code(), absl::StrCat(where(entry_, s), ": ", value.status().message()));
    if (step.results.size() != 1 || !step.operands.empty() || (*value)->shape() != plan_.buffers[step.results[0]].shape)
      return absl::InvalidArgumentError(absl::StrCat(where(entry_, s), ": amp.constant: the value's shape must be the result's"));
    const BufferDesc& b = plan_.buffers[step.results[0]];
    std::vector<uint8_t> data(static_cast<size_t>(b.byteSize()) + 1);  // +1: never empty, so data() is valid
    convertBuffer((*value)->dtype(), (*value)->data(), b.dtype, data.data(), b.numel());
    constants_.emplace_back(step.results[0], std::move(data));
    return absl::OkStatus();
  }

  const Plan& plan_;
  const EntryPoint& entry_;
  std::vector<std::unique_ptr<CpuStep>> steps_;  // null for alias and constant steps
  std::vector<uint8_t*> ptr_;                    // storage of every buffer in the current call
  std::vector<std::pair<int32_t, int32_t>> aliases_;  // (view, its source), in step order
  std::vector<size_t> aliasStep_;                     // the step of each alias
  std::vector<std::pair<int32_t, int32_t>> inPlace_;  // (update source, persistent target)
  std::vector<std::pair<int32_t, std::vector<uint8_t>>> constants_;
  // The executor's arena (the entry's buffers and every step's scratch) and where in it they are.
  std::shared_ptr<SharedArena> arena_;
  std::vector<std::pair<int32_t, int64_t>> arenaBuffers_;  // (buffer, offset)
  std::vector<std::pair<size_t, int64_t>> scratchOffset_;  // (step, offset of its scratch)
  uint64_t boundGeneration_ = 0;
  int64_t privateScratchBytes_ = 0;  // what steps keep themselves (CpuStep::scratchBytes)
  int64_t callStep_ = 0;
  Communicator* callCommunicator_ = nullptr;
  EntryReport report_;
};

class CpuExecutor final : public Executor {
 public:
  Device device() const override { return Device::Cpu; }
  std::string description() const override {
    const CpuFeatures& f = CpuFeatures::host();
    const std::string& mask = CpuFeatures::maskLevel();
    const std::string masked =
        mask.empty() ? "" : absl::StrCat(" (AMP_CPU_FEATURES=", mask, "; the machine is ", CpuFeatures::detected().isaLevel(), ")");
    return absl::StrCat("cpu: ", f.isaLevel(), masked, ", ", f.summary(), "; ", omp_get_max_threads(),
                        " threads; bf16 GEMMs ",
                        f.nativeBf16()  ? "native (oneDNN)"
                        : f.avx512_bf16 ? "native below 64 MFLOP, widened to f32 above (faster on Intel avx512_bf16 without amx_bf16)"
                                        : "widened to f32");
  }
  absl::StatusOr<std::unique_ptr<PreparedEntry>> prepare(const Plan& plan, const EntryPoint& entry) override {
    if (auto s = validateEntryStructure(plan, entry); !s.ok()) return s;
    // The code object is loaded once per plan (a session prepares several entries of one plan).
    if (nativePlan_ != &plan) {
      auto native = NativeLibrary::load(plan, CpuFeatures::host());
      if (!native.ok()) return native.status();
      native_ = std::move(*native);
      nativePlan_ = &plan;
    }
    auto prepared = std::make_unique<CpuEntry>(plan, entry, arena_);
    if (auto s = prepared->prepare(CpuFeatures::host(), native_.get()); !s.ok()) return s;
    return std::unique_ptr<PreparedEntry>(std::move(prepared));
  }
  int64_t sharedWorkspaceBytes() const override { return arena_->bytes(); }
  // The ISA of the loaded fused kernels ("" when none were loaded).
  std::string nativeIsa() const { return native_ ? native_->isa() : ""; }

 private:
  // Shared by every entry this executor prepares, which run one at a time; held by each entry
  // too, so the order entries and executor are destroyed in does not matter.
  std::shared_ptr<SharedArena> arena_ = std::make_shared<SharedArena>();
  std::unique_ptr<NativeLibrary> native_;
  const Plan* nativePlan_ = nullptr;
};

}  // namespace

}  // namespace cpu

absl::StatusOr<std::unique_ptr<Executor>> makeCpuExecutor() {
  if (const std::string& why = CpuFeatures::maskError(); !why.empty())
    return absl::InvalidArgumentError(absl::StrCat("cpu device: ", why));
  return std::unique_ptr<Executor>(std::make_unique<cpu::CpuExecutor>());
}

}  // namespace amp::rt
