#include "tools/ampc/MemoryReport.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <vector>

#include "runtime/plan/MemoryPlan.h"

namespace amp::rt {
namespace {

// Buffer classes a user recognises, from the kind and the naming convention of docs/training-ir.md.
std::string classify(const BufferDesc& b) {
  auto ends = [&](const char* s) {
    std::string suffix = s;
    return b.name.size() > suffix.size() && b.name.compare(b.name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  switch (b.kind) {
    case BufferKind::Param: return "params (f32 masters)";
    case BufferKind::Input:
    case BufferKind::Label: return "inputs and labels";
    case BufferKind::Constant: return "constants";
    case BufferKind::Temp: return "temporaries";
    case BufferKind::State:
      if (b.init && b.init->kind == "cast") return "low-precision weight copies";
      if (ends(".exp_avg") || ends(".exp_avg_sq") || ends(".momentum_buffer")) return "optimizer moments";
      if (ends(".grad_accum")) return "gradient accumulators";
      return "scaler and counters";
  }
  return "other";
}

int64_t bytesOf(const BufferDesc& b) { return numElements(b.shape) * static_cast<int64_t>(dtypeSize(b.dtype)); }

std::string mib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

std::map<std::string, int64_t> bytesByClass(const Plan& plan, const std::string& entry) {
  std::map<std::string, int64_t> out;
  for (const BufferDesc& b : plan.buffers)
    if (b.kind != BufferKind::Temp) out[classify(b)] += bytesOf(b);
  if (const EntryPoint* e = plan.findEntry(entry)) {
    int64_t all = 0;
    for (const PlanStep& s : e->steps)
      for (int32_t id : s.results) all += bytesOf(plan.buffers[id]);
    // The layout the bundle stores and the cpu device allocates (constants decoded outside it).
    out["temporaries, planned arena"] =
        e->memory ? e->memory->arenaBytes : planMemory(plan, *e, constantsOutsideArena(plan, *e)).arenaBytes;
    out["(temporaries, all at once)"] = all;
  }
  return out;
}

// The temporaries live at the entry's peak, by the phase of the step that made them: what the
// arena holds at its fullest, and why.
struct PeakSplit {
  int64_t step = -1, steps = 0, live = 0, arena = 0;
  std::string phase;
  int64_t savedActivations = 0;  // forward values a backward step still reads
  int64_t forwardOther = 0;      // forward values only the forward reads
  int64_t backward = 0;          // gradients and the backward's intermediates
  int64_t update = 0;            // unscale/clip/optimizer/scaler values
};

PeakSplit peakSplit(const Plan& plan, const std::string& entry) {
  PeakSplit out;
  const EntryPoint* e = plan.findEntry(entry);
  if (!e) return out;
  const MemoryPlan memory = planMemory(plan, *e, constantsOutsideArena(plan, *e));
  auto root = [&](int32_t id) {
    while (memory.aliasOf[id] >= 0) id = memory.aliasOf[id];
    return id;
  };
  const int64_t n = static_cast<int64_t>(e->steps.size());
  std::vector<int64_t> def(plan.buffers.size(), -1), last(plan.buffers.size(), -1);
  std::vector<char> readByBackward(plan.buffers.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    const PlanStep& s = e->steps[i];
    for (int32_t r : s.results) {
      int32_t b = root(r);
      if (memory.offset[b] >= 0 && def[b] < 0) def[b] = i;
      last[b] = std::max(last[b], i);
    }
    for (int32_t o : s.operands) {
      int32_t b = root(o);
      last[b] = std::max(last[b], i);
      if (s.phase == "backward") readByBackward[b] = 1;
    }
  }
  for (int32_t r : e->results) last[root(r)] = n;
  std::vector<int64_t> delta(n + 2, 0);
  for (size_t b = 0; b < plan.buffers.size(); ++b)
    if (def[b] >= 0 && memory.offset[b] >= 0) delta[def[b]] += bytesOf(plan.buffers[b]), delta[last[b] + 1] -= bytesOf(plan.buffers[b]);
  int64_t live = 0;
  for (int64_t i = 0; i < n; ++i)
    if ((live += delta[i]) > out.live) out.live = live, out.step = i;
  out.steps = n;
  out.arena = memory.arenaBytes;
  if (out.step < 0) return out;
  out.phase = e->steps[out.step].phase;
  for (size_t b = 0; b < plan.buffers.size(); ++b) {
    if (def[b] < 0 || memory.offset[b] < 0 || def[b] > out.step || last[b] < out.step) continue;
    const std::string& made = e->steps[def[b]].phase;
    const int64_t bytes = bytesOf(plan.buffers[b]);
    if (made == "forward") (readByBackward[b] ? out.savedActivations : out.forwardOther) += bytes;
    else if (made == "backward") out.backward += bytes;
    else out.update += bytes;
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
    if (b.kind == BufferKind::State && b.init && b.init->kind == "cast") ++stored, storedBytes += bytesOf(b);
  if (const EntryPoint* e = plan.findEntry(entry))
    for (const PlanStep& s : e->steps) {
      if (s.op != "amp.cast" || s.operands.size() != 1 || s.results.size() != 1) continue;
      const BufferDesc& from = plan.buffers[s.operands[0]];
      const BufferDesc& to = plan.buffers[s.results[0]];
      if (from.kind != BufferKind::Param || (to.dtype != DType::BF16 && to.dtype != DType::F16)) continue;
      ++casts;
      if (recastCopies.insert({s.operands[0], to.dtype}).second) recastBytes += bytesOf(to);
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
  auto a = bytesByClass(f32, entry), b = bytesByClass(amp, entry);
  std::vector<std::string> classes;
  for (const char* c : {"params (f32 masters)", "low-precision weight copies", "optimizer moments",
                        "gradient accumulators", "scaler and counters", "constants", "inputs and labels",
                        "temporaries, planned arena", "(temporaries, all at once)"})
    if (a.count(c) || b.count(c)) classes.push_back(c);
  const ::amp::rt::TrainingConfig config = amp.trainingConfig().value_or(::amp::rt::TrainingConfig());
  const std::string& precision = config.precision;
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
