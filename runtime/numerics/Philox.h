// Philox4x32-10 counter-based RNG (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
// SC'11; bit-compatible with Random123's philox4x32_10). Every backend derives dropout masks from
// it, so a mask depends only on (seed, step, element index), never on threads, tiling or device.
#ifndef AMP_RUNTIME_NUMERICS_PHILOX_H
#define AMP_RUNTIME_NUMERICS_PHILOX_H

#include <array>
#include <cstdint>

namespace amp::rt {

// Ten Philox rounds of the 128-bit counter under the 64-bit key.
std::array<uint32_t, 4> philox4x32_10(const uint32_t key[2], const uint32_t counter[4]);

// Maps 32 random bits to a float in [0, 1): the top 24 bits times 2^-24, so every result is exact
// and equally spaced (0 is possible, 1 is not).
float uniformFromBits(uint32_t bits);

// The dropout stream. Element `index` of step `step` under `seed` uses
//   key     = {lo32(seed), hi32(seed)}
//   counter = {lo32(index / 4), hi32(index / 4), lo32(step), hi32(step)}
// and takes word (index % 4) of the Philox output, so one Philox call serves 4 adjacent elements.
uint32_t dropoutBits(uint64_t seed, uint64_t step, uint64_t index);
// Keep the element iff uniformFromBits(dropoutBits(...)) >= p (p is the drop probability;
// p <= 0 keeps everything, p >= 1 drops everything). Kept elements are scaled by 1/(1-p) by the op.
bool dropoutKeep(uint64_t seed, uint64_t step, uint64_t index, float p);

}  // namespace amp::rt

#endif  // AMP_RUNTIME_NUMERICS_PHILOX_H
