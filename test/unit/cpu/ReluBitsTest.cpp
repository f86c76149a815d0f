// The linear step's relu on the bits (ReluBits.h) against amp.relu's definition: every bf16 and f16
// pattern, and f32 specials (NaN payloads of both signs, +-inf, +-0, subnormals, the largest
// finite) plus 2^20 random patterns: a NaN keeps its bits, anything else becomes
// (x > 0 ? x : +0), element by element at every offset of odd-sized runs.
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/devices/cpu/kernels/ReluBits.h"
#include "runtime/numerics/Convert.h"

namespace amp::rt {
namespace {

// amp.relu of one stored element, through f32: (x > 0 || isnan(x)) ? x : 0, NaN bits kept.
template <typename Bits>
Bits expectedRelu(DType t, Bits bits) {
  float x;
  convertBuffer(t, &bits, DType::F32, &x, 1);
  if (std::isnan(x)) return bits;
  const float y = x > 0.0f ? x : 0.0f;
  Bits out;
  convertBuffer(DType::F32, &y, t, &out, 1);
  return out;
}

template <typename Bits>
void checkRun(DType t, const std::vector<Bits>& in) {
  std::vector<Bits> got = in;
  // Two calls over [0, 3) and [3, n): ranges that do not start at 0 take the same path.
  const int64_t n = static_cast<int64_t>(got.size()), split = std::min<int64_t>(3, n);
  cpu::reluBitsInPlace(t, reinterpret_cast<uint8_t*>(got.data()), 0, split);
  cpu::reluBitsInPlace(t, reinterpret_cast<uint8_t*>(got.data()), split, n);
  for (size_t i = 0; i < in.size(); ++i)
    ASSERT_EQ(got[i], expectedRelu<Bits>(t, in[i])) << dtypeName(t) << " element " << i << " bits 0x" << std::hex
                                                     << static_cast<uint32_t>(in[i]);
}

TEST(ReluBits, EverySixteenBitPattern) {
  for (DType t : {DType::BF16, DType::F16}) {
    std::vector<uint16_t> all(65536 + 5);  // 5 more: the vector loop's tail
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i * 40503u);
    for (uint32_t p = 0; p < 65536; ++p) all[p] = static_cast<uint16_t>(p);
    checkRun(t, all);
  }
}

TEST(ReluBits, FloatSpecialsAndRandomPatterns) {
  const uint32_t specials[] = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00000u,
                               0x7f800001u, 0xff800001u, 0x7fffffffu, 0xffffffffu, 0x00000001u, 0x80000001u,
                               0x007fffffu, 0x807fffffu, 0x7f7fffffu, 0xff7fffffu, 0x3f800000u, 0xbf800000u};
  for (size_t n : {size_t{1}, size_t{7}, size_t{18}, size_t{33}}) {
    std::vector<uint32_t> run(n);
    for (size_t i = 0; i < n; ++i) run[i] = specials[i % (sizeof(specials) / sizeof(specials[0]))];
    checkRun(DType::F32, run);
  }
  std::mt19937 rng(17);
  std::vector<uint32_t> random((1u << 20) + 3);
  for (uint32_t& r : random) r = static_cast<uint32_t>(rng());
  checkRun(DType::F32, random);
}

}  // namespace
}  // namespace amp::rt
