// Attribute values of ops in execution plans, with typed getters whose errors name the op and the
// attribute ("amp.conv2d: missing attribute 'stride'").
#ifndef AMP_RUNTIME_EXEC_ATTR_H
#define AMP_RUNTIME_EXEC_ATTR_H

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/Tensor.h"

namespace amp::rt {

using AttrValue = std::variant<int64_t, double, bool, std::string, std::vector<int64_t>,
                               std::vector<double>, Tensor>;

// "integer", "float", "bool", "string", "integer array", "float array", "tensor".
std::string_view attrKindName(const AttrValue& v);

// Ordered name -> value map. Getters take the op name only to build error messages.
// Numeric promotion: getDouble accepts an integer, getDoubles accepts an integer array; nothing
// else converts (a bool is not an integer, an integer is not a bool).
class AttrMap {
 public:
  AttrMap() = default;
  AttrMap(std::initializer_list<std::pair<const std::string, AttrValue>> init) : map_(init) {}

  void set(std::string name, AttrValue value) { map_.insert_or_assign(std::move(name), std::move(value)); }
  bool has(std::string_view name) const { return map_.find(name) != map_.end(); }
  const AttrValue* find(std::string_view name) const;
  size_t size() const { return map_.size(); }
  auto begin() const { return map_.begin(); }
  auto end() const { return map_.end(); }

  // Required attributes: NotFound-style InvalidArgument when absent, InvalidArgument on kind mismatch.
  absl::StatusOr<int64_t> getInt(std::string_view op, std::string_view name) const;
  absl::StatusOr<double> getDouble(std::string_view op, std::string_view name) const;
  absl::StatusOr<bool> getBool(std::string_view op, std::string_view name) const;
  absl::StatusOr<std::string> getString(std::string_view op, std::string_view name) const;
  absl::StatusOr<std::vector<int64_t>> getInts(std::string_view op, std::string_view name) const;
  absl::StatusOr<std::vector<double>> getDoubles(std::string_view op, std::string_view name) const;
  absl::StatusOr<const Tensor*> getTensor(std::string_view op, std::string_view name) const;

  // Optional attributes: the default when absent, still an error on kind mismatch.
  absl::StatusOr<int64_t> getInt(std::string_view op, std::string_view name, int64_t dflt) const;
  absl::StatusOr<double> getDouble(std::string_view op, std::string_view name, double dflt) const;
  absl::StatusOr<bool> getBool(std::string_view op, std::string_view name, bool dflt) const;
  absl::StatusOr<std::string> getString(std::string_view op, std::string_view name,
                                        std::string_view dflt) const;

 private:
  std::map<std::string, AttrValue, std::less<>> map_;
};

}  // namespace amp::rt

#endif  // AMP_RUNTIME_EXEC_ATTR_H
