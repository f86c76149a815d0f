#include "runtime/plan/Bundle.h"

#include <cmath>
#include <functional>

#include "absl/strings/str_cat.h"
#include "runtime/io/AtomicFile.h"
#include "runtime/io/Safetensors.h"
#include "runtime/plan/CodeRecords.h"
#include "runtime/plan/Provenance.h"

namespace amp::rt {
namespace {

constexpr const char* kFormatKey = "ampc.format";
constexpr const char* kFormatValue = "ampx";
constexpr const char* kVersionKey = "ampc.version";
constexpr const char* kPlanKey = "ampc.plan";

// The plan is written through one template, to text (JsonWriter), to text handed on in pieces
// (PieceWriter) or to a tree (JsonBuilder). flushPoint marks where a piece may end.
struct PieceBuffer {
  std::string text;
};
class PieceWriter : private PieceBuffer, public JsonWriter {
 public:
  PieceWriter(const std::function<void(std::string_view)>& piece, int indent)
      : JsonWriter(text, indent), piece_(piece) {}
  void flushPoint(size_t atLeast = 1 << 20) {
    if (text.size() < atLeast) return;
    piece_(text);
    text.clear();
  }

 private:
  const std::function<void(std::string_view)>& piece_;
};
void flushPoint(JsonWriter&) {}
void flushPoint(JsonBuilder&) {}
void flushPoint(PieceWriter& out) { out.flushPoint(); }

template <typename Out, typename Int>
void writeInts(Out& out, const std::vector<Int>& v) {
  out.beginArray();
  for (Int x : v) out.integer(x);
  out.endArray();
}

// Attributes are tagged so that kinds survive the round trip exactly (1 vs 1.0, [] of ints).
template <typename Out>
void writeAttr(Out& out, const AttrValue& value, const std::string& tensorName, std::vector<NamedTensorRef>* tensors) {
  out.beginObject();
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>) out.key("i").integer(v);
        else if constexpr (std::is_same_v<T, double>) out.key("f").number(v);
        else if constexpr (std::is_same_v<T, bool>) out.key("b").boolean(v);
        else if constexpr (std::is_same_v<T, std::string>) out.key("s").string(v);
        else if constexpr (std::is_same_v<T, std::vector<int64_t>>) writeInts(out.key("ints"), v);
        else if constexpr (std::is_same_v<T, std::vector<double>>) {
          out.key("floats").beginArray();
          for (double x : v) out.number(x);
          out.endArray();
        } else {
          tensors->push_back({tensorName, &v});
          out.key("tensor").string(tensorName);
        }
      },
      value);
  out.endObject();
}

template <typename Out>
void writePairs(Out& out, const std::vector<std::pair<int32_t, int32_t>>& pairs) {
  out.beginArray();
  for (const auto& [x, y] : pairs) out.beginArray().integer(x).integer(y).endArray();
  out.endArray();
}

template <typename Out>
void writeLayout(Out& out, const MemoryLayout& layout) {
  out.beginObject();
  out.key("arena_bytes").integer(layout.arenaBytes);
  out.key("alignment").integer(layout.alignment);
  out.key("offsets").beginArray();
  for (const auto& [id, offset] : layout.offsets) out.beginArray().integer(id).integer(offset).endArray();
  out.endArray();
  writePairs(out.key("views"), layout.views);
  writePairs(out.key("in_place_updates"), layout.inPlaceUpdates);
  out.endObject();
}

// Error helper: "<source>: entry 'eval' step 3 (amp.matmul): <problem>".
struct Where {
  const std::string& source;
  std::string context;
  absl::Status error(absl::string_view problem) const {
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", context, context.empty() ? "" : ": ", problem));
  }
};

absl::StatusOr<std::vector<int64_t>> readInts(const JsonValue* v, const Where& w, absl::string_view what) {
  if (!v || !v->isArray()) return w.error(absl::StrCat("'", what, "' must be an array of integers"));
  std::vector<int64_t> out;
  for (const JsonValue& x : v->items()) {
    auto i = x.asInt64();
    if (!i) return w.error(absl::StrCat("'", what, "' must hold integers only"));
    out.push_back(*i);
  }
  return out;
}

