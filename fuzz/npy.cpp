// readNpy on arbitrary bytes. An accepted file must round-trip: its header re-encoded by the
// writer decodes to the same tensor.
#include <cstdlib>

#include "fuzz/FuzzCommon.h"
#include "runtime/io/Npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static amp::fuzz::MemFile file;
  auto t = amp::rt::readNpy(file.set(data, size));
  if (!t.ok()) return 0;
  auto header = amp::rt::encodeNpyHeader(*t);
  if (!header.ok()) return 0;  // a dtype numpy has but the writer refuses: not a reader bug
  std::string again = *header + std::string(reinterpret_cast<const char*>(t->data()), t->nbytes());
  auto back = amp::rt::decodeNpy(again, "round trip");
  if (!back.ok() || !back->bitwiseEquals(*t)) std::abort();
  return 0;
}
