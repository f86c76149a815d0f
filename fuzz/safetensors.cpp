// readSafetensors on arbitrary bytes. An accepted file must round-trip: the writer's encoding of
// what was read reads back to the same tensors and metadata.
#include <cstdlib>

#include "fuzz/FuzzCommon.h"
#include "runtime/io/Safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static amp::fuzz::MemFile file, again;
  auto c = amp::rt::readSafetensors(file.set(data, size));
  if (!c.ok()) return 0;
  std::vector<amp::rt::NamedTensorRef> refs;
  for (const amp::rt::NamedTensor& t : c->tensors) refs.push_back({t.name, &t.tensor});
  auto bytes = amp::rt::encodeSafetensors(refs, c->metadata);
  if (!bytes.ok()) return 0;  // e.g. an empty tensor name, which the writer refuses
  auto back = amp::rt::readSafetensors(again.set(reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size()));
  if (!back.ok() || back->metadata != c->metadata || back->tensors.size() != c->tensors.size()) std::abort();
  for (const amp::rt::NamedTensor& t : back->tensors) {
    bool found = false;
    for (const amp::rt::NamedTensor& u : c->tensors)
      if (u.name == t.name) found = u.tensor.bitwiseEquals(t.tensor);
    if (!found) std::abort();
  }
  return 0;
}