absl::StatusOr<std::vector<int32_t>> readIds(const JsonValue* v, size_t numBuffers, const Where& w,
                                             absl::string_view what) {
  auto ints = readInts(v, w, what);
  if (!ints.ok()) return ints.status();
  std::vector<int32_t> out;
  for (int64_t i : *ints) {
    if (i < 0 || static_cast<size_t>(i) >= numBuffers)
      return w.error(absl::StrCat("'", what, "' refers to buffer ", i, " but the plan has ",
                                  numBuffers, " buffers"));
    out.push_back(static_cast<int32_t>(i));
  }
  return out;
}

// [[a, b], ...] with two buffer ids per pair.
absl::StatusOr<std::vector<std::pair<int32_t, int32_t>>> readIdPairs(const JsonValue* v, size_t numBuffers,
                                                                      const Where& w, absl::string_view what) {
  if (!v || !v->isArray()) return w.error(absl::StrCat("'", what, "' must be an array of pairs"));
  std::vector<std::pair<int32_t, int32_t>> out;
  for (const JsonValue& p : v->items()) {
    auto ids = readIds(&p, numBuffers, w, what);
    if (!ids.ok()) return ids.status();
    if (ids->size() != 2) return w.error(absl::StrCat("each of '", what, "' is a pair of buffer ids"));
    out.emplace_back((*ids)[0], (*ids)[1]);
  }
  return out;
}

// The entry's "memory" object. Only its form is checked here; whether the layout is sound for the
// entry is adoptMemoryLayout's job, at prepare.
absl::StatusOr<MemoryLayout> layoutFromJson(const JsonValue& o, size_t numBuffers, const Where& w) {
  if (!o.isObject()) return w.error("'memory' must be an object");
  MemoryLayout layout;
  const JsonValue* arena = o.find("arena_bytes");
  const JsonValue* alignment = o.find("alignment");
  if (!arena || !arena->asInt64() || !alignment || !alignment->asInt64())
    return w.error("'memory' needs integers 'arena_bytes' and 'alignment'");
  layout.arenaBytes = *arena->asInt64();
  layout.alignment = *alignment->asInt64();
  const JsonValue* offsets = o.find("offsets");
  if (!offsets || !offsets->isArray()) return w.error("'memory' needs an array 'offsets' of [buffer, offset] pairs");
  for (const JsonValue& p : offsets->items()) {
    auto pair = readInts(&p, w, "memory.offsets");
    if (!pair.ok()) return pair.status();
    if (pair->size() != 2 || (*pair)[0] < 0 || static_cast<size_t>((*pair)[0]) >= numBuffers)
      return w.error("each of 'memory.offsets' is a [buffer id, byte offset] pair with a valid id");
    layout.offsets.emplace_back(static_cast<int32_t>((*pair)[0]), (*pair)[1]);
  }
  auto views = readIdPairs(o.find("views"), numBuffers, w, "memory.views");
  if (!views.ok()) return views.status();
  layout.views = std::move(*views);
  auto inPlace = readIdPairs(o.find("in_place_updates"), numBuffers, w, "memory.in_place_updates");
  if (!inPlace.ok()) return inPlace.status();
  layout.inPlaceUpdates = std::move(*inPlace);
  return layout;
}

absl::StatusOr<AttrValue> attrFromJson(const JsonValue& v, const std::vector<NamedTensor>& tensors,
                                       const Where& w) {
  if (!v.isObject() || v.size() != 1) return w.error("an attribute must be a one-key tagged object");
  const auto& [tag, x] = v.members()[0];
  if (tag == "i") {
    if (auto i = x.asInt64()) return AttrValue(*i);
  } else if (tag == "f") {
    if (x.isNumber()) return AttrValue(x.asDouble());
    if (x.isNull()) return AttrValue(std::numeric_limits<double>::quiet_NaN());
  } else if (tag == "b") {
    if (x.isBool()) return AttrValue(x.asBool());
  } else if (tag == "s") {
    if (x.isString()) return AttrValue(x.asString());
  } else if (tag == "ints") {
    auto ints = readInts(&x, w, "ints");
    if (!ints.ok()) return ints.status();
    return AttrValue(*ints);
  } else if (tag == "floats") {
    if (x.isArray()) {
      std::vector<double> out;
      for (const JsonValue& f : x.items()) out.push_back(f.asDouble());
      return AttrValue(out);
    }
  } else if (tag == "tensor") {
    for (const NamedTensor& t : tensors)
      if (t.name == x.asString()) return AttrValue(t.tensor);
    return w.error(absl::StrCat("attribute refers to tensor '", x.asString(),
                                "' which the bundle does not contain"));
  }
  return w.error(absl::StrCat("attribute tag '", tag, "' with a value of the wrong kind"));
}


