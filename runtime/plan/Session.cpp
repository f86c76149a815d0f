#include "runtime/plan/Session.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "runtime/numerics/Convert.h"
#include "runtime/plan/Init.h"

namespace amp::rt {

std::string_view deviceName(Device d) {
  switch (d) {
    case Device::Reference: return "reference";
  }
  return "?";
}

absl::StatusOr<Device> parseDevice(std::string_view name) {
  if (name == "reference") return Device::Reference;
  if (name == "cpu" || name == "cuda")
    return absl::UnimplementedError(absl::StrCat(
        "device '", std::string(name), "' is not available in this build yet; use --device=reference"));
  return absl::InvalidArgumentError(
      absl::StrCat("unknown device '", std::string(name), "' (expected reference, cpu or cuda)"));
}

absl::StatusOr<Session> Session::create(Plan plan, Device device) {
  Session s(std::move(plan), device);
  s.persistent_.resize(s.plan_.buffers.size());
  for (size_t i = 0; i < s.plan_.buffers.size(); ++i) {
    const BufferDesc& b = s.plan_.buffers[i];
    if (b.kind == BufferKind::State && b.init && b.init->kind == "cast") continue;  // below
    if (b.kind == BufferKind::Param || (b.kind == BufferKind::State && b.init)) {
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
    } else if (b.kind == BufferKind::State) {
      s.persistent_[i] = Tensor(b.dtype, b.shape);
    }
  }
  if (auto status = s.refreshCasts(); !status.ok()) return status;
  return s;
}

absl::Status Session::refreshCasts() {
  for (size_t i = 0; i < plan_.buffers.size(); ++i) {
    const BufferDesc& b = plan_.buffers[i];
    if (b.kind != BufferKind::State || !b.init || b.init->kind != "cast") continue;
    auto source = plan_.findBuffer(b.init->from);
    if (!source || plan_.buffers[*source].kind != BufferKind::Param || plan_.buffers[*source].shape != b.shape)
      return absl::InvalidArgumentError(absl::StrCat("state '", b.name, "' is a cast of '", b.init->from,
                                                     "', which is not a param of the same shape"));
    persistent_[i] = Tensor(b.dtype, b.shape);
    convertBuffer(DType::F32, persistent_[*source].data(), b.dtype, persistent_[i].data(), numElements(b.shape));
  }
  return absl::OkStatus();
}

absl::Status Session::setParams(const std::vector<NamedTensor>& tensors,
                                std::vector<std::string>* loaded) {
  for (const NamedTensor& nt : tensors) {
    auto id = plan_.findBuffer(nt.name);
    if (!id || plan_.buffers[*id].kind != BufferKind::Param)
      return absl::InvalidArgumentError(
          absl::StrCat("parameter file has '", nt.name, "', which is not a param of the model"));
    const BufferDesc& b = plan_.buffers[*id];
    if (nt.tensor.shape() != b.shape || nt.tensor.dtype() != DType::F32)
      return absl::InvalidArgumentError(absl::StrCat(
          "param '", nt.name, "': expected f32 ", shapeToString(b.shape), ", the file has ",
          std::string(dtypeName(nt.tensor.dtype())), " ", shapeToString(nt.tensor.shape())));
    persistent_[*id] = nt.tensor;
    if (loaded) loaded->push_back(nt.name);
  }
  return refreshCasts();  // low-precision copies follow their new masters
}

std::vector<NamedTensorRef> Session::params() const {
  std::vector<NamedTensorRef> out;
  for (size_t i = 0; i < plan_.buffers.size(); ++i)
    if (plan_.buffers[i].kind == BufferKind::Param) out.push_back({plan_.buffers[i].name, &persistent_[i]});
  return out;
}

// Index of the first NaN/inf element of a float tensor, or -1.
static int64_t firstNonFinite(const Tensor& t) {
  if (!isFloat(t.dtype())) return -1;
  for (int64_t i = 0; i < t.numel(); ++i)
    if (!std::isfinite(loadAsF32(t.dtype(), t.data(), i))) return i;
  return -1;
}

std::vector<NamedTensorRef> Session::persistent() const {
  std::vector<NamedTensorRef> out;
  for (size_t i = 0; i < plan_.buffers.size(); ++i) {
    BufferKind k = plan_.buffers[i].kind;
    if (k == BufferKind::Param || k == BufferKind::State) out.push_back({plan_.buffers[i].name, &persistent_[i]});
  }
  return out;
}

absl::Status Session::restore(const std::vector<NamedTensor>& tensors) {
  std::map<std::string, const Tensor*> byName;
  for (const NamedTensor& t : tensors) byName[t.name] = &t.tensor;
  for (size_t i = 0; i < plan_.buffers.size(); ++i) {
    const BufferDesc& b = plan_.buffers[i];
    if (b.kind != BufferKind::Param && b.kind != BufferKind::State) continue;
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
  for (size_t i = 0; i < plan_.buffers.size(); ++i) {
    const BufferDesc& b = plan_.buffers[i];
    if (b.kind == BufferKind::Param || b.kind == BufferKind::State) persistent_[i] = *byName[b.name];
  }
  return absl::OkStatus();
}

static bool isIntegral(DType t) { return t == DType::I64 || t == DType::I32 || t == DType::U8; }

absl::StatusOr<std::vector<NamedTensor>> Session::run(std::string_view entryName,
                                                      const std::map<std::string, Tensor>& feeds,
                                                      const RunOptions& options) {
  const EntryPoint* entry = plan_.findEntry(entryName);
  if (!entry) {
    std::string names;
    for (const EntryPoint& e : plan_.entries) absl::StrAppend(&names, names.empty() ? "" : ", ", e.name);
    return absl::NotFoundError(
        absl::StrCat("the bundle has no entry point '", std::string(entryName), "' (it has: ", names, ")"));
  }
  std::vector<Tensor> temps(plan_.buffers.size());
  std::vector<const Tensor*> bound(plan_.buffers.size(), nullptr);
  for (size_t i = 0; i < plan_.buffers.size(); ++i) {
    const BufferDesc& b = plan_.buffers[i];
    if (b.kind == BufferKind::Param || b.kind == BufferKind::State) {
      bound[i] = &persistent_[i];
    } else if (b.kind == BufferKind::Input || b.kind == BufferKind::Label) {
      auto it = feeds.find(b.name);
      if (it == feeds.end())
        return absl::InvalidArgumentError(absl::StrCat("missing ", std::string(bufferKindName(b.kind)), " '",
                                                       b.name, "' (", std::string(dtypeName(b.dtype)), " ",
                                                       shapeToString(b.shape), ")"));
      const Tensor& fed = it->second;
      if (options.checkNumerics)
        if (int64_t bad = firstNonFinite(fed); bad >= 0)
          return absl::OutOfRangeError(absl::StrCat(std::string(bufferKindName(b.kind)), " '", b.name,
                                                    "' holds a non-finite value at element ", bad));
      if (fed.shape() != b.shape)
        return absl::InvalidArgumentError(absl::StrCat(std::string(bufferKindName(b.kind)), " '", b.name,
                                                       "': expected shape ", shapeToString(b.shape),
                                                       ", got ", shapeToString(fed.shape())));
      if (fed.dtype() == b.dtype) {
        bound[i] = &fed;
      } else if ((isFloat(fed.dtype()) && isFloat(b.dtype)) ||
                 (isIntegral(fed.dtype()) && isIntegral(b.dtype))) {
        temps[i] = Tensor(b.dtype, b.shape);
        convertBuffer(fed.dtype(), fed.data(), b.dtype, temps[i].data(), fed.numel());
        bound[i] = &temps[i];
      } else {
        return absl::InvalidArgumentError(absl::StrCat(std::string(bufferKindName(b.kind)), " '", b.name,
                                                       "': expected ", std::string(dtypeName(b.dtype)), ", got ",
                                                       std::string(dtypeName(fed.dtype()))));
      }
    }
  }

  for (size_t s = 0; s < entry->steps.size(); ++s) {
    const PlanStep& step = entry->steps[s];
    std::vector<const Tensor*> operands;
    for (int32_t id : step.operands) {
      if (!bound[id])
        return absl::InternalError(absl::StrCat("entry '", entry->name, "' step ", s, " (", step.op,
                                                "): operand buffer '", plan_.buffers[id].name,
                                                "' is read before it is written"));
      operands.push_back(bound[id]);
    }
    std::vector<TensorType> types;
    for (int32_t id : step.results) types.push_back({plan_.buffers[id].dtype, plan_.buffers[id].shape});
    auto results = evalReferenceOp(step.op, operands, step.attrs, types, options.ctx);
    if (!results.ok())
      return absl::Status(results.status().code(),
                          absl::StrCat(step.loc.empty() ? "" : step.loc + ": ", "entry '", entry->name,
                                       "' step ", s, ": ", results.status().message()));
    for (size_t r = 0; r < step.results.size(); ++r) {
      int32_t id = step.results[r];
      if (options.checkNumerics) {
        if (int64_t bad = firstNonFinite((*results)[r]); bad >= 0)
          return absl::OutOfRangeError(absl::StrCat(
              step.loc.empty() ? "" : step.loc + ": ", "entry '", entry->name, "' step ", s, " (",
              step.op, ") produced a non-finite value at element ", bad, " of '",
              plan_.buffers[id].name, "' (", std::string(dtypeName(plan_.buffers[id].dtype)),
              "); its operands were finite"));
      }
      temps[id] = std::move((*results)[r]);
      bound[id] = &temps[id];
    }
  }

  // Commit persistent updates only now, so a failing step changes nothing.
  for (const auto& [from, to] : entry->updates) {
    if (!bound[from])
      return absl::InternalError(absl::StrCat("entry '", entry->name, "' updates '",
                                              plan_.buffers[to].name, "' from a buffer nothing wrote"));
  }
  std::vector<Tensor> committed;
  for (const auto& [from, to] : entry->updates) committed.push_back(*bound[from]);
  for (size_t u = 0; u < entry->updates.size(); ++u)
    persistent_[entry->updates[u].second] = std::move(committed[u]);

  std::vector<NamedTensor> out;
  for (size_t r = 0; r < entry->results.size(); ++r) {
    int32_t id = entry->results[r];
    if (!bound[id])
      return absl::InternalError(absl::StrCat("entry '", entry->name, "' returns buffer '",
                                              plan_.buffers[id].name, "' that nothing wrote"));
    out.push_back({entry->resultNames[r], *bound[id]});
  }
  return out;
}

}  // namespace amp::rt
