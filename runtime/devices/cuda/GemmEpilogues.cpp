#include "runtime/devices/cuda/GemmEpilogues.h"

#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "runtime/numerics/Convert.h"

namespace amp::rt::cuda {
namespace {

// The entry's dataflow: who produces and who reads each buffer, and what leaves the entry.
struct Dataflow {
  std::vector<int64_t> producer;
  std::vector<std::vector<size_t>> readers;
  std::vector<char> escapes;

  Dataflow(const Plan& plan, const EntryPoint& entry)
      : producer(plan.buffers.size(), -1), readers(plan.buffers.size()), escapes(plan.buffers.size(), 0) {
    for (size_t s = 0; s < entry.steps.size(); ++s) {
      for (int32_t id : entry.steps[s].operands) readers[id].push_back(s);
      for (int32_t id : entry.steps[s].results) producer[id] = static_cast<int64_t>(s);
    }
    for (int32_t id : entry.results) escapes[id] = 1;
    for (const auto& [src, tgt] : entry.updates) escapes[src] = escapes[tgt] = 1;
  }
  // Read by exactly step s, once, and not by the caller.
  bool onlyReadBy(int32_t id, size_t s) const { return !escapes[id] && readers[id].size() == 1 && readers[id][0] == s; }
  // Every reader of id comes after step s.
  bool readAfter(int32_t id, size_t s) const {
    for (size_t r : readers[id])
      if (r <= s) return false;
    return true;
  }
};

bool isGemm(const PlanStep& step) { return step.code == OpCode::Matmul || step.code == OpCode::Linear; }

std::string activationOf(const PlanStep& step) {
  auto a = step.attrs.getString(step.op, "activation", "none");
  return a.ok() ? *a : "";
}

// An amp.constant holding +0 (what cuBLASLt writes where the ReLU mask is clear).
bool isPositiveZero(const std::vector<PlanStep>& steps, const Dataflow& flow, int32_t id) {
  if (flow.producer[id] < 0) return false;
  const PlanStep& c = steps[static_cast<size_t>(flow.producer[id])];
  if (c.code != OpCode::Constant) return false;
  auto value = c.attrs.getTensor(c.op, "value");
  if (!value.ok() || (*value)->numel() != 1) return false;
  const float v = loadAsF32((*value)->dtype(), (*value)->data(), 0);
  return v == 0.0f && !std::signbit(v);
}

// A reduce_sum over every dim but the last, into [N]: a bias gradient.
bool isRowSum(const PlanStep& step, const Shape& in, const Shape& out) {
  const AttrMap& attrs = step.attrs;
  if (step.code != OpCode::ReduceSum || in.size() < 2 || attrs.has("keepdim")) return false;
  auto dims = attrs.getInts(step.op, "dims");
  if (!dims.ok() || dims->size() != in.size() - 1) return false;
  for (size_t i = 0; i < dims->size(); ++i)
    if ((*dims)[i] != static_cast<int64_t>(i)) return false;
  return out == Shape{in.back()};
}

// A GEMM step's plan with epilogue e, if cuBLASLt's rules allow it (batch 1, aux alignment).
std::optional<GemmPlan> planned(const Plan& plan, const PlanStep& step, GemmEpilogue e) {
  auto p = gemmProblemOf(plan, step);
  if (!p.ok()) return std::nullopt;
  auto g = planGemm(*p);
  if (!g.ok() || !setTrainingEpilogue(*g, e).ok()) return std::nullopt;
  return *g;
}

// The ReLU backward the fusion pass generates: compare gt(h, +0) -> select(mask, g, +0), then
// optionally a row sum of the selected gradient; yields [selected, (row sum)].
struct ReluBackward {
  int32_t h = -1, grad = -1;
  bool biasGrad = false;
};
std::optional<ReluBackward> matchReluBackward(const Plan& plan, const std::vector<PlanStep>& steps,
                                              const Dataflow& flow, const PlanStep& f) {
  if (f.code != OpCode::Fused || f.body.size() < 2 || f.body.size() > 3) return std::nullopt;
  const int32_t n = static_cast<int32_t>(f.operands.size());
  const PlanStep& cmp = f.body[0];
  const PlanStep& sel = f.body[1];
  auto pred = cmp.attrs.getString(cmp.op, "predicate");
  if (cmp.code != OpCode::Compare || !pred.ok() || *pred != "gt" || cmp.operands.size() != 2 || cmp.results.size() != 1)
    return std::nullopt;
  const int32_t h = cmp.operands[0], zero = cmp.operands[1];
  if (h >= n || zero >= n || !isPositiveZero(steps, flow, f.operands[static_cast<size_t>(zero)])) return std::nullopt;
  if (sel.code != OpCode::Select || sel.operands.size() != 3 || sel.results.size() != 1 || sel.operands[0] != cmp.results[0] ||
      sel.operands[1] >= n || sel.operands[2] != zero)
    return std::nullopt;
  ReluBackward m;
  m.h = f.operands[static_cast<size_t>(h)];
  m.grad = f.operands[static_cast<size_t>(sel.operands[1])];
  std::vector<int32_t> yields = {sel.results[0]};
  if (f.body.size() == 3) {
    const PlanStep& red = f.body[2];
    if (red.operands.size() != 1 || red.operands[0] != sel.results[0] || red.results.size() != 1 ||
        !isRowSum(red, f.locals[static_cast<size_t>(sel.results[0])].shape,
                  f.locals[static_cast<size_t>(red.results[0])].shape))
      return std::nullopt;
    yields.push_back(red.results[0]);
    m.biasGrad = true;
  }
  if (f.yields != yields || f.results.size() != yields.size()) return std::nullopt;
  // One type throughout: the GEMMs' D and the bias gradient share it.
  const DType t = plan.buffers[m.h].dtype;
  for (int32_t id : {m.grad, f.results[0]})
    if (plan.buffers[id].dtype != t || plan.buffers[id].shape != plan.buffers[m.h].shape) return std::nullopt;
  if (m.biasGrad && plan.buffers[f.results[1]].dtype != t) return std::nullopt;
  return m;
}

struct Rewriter {
  const Plan& plan;
  std::vector<PlanStep> steps;
  Dataflow flow;
  std::vector<char> dropped;
  std::map<std::string, int> counts;