// A step; inside a fused body (depth 1) ids are locals, bounded by `numIds`.
absl::StatusOr<PlanStep> stepFromJson(const JsonValue& so, size_t numIds, const std::vector<NamedTensor>& tensors,
                                      const Where& ws, int depth) {
  PlanStep step;
  if (!so.isObject()) return ws.error("a step must be an object");
  const JsonValue* op = so.find("op");
  if (!op || !op->isString()) return ws.error("missing string 'op'");
  step.op = op->asString();
  step.code = opCodeOf(step.op);
  step.kind = stepKindOf(step.op);
  if (const JsonValue* kind = so.find("kind")) {
    auto k = parseStepKind(kind->asString());
    if (!k || *k != step.kind)
      return ws.error(absl::StrCat("step kind '", kind->asString(), "' does not match op ", step.op, " (a ",
                                   std::string(stepKindName(step.kind)), " step)"));
  }
  auto operands = readIds(so.find("operands"), numIds, ws, "operands");
  if (!operands.ok()) return operands.status();
  auto res = readIds(so.find("results"), numIds, ws, "results");
  if (!res.ok()) return res.status();
  step.operands = *operands;
  step.results = *res;
  if (const JsonValue* attrs = so.find("attrs")) {
    if (!attrs->isObject()) return ws.error("'attrs' must be an object");
    for (const auto& [k, v] : attrs->members()) {
      auto value = attrFromJson(v, tensors, ws);
      if (!value.ok()) return value.status();
      step.attrs.set(k, std::move(*value));
    }
  }
  if (const JsonValue* loc = so.find("loc")) step.loc = loc->asString();
  if (const JsonValue* phase = so.find("phase")) {
    step.phase = phase->asString();
    if (step.phase != "forward" && step.phase != "backward" && step.phase != "update")
      return ws.error("'phase' must be forward, backward or update");
  }
  if (step.kind != StepKind::Fused) return step;
  if (depth > 0) return ws.error("a fused region cannot contain another");
  const JsonValue* locals = so.find("locals");
  if (!locals || !locals->isArray()) return ws.error("a fused step needs an array 'locals'");
  for (const JsonValue& lo : locals->items()) {
    const JsonValue* dtype = lo.find("dtype");
    auto t = dtype ? parseDType(dtype->asString()) : std::nullopt;
    if (!t) return ws.error("a fused local needs a known 'dtype'");
    auto shape = readInts(lo.find("shape"), ws, "shape");
    if (!shape.ok()) return shape.status();
    step.locals.push_back({*t, *shape});
  }
  const JsonValue* body = so.find("body");
  if (!body || !body->isArray()) return ws.error("a fused step needs an array 'body'");
  for (size_t b = 0; b < body->size(); ++b) {
    Where wb{ws.source, absl::StrCat(ws.context, " body op ", b)};
    auto inner = stepFromJson(body->items()[b], step.locals.size(), tensors, wb, depth + 1);
    if (!inner.ok()) return inner.status();
    step.body.push_back(std::move(*inner));
  }
  auto yields = readIds(so.find("yields"), step.locals.size(), ws, "yields");
  if (!yields.ok()) return yields.status();
  step.yields = *yields;
  return step;
}

