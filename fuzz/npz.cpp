// readNpz (the hand-written ZIP reader: stored and deflate members, ZIP64, CRC-32) on arbitrary
// bytes. Every member of an accepted archive must round-trip through the .npy encoder.
#include <cstdlib>

#include "fuzz/FuzzCommon.h"
#include "runtime/io/Npy.h"
#include "runtime/io/Npz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static amp::fuzz::MemFile file;
  auto members = amp::rt::readNpz(file.set(data, size));
  if (!members.ok()) return 0;
  for (const amp::rt::NamedTensor& m : *members) {
    auto header = amp::rt::encodeNpyHeader(m.tensor);
    if (!header.ok()) continue;
    std::string again = *header + std::string(reinterpret_cast<const char*>(m.tensor.data()), m.tensor.nbytes());
    auto back = amp::rt::decodeNpy(again, "round trip");
    if (!back.ok() || !back->bitwiseEquals(m.tensor)) std::abort();
  }
  return 0;
}
