// Independent reference model of the narrow float formats for the numerics tests: decoding by the
// textbook formula in double (ldexp of mantissa and exponent) and encoding by brute-force search
// for the nearest representable value. Shares no code with runtime/numerics/Convert.cpp.
#ifndef AMP_TEST_UNIT_NUMERICS_REFFORMATS_H
#define AMP_TEST_UNIT_NUMERICS_REFFORMATS_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

namespace amp::test {

struct Format {
  const char* name;
  int expBits, mantBits, bias;
  bool ieeeSpecials;  // all-ones exponent is inf/NaN (f16, bf16, E5M2); else E4M3FN's rule
  uint32_t bits() const { return 1 + expBits + mantBits; }
};
inline constexpr Format kF16{"f16", 5, 10, 15, true};
inline constexpr Format kBF16{"bf16", 8, 7, 127, true};
inline constexpr Format kE4M3FN{"f8E4M3FN", 4, 3, 7, false};
inline constexpr Format kE5M2{"f8E5M2", 5, 2, 15, true};

struct Fields {
  bool neg;
  uint32_t exp, mant;
};
inline Fields fieldsOf(const Format& f, uint32_t code) {
  return {bool((code >> (f.bits() - 1)) & 1), (code >> f.mantBits) & ((1u << f.expBits) - 1),
          code & ((1u << f.mantBits) - 1)};
}
inline bool refIsNaN(const Format& f, uint32_t code) {
  Fields d = fieldsOf(f, code);
  uint32_t expMax = (1u << f.expBits) - 1, mantMax = (1u << f.mantBits) - 1;
  return f.ieeeSpecials ? d.exp == expMax && d.mant != 0 : d.exp == expMax && d.mant == mantMax;
}
inline bool refIsInf(const Format& f, uint32_t code) {
  Fields d = fieldsOf(f, code);
  return f.ieeeSpecials && d.exp == (1u << f.expBits) - 1 && d.mant == 0;
}

// Value of a code, NaN for NaN codes.
inline double refDecode(const Format& f, uint32_t code) {
  if (refIsNaN(f, code)) return std::numeric_limits<double>::quiet_NaN();
  Fields d = fieldsOf(f, code);
  double mag;
  if (refIsInf(f, code))
    mag = std::numeric_limits<double>::infinity();
  else if (d.exp == 0)
    mag = std::ldexp(double(d.mant), 1 - f.bias - f.mantBits);
  else
    mag = std::ldexp(double(d.mant + (1u << f.mantBits)), int(d.exp) - f.bias - f.mantBits);
  return d.neg ? -mag : mag;
}

// The non-negative finite values of a format in increasing order with their codes, followed by one
// virtual entry: the value the next code would have with an unbounded exponent. Rounding to it
// means overflow (IEEE: |x| >= max + ulp(max)/2 overflows; ties go to the even code).
struct Ladder {
  std::vector<double> value;
  std::vector<uint32_t> code;
};
inline Ladder buildLadder(const Format& f) {
  Ladder l;
  uint32_t half = 1u << (f.bits() - 1);
  for (uint32_t c = 0; c < half; ++c) {
    double v = refDecode(f, c);
    if (std::isfinite(v)) {
      l.value.push_back(v);
      l.code.push_back(c);
    }
  }
  uint32_t maxCode = l.code.back();
  Fields d = fieldsOf(f, maxCode);
  uint32_t next = maxCode + 1;  // the code after max; its value by the normal-number formula
  double v = d.mant == (1u << f.mantBits) - 1
                 ? std::ldexp(1.0, int(d.exp) + 1 - f.bias)
                 : std::ldexp(double(d.mant + 1 + (1u << f.mantBits)), int(d.exp) - f.bias - f.mantBits);
  l.value.push_back(v);
  l.code.push_back(next);
  return l;
}

enum class Overflow { kInf, kNaN, kSaturate };
// Brute force: the nearest ladder value to |x|, ties to the even code. Returns the code with sign.
inline uint32_t refEncode(const Format& f, const Ladder& l, double x, Overflow ovf) {
  uint32_t sign = std::signbit(x) ? 1u << (f.bits() - 1) : 0;
  uint32_t maxCode = l.code[l.code.size() - 2];
  uint32_t nanCode = f.ieeeSpecials ? (((1u << f.expBits) - 1) << f.mantBits) | ((1u << f.mantBits) - 1)
                                    : (1u << (f.bits() - 1)) - 1;
  uint32_t infCode = ((1u << f.expBits) - 1) << f.mantBits;
  auto overflow = [&] {
    return sign | (ovf == Overflow::kSaturate ? maxCode : ovf == Overflow::kInf ? infCode : nanCode);
  };
  if (std::isnan(x)) return sign | nanCode;
  double a = std::fabs(x);
  // At or beyond the virtual value everything overflows (and distances to the ladder would lose
  // precision in double for huge |x|).
  if (a >= l.value.back()) return overflow();
  size_t best = 0;
  if (l.value.size() <= 256) {  // FP8: plain brute force over every value
    for (size_t i = 1; i < l.value.size(); ++i) {
      double dBest = std::fabs(l.value[best] - a), d = std::fabs(l.value[i] - a);
      if (d < dBest || (d == dBest && (l.code[i] & 1) == 0)) best = i;
    }
  } else {  // f16/bf16: the two neighbours from a binary search
    size_t hi = std::lower_bound(l.value.begin(), l.value.end(), a) - l.value.begin();
    best = hi;
    if (hi > 0) {
      double dLo = a - l.value[hi - 1], dHi = l.value[hi] - a;
      if (dLo < dHi || (dLo == dHi && (l.code[hi - 1] & 1) == 0)) best = hi - 1;
    }
  }
  if (best == l.value.size() - 1) return overflow();
  return sign | l.code[best];
}

inline uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float floatOf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// splitmix64: fast, well-mixed, reproducible.
struct SplitMix64 {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
};

}  // namespace amp::test

#endif  // AMP_TEST_UNIT_NUMERICS_REFFORMATS_H
