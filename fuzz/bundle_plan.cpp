// The bundle target with a structure-aware mutator: the input is still a whole bundle, but most
// mutations parse its safetensors header, take the plan JSON out of __metadata__["ampc.plan"],
// change one to three of its values (a number to an edge value, a string to another string of
// the plan, an array element dropped or duplicated, an object key dropped) and wrap it back
// with the bundle's tensors untouched. Byte-level mutations do not get far past the JSON and
// safetensors checks; these reach plan validation and every device's prepare.
#include <cstring>
#include <random>

#include "fuzz/BundleCheck.h"
#include "fuzz/JsonMutator.h"
#include "runtime/io/Json.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t maxSize);

namespace {

// Splits a safetensors file into (header JSON, data) and back.
bool splitSafetensors(const uint8_t* data, size_t size, std::string& header, std::string& rest) {
  if (size < 8) return false;
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(data[i]) << (8 * i);
  if (n > size - 8) return false;
  header.assign(reinterpret_cast<const char*>(data) + 8, n);
  rest.assign(reinterpret_cast<const char*>(data) + 8 + n, size - 8 - n);
  return true;
}

std::string joinSafetensors(std::string header, const std::string& rest) {
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(uint64_t(header.size()) >> (8 * i));
  return out + header + rest;
}

// Replaces __metadata__["ampc.plan"] of a parsed safetensors header.
amp::rt::JsonValue withPlan(const amp::rt::JsonValue& header, const std::string& plan) {
  amp::rt::JsonValue out = amp::rt::JsonValue::object();
  for (const auto& [key, value] : header.members()) {
    if (key != "__metadata__" || !value.isObject()) {
      out.set(key, value);
      continue;
    }
    amp::rt::JsonValue meta = amp::rt::JsonValue::object();
    for (const auto& [k, v] : value.members()) meta.set(k, k == "ampc.plan" ? amp::rt::JsonValue::string(plan) : v);
    out.set(key, std::move(meta));
  }
  return out;
}

}  // namespace

// The seeds are small-shape bundles of a few MiB at most. A mutated shape up to the general limit
// would be accepted and initialised (hundreds of MiB of Philox draws per input), which costs
// seconds and tests nothing the memory checks do not: this target refuses above 16 MiB instead.
constexpr int64_t kPlanMemoryLimit = int64_t{16} << 20;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static amp::fuzz::MemFile file;
  amp::fuzz::checkBundle(file.set(data, size), kPlanMemoryLimit);
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t maxSize, unsigned int seed) {
  std::minstd_rand rng(seed);
  std::string headerText, rest;
  if (rng() % 8 == 0 || !splitSafetensors(data, size, headerText, rest)) return LLVMFuzzerMutate(data, size, maxSize);
  auto header = amp::rt::parseJson(headerText);
  if (!header.ok()) return LLVMFuzzerMutate(data, size, maxSize);
  const amp::rt::JsonValue* meta = header->find("__metadata__");
  const amp::rt::JsonValue* planText = meta ? meta->find("ampc.plan") : nullptr;
  if (!planText || !planText->isString()) return LLVMFuzzerMutate(data, size, maxSize);
  auto plan = amp::rt::parseJson(planText->asString());
  if (!plan.ok()) return LLVMFuzzerMutate(data, size, maxSize);
  amp::rt::JsonValue mutated = *plan;
  for (int k = 1 + rng() % 3; k > 0; --k) mutated = amp::fuzz::mutateJson(mutated, rng);
  std::string out = joinSafetensors(amp::rt::writeJson(withPlan(*header, amp::rt::writeJson(mutated))), rest);
  if (out.size() > maxSize) return LLVMFuzzerMutate(data, size, maxSize);
  std::memcpy(data, out.data(), out.size());
  return out.size();
}
