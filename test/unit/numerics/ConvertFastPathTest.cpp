// convertBuffer's vector paths (SimdConvert's AVX2/F16C loops, taken for f32 <-> f16/bf16 when the
// host has them) against the per-element scalar conversions of Convert.h, bit for bit: every
// 16-bit pattern widened, and millions of f32 patterns (every exponent with the mantissas around
// each rounding position, ties, NaN payloads, subnormals, overflow, random bits) narrowed. Each
// path is checked: convertBuffer as dispatched, convertBufferScalar, and widenToF32/narrowFromF32
// with and without simd; odd lengths and offsets reach the loops' tails.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "runtime/numerics/Convert.h"
#include "runtime/numerics/SimdConvert.h"
#include "runtime/schema/CpuFeatures.h"

namespace amp::rt {
namespace {

uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float floatOf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

bool hostSimd() {
  const CpuFeatures& f = CpuFeatures::host();
  return f.avx2 && f.f16c;
}

// One way of converting a whole buffer; `simdOnly` paths run only where the host has AVX2+F16C.
struct Path {
  std::string name;
  bool simdOnly;
  void (*widen)(DType, const void*, float*, int64_t);
  void (*narrow)(const float*, DType, void*, int64_t);
};

const Path kPaths[] = {
    {"convertBuffer", false, [](DType t, const void* in, float* out, int64_t n) { convertBuffer(t, in, DType::F32, out, n); },
     [](const float* in, DType t, void* out, int64_t n) { convertBuffer(DType::F32, in, t, out, n); }},
    {"convertBufferScalar", false,
     [](DType t, const void* in, float* out, int64_t n) { convertBufferScalar(t, in, DType::F32, out, n); },
     [](const float* in, DType t, void* out, int64_t n) { convertBufferScalar(DType::F32, in, t, out, n); }},
    {"simd", true, [](DType t, const void* in, float* out, int64_t n) { widenToF32(t, in, out, n, true); },
     [](const float* in, DType t, void* out, int64_t n) { narrowFromF32(in, t, out, n, true); }},
    {"noSimd", false, [](DType t, const void* in, float* out, int64_t n) { widenToF32(t, in, out, n, false); },
     [](const float* in, DType t, void* out, int64_t n) { narrowFromF32(in, t, out, n, false); }},
};

uint16_t narrowOne(DType t, float x) { return t == DType::BF16 ? f32ToBF16(x) : f32ToF16(x); }
float widenOne(DType t, uint16_t h) { return t == DType::BF16 ? bf16ToF32(h) : f16ToF32(h); }

// f32 patterns: for both signs and every exponent, mantissas at and around each bit position (the
// rounding position of bf16, of f16 normals and of every f16 subnormal shift), with the bits below
// it all clear, all set and half-way (ties), plus random patterns and random ones in the f16 range.
std::vector<float> f32Patterns() {
  std::vector<uint32_t> bits;
  for (uint32_t sign = 0; sign < 2; ++sign)
    for (uint32_t e = 0; e < 256; ++e)
      for (uint32_t k = 0; k < 24; ++k) {
        const uint32_t p = k < 23 ? 1u << k : 0u;
        for (uint32_t m : {p, p - 1, p + 1, p | (p >> 1), (p >> 1), 0x7fffffu, 0x7fffffu & ~(p - 1), 0x400000u | p,
                           0x400000u | (p - 1), 0x555555u ^ p, 0x2aaaaau ^ p})
          bits.push_back((sign << 31) | (e << 23) | (m & 0x7fffffu));
      }
  std::mt19937 rng(7);
  for (int i = 0; i < 3000000; ++i) bits.push_back(rng());
  for (int i = 0; i < 1000000; ++i)  // exponents around the f16 range: its subnormals and overflow
    bits.push_back((rng() & 0x807fffffu) | ((100u + rng() % 50u) << 23));
  std::vector<float> out(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) out[i] = floatOf(bits[i]);
  return out;
}

TEST(NumericsConvertFastPath, DispatchFollowsTheHostFeatures) {
  EXPECT_EQ(simdConvertOnHost(), hostSimd());
  std::printf("simdConvertOnHost() = %d (host %s)\n", int(simdConvertOnHost()), CpuFeatures::host().isaLevel().c_str());
}

TEST(NumericsConvertFastPath, EverySixteenBitPatternWidensAsTheScalarCode) {
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < 65536; ++i) all[i] = uint16_t(i);
  for (DType t : {DType::BF16, DType::F16})
    for (const Path& p : kPaths) {
      if (p.simdOnly && !hostSimd()) continue;
      SCOPED_TRACE(p.name + " " + std::string(dtypeName(t)));
      std::vector<float> got(all.size(), -1.0f);
      p.widen(t, all.data(), got.data(), int64_t(all.size()));
      int64_t bad = 0;
      for (uint32_t i = 0; i < 65536; ++i)
        if (bitsOf(got[i]) != bitsOf(widenOne(t, all[i])) && bad++ < 5)
          ADD_FAILURE() << "pattern 0x" << std::hex << i << ": got 0x" << bitsOf(got[i]) << ", want 0x"
                        << bitsOf(widenOne(t, all[i]));
      EXPECT_EQ(bad, 0);
    }
}

TEST(NumericsConvertFastPath, MillionsOfF32PatternsNarrowAsTheScalarCode) {
  const std::vector<float> in = f32Patterns();
  ASSERT_GT(in.size(), 4000000u);
  for (DType t : {DType::BF16, DType::F16}) {
    std::vector<uint16_t> want(in.size());
    for (size_t i = 0; i < in.size(); ++i) want[i] = narrowOne(t, in[i]);
    for (const Path& p : kPaths) {
      if (p.simdOnly && !hostSimd()) continue;
      SCOPED_TRACE(p.name + " " + std::string(dtypeName(t)));
      std::vector<uint16_t> got(in.size(), 0xdead);
      p.narrow(in.data(), t, got.data(), int64_t(in.size()));
      int64_t bad = 0;
      for (size_t i = 0; i < in.size(); ++i)
        if (got[i] != want[i] && bad++ < 5)
          ADD_FAILURE() << "f32 0x" << std::hex << bitsOf(in[i]) << ": got 0x" << got[i] << ", want 0x" << want[i];
      EXPECT_EQ(bad, 0);
    }
  }
}

// Every length 0..40 at every start offset 0..8: the vector body, the scalar tail, and nothing
// written past the end.
TEST(NumericsConvertFastPath, OddLengthsAndOffsetsConvertExactlyTheirElements) {
  std::mt19937 rng(3);
  std::vector<float> src(64);
  std::vector<uint16_t> src16(64);
  for (int i = 0; i < 64; ++i) {
    src[i] = floatOf(rng());
    src16[i] = uint16_t(rng());
  }
  for (DType t : {DType::BF16, DType::F16})
    for (const Path& p : kPaths) {
      if (p.simdOnly && !hostSimd()) continue;
      SCOPED_TRACE(p.name + " " + std::string(dtypeName(t)));
      for (int off = 0; off <= 8; ++off)
        for (int n = 0; n <= 40; ++n) {
          std::vector<uint16_t> narrow(64, 0xbeef);
          std::vector<float> wide(64, floatOf(0xdeadbeefu));
          p.narrow(src.data() + off, t, narrow.data() + off, n);
          p.widen(t, src16.data() + off, wide.data() + off, n);
          for (int i = 0; i < 64; ++i) {
            const bool inside = i >= off && i < off + n;
            ASSERT_EQ(narrow[i], inside ? narrowOne(t, src[i]) : uint16_t(0xbeef)) << "off " << off << " n " << n << " i " << i;
            ASSERT_EQ(bitsOf(wide[i]), inside ? bitsOf(widenOne(t, src16[i])) : 0xdeadbeefu)
                << "off " << off << " n " << n << " i " << i;
          }
        }
    }
}

// All 2^32 f32 patterns through each narrowing path (about a minute): run by hand with
// --gtest_also_run_disabled_tests after changing a loop.
TEST(NumericsConvertFastPath, DISABLED_EveryF32PatternNarrowsAsTheScalarCode) {
  constexpr int64_t kBlock = 1 << 20;
  std::vector<float> in(kBlock);
  std::vector<uint16_t> got(kBlock);
  for (DType t : {DType::BF16, DType::F16})
    for (const Path& p : kPaths) {
      if (p.simdOnly && !hostSimd()) continue;
      if (p.name == "noSimd") continue;  // the same code as convertBufferScalar
      SCOPED_TRACE(p.name + " " + std::string(dtypeName(t)));
      int64_t bad = 0;
      for (uint64_t base = 0; base < (uint64_t(1) << 32); base += kBlock) {
        for (int64_t i = 0; i < kBlock; ++i) in[i] = floatOf(uint32_t(base + i));
        p.narrow(in.data(), t, got.data(), kBlock);
        for (int64_t i = 0; i < kBlock; ++i)
          if (got[i] != narrowOne(t, in[i]) && bad++ < 5) ADD_FAILURE() << "f32 0x" << std::hex << base + i;
      }
      EXPECT_EQ(bad, 0);
    }
}

}  // namespace
}  // namespace amp::rt
