#include "runtime/reference/ReferenceExecutor.h"

#include <cmath>
#include <cstring>
#include <new>

#include "absl/strings/str_cat.h"
#include "runtime/plan/MemoryLayout.h"
#include "runtime/plan/PlanValidation.h"
#include "runtime/exec/NumericsCheck.h"
#include "runtime/exec/StepProfile.h"
#include "runtime/reference/ReferenceKernels.h"
#include "runtime/numerics/Convert.h"

namespace amp::rt {

absl::StatusOr<std::vector<Tensor>> evalReferenceStep(const Plan& plan, const PlanStep& step,
                                                      absl::Span<const Tensor* const> operands,
                                                      const EvalContext& ctx) {
  if (!step.is(OpCode::Fused)) {
    std::vector<TensorType> types;
    for (int32_t id : step.results) types.push_back({plan.buffers[id].dtype, plan.buffers[id].shape});
    return evalReferenceOp(step.op, operands, step.attrs, types, ctx, &step.decoded);
  }
  std::vector<Tensor> owned(step.locals.size());
  std::vector<const Tensor*> local(step.locals.size(), nullptr);
  for (size_t i = 0; i < operands.size() && i < local.size(); ++i) local[i] = operands[i];
  for (const PlanStep& inner : step.body) {
    std::vector<const Tensor*> in;
    for (int32_t id : inner.operands) in.push_back(local[id]);
    std::vector<TensorType> types;
    for (int32_t id : inner.results) types.push_back({step.locals[id].dtype, step.locals[id].shape});
    auto out = evalReferenceOp(inner.op, in, inner.attrs, types, ctx, &inner.decoded);
    if (!out.ok())
      return absl::Status(out.status().code(), absl::StrCat(inner.loc.empty() ? "" : inner.loc + ": ", "in fused ",
                                                           step.op, ": ", out.status().message()));
    for (size_t r = 0; r < inner.results.size(); ++r) {
      owned[inner.results[r]] = std::move((*out)[r]);
      local[inner.results[r]] = &owned[inner.results[r]];
    }
  }
  std::vector<Tensor> results;
  for (int32_t id : step.yields) results.push_back(*local[id]);
  return results;
}

namespace {

class ReferenceEntry final : public PreparedEntry, public EntryProfiler {
 public:
  ReferenceEntry(const Plan& plan, const EntryPoint& entry) : plan_(plan), entry_(entry) {
    report_.steps = report_.referenceSteps = static_cast<int64_t>(entry.steps.size());
    for (const PlanStep& s : entry.steps) report_.referenceOps.push_back(s.op);
  }
  const EntryReport& report() const override { return report_; }

  absl::Status run(const RunArgs& args) override { return runSteps(args, nullptr); }

  EntryProfiler* profiler() override { return this; }
  // Each profiled call runs as a normal call does, with a clock read around every step.
  absl::StatusOr<EntryProfile> profile(const RunArgs& args, int calls) override {
    return profileHostCalls(plan_, entry_, calls, [&](double* stepMs) { return runSteps(args, stepMs); });
  }