template <typename Out>
void writeStep(Out& out, const PlanStep& step, const std::string& constPrefix, std::vector<NamedTensorRef>* tensors) {
  out.beginObject();
  out.key("op").string(step.op);
  out.key("kind").string(stepKindName(stepKindOf(step.op)));
  writeInts(out.key("operands"), step.operands);
  writeInts(out.key("results"), step.results);
  out.key("attrs").beginObject();
  for (const auto& [name, value] : step.attrs) writeAttr(out.key(name), value, constPrefix + "/" + name, tensors);
  out.endObject();
  if (!step.loc.empty()) out.key("loc").string(step.loc);
  if (!step.phase.empty()) out.key("phase").string(step.phase);
  if (step.is(OpCode::Fused)) {
    out.key("body").beginArray();
    for (size_t b = 0; b < step.body.size(); ++b)
      writeStep(out, step.body[b], absl::StrCat(constPrefix, "/body", b), tensors);
    out.endArray();
    out.key("locals").beginArray();
    for (const LocalValue& v : step.locals) {
      out.beginObject();
      out.key("dtype").string(dtypeName(v.dtype));
      writeInts(out.key("shape"), v.shape);
      out.endObject();
    }
    out.endArray();
    writeInts(out.key("yields"), step.yields);
  }
  out.endObject();
}

template <typename Out>
void writePlan(Out& out, const Plan& plan, std::vector<NamedTensorRef>* tensors) {
  out.beginObject();
  out.key("version").integer(plan.version);
  // A repeated metadata key keeps its first place and its last value (JsonValue::set's rule).
  out.key("metadata").beginObject();
  for (size_t i = 0; i < plan.metadata.size(); ++i) {
    const std::string& k = plan.metadata[i].first;
    bool seenBefore = false;
    for (size_t j = 0; j < i && !seenBefore; ++j) seenBefore = plan.metadata[j].first == k;
    if (seenBefore) continue;
    const std::string* last = &plan.metadata[i].second;
    for (size_t j = i + 1; j < plan.metadata.size(); ++j)
      if (plan.metadata[j].first == k) last = &plan.metadata[j].second;
    out.key(k).string(*last);
  }
  out.endObject();

  out.key("buffers").beginArray();
  for (const BufferDesc& b : plan.buffers) {
    out.beginObject();
    out.key("name").string(b.name);
    out.key("kind").string(bufferKindName(b.kind));
    out.key("dtype").string(dtypeName(b.dtype));
    writeInts(out.key("shape"), b.shape);
    if (b.init) {
      out.key("init").beginObject();
      out.key("kind").string(b.init->kind);
      out.key("scale").number(b.init->scale);
      out.key("seed").integer(b.init->seed);
      if (!b.init->from.empty()) out.key("from").string(b.init->from);
      if (b.init->stored) {
        const std::string tensorName = "init/" + b.name;
        tensors->push_back({tensorName, b.init->stored.get()});
        out.key("tensor").string(tensorName);
      }
      out.endObject();
    }
    if (!b.shardOf.empty()) out.key("shard_of").string(b.shardOf);
    out.endObject();
    flushPoint(out);
  }
  out.endArray();

  out.key("entries").beginArray();
  for (const EntryPoint& e : plan.entries) {
    out.beginObject();
    out.key("name").string(e.name);
    writeInts(out.key("results"), e.results);
    out.key("result_names").beginArray();
    for (const std::string& n : e.resultNames) out.string(n);
    out.endArray();
    out.key("steps").beginArray();
    for (size_t s = 0; s < e.steps.size(); ++s) {
      writeStep(out, e.steps[s], absl::StrCat("const/", e.name, "/", s), tensors);
      flushPoint(out);
    }
    out.endArray();
    out.key("updates").beginArray();
    for (const auto& [from, to] : e.updates) out.beginArray().integer(from).integer(to).endArray();
    out.endArray();
    if (e.memory) writeLayout(out.key("memory"), *e.memory);
    out.endObject();
  }
  out.endArray();
  out.key("code").beginArray();
  for (const CodeObject& c : plan.code) {
    out.beginObject();
    out.key("isa").string(c.isa);
    out.key("sha256").string(c.sha256);
    // "format" is written for the CUDA formats only, so plans of cpu bundles read as before.
    if (c.format != "so") out.key("format").string(c.format);
    out.key("tensor").string(c.tensorName());
    out.key("bytes").integer(static_cast<int64_t>(c.bytes.size()));
    out.endObject();
  }
  out.endArray();
  out.endObject();
}

}  // namespace

JsonValue planToJson(const Plan& plan, std::vector<NamedTensorRef>* tensors) {
  JsonBuilder builder;
  writePlan(builder, plan, tensors);
  return builder.take();
}

