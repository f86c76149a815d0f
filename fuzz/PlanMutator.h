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

#include "fuzz/JsonMutator.h"
#include "runtime/io/Json.h"

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
  for (int k = 1 + rng() % 3; k > 0; --k) mutated = mutateJson(mutated, rng);
  std::string out = joinSafetensors(rt::writeJson(withPlan(*header, rt::writeJson(mutated))), rest);
  if (out.size() > maxSize) return LLVMFuzzerMutate(data, size, maxSize);
  std::memcpy(data, out.data(), out.size());
  return out.size();
}

}  // namespace amp::fuzz

#endif  // AMP_FUZZ_PLANMUTATOR_H