 private:
  // One call; with `stepMs`, each step's time goes to stepMs[step].
  absl::Status runSteps(const RunArgs& args, double* stepMs) {
    std::vector<Tensor> temps(plan_.buffers.size());
    std::vector<const Tensor*> bound(plan_.buffers.size(), nullptr);
    for (size_t i = 0; i < plan_.buffers.size(); ++i) bound[i] = args.persistent[i] ? args.persistent[i] : args.feeds[i];
    EvalContext ctx;
    ctx.step = args.step;
    ctx.communicator = args.communicator;
    for (size_t s = 0; s < entry_.steps.size(); ++s) {
      const PlanStep& step = entry_.steps[s];
      std::vector<const Tensor*> operands;
      for (int32_t id : step.operands) {
        if (!bound[id])
          return absl::InternalError(absl::StrCat("entry '", entry_.name, "' step ", s, " (", step.op,
                                                  "): operand buffer '", plan_.buffers[id].name,
                                                  "' is read before it is written"));
        operands.push_back(bound[id]);
      }
      absl::StatusOr<std::vector<Tensor>> results = absl::InternalError("");
      const ProfileClock::time_point start = stepMs ? ProfileClock::now() : ProfileClock::time_point{};
      try {
        results = evalReferenceStep(plan_, step, operands, ctx);
        if (stepMs) stepMs[s] = profileMsSince(start);
      } catch (const std::bad_alloc&) {
        // The oracle allocates each result anew; a machine (or ulimit -v) without room for one
        // gets an error at the step, not an abort.
        int64_t bytes = 0;
        for (int32_t id : step.results) bytes += plan_.buffers[id].byteSize();
        results = absl::ResourceExhaustedError(
            absl::StrCat("out of memory computing ", bytes, " bytes of results (the reference device holds every "
                         "temporary of a call); use a smaller model or batch, or the cpu device"));
      }
      if (!results.ok())
        return absl::Status(results.status().code(),
                            absl::StrCat(step.loc.empty() ? "" : step.loc + ": ", "entry '", entry_.name,
                                         "' step ", s, ": ", results.status().message()));
      for (size_t r = 0; r < step.results.size(); ++r) {
        int32_t id = step.results[r];
        const Tensor& t = (*results)[r];
        if (args.checkNumerics)
          if (int64_t bad = firstNonFinite(t.dtype(), t.data(), t.numel()); bad >= 0)
            if (auto st = nonFiniteResult(plan_, entry_, s, id, bad, args.gradientOverflow); !st.ok()) return st;
        temps[id] = std::move((*results)[r]);
        bound[id] = &temps[id];
      }
    }
    for (const auto& [from, to] : entry_.updates)
      if (!bound[from])
        return absl::InternalError(absl::StrCat("entry '", entry_.name, "' updates '", plan_.buffers[to].name,
                                                "' from a buffer nothing wrote"));
    results_.clear();
    for (int32_t id : entry_.results) {
      if (!bound[id])
        return absl::InternalError(absl::StrCat("entry '", entry_.name, "' returns buffer '",
                                                plan_.buffers[id].name, "' that nothing wrote"));
      results_.push_back(*bound[id]);
    }
    // Commit only now, so a failing step changes nothing. Sources are copied first: an update's
    // source may be another update's target.
    std::vector<Tensor> committed;
    for (const auto& update : entry_.updates) committed.push_back(*bound[update.first]);
    for (size_t u = 0; u < entry_.updates.size(); ++u) {
      Tensor* target = args.persistent[entry_.updates[u].second];
      std::memcpy(target->data(), committed[u].data(), target->nbytes());
    }
    return absl::OkStatus();
  }

 public:
  const void* resultData(size_t r) const override { return results_[r].data(); }
  int64_t workspaceBytes() const override {
    // The interpreter allocates every temporary of a call anew: its footprint is their sum.
    int64_t bytes = 0;
    for (const PlanStep& step : entry_.steps)
      for (int32_t id : step.results) bytes += plan_.buffers[id].byteSize();
    return bytes;
  }

 private:
  const Plan& plan_;
  const EntryPoint& entry_;
  EntryReport report_;
  std::vector<Tensor> results_;
};

class ReferenceExecutor final : public Executor {
 public:
  Device device() const override { return Device::Reference; }
  std::string description() const override { return "reference: scalar op-by-op oracle, 1 thread"; }
  absl::StatusOr<std::unique_ptr<PreparedEntry>> prepare(const Plan& plan, const EntryPoint& entry) override {
    if (auto s = validateEntryStructure(plan, entry); !s.ok()) return s;
    // Every temporary of a call lives until the call ends: refused up front when they cannot fit.
    int64_t temps = 0;
    for (const PlanStep& step : entry.steps)
      for (int32_t id : step.results) temps += plan.buffers[id].byteSize();  // each < 2^36 (validateBuffers)
    if (const int64_t available = availableMemoryBytes(); temps > available)
      return absl::ResourceExhaustedError(absl::StrCat(
          "entry '", entry.name, "': the reference device holds every temporary of a call, ", temps,
          " bytes, more than the ", available, " bytes this process can allocate; use the cpu device"));
    // The oracle allocates every temporary anew and ignores the layout, but a bundle with an
    // unsound one is corrupt: every device refuses it alike.
    if (entry.memory)
      if (auto layout = adoptMemoryLayout(plan, entry, *entry.memory); !layout.ok()) return layout.status();
    return std::unique_ptr<PreparedEntry>(new ReferenceEntry(plan, entry));
  }
};

}  // namespace

std::unique_ptr<Executor> makeReferenceExecutor() { return std::make_unique<ReferenceExecutor>(); }

}  // namespace amp::rt