  Rewriter(const Plan& p, const EntryPoint& entry)
      : plan(p), steps(entry.steps), flow(p, entry), dropped(entry.steps.size(), 0) {}

  bool untouched(size_t s) const { return !dropped[s] && !steps[s].attrs.has(kEpilogueAttr); }
  void mark(PlanStep& step, GemmEpilogue e) {
    step.attrs.set(kEpilogueAttr, std::string(gemmEpilogueName(e)));
    ++counts[std::string(gemmEpilogueName(e))];
  }
  // The step producing `id` when it is an untouched amp.matmul read only by step `reader`.
  std::optional<size_t> dxGemm(int32_t id, size_t reader) const {
    const int64_t p = flow.producer[id];
    if (p < 0 || steps[static_cast<size_t>(p)].code != OpCode::Matmul || !untouched(static_cast<size_t>(p)) ||
        steps[static_cast<size_t>(p)].results.size() != 1 || !flow.onlyReadBy(id, reader))
      return std::nullopt;
    return static_cast<size_t>(p);
  }
  // Whether the forward and backward GEMMs see D with one layout, as the auxiliary matrix needs.
  bool sameLayout(size_t fwd, GemmEpilogue fe, size_t bwd, GemmEpilogue be) const {
    auto f = planned(plan, steps[fwd], fe);
    auto b = planned(plan, steps[bwd], be);
    return f && b && f->m == b->m && f->n == b->n && f->auxLd == b->auxLd;
  }

  void relu() {
    for (size_t s = 0; s < steps.size(); ++s) {
      if (dropped[s]) continue;
      auto m = matchReluBackward(plan, steps, flow, steps[s]);
      if (!m) continue;
      const int64_t l = flow.producer[m->h];
      if (l < 0) continue;
      PlanStep& fwd = steps[static_cast<size_t>(l)];
      if (fwd.code != OpCode::Linear || activationOf(fwd) != "relu" || fwd.results.size() != 1) continue;
      const bool bias = fwd.operands.size() == 3;
      const GemmEpilogue fe = bias ? GemmEpilogue::ReluAuxBias : GemmEpilogue::ReluAux;
      const GemmEpilogue be = m->biasGrad ? GemmEpilogue::DReluBgrad : GemmEpilogue::DRelu;
      auto b = dxGemm(m->grad, s);
      if (!b || (!untouched(static_cast<size_t>(l)) && !fwd.attrs.has(kReluMaskAttr)) || !sameLayout(static_cast<size_t>(l), fe, *b, be))
        continue;
      if (!fwd.attrs.has(kEpilogueAttr)) {
        mark(fwd, fe);
        fwd.attrs.set(kReluMaskAttr, static_cast<int64_t>(m->h));
      }
      PlanStep& dx = steps[*b];
      dx.results = steps[s].results;
      dx.attrs.set(kReluMaskAttr, static_cast<int64_t>(m->h));
      mark(dx, be);
      dropped[s] = 1;
    }
  }

