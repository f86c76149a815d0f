// amp-bench-gelu-erf: the exact GELU and its gradient on each code path this host runs (scalar =
// the reference's libm formula), side by side in one run: ns per element (best of 7, one thread)
// and the exact-fallback rate, on N(0, sigma^2) inputs. Not a test: it prints and asserts nothing.
//
//   amp-bench-gelu-erf [ELEMENTS] [SIGMA]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "runtime/devices/cpu/kernels/GeluExact.h"

using amp::rt::CpuFeatures;
using amp::rt::cpu::VectorPath;

namespace {

template <class F>
double bestNsPerElement(F run, int64_t n) {
  double best = 1e30;
  for (int rep = 0; rep < 7; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, ns / static_cast<double>(n));
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : 1 << 20;
  const float sigma = argc > 2 ? static_cast<float>(std::atof(argv[2])) : 1.0f;
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(n), dy(n), y(n);
  for (int64_t i = 0; i < n; ++i) x[i] = normal(rng) * sigma, dy[i] = normal(rng);
  const VectorPath best = amp::rt::cpu::hostVectorPath(amp::rt::cpu::kGeluErfNeeds);
  std::printf("exact GELU, %lld elements of N(0, %g^2), host %s\n", (long long)n, sigma, CpuFeatures::host().isaLevel().c_str());
  std::printf("%-8s %14s %14s %12s %12s\n", "path", "fwd ns/elem", "grad ns/elem", "fwd exact", "grad exact");
  for (VectorPath path : {VectorPath::Scalar, VectorPath::Avx2, VectorPath::Avx512}) {
    if (static_cast<int>(path) > static_cast<int>(best)) {
      std::printf("%-8s (not on this host)\n", amp::rt::cpu::vectorPathName(path));
      continue;
    }
    int64_t fwdFallbacks = 0, gradFallbacks = 0;
    const double fwd = bestNsPerElement([&] { fwdFallbacks = amp::rt::cpu::geluErfBlock(path, x.data(), y.data(), n); }, n);
    const double grad = bestNsPerElement(
        [&] { gradFallbacks = amp::rt::cpu::geluErfGradBlock(path, x.data(), dy.data(), y.data(), n); }, n);
    std::printf("%-8s %14.2f %14.2f %11.4f%% %11.4f%%\n", amp::rt::cpu::vectorPathName(path), fwd, grad,
                100.0 * fwdFallbacks / n, 100.0 * gradFallbacks / n);
  }
  return 0;
}
