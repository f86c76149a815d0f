#include "runtime/devices/cpu/kernels/HalfTable.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "runtime/numerics/Convert.h"

namespace amp::rt::cpu {

const void* halfTable(std::string_view key, DType dtype, size_t entryBytes, const HalfTableFill& fill) {
  static std::mutex mutex;
  static std::map<std::pair<std::string, int>, std::unique_ptr<uint8_t[]>> tables;
  // Filled under the lock: tables are made while steps are prepared, not while they run.
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<uint8_t[]>& table = tables[{std::string(key), static_cast<int>(dtype)}];
  if (!table) {
    std::vector<uint16_t> bits(kHalfInputs);
    for (int64_t i = 0; i < kHalfInputs; ++i) bits[static_cast<size_t>(i)] = static_cast<uint16_t>(i);
    std::vector<float> x(kHalfInputs);
    convertBuffer(dtype, bits.data(), DType::F32, x.data(), kHalfInputs);
    auto filled = std::make_unique<uint8_t[]>(static_cast<size_t>(kHalfInputs) * entryBytes);
    fill(x.data(), filled.get());
    table = std::move(filled);
  }
  return table.get();
}

}  // namespace amp::rt::cpu