void writePlanInPieces(const Plan& plan, std::vector<NamedTensorRef>* tensors,
                       const std::function<void(std::string_view)>& piece, int indent) {
  PieceWriter writer(piece, indent);
  writePlan(writer, plan, tensors);
  writer.flushPoint(/*atLeast=*/0);
}

std::string planJsonText(const Plan& plan, std::vector<NamedTensorRef>* tensors, int indent) {
  std::string text;
  JsonWriter writer(text, indent);
  writePlan(writer, plan, tensors);
  return text;
}

// The initial values a buffer's init names: a tensor of the bundle, f32 of the buffer's shape,
// finite (as --params requires of parameter values).
static absl::StatusOr<std::shared_ptr<const Tensor>> storedInitialValues(const JsonValue& name,
                                                                  const std::vector<NamedTensor>& tensors,
                                                                  const BufferDesc& desc) {
  if (!name.isString()) return absl::InvalidArgumentError("'init' field 'tensor' must be a string");
  for (const NamedTensor& t : tensors) {
    if (t.name != name.asString()) continue;
    if (t.tensor.dtype() != DType::F32 || t.tensor.shape() != desc.shape)
      return absl::InvalidArgumentError(absl::StrCat("initial values '", t.name, "' are ",
                                                     std::string(dtypeName(t.tensor.dtype())), " ", shapeToString(t.tensor.shape()),
                                                     ", the buffer is f32 ", shapeToString(desc.shape)));
    const float* v = t.tensor.as<float>();
    for (int64_t i = 0; i < t.tensor.numel(); ++i)
      if (!std::isfinite(v[i]))
        return absl::InvalidArgumentError(
            absl::StrCat("initial values '", t.name, "' hold a non-finite value at element ", i));
    return std::make_shared<const Tensor>(t.tensor);
  }
  return absl::InvalidArgumentError(absl::StrCat("'init' refers to tensor '", name.asString(), "', which the bundle lacks"));
}

