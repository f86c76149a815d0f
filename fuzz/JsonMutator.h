// One structural mutation of a JSON document (the plan inside a bundle): pick a node uniformly
// and change it in a way a hostile or buggy writer could - numbers to edge values or to another
// number of the document, strings to another string of the document, arrays and objects
// shortened, extended or reordered. The result is always valid JSON.
#ifndef AMP_FUZZ_JSONMUTATOR_H
#define AMP_FUZZ_JSONMUTATOR_H

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "runtime/io/Json.h"

namespace amp::fuzz {

namespace json_detail {

using rt::JsonValue;

// Nodes of the document being mutated (it outlives the mutation), by kind.
struct Pools {
  std::vector<const JsonValue*> numbers, strings, values;
};

inline size_t collect(const JsonValue& v, Pools& pools) {
  size_t n = 1;
  if (v.isNumber()) pools.numbers.push_back(&v);
  if (v.isString()) pools.strings.push_back(&v);
  if (!v.isObject() && v.size() < 64) pools.values.push_back(&v);  // leaves and small arrays
  for (const JsonValue& x : v.items()) n += collect(x, pools);
  for (const auto& m : v.members()) n += collect(m.second, pools);
  return n;
}

template <class Rng>
JsonValue mutateNumber(const JsonValue& v, const Pools& pools, Rng& rng) {
  // Wrapping arithmetic (in uint64_t): the mutator itself must not overflow near the edges.
  const uint64_t x = static_cast<uint64_t>(v.asInt64().value_or(0));
  auto wrapped = [](uint64_t u) { return JsonValue::integer(static_cast<int64_t>(u)); };
  switch (rng() % 12) {
    case 0: return wrapped(x + 1);
    case 1: return wrapped(x - 1);
    case 2: return wrapped(0 - x);
    case 3: return wrapped(x * 2);
    case 4: return JsonValue::integer(static_cast<int64_t>(rng() % 8));
    case 5: {
      static const int64_t edges[] = {0, -1, 255, 256, 65535, 65536, int64_t{1} << 31, (int64_t{1} << 31) - 1,
                                      int64_t{1} << 32, int64_t{1} << 36, int64_t{1} << 53, int64_t{1} << 62,
                                      std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()};
      return JsonValue::integer(edges[rng() % (sizeof edges / sizeof edges[0])]);
    }
    case 6: return JsonValue::number(0.5);
    case 7: return JsonValue::number(1e300);
    case 8: return JsonValue::number(-1e-300);
    default: return pools.numbers.empty() ? v : *pools.numbers[rng() % pools.numbers.size()];
  }
}

template <class Rng>
JsonValue mutateNode(const JsonValue& v, const Pools& pools, Rng& rng) {
  if (rng() % 16 == 0 && !pools.values.empty()) return *pools.values[rng() % pools.values.size()];
  switch (v.kind()) {
    case JsonValue::Kind::Null: return JsonValue::integer(0);
    case JsonValue::Kind::Bool: return JsonValue::boolean(!v.asBool());
    case JsonValue::Kind::Number: return mutateNumber(v, pools, rng);
    case JsonValue::Kind::String: {
      if (rng() % 4 == 0) {
        std::string s = v.asString();
        if (!s.empty() && rng() % 2) s.pop_back();
        else s += static_cast<char>('a' + rng() % 26);
        return JsonValue::string(s);
      }
      return pools.strings.empty() ? v : *pools.strings[rng() % pools.strings.size()];
    }
    case JsonValue::Kind::Array: {
      std::vector<JsonValue> items = v.items();
      const size_t n = items.size();
      switch (rng() % 5) {
        case 0: if (n) items.erase(items.begin() + rng() % n); break;
        case 1: if (n) items.insert(items.begin() + rng() % n, items[rng() % n]); break;
        case 2: if (n > 1) std::swap(items[rng() % n], items[rng() % n]); break;
        case 3: items.clear(); break;
        default: if (!pools.values.empty()) items.push_back(*pools.values[rng() % pools.values.size()]); break;
      }
      return JsonValue::array(std::move(items));
    }
    case JsonValue::Kind::Object: {
      std::vector<JsonValue::Member> members = v.members();
      if (!members.empty()) {
        const size_t k = rng() % members.size();
        if (rng() % 2) members.erase(members.begin() + k);
        else members[k].second = JsonValue();  // null where a value is expected
      }
      return JsonValue::object(std::move(members));
    }
  }
  return v;
}

// Copies `v`, replacing the node numbered `target` (pre-order) by a mutation of it.
template <class Rng>
JsonValue rebuild(const JsonValue& v, size_t& counter, size_t target, const Pools& pools, Rng& rng) {
  if (counter++ == target) return mutateNode(v, pools, rng);
  if (v.isArray()) {
    std::vector<JsonValue> items;
    items.reserve(v.size());
    for (const JsonValue& x : v.items()) items.push_back(counter > target ? x : rebuild(x, counter, target, pools, rng));
    return JsonValue::array(std::move(items));
  }
  if (v.isObject()) {
    std::vector<JsonValue::Member> members;
    members.reserve(v.size());
    for (const auto& [k, x] : v.members())
      members.emplace_back(k, counter > target ? x : rebuild(x, counter, target, pools, rng));
    return JsonValue::object(std::move(members));
  }
  return v;
}

}  // namespace json_detail

template <class Rng>
rt::JsonValue mutateJson(const rt::JsonValue& doc, Rng& rng) {
  json_detail::Pools pools;
  const size_t nodes = json_detail::collect(doc, pools);
  size_t counter = 0;
  return json_detail::rebuild(doc, counter, rng() % nodes, pools, rng);
}

}  // namespace amp::fuzz

#endif  // AMP_FUZZ_JSONMUTATOR_H
