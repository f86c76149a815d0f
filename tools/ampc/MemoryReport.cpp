#include "tools/ampc/MemoryReport.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <vector>

#include "runtime/plan/MemoryBreakdown.h"

namespace amp::rt {
namespace {

std::string mib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

// The report's rows: the classes the plan has (runtime/plan/MemoryBreakdown.h), then the entry's
// temporaries.
std::map<std::string, int64_t> reportRows(const Plan& plan, const std::string& entry) {
  std::map<std::string, int64_t> out;
  const ClassBytes classes = bytesByClass(plan);
  for (int c = 0; c < kBufferClasses; ++c)
    if (classes.buffers[c] > 0) out[std::string(bufferClassLabel(static_cast<BufferClass>(c)))] = classes.bytes[c];
  if (const EntryPoint* e = plan.findEntry(entry)) {
    out["temporaries, planned arena"] = plannedArenaBytes(plan, *e);
    out["(temporaries, all at once)"] = temporariesAllAtOnce(plan, *e);
  }
  return out;
}

// Where the step keeps the low-precision copies of its weights (amp-optimizer's weight-copies):
// state written by the optimizer, or casts of the masters in front of each GEMM.
std::string weightCopiesLine(const Plan& plan, const std::string& entry) {
  int64_t stored = 0, storedBytes = 0, casts = 0;
  std::set<std::pair<int32_t, DType>> recastCopies;  // (master, dtype)
  int64_t recastBytes = 0;
  for (const BufferDesc& b : plan.buffers)
    if (classifyBuffer(b) == BufferClass::WeightCopies) ++stored, storedBytes += b.byteSize();
  if (const EntryPoint* e = plan.findEntry(entry))
    for (const PlanStep& s : e->steps) {
      if (!s.is(OpCode::Cast) || s.operands.size() != 1 || s.results.size() != 1) continue;
      const BufferDesc& from = plan.buffers[s.operands[0]];
      const BufferDesc& to = plan.buffers[s.results[0]];
      if (from.kind != BufferKind::Param || (to.dtype != DType::BF16 && to.dtype != DType::F16)) continue;
      ++casts;
      if (recastCopies.insert({s.operands[0], to.dtype}).second) recastBytes += to.byteSize();
    }
  if (stored > 0)
    return "Weight copies: stored (the cuda targets' default, or --weight-copies=stored): " + std::to_string(stored) +
           " low-precision copies are state, written by the optimizer step; the GEMMs read them without a cast.\n";
  if (casts > 0)
    return "Weight copies: recast (--weight-copies=recast, the cpu targets' default): " + std::to_string(casts) +
           " casts of the f32 masters, each just before its use,\nso each copy is an arena temporary; stored "
           "copies would keep " + mib(recastBytes) + " more for one cast pass fewer per use.\n";
  return "";
}

}  // namespace

std::string renderMemoryReport(const Plan& f32, const Plan& amp, const std::string& entry) {
  auto a = reportRows(f32, entry), b = reportRows(amp, entry);
  std::vector<std::string> classes;
  for (const char* c : {"params (f32 masters)", "low-precision weight copies", "optimizer moments",
                        "gradient accumulators", "scaler and counters", "constants", "inputs and labels",
                        "temporaries, planned arena", "(temporaries, all at once)"})
    if (a.count(c) || b.count(c)) classes.push_back(c);
  const ::amp::rt::TrainingConfig config = amp.trainingConfig().value_or(::amp::rt::TrainingConfig());
  const std::string precision(::amp::rt::precisionKeyword(config.precision));
  char line[256];
  std::string s = "Memory report: entry '" + entry + "', f32 vs " + precision +
                  ". Persistent buffers, plus the arena ampc's memory planner assigns to the temporaries\n"
                  "(liveness, reshapes as views, elementwise results over dying operands, optimizer results\n"
                  "written in place): the layout stored in the bundle, which the cpu device allocates.\n";
  if (const std::string ranks = std::to_string(config.shardWorldSize); config.shardWorldSize > 0)
    s += "Per rank of a job of " + ranks + " ranks (--shard-optimizer, ZeRO-1): each rank holds its 1/" + ranks +
         " chunk of the optimizer\nmoments; params, weight copies and temporaries are whole on every rank.\n";
  s += "\n";
  std::snprintf(line, sizeof line, "  %-40s %14s %14s %8s\n", "buffers", "f32", precision.c_str(), "ratio");
  s += line;
  int64_t ta = 0, tb = 0;
  for (const std::string& c : classes) {
    int64_t x = a.count(c) ? a[c] : 0, y = b.count(c) ? b[c] : 0;
    if (c[0] != '(') ta += x, tb += y;
    std::snprintf(line, sizeof line, "  %-40s %14s %14s %8s\n", c.c_str(), mib(x).c_str(), mib(y).c_str(),
                  x ? (std::to_string(static_cast<int>(100.0 * y / x + 0.5)) + "%").c_str() : "-");
    s += line;
  }
  std::snprintf(line, sizeof line, "  %-40s %14s %14s %8s\n", "total", mib(ta).c_str(), mib(tb).c_str(),
                ta ? (std::to_string(static_cast<int>(100.0 * tb / ta + 0.5)) + "%").c_str() : "-");
  s += line;
  const PeakSplit pa = peakSplit(f32, entry), pb = peakSplit(amp, entry);
  if (pa.step >= 0 && pb.step >= 0) {
    auto phaseOf = [](const PeakSplit& p) {
      return "step " + std::to_string(p.step + 1) + "/" + std::to_string(p.steps) + " (" +
             (p.phase.empty() ? std::string("?") : p.phase) + ")";
    };
    s += "\nTemporaries at the arena's peak, by the phase that made them (f32 at " + phaseOf(pa) + ", " + precision +
         " at " + phaseOf(pb) + "):\n";
    auto row = [&](const char* what, int64_t x, int64_t y) {
      std::snprintf(line, sizeof line, "  %-40s %14s %14s %8s\n", what, mib(x).c_str(), mib(y).c_str(),
                    x ? (std::to_string(static_cast<int>(100.0 * y / x + 0.5)) + "%").c_str() : "-");
      s += line;
    };
    row("activations saved for the backward", pa.savedActivations, pb.savedActivations);
    row("other forward values", pa.forwardOther, pb.forwardOther);
    row("gradients and backward values", pa.backward, pb.backward);
    row("optimizer and scaler values", pa.update, pb.update);
    row("live at the peak", pa.live, pb.live);
    row("arena (live + placement gaps)", pa.arena, pb.arena);
  }
  if (precision != "f32") s += weightCopiesLine(amp, entry);
  return s;
}

}  // namespace amp::rt