absl::StatusOr<Plan> planFromJson(const JsonValue& json, const std::vector<NamedTensor>& tensors,
                                  const std::string& source) {
  Where top{source, "plan"};
  if (!json.isObject()) return top.error("the plan must be a JSON object");
  Plan plan;
  const JsonValue* version = json.find("version");
  if (!version || !version->asInt64()) return top.error("missing integer 'version'");
  if (*version->asInt64() != kPlanFormatVersion)
    return top.error(absl::StrCat("plan format version ", *version->asInt64(),
                                  " is not supported by this runtime (it reads version ",
                                  kPlanFormatVersion, "); recompile the model with this ampc"));
  if (const JsonValue* meta = json.find("metadata"); meta && meta->isObject())
    for (const auto& [k, v] : meta->members()) plan.metadata.emplace_back(k, v.asString());
  if (auto config = TrainingConfig::decode(plan.metadata); !config.ok()) return top.error(config.status().message());

  const JsonValue* buffers = json.find("buffers");
  if (!buffers || !buffers->isArray()) return top.error("missing array 'buffers'");
  for (size_t i = 0; i < buffers->size(); ++i) {
    const JsonValue& b = buffers->items()[i];
    Where w{source, absl::StrCat("buffer ", i)};
    BufferDesc desc;
    const JsonValue* name = b.find("name");
    const JsonValue* kind = b.find("kind");
    const JsonValue* dtype = b.find("dtype");
    if (!name || !name->isString() || !kind || !dtype)
      return w.error("needs string fields 'name', 'kind' and 'dtype'");
    desc.name = name->asString();
    auto k = parseBufferKind(kind->asString());
    if (!k) return w.error(absl::StrCat("unknown buffer kind '", kind->asString(), "'"));
    desc.kind = *k;
    auto t = parseDType(dtype->asString());
    if (!t) return w.error(absl::StrCat("unknown dtype '", dtype->asString(), "'"));
    desc.dtype = *t;
    auto shape = readInts(b.find("shape"), w, "shape");
    if (!shape.ok()) return shape.status();
    for (int64_t d : *shape)
      if (d < 0) return w.error("negative dimension in 'shape'");
    desc.shape = *shape;
    if (const JsonValue* init = b.find("init")) {
      InitSpec spec;
      const JsonValue* ik = init->find("kind");
      if (!ik || !ik->isString()) return w.error("'init' needs a string 'kind'");
      spec.kind = ik->asString();
      if (const JsonValue* s = init->find("scale")) spec.scale = s->asDouble();
      if (const JsonValue* s = init->find("seed")) spec.seed = s->asInt64().value_or(0);
      if (const JsonValue* s = init->find("from")) spec.from = s->asString();
      if (const JsonValue* t = init->find("tensor")) {
        auto stored = storedInitialValues(*t, tensors, desc);
        if (!stored.ok()) return w.error(std::string(stored.status().message()));
        spec.stored = std::move(*stored);
      }
      if ((spec.kind == "stored") != (spec.stored != nullptr))
        return w.error("an 'init' of kind 'stored' and only that one names its values' 'tensor'");
      desc.init = spec;
    }
    if (const JsonValue* of = b.find("shard_of")) {
      if (!of->isString() || of->asString().empty()) return w.error("'shard_of' must name a param");
      desc.shardOf = of->asString();
    }
    plan.buffers.push_back(std::move(desc));
  }

  const JsonValue* entries = json.find("entries");
  if (!entries || !entries->isArray()) return top.error("missing array 'entries'");
  for (const JsonValue& e : entries->items()) {
    EntryPoint entry;
    const JsonValue* name = e.find("name");
    if (!name || !name->isString()) return top.error("an entry point has no 'name'");
    entry.name = name->asString();
    Where w{source, absl::StrCat("entry '", entry.name, "'")};
    auto results = readIds(e.find("results"), plan.buffers.size(), w, "results");
    if (!results.ok()) return results.status();
    entry.results = *results;
    if (const JsonValue* names = e.find("result_names"); names && names->isArray())
      for (const JsonValue& n : names->items()) entry.resultNames.push_back(n.asString());
    if (entry.resultNames.size() != entry.results.size())
      return w.error("'result_names' must name every result");
    const JsonValue* steps = e.find("steps");
    if (!steps || !steps->isArray()) return w.error("missing array 'steps'");
    for (size_t s = 0; s < steps->size(); ++s) {
      Where ws{source, absl::StrCat("entry '", entry.name, "' step ", s)};
      auto step = stepFromJson(steps->items()[s], plan.buffers.size(), tensors, ws, /*depth=*/0);
      if (!step.ok()) return step.status();
      entry.steps.push_back(std::move(*step));
    }
    if (const JsonValue* updates = e.find("updates")) {
      if (!updates->isArray()) return w.error("'updates' must be an array of [source, target] pairs");
      for (const JsonValue& u : updates->items()) {
        auto pair = readIds(&u, plan.buffers.size(), w, "updates");
        if (!pair.ok()) return pair.status();
        if (pair->size() != 2) return w.error("each update is a [source, target] pair");
        const BufferDesc& from = plan.buffers[(*pair)[0]];
        const BufferDesc& to = plan.buffers[(*pair)[1]];
        if (to.kind != BufferKind::Param && to.kind != BufferKind::State)
          return w.error(absl::StrCat("update target '", to.name, "' is not a param or state buffer"));
        if (from.dtype != to.dtype || from.shape != to.shape)
          return w.error(absl::StrCat("update of '", to.name, "' has a different type than the buffer"));
        entry.updates.emplace_back((*pair)[0], (*pair)[1]);
      }
    }
    if (const JsonValue* memory = e.find("memory")) {
      auto layout = layoutFromJson(*memory, plan.buffers.size(), w);
      if (!layout.ok()) return layout.status();
      entry.memory = std::move(*layout);
    }
    plan.entries.push_back(std::move(entry));
  }
  if (const JsonValue* code = json.find("code")) {
    if (!code->isArray()) return top.error("'code' must be an array");
    for (const JsonValue& co : code->items()) {
      const JsonValue* isa = co.find("isa");
      const JsonValue* sha = co.find("sha256");
      const JsonValue* tensor = co.find("tensor");
      if (!isa || !isa->isString() || !sha || !sha->isString() || !tensor || !tensor->isString())
        return top.error("a code object needs string fields 'isa', 'sha256' and 'tensor'");
      const NamedTensor* bytes = nullptr;
      for (const NamedTensor& t : tensors)
        if (t.name == tensor->asString()) bytes = &t;
      if (!bytes || bytes->tensor.dtype() != DType::U8 || bytes->tensor.rank() != 1)
        return top.error(absl::StrCat("code object '", tensor->asString(), "' is missing or not a u8 vector"));
      const JsonValue* format = co.find("format");
      if (format && (!format->isString() || (format->asString() != "so" && format->asString() != "cubin" &&
                                              format->asString() != "ptx")))
        return top.error("a code object's 'format' must be \"so\", \"cubin\" or \"ptx\"");
      CodeObject c{isa->asString(), sha->asString(),
                   std::vector<uint8_t>(bytes->tensor.data(), bytes->tensor.data() + bytes->tensor.nbytes()),
                   format ? format->asString() : "so"};
      const JsonValue* declared = co.find("bytes");
      if (auto s = checkCodeRecord(c, declared ? declared->asInt64() : std::nullopt, source); !s.ok()) return s;
      plan.code.push_back(std::move(c));
    }
  }
  return plan;
}