  void gelu() {
    for (size_t s = 0; s < steps.size(); ++s) {
      const PlanStep& g = steps[s];
      auto approx = g.attrs.getString(g.op, "approximate", "none");
      if (dropped[s] || g.code != OpCode::Gelu || !approx.ok() || *approx != "tanh" || g.operands.size() != 1 || g.results.size() != 1)
        continue;
      const int32_t pre = g.operands[0];
      const int64_t l = flow.producer[pre];
      if (l < 0 || !untouched(static_cast<size_t>(l))) continue;
      PlanStep& fwd = steps[static_cast<size_t>(l)];
      if (fwd.code != OpCode::Linear || activationOf(fwd) != "none" || fwd.results.size() != 1 ||
          plan.buffers[pre].dtype != plan.buffers[g.results[0]].dtype)
        continue;
      const bool bias = fwd.operands.size() == 3;
      // The backward's gelu_grad steps, each fed by a dX GEMM of its own.
      std::vector<std::pair<size_t, size_t>> grads;  // (gelu_grad, its dX GEMM)
      bool keepsInput = flow.escapes[pre] != 0, ok = true;
      for (size_t r : flow.readers[pre]) {
        if (r == s) continue;
        keepsInput = true;  // read again: the GEMM writes the GELU input as its aux matrix
        const PlanStep& q = steps[r];
        auto qa = q.attrs.getString(q.op, "approximate", "none");
        if (q.code != OpCode::GeluGrad || !qa.ok() || *qa != "tanh" || q.operands.size() != 2 || q.operands[0] != pre ||
            q.results.size() != 1)
          continue;  // another reader reads it as the plan's buffer
        auto b = dxGemm(q.operands[1], r);
        if (!b || *b < static_cast<size_t>(l) || !sameLayout(static_cast<size_t>(l), GemmEpilogue::GeluAuxBias, *b, GemmEpilogue::DGelu)) {
          ok = false;
          break;
        }
        grads.emplace_back(r, *b);
      }
      if (!ok) continue;
      const GemmEpilogue fe = keepsInput ? (bias ? GemmEpilogue::GeluAuxBias : GemmEpilogue::GeluAux)
                                         : (bias ? GemmEpilogue::GeluBias : GemmEpilogue::None);
      if (fe == GemmEpilogue::None || !planned(plan, fwd, fe)) continue;  // cuBLASLt has no GELU without aux or bias
      fwd.results = {g.results[0]};
      if (keepsInput) fwd.results.push_back(pre);
      mark(fwd, fe);
      dropped[s] = 1;
      for (const auto& [r, b] : grads) {
        PlanStep& dx = steps[b];
        const int32_t dpre = steps[r].results[0];
        dx.operands.push_back(pre);
        dx.results = {dpre};
        dropped[r] = 1;
        // The bias gradient: a lone row sum of dpre, read (like dpre) only after the dX GEMM.
        GemmEpilogue be = GemmEpilogue::DGelu;
        for (size_t k : flow.readers[dpre]) {
          const PlanStep& red = steps[k];
          if (!dropped[k] && red.results.size() == 1 && red.operands.size() == 1 &&
              isRowSum(red, plan.buffers[dpre].shape, plan.buffers[red.results[0]].shape) &&
              plan.buffers[red.results[0]].dtype == plan.buffers[dpre].dtype && flow.readAfter(red.results[0], b)) {
            dx.results.push_back(red.results[0]);
            dropped[k] = 1;
            be = GemmEpilogue::DGeluBgrad;
            break;
          }
        }
        mark(dx, be);
      }
    }
  }

  // The buffer a reshape (an alias step) views, or id itself.
  int32_t viewed(int32_t id) const {
    const int64_t p = flow.producer[id];
    if (p >= 0 && steps[static_cast<size_t>(p)].kind == StepKind::Alias && steps[static_cast<size_t>(p)].operands.size() == 1)
      return viewed(steps[static_cast<size_t>(p)].operands[0]);
    return id;
  }

