// Exhaustive and boundary tests of runtime/numerics/Convert against the independent reference
// model in RefFormats.h. Suite names start with "Numerics" (ctest -R Numerics).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <algorithm>
#include <vector>

#include "runtime/numerics/Convert.h"
#include "test/unit/numerics/RefFormats.h"

namespace amp::rt {
namespace {

using test::bitsOf;
using test::floatOf;
using test::Format;
using test::Overflow;

// One narrow format as seen through the library under test.
struct Codec {
  Format fmt;
  uint32_t (*encode)(float, bool saturate);
  float (*decode)(uint32_t);
  Overflow nonSaturating;  // what overflow produces without saturation
  bool hasSaturatingMode;
  uint32_t quietBit;  // the NaN bit that encode must set
  bool decodeQuiets;  // decode sets the f32 quiet bit (x86-like); bf16 decode is a plain shift
};

const Codec kCodecs[] = {
    {test::kF16, [](float x, bool) -> uint32_t { return f32ToF16(x); },
     [](uint32_t c) { return f16ToF32(uint16_t(c)); }, Overflow::kInf, false, 0x200, true},
    {test::kBF16, [](float x, bool) -> uint32_t { return f32ToBF16(x); },
     [](uint32_t c) { return bf16ToF32(uint16_t(c)); }, Overflow::kInf, false, 0x40, false},
    {test::kE4M3FN, [](float x, bool s) -> uint32_t { return f32ToF8E4M3FN(x, s); },
     [](uint32_t c) { return f8E4M3FNToF32(uint8_t(c)); }, Overflow::kNaN, true, 0, true},
    {test::kE5M2, [](float x, bool s) -> uint32_t { return f32ToF8E5M2(x, s); },
     [](uint32_t c) { return f8E5M2ToF32(uint8_t(c)); }, Overflow::kInf, true, 0x2, true},
};

void PrintTo(const Codec& c, std::ostream* os) { *os << c.fmt.name; }

class NumericsFormat : public ::testing::TestWithParam<Codec> {};

// Decoding every pattern: value, sign and classification agree with the bit-field formula.
TEST_P(NumericsFormat, ExhaustiveDecodeMatchesFormula) {
  const Codec& c = GetParam();
  const uint32_t n = 1u << c.fmt.bits();
  int nans = 0, infs = 0, subnormals = 0, zeros = 0;
  for (uint32_t code = 0; code < n; ++code) {
    const float v = c.decode(code);
    const double ref = test::refDecode(c.fmt, code);
    const test::Fields f = test::fieldsOf(c.fmt, code);
    SCOPED_TRACE(testing::Message() << c.fmt.name << " code 0x" << std::hex << code);
    ASSERT_EQ(std::isnan(v), test::refIsNaN(c.fmt, code));
    ASSERT_EQ(std::isinf(v), test::refIsInf(c.fmt, code));
    ASSERT_EQ(std::signbit(v), f.neg);
    if (std::isnan(v)) {
      ++nans;
      if (c.decodeQuiets)
        ASSERT_TRUE(bitsOf(v) & 0x400000u) << "decoded NaN must be quiet";
      else
        ASSERT_EQ(bitsOf(v), code << 16) << "bf16 decode keeps the bits";
      continue;
    }
    ASSERT_EQ(double(v), ref);
    const bool isZero = f.exp == 0 && f.mant == 0, isSub = f.exp == 0 && f.mant != 0;
    ASSERT_EQ(v == 0.0f, isZero);
    // Subnormal in the narrow format <=> nonzero and below its smallest normal 2^(1-bias).
    ASSERT_EQ(v != 0.0f && std::fabs(double(v)) < std::ldexp(1.0, 1 - c.fmt.bias), isSub);
    infs += std::isinf(v);
    subnormals += isSub;
    zeros += isZero;
  }
  // The counts pin down each format's layout.
  const uint32_t mantCodes = 1u << c.fmt.mantBits;
  EXPECT_EQ(zeros, 2);
  EXPECT_EQ(subnormals, int(2 * (mantCodes - 1)));
  EXPECT_EQ(infs, c.fmt.ieeeSpecials ? 2 : 0);
  EXPECT_EQ(nans, c.fmt.ieeeSpecials ? int(2 * (mantCodes - 1)) : 2);
}

// decode -> encode is the identity on every non-NaN pattern (both modes); NaN stays a quiet NaN of
// the same sign. For f16 the NaN payload is kept too (x86 behaviour).
TEST_P(NumericsFormat, ExhaustiveRoundTrip) {
  const Codec& c = GetParam();
  const uint32_t n = 1u << c.fmt.bits(), signBit = 1u << (c.fmt.bits() - 1);
  for (uint32_t code = 0; code < n; ++code) {
    for (bool sat : {false, true}) {
      const uint32_t back = c.encode(c.decode(code), sat);
      if (!test::refIsNaN(c.fmt, code)) {
        if (sat && test::refIsInf(c.fmt, code)) continue;  // inf saturates: checked below
        ASSERT_EQ(back, code) << c.fmt.name << " 0x" << std::hex << code;
        continue;
      }
      ASSERT_TRUE(test::refIsNaN(c.fmt, back)) << std::hex << code;
      ASSERT_EQ(back & signBit, code & signBit);
      ASSERT_EQ(back & c.quietBit, c.quietBit);
      if (c.fmt.bits() == 16) {
        ASSERT_EQ(back, code | c.quietBit) << "payload kept";
      }
    }
  }
}

// Around every rounding boundary of the format (the midpoint between two adjacent finite values,
// including the one between max and the overflow threshold) and at the values themselves, for both
// signs: midpoint -> even code, one f32 ulp either side -> the nearer code.
TEST_P(NumericsFormat, EveryRoundingBoundary) {
  const Codec& c = GetParam();
  const test::Ladder ladder = test::buildLadder(c.fmt);
  int64_t checked = 0;
  auto check = [&](float x) {
    for (bool sat : {false, true}) {
      if (sat && !c.hasSaturatingMode) continue;
      const uint32_t want = test::refEncode(c.fmt, ladder, x, sat ? Overflow::kSaturate : c.nonSaturating);
      ASSERT_EQ(c.encode(x, sat), want) << c.fmt.name << " x=" << x << " bits 0x" << std::hex << bitsOf(x);
      ++checked;
    }
  };
  for (size_t i = 0; i + 1 < ladder.value.size(); ++i) {
    const float lo = float(ladder.value[i]), hi = float(ladder.value[i + 1]);
    const float mid = float((ladder.value[i] + ladder.value[i + 1]) / 2);
    ASSERT_EQ(double(mid), (ladder.value[i] + ladder.value[i + 1]) / 2) << "midpoint exact in f32";
    // The tie itself goes to the even code.
    const uint32_t evenCode = ladder.code[i] % 2 == 0 ? ladder.code[i] : ladder.code[i + 1];
    // (For the last pair the upper code is inf for IEEE-like formats; for E4M3FN it is NaN's code,
    // which is odd, so the tie goes to max.)
    ASSERT_EQ(c.encode(mid, false), evenCode) << c.fmt.name << " tie at " << mid;
    for (float s : {1.0f, -1.0f})
      for (float x : {lo, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY),
                      std::nextafter(hi, 0.0f)})
        check(s * x);
  }
  for (float x : {INFINITY, -INFINITY, 0.0f, -0.0f, std::nextafter(0.0f, 1.0f),
                  -std::nextafter(0.0f, 1.0f), 3.4028235e38f, -3.4028235e38f})
    check(x);
  std::printf("[ %s ] %lld boundary encodings checked\n", c.fmt.name, (long long)checked);
}

// Random f32 in and around the format's range against the brute-force reference.
TEST_P(NumericsFormat, RandomAgainstBruteForce) {
  const Codec& c = GetParam();
  const test::Ladder ladder = test::buildLadder(c.fmt);
  const double top = ladder.value.back() * 1.25;
  test::SplitMix64 rng{0x5eed0000u + c.fmt.bits() * 31u + uint32_t(c.fmt.mantBits)};
  const int kCount = 1000000;
  for (int i = 0; i < kCount; ++i) {
    const uint64_t r = rng.next();
    float x;
    if (i % 2 == 0) {
      x = float(std::ldexp(double(r >> 11), -53) * top);  // uniform in [0, 1.25 * overflow value)
    } else {
      // Log-uniform: random mantissa with an exponent from below the smallest subnormal to above
      // the overflow threshold.
      // Biased exponent 0 gives f32 subnormals (needed for bf16).
      const int minExp = std::max(1 - c.fmt.bias - c.fmt.mantBits - 2, -127);
      const int maxExp = std::min(int(std::ilogb(top)) + 1, 127);
      const int e = minExp + int((r >> 32) % uint64_t(maxExp - minExp + 1));
      x = floatOf((uint32_t(e + 127) << 23) | (uint32_t(r) & 0x7fffffu));
    }
    if (r & (1ull << 63)) x = -x;
    for (bool sat : {false, true}) {
      if (sat && !c.hasSaturatingMode) continue;
      const uint32_t want = test::refEncode(c.fmt, ladder, x, sat ? Overflow::kSaturate : c.nonSaturating);
      ASSERT_EQ(c.encode(x, sat), want) << c.fmt.name << " x=" << x << " bits 0x" << std::hex << bitsOf(x);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, NumericsFormat, ::testing::ValuesIn(kCodecs),
                         [](const auto& info) {
                           std::string n = info.param.fmt.name;
                           return n == "f16" ? "F16" : n == "bf16" ? "BF16" : n == "f8E4M3FN" ? "E4M3FN" : "E5M2";
                         });

// The OCP FP8 rules spelled out value by value.
TEST(NumericsFp8, E4M3FNSpecialValues) {
  EXPECT_EQ(f32ToF8E4M3FN(448.0f, false), 0x7e);
  EXPECT_EQ(f32ToF8E4M3FN(464.0f, false), 0x7e);  // tie between 448 (even) and NaN's slot
  EXPECT_EQ(f32ToF8E4M3FN(std::nextafter(464.0f, 1e9f), false), 0x7f);
  EXPECT_EQ(f32ToF8E4M3FN(std::nextafter(464.0f, 1e9f), true), 0x7e);
  EXPECT_EQ(f32ToF8E4M3FN(1e6f, false), 0x7f);
  EXPECT_EQ(f32ToF8E4M3FN(-1e6f, true), 0xfe);
  EXPECT_EQ(f32ToF8E4M3FN(INFINITY, false), 0x7f);   // no inf in E4M3FN: NaN
  EXPECT_EQ(f32ToF8E4M3FN(-INFINITY, false), 0xff);
  EXPECT_EQ(f32ToF8E4M3FN(INFINITY, true), 0x7e);    // saturating: max
  EXPECT_EQ(f32ToF8E4M3FN(-INFINITY, true), 0xfe);
  EXPECT_EQ(f32ToF8E4M3FN(NAN, true), 0x7f);         // NaN is never saturated away
  EXPECT_EQ(f32ToF8E4M3FN(-NAN, false), 0xff);
  EXPECT_EQ(f32ToF8E4M3FN(std::ldexp(1.0f, -9), false), 0x01);   // min subnormal
  EXPECT_EQ(f32ToF8E4M3FN(std::ldexp(1.0f, -10), false), 0x00);  // tie -> even (0)
  EXPECT_EQ(f32ToF8E4M3FN(std::ldexp(3.0f, -10), false), 0x02);  // tie 1.5 ulp -> 2
  EXPECT_EQ(f32ToF8E4M3FN(-std::ldexp(1.0f, -11), false), 0x80); // underflow keeps sign
  EXPECT_EQ(f32ToF8E4M3FN(std::ldexp(15.0f, -10), false), 0x08); // 7.5 ulp rounds up to 2^-6
  EXPECT_EQ(f8E4M3FNToF32(0x7e), 448.0f);
  EXPECT_EQ(f8E4M3FNToF32(0x78), 256.0f);  // exponent 15 is a normal binade in E4M3FN
  EXPECT_EQ(f8E4M3FNToF32(0x01), std::ldexp(1.0f, -9));
  EXPECT_TRUE(std::isnan(f8E4M3FNToF32(0x7f)) && std::isnan(f8E4M3FNToF32(0xff)));
}

TEST(NumericsFp8, E5M2SpecialValues) {
  EXPECT_EQ(f32ToF8E5M2(57344.0f, false), 0x7b);
  EXPECT_EQ(f32ToF8E5M2(std::nextafter(61440.0f, 0.0f), false), 0x7b);
  EXPECT_EQ(f32ToF8E5M2(61440.0f, false), 0x7c);  // tie between max (odd) and 2^16 -> inf
  EXPECT_EQ(f32ToF8E5M2(61440.0f, true), 0x7b);
  EXPECT_EQ(f32ToF8E5M2(-1e9f, false), 0xfc);
  EXPECT_EQ(f32ToF8E5M2(-1e9f, true), 0xfb);
  EXPECT_EQ(f32ToF8E5M2(INFINITY, false), 0x7c);
  EXPECT_EQ(f32ToF8E5M2(INFINITY, true), 0x7b);  // saturating clamps inf too (OCP/ONNX/CUDA satfinite)
  EXPECT_EQ(f32ToF8E5M2(-INFINITY, true), 0xfb);
  EXPECT_EQ(f32ToF8E5M2(NAN, true), 0x7f);
  EXPECT_EQ(f32ToF8E5M2(std::ldexp(1.0f, -16), false), 0x01);
  EXPECT_EQ(f32ToF8E5M2(std::ldexp(1.0f, -17), false), 0x00);
  EXPECT_EQ(f32ToF8E5M2(std::nextafter(std::ldexp(1.0f, -17), 1.0f), false), 0x01);
  EXPECT_EQ(f8E5M2ToF32(0x7b), 57344.0f);
  EXPECT_EQ(f8E5M2ToF32(0x7c), INFINITY);
  EXPECT_EQ(f8E5M2ToF32(0xfc), -INFINITY);
  // E5M2 is the top byte of f16: every non-NaN value converts the same through either route.
  for (uint32_t c = 0; c < 256; ++c)
    if (!std::isnan(f8E5M2ToF32(uint8_t(c)))) {
      EXPECT_EQ(f32ToF16(f8E5M2ToF32(uint8_t(c))), c << 8);
    }
}

TEST(NumericsF16, SpecialValues) {
  EXPECT_EQ(f32ToF16(65504.0f), 0x7bff);
  EXPECT_EQ(f32ToF16(std::nextafter(65520.0f, 0.0f)), 0x7bff);
  EXPECT_EQ(f32ToF16(65520.0f), 0x7c00);  // IEEE overflow threshold
  EXPECT_EQ(f32ToF16(-1e30f), 0xfc00);
  EXPECT_EQ(f32ToF16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(f32ToF16(std::ldexp(1.0f, -25)), 0x0000);  // tie -> even
  EXPECT_EQ(f32ToF16(-std::ldexp(1.0f, -25)), 0x8000);
  EXPECT_EQ(f32ToF16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(f32ToF16(std::nextafter(std::ldexp(1.0f, -14), 0.0f)), 0x0400);  // rounds up to normal
  EXPECT_EQ(f32ToF16(floatOf(0x7f800001)), 0x7e00);  // sNaN quieted, payload's top bits kept
  EXPECT_EQ(f32ToF16(floatOf(0xffc02000)), 0xfe01);
  EXPECT_EQ(bitsOf(f16ToF32(0x7c01)), 0x7fc02000u);  // f16 sNaN decodes quiet
}

TEST(NumericsBF16, SpecialValues) {
  EXPECT_EQ(f32ToBF16(floatOf(0x7f7fffff)), 0x7f80);  // FLT_MAX rounds to inf
  EXPECT_EQ(f32ToBF16(floatOf(0x7f7f7fff)), 0x7f7f);
  EXPECT_EQ(f32ToBF16(floatOf(0x3f808000)), 0x3f80);  // tie -> even
  EXPECT_EQ(f32ToBF16(floatOf(0x3f818000)), 0x3f82);  // tie -> even (up)
  EXPECT_EQ(f32ToBF16(floatOf(0x007fffff)), 0x0080);  // f32 subnormal rounds up to min normal
  EXPECT_EQ(f32ToBF16(floatOf(0x00008000)), 0x0000);  // subnormal tie -> even, not flushed...
  EXPECT_EQ(f32ToBF16(floatOf(0x00018000)), 0x0002);  // ...as this tie shows
  EXPECT_EQ(f32ToBF16(floatOf(0x80000001)), 0x8000);
  EXPECT_EQ(f32ToBF16(floatOf(0x7f800001)), 0x7fc0);
  EXPECT_EQ(f32ToBF16(floatOf(0xff812345)), 0xffc1);
  EXPECT_EQ(bitsOf(bf16ToF32(0x7f81)), 0x7f810000u);  // decode is a plain shift
}

// ---------------------------------------------------------------------------------------------
// DType-generic API

const DType kAllDTypes[] = {DType::F32, DType::F16, DType::BF16, DType::F8E4M3FN, DType::F8E5M2,
                            DType::I64, DType::I32, DType::U8,   DType::Bool,     DType::F64};

TEST(NumericsDType, RoundToDType) {
  const float kTwo24 = 16777216.0f;
  struct Case {
    DType t;
    float in, out;
  } cases[] = {
      {DType::F32, 1.0f + 0x1p-23f, 1.0f + 0x1p-23f},
      {DType::F64, 0.1f, 0.1f},
      {DType::F16, 1.0f + 0x1p-11f, 1.0f},              // tie -> even
      {DType::F16, 1.0f + 0x3p-11f, 1.0f + 0x1p-9f},    // tie -> even (up)
      {DType::F16, 70000.0f, INFINITY},
      {DType::BF16, 1.0f + 0x1p-8f, 1.0f},
      {DType::BF16, 1.0f + 0x1.8p-8f, 1.0f + 0x1p-7f},
      {DType::F8E4M3FN, 1.0625f, 1.0f},                 // ulp 1/8: tie -> even
      {DType::F8E4M3FN, 1.1875f, 1.25f},
      {DType::F8E5M2, 1.125f, 1.0f},                    // ulp 1/4: tie -> even
      {DType::F8E5M2, 1e6f, INFINITY},                  // non-saturating
      {DType::I32, 2.7f, 2.0f},
      {DType::I32, -2.7f, -2.0f},
      {DType::I32, 3e9f, 2147483648.0f},                // saturates to INT32_MAX (as float)
      {DType::I32, -3e9f, -2147483648.0f},
      {DType::I64, 1e19f, 9223372036854775808.0f},
      {DType::I64, kTwo24 + 2.0f, kTwo24 + 2.0f},
      {DType::U8, 300.0f, 255.0f},
      {DType::U8, -5.0f, 0.0f},
      {DType::U8, 254.9f, 254.0f},
      {DType::Bool, 0.25f, 1.0f},
      {DType::Bool, -0.0f, 0.0f},
  };
  for (const Case& c : cases)
    EXPECT_EQ(roundToDType(c.t, c.in), c.out) << dtypeName(c.t) << " " << c.in;
  EXPECT_EQ(roundToDType(DType::I32, NAN), 0.0f);
  EXPECT_EQ(roundToDType(DType::Bool, NAN), 1.0f);
  EXPECT_TRUE(std::isnan(roundToDType(DType::F8E4M3FN, 1000.0f)));  // non-saturating overflow
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F8E4M3FN, DType::F8E5M2, DType::F64})
    EXPECT_TRUE(std::isnan(roundToDType(t, NAN))) << dtypeName(t);
}

// store then load gives exactly roundToDType, element by element, for every dtype.
TEST(NumericsDType, StoreLoadMatchesRoundToDType) {
  test::SplitMix64 rng{42};
  std::vector<float> values = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, 2.5f, -3.75f, 255.5f, 448.0f,
                               65504.0f, 1e-8f, 1e20f, INFINITY, -INFINITY};
  for (int i = 0; i < 2000; ++i) values.push_back(floatOf(uint32_t(rng.next())) );
  for (DType t : kAllDTypes) {
    std::vector<uint8_t> buf(values.size() * dtypeSize(t));
    for (size_t i = 0; i < values.size(); ++i) storeFromF32(t, buf.data(), int64_t(i), values[i]);
    for (size_t i = 0; i < values.size(); ++i) {
      const float got = loadAsF32(t, buf.data(), int64_t(i)), want = roundToDType(t, values[i]);
      if (std::isnan(want))
        ASSERT_TRUE(std::isnan(got)) << dtypeName(t);
      else
        ASSERT_EQ(bitsOf(got), bitsOf(want)) << dtypeName(t) << " " << values[i];
    }
  }
}

// Every (src, dst) pair on values every dtype holds exactly: convertBuffer preserves them (bool
// maps nonzero to 1). Exercises every branch of convertBuffer's dispatch.
TEST(NumericsDType, ConvertBufferAllPairs) {
  const std::vector<float> values = {0.0f, 1.0f, 2.0f, 3.0f, 5.0f, 7.0f, 0.0f, 1.0f};
  for (DType src : kAllDTypes) {
    std::vector<uint8_t> in(values.size() * dtypeSize(src));
    for (size_t i = 0; i < values.size(); ++i) storeFromF32(src, in.data(), int64_t(i), values[i]);
    for (DType dst : kAllDTypes) {
      std::vector<uint8_t> out(values.size() * dtypeSize(dst), 0xcd);
      convertBuffer(src, in.data(), dst, out.data(), int64_t(values.size()));
      for (size_t i = 0; i < values.size(); ++i) {
        const float s = loadAsF32(src, in.data(), int64_t(i));
        const float want = dst == DType::Bool ? float(s != 0.0f) : s;
        EXPECT_EQ(loadAsF32(dst, out.data(), int64_t(i)), want)
            << dtypeName(src) << " -> " << dtypeName(dst) << " element " << i;
      }
    }
  }
}

TEST(NumericsDType, ConvertBufferSemantics) {
  {  // float -> int: truncate toward zero, saturate, NaN -> 0
    const float in[] = {2.9f, -2.9f, 3e9f, -3e9f, NAN, -0.5f};
    int32_t out[6];
    convertBuffer(DType::F32, in, DType::I32, out, 6);
    EXPECT_EQ(std::vector<int32_t>(out, out + 6),
              (std::vector<int32_t>{2, -2, INT32_MAX, INT32_MIN, 0, 0}));
    uint8_t u8[6];
    convertBuffer(DType::F32, in, DType::U8, u8, 6);
    EXPECT_EQ(std::vector<uint8_t>(u8, u8 + 6), (std::vector<uint8_t>{2, 0, 255, 0, 0, 0}));
    uint8_t b[6];
    convertBuffer(DType::F32, in, DType::Bool, b, 6);
    EXPECT_EQ(std::vector<uint8_t>(b, b + 6), (std::vector<uint8_t>{1, 1, 1, 1, 1, 1}));
  }
  {  // int -> int narrows by wrapping; i64 -> f32 rounds to nearest even
    const int64_t in[] = {257, -1, (int64_t(1) << 32) + 5, (int64_t(1) << 24) + 1, (int64_t(1) << 24) + 3};
    int32_t i32[5];
    uint8_t u8[5];
    float f32[5];
    convertBuffer(DType::I64, in, DType::I32, i32, 5);
    convertBuffer(DType::I64, in, DType::U8, u8, 5);
    convertBuffer(DType::I64, in, DType::F32, f32, 5);
    EXPECT_EQ(i32[0], 257);
    EXPECT_EQ(i32[1], -1);
    EXPECT_EQ(i32[2], 5);
    EXPECT_EQ(u8[0], 1);
    EXPECT_EQ(u8[1], 255);
    EXPECT_EQ(f32[3], 16777216.0f);
    EXPECT_EQ(f32[4], 16777220.0f);
  }
  {  // wide sources are rounded once, not twice (f64/i64 -> f32 -> narrow would get these wrong)
    const double d[] = {1.0 + 0x1p-11 + 0x1p-40, 1.0 + 0x1p-8 + 0x1p-50, -(1.0 + 0x1p-11 + 0x1p-40), 0x1p-160};
    uint16_t h[4], b[4];
    convertBuffer(DType::F64, d, DType::F16, h, 4);
    convertBuffer(DType::F64, d, DType::BF16, b, 4);
    EXPECT_EQ(h[0], f32ToF16(1.0f + 0x1p-10f));
    EXPECT_EQ(h[2], f32ToF16(-(1.0f + 0x1p-10f)));
    EXPECT_EQ(b[1], f32ToBF16(1.0f + 0x1p-7f));
    EXPECT_EQ(h[3], 0x0000);
    EXPECT_EQ(b[3], 0x0000);
    const int64_t big[] = {(int64_t(1) << 25) + (int64_t(1) << 17) + 1, -((int64_t(1) << 60) + (int64_t(1) << 52) + 1)};
    uint16_t bb[2];
    convertBuffer(DType::I64, big, DType::BF16, bb, 2);
    EXPECT_EQ(bf16ToF32(bb[0]), float((int64_t(1) << 25) + (int64_t(1) << 18)));
    EXPECT_EQ(bf16ToF32(bb[1]), -float((int64_t(1) << 60) + (int64_t(1) << 53)));
  }
  {  // random f64 -> every narrow format agrees with the reference rounding of the double
    test::SplitMix64 rng{7};
    struct {
      DType t;
      const Format* f;
    } narrow[] = {{DType::F16, &test::kF16}, {DType::BF16, &test::kBF16},
                  {DType::F8E4M3FN, &test::kE4M3FN}, {DType::F8E5M2, &test::kE5M2}};
    for (auto& n : narrow) {
      const test::Ladder ladder = test::buildLadder(*n.f);
      std::vector<double> in(20000);
      for (double& x : in) {
        const uint64_t r = rng.next();
        x = std::ldexp(double(r >> 11), -53 + int((r & 63) % 40) - 24) * ((r >> 6) & 1 ? -1 : 1);
      }
      std::vector<uint8_t> out(in.size() * dtypeSize(n.t));
      convertBuffer(DType::F64, in.data(), n.t, out.data(), int64_t(in.size()));
      for (size_t i = 0; i < in.size(); ++i) {
        const uint32_t got = dtypeSize(n.t) == 2 ? reinterpret_cast<uint16_t*>(out.data())[i] : out[i];
        ASSERT_EQ(got, test::refEncode(*n.f, ladder, in[i],
                                       n.t == DType::F8E4M3FN ? Overflow::kNaN : Overflow::kInf))
            << dtypeName(n.t) << " " << in[i];
      }
    }
  }
}

}  // namespace
}  // namespace amp::rt
