// The structure-aware mutator of the bundle-plan and bundle-cuda targets: the input is still a
// whole bundle, but most mutations parse its safetensors header, take the plan JSON out of
// __metadata__["ampc.plan"], change one to three of its values (fuzz/JsonMutator.h) and wrap it
// back with the bundle's tensors untouched. Byte-level mutations (one in eight) do not get far
// past the JSON and safetensors checks; these reach plan validation and every device's prepare.
#ifndef AMP_FUZZ_PLANMUTATOR_H
#define AMP_FUZZ_PLANMUTATOR_H

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "fuzz/JsonMutator.h"
#include "runtime/io/Json.h"
#include "runtime/io/Sha256.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t maxSize);

namespace amp::fuzz {

namespace plan_detail {

// Splits a safetensors file into (header JSON, data) and back.
inline bool splitSafetensors(const uint8_t* data, size_t size, std::string& header, std::string& rest) {
  if (size < 8) return false;
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(data[i]) << (8 * i);
  if (n > size - 8) return false;
  header.assign(reinterpret_cast<const char*>(data) + 8, n);
  rest.assign(reinterpret_cast<const char*>(data) + 8 + n, size - 8 - n);
  return true;
}

inline std::string joinSafetensors(std::string header, const std::string& rest) {
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(uint64_t(header.size()) >> (8 * i));
  return out + header + rest;
}

// Replaces __metadata__["ampc.plan"] of a parsed safetensors header.
inline rt::JsonValue withPlan(const rt::JsonValue& header, const std::string& plan) {
  rt::JsonValue out = rt::JsonValue::object();
  for (const auto& [key, value] : header.members()) {
    if (key != "__metadata__" || !value.isObject()) {
      out.set(key, value);
      continue;
    }
    rt::JsonValue meta = rt::JsonValue::object();
    for (const auto& [k, v] : value.members()) meta.set(k, k == "ampc.plan" ? rt::JsonValue::string(plan) : v);
    out.set(key, std::move(meta));
  }
  return out;
}

// Native code's attack surface (docs/kernels.md, "Threat model"): a fused step's kernel id set to
// a libc name or another step's id, two code records' ISA labels swapped, a record's `bytes` off by
// one, or one byte of a code object flipped with its sha256 recomputed (so the mutation reaches the
// ELF checks rather than stopping at the hash).
inline void mutateNativeCode(rt::JsonValue& plan, const rt::JsonValue& header, std::string& rest, std::minstd_rand& rng) {
  static const char* kNames[] = {"system", "exit", "puts", "abort", "environ", "amp_kernel_table", ""};
  rt::JsonValue entries = rt::JsonValue::array();
  std::vector<std::string> ids;
  if (const rt::JsonValue* es = plan.find("entries"); es && es->isArray())
    for (const rt::JsonValue& e : es->items())
      if (const rt::JsonValue* steps = e.find("steps"); steps && steps->isArray())
        for (const rt::JsonValue& st : steps->items())
          if (const rt::JsonValue* a = st.find("attrs"); a && a->find("symbol") && a->find("symbol")->find("s"))
            ids.push_back(a->find("symbol")->find("s")->asString());
  const rt::JsonValue* code = plan.find("code");
  const int what = static_cast<int>(rng() % 4);
  if (what == 0 && !ids.empty()) {
    const std::string id = rng() % 2 ? kNames[rng() % 7] : ids[rng() % ids.size()];
    size_t target = rng() % ids.size(), k = 0;
    for (const rt::JsonValue& e : plan.find("entries")->items()) {
      // An earlier mutation may have dropped or retyped an entry's steps: keep that entry as is.
      const rt::JsonValue* oldSteps = e.find("steps");
      if (!oldSteps || !oldSteps->isArray()) {
        entries.push(e);
        continue;
      }
      rt::JsonValue steps = rt::JsonValue::array();
      for (rt::JsonValue st : oldSteps->items()) {
        if (const rt::JsonValue* a = st.find("attrs"); a && a->find("symbol") && k++ == target) {
          rt::JsonValue attrs = *a;
          attrs.set("symbol", rt::JsonValue::object({{"s", rt::JsonValue::string(id)}}));
          st.set("attrs", std::move(attrs));
        }
        steps.push(std::move(st));
      }
      rt::JsonValue entry = e;
      entry.set("steps", std::move(steps));
      entries.push(std::move(entry));
    }
    plan.set("entries", std::move(entries));
    return;
  }
  if (!code || !code->isArray() || code->size() == 0) return;
  std::vector<rt::JsonValue> records(code->items().begin(), code->items().end());
  rt::JsonValue& r = records[rng() % records.size()];
  if (what == 1 && records.size() > 1 && records[0].find("isa") && records[1].find("isa")) {
    rt::JsonValue isa = *records[0].find("isa");
    records[0].set("isa", *records[1].find("isa"));
    records[1].set("isa", isa);
  } else if (what == 2 && r.find("bytes") && r.find("bytes")->asInt64()) {
    // Off by one, without overflowing at the ends of int64 (an earlier mutation may put them there).
    const int64_t bytes = *r.find("bytes")->asInt64();
    const bool up = bytes == INT64_MIN || (bytes != INT64_MAX && rng() % 2);
    r.set("bytes", rt::JsonValue::integer(up ? bytes + 1 : bytes - 1));
  } else if (const rt::JsonValue* t = r.find("tensor"); t && header.find(t->asString())) {
    const rt::JsonValue* offsets = header.find(t->asString())->find("data_offsets");
    if (!offsets || !offsets->isArray() || offsets->size() != 2) return;
    const int64_t begin = offsets->items()[0].asInt64().value_or(0), end = offsets->items()[1].asInt64().value_or(0);
    if (begin < 0 || end <= begin || static_cast<size_t>(end) > rest.size()) return;
    rest[begin + rng() % (end - begin)] ^= static_cast<char>(1 + rng() % 255);
    r.set("sha256", rt::JsonValue::string(rt::sha256Hex(reinterpret_cast<const uint8_t*>(rest.data()) + begin,
                                                        static_cast<size_t>(end - begin))));
  }
  rt::JsonValue out = rt::JsonValue::array();
  for (rt::JsonValue& x : records) out.push(std::move(x));
  plan.set("code", std::move(out));
}

}  // namespace plan_detail

// Mutates the bundle in data[0, size) in place (at most maxSize bytes); returns its new size.
inline size_t mutateBundlePlan(uint8_t* data, size_t size, size_t maxSize, unsigned int seed) {
  using namespace plan_detail;
  std::minstd_rand rng(seed);
  std::string headerText, rest;
  if (rng() % 8 == 0 || !splitSafetensors(data, size, headerText, rest)) return LLVMFuzzerMutate(data, size, maxSize);
  auto header = rt::parseJson(headerText);
  if (!header.ok()) return LLVMFuzzerMutate(data, size, maxSize);
  const rt::JsonValue* meta = header->find("__metadata__");
  const rt::JsonValue* planText = meta ? meta->find("ampc.plan") : nullptr;
  if (!planText || !planText->isString()) return LLVMFuzzerMutate(data, size, maxSize);
  auto plan = rt::parseJson(planText->asString());
  if (!plan.ok()) return LLVMFuzzerMutate(data, size, maxSize);
  rt::JsonValue mutated = *plan;
  if (rng() % 4 == 0) mutateNativeCode(mutated, *header, rest, rng);
  else
    for (int k = 1 + rng() % 3; k > 0; --k) mutated = mutateJson(mutated, rng);
  std::string out = joinSafetensors(rt::writeJson(withPlan(*header, rt::writeJson(mutated))), rest);
  if (out.size() > maxSize) return LLVMFuzzerMutate(data, size, maxSize);
  std::memcpy(data, out.data(), out.size());
  return out.size();
}

}  // namespace amp::fuzz

#endif  // AMP_FUZZ_PLANMUTATOR_H
