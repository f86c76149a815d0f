#include "runtime/plan/Attr.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace amp::rt {

std::string_view attrKindName(const AttrValue& v) {
  static constexpr std::string_view kNames[] = {"integer",       "float",       "bool",  "string",
                                                "integer array", "float array", "tensor"};
  static_assert(std::variant_size_v<AttrValue> == 7);
  return kNames[v.index()];
}

const AttrValue* AttrMap::find(std::string_view name) const {
  auto it = map_.find(name);
  return it == map_.end() ? nullptr : &it->second;
}

namespace {

absl::string_view sv(std::string_view s) { return absl::string_view(s.data(), s.size()); }

absl::Status missing(std::string_view op, std::string_view name) {
  return absl::InvalidArgumentError(absl::StrCat(sv(op), ": missing attribute '", sv(name), "'"));
}

absl::Status wrongKind(std::string_view op, std::string_view name, std::string_view want,
                       const AttrValue& got) {
  return absl::InvalidArgumentError(absl::StrCat(sv(op), ": attribute '", sv(name), "' must be ",
                                                 sv(want), ", got ", sv(attrKindName(got))));
}

// Fetches alternative T of the attribute, or explains why it cannot.
template <class T>
absl::StatusOr<const T*> fetch(const AttrMap& m, std::string_view op, std::string_view name,
                               std::string_view want) {
  const AttrValue* v = m.find(name);
  if (!v) return missing(op, name);
  if (const T* p = std::get_if<T>(v)) return p;
  return wrongKind(op, name, want, *v);
}

}  // namespace

absl::StatusOr<int64_t> AttrMap::getInt(std::string_view op, std::string_view name) const {
  auto p = fetch<int64_t>(*this, op, name, "an integer");
  if (!p.ok()) return p.status();
  return **p;
}

absl::StatusOr<double> AttrMap::getDouble(std::string_view op, std::string_view name) const {
  const AttrValue* v = find(name);
  if (!v) return missing(op, name);
  if (const double* d = std::get_if<double>(v)) return *d;
  if (const int64_t* i = std::get_if<int64_t>(v)) return static_cast<double>(*i);
  return wrongKind(op, name, "a float", *v);
}

absl::StatusOr<bool> AttrMap::getBool(std::string_view op, std::string_view name) const {
  auto p = fetch<bool>(*this, op, name, "a bool");
  if (!p.ok()) return p.status();
  return **p;
}

absl::StatusOr<std::string> AttrMap::getString(std::string_view op, std::string_view name) const {
  auto p = fetch<std::string>(*this, op, name, "a string");
  if (!p.ok()) return p.status();
  return **p;
}

absl::StatusOr<std::vector<int64_t>> AttrMap::getInts(std::string_view op,
                                                      std::string_view name) const {
  auto p = fetch<std::vector<int64_t>>(*this, op, name, "an integer array");
  if (!p.ok()) return p.status();
  return **p;
}

absl::StatusOr<std::vector<double>> AttrMap::getDoubles(std::string_view op,
                                                        std::string_view name) const {
  const AttrValue* v = find(name);
  if (!v) return missing(op, name);
  if (const auto* d = std::get_if<std::vector<double>>(v)) return *d;
  if (const auto* i = std::get_if<std::vector<int64_t>>(v))
    return std::vector<double>(i->begin(), i->end());
  return wrongKind(op, name, "a float array", *v);
}

absl::StatusOr<const Tensor*> AttrMap::getTensor(std::string_view op, std::string_view name) const {
  return fetch<Tensor>(*this, op, name, "a tensor");
}

absl::StatusOr<int64_t> AttrMap::getInt(std::string_view op, std::string_view name,
                                        int64_t dflt) const {
  return has(name) ? getInt(op, name) : dflt;
}

absl::StatusOr<double> AttrMap::getDouble(std::string_view op, std::string_view name,
                                          double dflt) const {
  return has(name) ? getDouble(op, name) : dflt;
}

absl::StatusOr<bool> AttrMap::getBool(std::string_view op, std::string_view name, bool dflt) const {
  return has(name) ? getBool(op, name) : dflt;
}

absl::StatusOr<std::string> AttrMap::getString(std::string_view op, std::string_view name,
                                               std::string_view dflt) const {
  return has(name) ? getString(op, name) : std::string(dflt);
}

}  // namespace amp::rt
