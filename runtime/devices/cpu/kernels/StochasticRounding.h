// The cpu device's stochastic rounding of bf16 Adam moments (--optimizer-state=bf16), in vector
// lanes: the dropout stream's Philox4x32-10 words for many consecutive groups at once (the same
// words as ShapeMath.h's amp_drop_group_bits, which runs one group at a time), and TrainMath.h's
// amp_sr_bf16 over a block. Integer arithmetic only: every ISA clone gives the same bits.
#ifndef AMP_RUNTIME_DEVICES_CPU_KERNELS_STOCHASTICROUNDING_H
#define AMP_RUNTIME_DEVICES_CPU_KERNELS_STOCHASTICROUNDING_H

#include <cstdint>

namespace amp::rt::cpu {

// words[4·k + l] = word l of group firstGroup + k of the stream (seed, step), k < groups.
void philoxGroups(uint64_t seed, uint64_t step, uint64_t firstGroup, int64_t groups, uint32_t* words);

// out[k] = amp_sr_bf16(bits of x[k], (words[k] >> shift) & 0xffff) for k < n.
void roundToBf16Stochastic(const float* x, const uint32_t* words, int shift, int64_t n, uint16_t* out);

}  // namespace amp::rt::cpu

#endif  // AMP_RUNTIME_DEVICES_CPU_KERNELS_STOCHASTICROUNDING_H
