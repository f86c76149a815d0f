#include "runtime/devices/cpu/kernels/CopyBandwidth.h"

#include <chrono>
#include <cstring>
#include <memory>
#include <new>

#include "runtime/devices/cpu/kernels/Parallel.h"

namespace amp::rt::cpu {

double measureCopyBandwidth(int64_t bytes, int repeats) {
  constexpr int64_t kGrain = int64_t{1} << 20;  // a thread's slice is at least 1 MiB
  std::unique_ptr<uint8_t[]> a(new (std::nothrow) uint8_t[bytes]), b(new (std::nothrow) uint8_t[bytes]);
  if (!a || !b) return 0;
  // Touched by the threads that copy them, so pages land where those threads run.
  parallelFor(bytes, kGrain, [&](int64_t begin, int64_t end) {
    std::memset(a.get() + begin, 1, end - begin);
    std::memset(b.get() + begin, 0, end - begin);
  });
  double best = 0;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    parallelFor(bytes, kGrain, [&](int64_t begin, int64_t end) { std::memcpy(b.get() + begin, a.get() + begin, end - begin); });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (s > 0 && 2.0 * bytes / s / 1e9 > best) best = 2.0 * bytes / s / 1e9;
  }
  return best;
}

}  // namespace amp::rt::cpu
