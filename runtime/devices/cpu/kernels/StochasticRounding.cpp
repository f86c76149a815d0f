#include "runtime/devices/cpu/kernels/StochasticRounding.h"

#include <algorithm>
#include <cstring>

#include "runtime/kernels/math/TrainMath.h"

namespace amp::rt::cpu {

// Integer arithmetic only, so every clone gives the same words; the clones differ in vector width.
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
void philoxGroups(uint64_t seed, uint64_t step, uint64_t firstGroup, int64_t groups, uint32_t* words) {
  constexpr int kLanes = 16;
  for (int64_t g0 = 0; g0 < groups; g0 += kLanes) {
    uint32_t c0[kLanes], c1[kLanes], c2[kLanes], c3[kLanes];
    for (int l = 0; l < kLanes; ++l) {
      const uint64_t g = firstGroup + static_cast<uint64_t>(g0 + l);
      c0[l] = static_cast<uint32_t>(g);
      c1[l] = static_cast<uint32_t>(g >> 32);
      c2[l] = static_cast<uint32_t>(step);
      c3[l] = static_cast<uint32_t>(step >> 32);
    }
    uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
    for (int round = 0; round < 10; ++round) {
      if (round > 0) {
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
      }
      for (int l = 0; l < kLanes; ++l) {
        const uint64_t p0 = 0xD2511F53ull * c0[l], p1 = 0xCD9E8D57ull * c2[l];
        const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1[l] ^ k0;
        const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3[l] ^ k1;
        c1[l] = static_cast<uint32_t>(p1);
        c3[l] = static_cast<uint32_t>(p0);
        c0[l] = n0;
        c2[l] = n2;
      }
    }
    const int n = static_cast<int>(std::min<int64_t>(kLanes, groups - g0));
    for (int l = 0; l < n; ++l) {
      uint32_t* w = words + 4 * (g0 + l);
      w[0] = c0[l], w[1] = c1[l], w[2] = c2[l], w[3] = c3[l];
    }
  }
}

__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
void roundToBf16Stochastic(const float* x, const uint32_t* words, int shift, int64_t n, uint16_t* out) {
  for (int64_t k = 0; k < n; ++k) {
    uint32_t f;
    std::memcpy(&f, &x[k], 4);
    out[k] = amp_sr_bf16(f, words[k] >> shift);
  }
}

}  // namespace amp::rt::cpu