absl::Status writeBundle(const std::string& path, const Plan& plan) {
  // The plan's text (hundreds of MB for a 100k-op model) is never held whole: written once to
  // measure it (and list its tensors), then again into the file.
  std::vector<NamedTensorRef> tensors;
  StreamedMetadataValue planText{kPlanKey, 0, nullptr};
  writePlanInPieces(plan, &tensors, [&](std::string_view piece) { planText.escapedSize += jsonEscapedSize(piece); });
  planText.write = [&](const std::function<void(std::string_view)>& piece) {
    std::vector<NamedTensorRef> again;
    writePlanInPieces(plan, &again, piece);
  };
  std::vector<Tensor> code;  // the code objects as u8 tensors (safetensors stores tensors only)
  code.reserve(plan.code.size());
  for (const CodeObject& c : plan.code) {
    code.emplace_back(DType::U8, Shape{static_cast<int64_t>(c.bytes.size())});
    std::copy(c.bytes.begin(), c.bytes.end(), code.back().data());
    tensors.push_back({c.tensorName(), &code.back()});
  }
  // The provenance tag comes first, at a fixed place in the file (ampc seals it: Provenance.h).
  StringMap metadata = {{kAuthMetadataKey, unsealedTag()},
                        {kFormatKey, kFormatValue},
                        {kVersionKey, std::to_string(plan.version)}};
  return writeSafetensors(path, tensors, metadata, planText);
}

namespace {

absl::StatusOr<Plan> planOfContents(absl::StatusOr<SafetensorsContents> contents, const std::string& path);

}  // namespace

absl::StatusOr<Plan> readBundle(const std::string& path) { return planOfContents(readSafetensors(path), path); }

absl::StatusOr<Plan> parseBundle(std::string_view bytes, const std::string& path) {
  return planOfContents(readSafetensorsBytes(bytes, path), path);
}

absl::StatusOr<Plan> readBundle(const std::string& path, std::string* bytes) {
  auto file = InputFile::open(path);
  if (!file.ok()) return file.status();
  auto whole = file->readString(0, file->size());
  if (!whole.ok()) return whole.status();
  *bytes = std::move(*whole);
  return parseBundle(*bytes, path);
}

namespace {

absl::StatusOr<Plan> planOfContents(absl::StatusOr<SafetensorsContents> contents, const std::string& path) {
  if (!contents.ok()) return contents.status();
  std::string format, planText;
  for (const auto& [k, v] : contents->metadata) {
    if (k == kFormatKey) format = v;
    if (k == kPlanKey) planText = v;
  }
  if (format != kFormatValue || planText.empty())
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": not an ampc bundle (a safetensors file without the '", kFormatKey, "' = '",
        kFormatValue, "' and '", kPlanKey, "' metadata); compile one with ampc -o MODEL.ampx"));
  auto json = parseJson(planText, path + " (plan)");
  if (!json.ok()) return json.status();
  return planFromJson(*json, contents->tensors, path);
}

}  // namespace

}  // namespace amp::rt
