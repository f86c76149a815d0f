#include "runtime/numerics/Philox.h"

namespace amp::rt {

std::array<uint32_t, 4> philox4x32_10(const uint32_t key[2], const uint32_t counter[4]) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;  // round multipliers
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;  // Weyl key increments
  uint32_t c0 = counter[0], c1 = counter[1], c2 = counter[2], c3 = counter[3];
  uint32_t k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {  // the key is bumped between rounds, not before the first
      k0 += kW0;
      k1 += kW1;
    }
    const uint64_t p0 = uint64_t(kM0) * c0, p1 = uint64_t(kM1) * c2;
    const uint32_t hi0 = uint32_t(p0 >> 32), lo0 = uint32_t(p0);
    const uint32_t hi1 = uint32_t(p1 >> 32), lo1 = uint32_t(p1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
  }
  return {c0, c1, c2, c3};
}

float uniformFromBits(uint32_t bits) { return float(bits >> 8) * (1.0f / 16777216.0f); }

uint32_t dropoutBits(uint64_t seed, uint64_t step, uint64_t index) {
  const uint32_t key[2] = {uint32_t(seed), uint32_t(seed >> 32)};
  const uint64_t block = index >> 2;
  const uint32_t ctr[4] = {uint32_t(block), uint32_t(block >> 32), uint32_t(step),
                           uint32_t(step >> 32)};
  return philox4x32_10(key, ctr)[index & 3];
}

bool dropoutKeep(uint64_t seed, uint64_t step, uint64_t index, float p) {
  return uniformFromBits(dropoutBits(seed, step, index)) >= p;
}

}  // namespace amp::rt
