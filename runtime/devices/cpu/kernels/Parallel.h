// parallelFor, the cpu device's one parallel loop (steps and kernels alike). OpenMP: oneDNN in
// Debian runs on libgomp too, so library GEMMs and our kernels share one thread pool instead of
// oversubscribing the cores.
#ifndef AMP_RUNTIME_DEVICES_CPU_KERNELS_PARALLEL_H
#define AMP_RUNTIME_DEVICES_CPU_KERNELS_PARALLEL_H

#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace amp::rt::cpu {

// Runs body(begin, end) over [0, n) split across the OpenMP threads when n is large enough to
// pay for the fork; otherwise on the calling thread.
template <class F>
void parallelFor(int64_t n, int64_t grain, F&& body) {
  const int threads = omp_get_max_threads();
  if (threads <= 1 || n < 2 * grain) {
    if (n > 0) body(int64_t{0}, n);
    return;
  }
  const int64_t chunks = std::min<int64_t>(threads, n / grain);
#pragma omp parallel for num_threads(static_cast<int>(chunks)) schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t begin = n * c / chunks, end = n * (c + 1) / chunks;
    body(begin, end);
  }
}

}  // namespace amp::rt::cpu

#endif  // AMP_RUNTIME_DEVICES_CPU_KERNELS_PARALLEL_H
