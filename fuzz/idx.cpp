// readIdx (plain or gzip-compressed IDX, the MNIST container) on arbitrary bytes.
#include <cstdlib>

#include "fuzz/FuzzCommon.h"
#include "runtime/io/Idx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static amp::fuzz::MemFile file;
  auto t = amp::rt::readIdx(file.set(data, size));
  if (t.ok() && t->nbytes() != static_cast<size_t>(t->numel()) * amp::rt::dtypeSize(t->dtype())) std::abort();
  return 0;
}
