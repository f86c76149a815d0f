#include "runtime/plan/Bundle.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "runtime/io/Safetensors.h"
#include "runtime/plan/CodeRecords.h"
#include "runtime/plan/Provenance.h"

namespace amp::rt {
namespace {

constexpr const char* kFormatKey = "ampc.format";
constexpr const char* kFormatValue = "ampx";
constexpr const char* kVersionKey = "ampc.version";
constexpr const char* kPlanKey = "ampc.plan";

JsonValue intArray(const std::vector<int64_t>& v) {
  JsonValue a = JsonValue::array();
  for (int64_t x : v) a.push(JsonValue::integer(x));
  return a;
}
JsonValue idArray(const std::vector<int32_t>& v) {
  return intArray(std::vector<int64_t>(v.begin(), v.end()));
}

// Attributes are tagged so that kinds survive the round trip exactly (1 vs 1.0, [] of ints).
JsonValue attrToJson(const AttrValue& value, const std::string& tensorName,
                     std::vector<NamedTensorRef>* tensors) {
  JsonValue out = JsonValue::object();
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>) out.set("i", JsonValue::integer(v));
        else if constexpr (std::is_same_v<T, double>) out.set("f", JsonValue::number(v));
        else if constexpr (std::is_same_v<T, bool>) out.set("b", JsonValue::boolean(v));
        else if constexpr (std::is_same_v<T, std::string>) out.set("s", JsonValue::string(v));
        else if constexpr (std::is_same_v<T, std::vector<int64_t>>) out.set("ints", intArray(v));
        else if constexpr (std::is_same_v<T, std::vector<double>>) {
          JsonValue a = JsonValue::array();
          for (double x : v) a.push(JsonValue::number(x));
          out.set("floats", std::move(a));
        } else {
          tensors->push_back({tensorName, &v});
          out.set("tensor", JsonValue::string(tensorName));
        }
      },
      value);
  return out;
}

JsonValue pairArray(const std::vector<std::pair<int32_t, int32_t>>& pairs) {
  JsonValue a = JsonValue::array();
  for (const auto& [x, y] : pairs) a.push(idArray({x, y}));
  return a;
}

JsonValue layoutToJson(const MemoryLayout& layout) {
  JsonValue o = JsonValue::object();
  o.set("arena_bytes", JsonValue::integer(layout.arenaBytes));
  o.set("alignment", JsonValue::integer(layout.alignment));
  JsonValue offsets = JsonValue::array();
  for (const auto& [id, offset] : layout.offsets) offsets.push(intArray({id, offset}));
  o.set("offsets", std::move(offsets));
  o.set("views", pairArray(layout.views));
  o.set("in_place_updates", pairArray(layout.inPlaceUpdates));
  return o;
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

JsonValue stepToJson(const PlanStep& step, const std::string& constPrefix, std::vector<NamedTensorRef>* tensors) {
  JsonValue so = JsonValue::object();
  so.set("op", JsonValue::string(step.op));
  so.set("kind", JsonValue::string(std::string(stepKindName(stepKindOf(step.op)))));
  so.set("operands", idArray(step.operands));
  so.set("results", idArray(step.results));
  JsonValue attrs = JsonValue::object();
  for (const auto& [name, value] : step.attrs) attrs.set(name, attrToJson(value, constPrefix + "/" + name, tensors));
  so.set("attrs", std::move(attrs));
  if (!step.loc.empty()) so.set("loc", JsonValue::string(step.loc));
  if (!step.phase.empty()) so.set("phase", JsonValue::string(step.phase));
  if (step.op == "amp.fused") {
    JsonValue body = JsonValue::array();
    for (size_t b = 0; b < step.body.size(); ++b)
      body.push(stepToJson(step.body[b], absl::StrCat(constPrefix, "/body", b), tensors));
    so.set("body", std::move(body));
    JsonValue locals = JsonValue::array();
    for (const LocalValue& v : step.locals) {
      JsonValue lo = JsonValue::object();
      lo.set("dtype", JsonValue::string(std::string(dtypeName(v.dtype))));
      lo.set("shape", intArray(v.shape));
      locals.push(std::move(lo));
    }
    so.set("locals", std::move(locals));
    so.set("yields", idArray(step.yields));
  }
  return so;
}

}  // namespace