  void biasGrad() {
    for (size_t k = 0; k < steps.size(); ++k) {
      const PlanStep& red = steps[k];
      if (dropped[k] || red.operands.size() != 1 || red.results.size() != 1 ||
          !isRowSum(red, plan.buffers[red.operands[0]].shape, plan.buffers[red.results[0]].shape) ||
          plan.buffers[red.results[0]].dtype != plan.buffers[red.operands[0]].dtype)
        continue;
      const int32_t v = red.operands[0], db = red.results[0];
      for (size_t w = 0; w < steps.size(); ++w) {
        PlanStep& mm = steps[w];
        auto ta = mm.attrs.getBool(mm.op, "transpose_a", false);
        auto tb = mm.attrs.getBool(mm.op, "transpose_b", false);
        if (mm.code != OpCode::Matmul || !untouched(w) || mm.operands.size() != 2 || mm.results.size() != 1 || !ta.ok() ||
            !tb.ok() || !*ta || *tb || !flow.readAfter(db, w))
          continue;
        // dW = x^T dy: cuBLASLt's A is the step's b, its B the step's a (GemmPlan.h); both are
        // summed over k, the rows of dy.
        const GemmEpilogue e = viewed(mm.operands[1]) == v   ? GemmEpilogue::BgradA
                               : viewed(mm.operands[0]) == v ? GemmEpilogue::BgradB
                                                             : GemmEpilogue::None;
        auto g = e == GemmEpilogue::None ? std::nullopt : planned(plan, mm, e);
        if (!g || (e == GemmEpilogue::BgradA ? g->m : g->n) != plan.buffers[db].numel() ||
            plan.buffers[db].dtype != g->dtype)
          continue;
        mm.results.push_back(db);
        mark(mm, e);
        dropped[k] = 1;
        break;
      }
    }
  }
};

}  // namespace

absl::StatusOr<GemmEpilogue> requestedEpilogue(const PlanStep& step) {
  if (!step.attrs.has(kEpilogueAttr)) return GemmEpilogue::None;
  auto name = step.attrs.getString(step.op, kEpilogueAttr);
  if (!name.ok()) return name.status();
  if (auto e = parseGemmEpilogue(*name)) return *e;
  return absl::InvalidArgumentError(absl::StrCat("unknown cuBLASLt epilogue \"", *name, "\""));
}

absl::StatusOr<GemmProblem> gemmProblemOf(const Plan& plan, const PlanStep& step) {
  const bool linear = step.code == OpCode::Linear;
  if (!isGemm(step) || step.operands.size() < 2)
    return absl::InvalidArgumentError("expected the GEMM's operands");
  const BufferDesc& x = plan.buffers[step.operands[0]];
  const BufferDesc& w = plan.buffers[step.operands[1]];
  if (linear) {
    auto tw = step.attrs.getBool(step.op, "transpose_w", true);
    if (!tw.ok()) return tw.status();
    auto activation = step.attrs.getString(step.op, "activation", "none");
    if (!activation.ok()) return activation.status();
    if (*activation != "none" && *activation != "relu")
      return absl::InvalidArgumentError(absl::StrCat("activation \"", *activation, "\" has no cuBLASLt epilogue"));
    return linearProblem(x.dtype, x.shape, w.shape, *tw, step.operands.size() == 3, *activation == "relu");
  }
  auto ta = step.attrs.getBool(step.op, "transpose_a", false);
  auto tb = step.attrs.getBool(step.op, "transpose_b", false);
  if (!ta.ok()) return ta.status();
  if (!tb.ok()) return tb.status();
  GemmProblem p;
  p.dtype = x.dtype;
  p.a = x.shape;
  p.b = w.shape;
  p.transA = *ta;
  p.transB = *tb;
  return p;
}

std::optional<EpilogueRewrite> fuseGemmEpilogues(const Plan& plan, const EntryPoint& entry) {
  Rewriter r(plan, entry);
  r.relu();
  r.gelu();
  r.biasGrad();
  if (r.counts.empty()) return std::nullopt;
  EpilogueRewrite out;
  out.entry.name = entry.name;
  out.entry.results = entry.results;
  out.entry.resultNames = entry.resultNames;
  out.entry.updates = entry.updates;
  int removed = 0;
  for (size_t s = 0; s < r.steps.size(); ++s) {
    if (r.dropped[s]) {
      ++removed;
      continue;
    }
    out.entry.steps.push_back(std::move(r.steps[s]));
    out.planStep.push_back(s);
  }
  std::string list;
  for (const auto& [name, n] : r.counts) absl::StrAppend(&list, list.empty() ? "" : ", ", n, " ", name);
  out.summary = absl::StrCat("cuBLASLt training epilogues: ", list, "; ", removed, " step(s) folded into GEMMs");
  return out;
}

}  // namespace amp::rt::cuda
