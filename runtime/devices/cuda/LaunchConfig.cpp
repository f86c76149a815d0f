#include "runtime/devices/cuda/LaunchConfig.h"

#include <algorithm>

namespace amp::rt::cuda {

int64_t workItems(int64_t elements, int vectorWidth) {
  if (elements <= 0) return 0;
  const int64_t width = std::max(vectorWidth, 1);
  return (elements + width - 1) / width;
}

LaunchConfig gridStrideLaunch(int64_t workItems, int multiprocessors) {
  LaunchConfig config;
  if (workItems <= 0) return config;
  const int64_t cap = int64_t{std::max(multiprocessors, 1)} * kBlocksPerMultiprocessor;
  config.blocks = std::min((workItems + kBlockThreads - 1) / kBlockThreads, cap);
  return config;
}

}  // namespace amp::rt::cuda