JsonValue planToJson(const Plan& plan, std::vector<NamedTensorRef>* tensors) {
  JsonValue root = JsonValue::object();
  root.set("version", JsonValue::integer(plan.version));
  JsonValue meta = JsonValue::object();
  for (const auto& [k, v] : plan.metadata) meta.set(k, JsonValue::string(v));
  root.set("metadata", std::move(meta));

  JsonValue buffers = JsonValue::array();
  for (const BufferDesc& b : plan.buffers) {
    JsonValue o = JsonValue::object();
    o.set("name", JsonValue::string(b.name));
    o.set("kind", JsonValue::string(std::string(bufferKindName(b.kind))));
    o.set("dtype", JsonValue::string(std::string(dtypeName(b.dtype))));
    o.set("shape", intArray(b.shape));
    if (b.init) {
      JsonValue init = JsonValue::object();
      init.set("kind", JsonValue::string(b.init->kind));
      init.set("scale", JsonValue::number(b.init->scale));
      init.set("seed", JsonValue::integer(b.init->seed));
      if (!b.init->from.empty()) init.set("from", JsonValue::string(b.init->from));
      if (b.init->stored) {
        const std::string tensorName = "init/" + b.name;
        tensors->push_back({tensorName, b.init->stored.get()});
        init.set("tensor", JsonValue::string(tensorName));
      }
      o.set("init", std::move(init));
    }
    if (!b.shardOf.empty()) o.set("shard_of", JsonValue::string(b.shardOf));
    buffers.push(std::move(o));
  }
  root.set("buffers", std::move(buffers));

  JsonValue entries = JsonValue::array();
  for (const EntryPoint& e : plan.entries) {
    JsonValue eo = JsonValue::object();
    eo.set("name", JsonValue::string(e.name));
    eo.set("results", idArray(e.results));
    JsonValue names = JsonValue::array();
    for (const std::string& n : e.resultNames) names.push(JsonValue::string(n));
    eo.set("result_names", std::move(names));
    JsonValue steps = JsonValue::array();
    for (size_t s = 0; s < e.steps.size(); ++s)
      steps.push(stepToJson(e.steps[s], absl::StrCat("const/", e.name, "/", s), tensors));
    eo.set("steps", std::move(steps));
    JsonValue updates = JsonValue::array();
    for (const auto& [from, to] : e.updates) updates.push(idArray({from, to}));
    eo.set("updates", std::move(updates));
    if (e.memory) eo.set("memory", layoutToJson(*e.memory));
    entries.push(std::move(eo));
  }
  root.set("entries", std::move(entries));
  JsonValue code = JsonValue::array();
  for (const CodeObject& c : plan.code) {
    JsonValue co = JsonValue::object();
    co.set("isa", JsonValue::string(c.isa));
    co.set("sha256", JsonValue::string(c.sha256));
    // "format" is written for the CUDA formats only, so plans of cpu bundles read as before.
    if (c.format != "so") co.set("format", JsonValue::string(c.format));
    co.set("tensor", JsonValue::string(c.tensorName()));
    co.set("bytes", JsonValue::integer(static_cast<int64_t>(c.bytes.size())));
    code.push(std::move(co));
  }
  root.set("code", std::move(code));
  return root;
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
  std::vector<NamedTensorRef> tensors;
  JsonValue json = planToJson(plan, &tensors);
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
                        {kVersionKey, std::to_string(plan.version)},
                        {kPlanKey, writeJson(json)}};
  return writeSafetensors(path, tensors, metadata);
}

absl::StatusOr<Plan> readBundle(const std::string& path) {
  auto contents = readSafetensors(path);
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

}  // namespace amp::rt
