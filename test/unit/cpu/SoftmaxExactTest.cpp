// Softmax and log-softmax on the cpu device take certified vector paths (SoftmaxExact.h) and must
// still give softmaxSlice's bits for every input, on every code path the machine runs: scalar,
// AVX2 and AVX-512, each chosen explicitly (a path above CpuFeatures::host(), which
// AMP_CPU_FEATURES lowers, is skipped and says so). Rows and strided slices of many lengths hold
// N(0, 1), N(0, 30), values whose e^w underflows to f32 subnormals and 0, masked attention scores
// (-1e9, -inf), NaN, +-inf, signed zeros, and the f32 differences whose e^w lies nearest an f32
// rounding boundary. Then: the certificate rejects exactly those near-ties, every e^w it accepts
// is glibc's (a sweep of the non-positive f32s), the polynomial's error stays within the bound the
// certificate assumes, and the fallback stays rare.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "test/unit/cpu/HostVectorPaths.h"
#include "runtime/devices/cpu/kernels/SoftmaxExact.h"
#include "runtime/devices/cpu/kernels/SoftmaxExactKernels.h"
#include "runtime/numerics/Softmax.h"

namespace amp::rt {
namespace {

using cpu::VectorPath;

std::vector<VectorPath> pathsToTest(bool vectorOnly) { return hostVectorPathsToTest(cpu::kSoftmaxNeeds, vectorOnly); }

uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
float fromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// The non-NaN f32 w <= 0 whose f32(exp(w)) the certificate leaves to libm, found by running every
// non-positive f32 through both vector paths (the same 26 on each): glibc's exp(w) lies within
// about 2^-48 relative of a midpoint between two f32s.
const float kNearTies[] = {-0x1.fffffep-26f, -0x1p-25f,       -0x1.000002p-25f, -0x1.800002p-24f, -0x1.400002p-23f,
                           -0x1.600004p-22f, -0x1.a80016p-20f, -0x1.2c0016p-19f, -0x1.6a004p-18f,  -0x1.93813ep-16f,
                           -0x1.e981d4p-16f, -0x1.e4854cp-11f, -0x1.c1c4b8p-10f, -0x1.6e1ddp-8f,   -0x1.e1dbe2p-8f,
                           -0x1.548c34p-7f,  -0x1.71e81ep-6f,  -0x1.c02f76p-6f,  -0x1.6727d6p-4f,  -0x1.edfb24p-1f,
                           -0x1.03d5bep+0f,  -0x1.7f4296p+0f,  -0x1.705ce4p+1f,  -0x1.f02a66p+1f,  -0x1.7acc62p+3f,
                           -0x1.d2259ap+3f};

enum class Kind { Normal1, Normal30, Underflow, Masked, Specials, Zeros, NearTies, AllNegInf, AllNaN };
const Kind kKinds[] = {Kind::Normal1, Kind::Normal30, Kind::Underflow, Kind::Masked, Kind::Specials,
                       Kind::Zeros,   Kind::NearTies, Kind::AllNegInf, Kind::AllNaN};
const char* kindName(Kind k) {
  static const char* names[] = {"N(0,1)",   "N(0,30)",  "underflow", "masked", "specials",
                                "zeros",    "near-ties", "all -inf", "all NaN"};
  return names[static_cast<int>(k)];
}

// One slice of `len` values at x[0], x[stride], ...
void fillSlice(Kind kind, std::mt19937& rng, float* x, int64_t len, int64_t stride, int64_t sliceIndex) {
  std::normal_distribution<float> n1(0.0f, 1.0f), n30(0.0f, 30.0f);
  std::uniform_real_distribution<float> below(-120.0f, 0.0f);
  std::uniform_int_distribution<int> pick(0, 1 << 20);
  const float specials[] = {NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, -1e9f, 3.4e38f, -3.4e38f, 1e-45f, 88.0f, -88.0f};
  const int64_t zeroAt = pick(rng) % len;  // the max of near-tie and underflow slices: w = x exactly
  for (int64_t j = 0; j < len; ++j) {
    float& v = x[j * stride];
    switch (kind) {
      case Kind::Normal1: v = n1(rng); break;
      case Kind::Normal30: v = n30(rng); break;
      case Kind::Underflow: v = j == zeroAt ? 0.0f : (pick(rng) % 8 == 0 ? -1e30f : below(rng)); break;
      case Kind::Masked: v = j > (sliceIndex + 3) % len ? (sliceIndex % 2 ? -1e9f : -INFINITY) : 2.0f * n1(rng); break;
      case Kind::Specials: v = pick(rng) % 4 == 0 ? specials[pick(rng) % 12] : n1(rng); break;
      case Kind::Zeros: v = pick(rng) % 2 ? 0.0f : (pick(rng) % 3 ? -0.0f : -n1(rng) * n1(rng)); break;
      case Kind::NearTies: v = j == zeroAt ? 0.0f : kNearTies[pick(rng) % 26]; break;
      case Kind::AllNegInf: v = -INFINITY; break;
      case Kind::AllNaN: v = NAN; break;
    }
  }
}

const int64_t kLens[] = {1, 2, 7, 8, 15, 16, 17, 128, 1000};

// Counts elements whose bits differ from softmaxSlice's and describes the first.
struct Mismatch {
  int64_t count = 0;
  std::string first;
  void compare(const float* got, const float* want, int64_t n, const std::string& where) {
    for (int64_t i = 0; i < n; ++i)
      if (bitsOf(got[i]) != bitsOf(want[i]) && count++ == 0) {
        char buf[160];
        std::snprintf(buf, sizeof buf, " element %lld: got %a (0x%08x), want %a (0x%08x)", static_cast<long long>(i),
                      got[i], bitsOf(got[i]), want[i], bitsOf(want[i]));
        first = where + buf;
      }
  }
};

TEST(SoftmaxExact, RowsMatchSoftmaxSliceOnEveryPath) {
  const int64_t rowCounts[] = {1, 2, 5, 16, 19, 37};
  int64_t checked = 0;
  for (VectorPath path : pathsToTest(false)) {
    Mismatch bad;
    std::mt19937 rng(11);
    for (int64_t len : kLens)
      for (int64_t rows : rowCounts)
        for (Kind kind : kKinds)
          for (bool log : {false, true}) {
            std::vector<float> x(rows * len), want(rows * len), got(rows * len, 7.0f);
            std::vector<float> scratch(cpu::softmaxScratchFloats(len));
            for (int64_t r = 0; r < rows; ++r) fillSlice(kind, rng, x.data() + r * len, len, 1, r);
            for (int64_t r = 0; r < rows; ++r) softmaxSlice(x.data() + r * len, len, 1, log, want.data() + r * len);
            const std::string where = std::string(cpu::vectorPathName(path)) + " " + kindName(kind) +
                                      " rows=" + std::to_string(rows) + " len=" + std::to_string(len) +
                                      (log ? " log" : "");
            cpu::softmaxRows(path, x.data(), rows, len, log, got.data(), scratch.data());
            bad.compare(got.data(), want.data(), rows * len, where);
            cpu::softmaxRows(path, x.data(), rows, len, log, x.data(), scratch.data());  // in place
            bad.compare(x.data(), want.data(), rows * len, where + " (in place)");
            checked += 2 * rows * len;
          }
    EXPECT_EQ(bad.count, 0) << bad.first;
  }
  std::printf("checked %lld elements\n", static_cast<long long>(checked));
}

TEST(SoftmaxExact, StridedSlicesMatchSoftmaxSliceOnEveryPath) {
  const int64_t widths[] = {1, 2, 3, 8, 15, 16, 17, 40, 64};
  for (VectorPath path : pathsToTest(false)) {
    Mismatch bad;
    std::mt19937 rng(12);
    for (int64_t len : kLens)
      for (int64_t width : widths)
        for (int64_t stride : {width, width + 5})
          for (bool log : {false, true}) {
            std::vector<float> x(len * stride), want(len * stride, 5.0f), got(len * stride, 5.0f);
            std::vector<float> scratch(cpu::softmaxScratchFloats(len));
            for (int64_t c = 0; c < stride; ++c) fillSlice(kKinds[(c + len) % 9], rng, x.data() + c, len, stride, c);
            for (int64_t c = 0; c < width; ++c) softmaxSlice(x.data() + c, len, stride, log, want.data() + c);
            const std::string where = std::string(cpu::vectorPathName(path)) + " width=" + std::to_string(width) +
                                      " stride=" + std::to_string(stride) + " len=" + std::to_string(len) +
                                      (log ? " log" : "");
            cpu::softmaxColumns(path, x.data(), len, stride, width, log, got.data(), scratch.data());
            bad.compare(got.data(), want.data(), len * stride, where);  // the gaps stay untouched too
          }
    EXPECT_EQ(bad.count, 0) << bad.first;
  }
}

// The reference's max skips NaN and keeps the first of equal zeros (max_ps(x, m) is that very
// expression); a NaN's sign and payload reach every result of its row, +inf - +inf makes one, and
// which of two different NaNs the sum keeps is the reference's code's own choice.
TEST(SoftmaxExact, SignedZeroMaximaAndNaNKeepTheReferenceBits) {
  const float payload = fromBits(0x7fc12345u), negPayload = fromBits(0xffc00001u), signaling = fromBits(0x7f800001u);
  const std::vector<std::vector<float>> rows = {
      {-0.0f, 0.0f},        {0.0f, -0.0f},           {NAN, -0.0f, 0.0f},       {-1.0f, -0.0f, 0.0f},
      {-INFINITY, -INFINITY}, {INFINITY, 1.0f},      {INFINITY, INFINITY},     {NAN, 1.0f, NAN},
      {-NAN, -INFINITY},    {NAN, -NAN, 1.0f},       {-NAN, 2.0f, NAN},        {INFINITY, NAN, INFINITY},
      {1.0f, payload, negPayload}, {negPayload, payload}, {signaling, 1.0f, -NAN}, {INFINITY, -NAN, 3.0f}};
  for (VectorPath path : pathsToTest(true))
    for (const auto& row : rows)
      for (bool log : {false, true}) {
        const int64_t len = static_cast<int64_t>(row.size());
        std::vector<float> x, want(row.size() * 16), got(row.size() * 16), scratch(cpu::softmaxScratchFloats(len));
        for (int r = 0; r < 16; ++r) x.insert(x.end(), row.begin(), row.end());
        for (int r = 0; r < 16; ++r) softmaxSlice(x.data() + r * len, len, 1, log, want.data() + r * len);
        cpu::softmaxRows(path, x.data(), 16, len, log, got.data(), scratch.data());
        Mismatch bad;
        bad.compare(got.data(), want.data(), 16 * len, std::string(cpu::vectorPathName(path)) + (log ? " log" : ""));
        EXPECT_EQ(bad.count, 0) << bad.first;
      }
}

// Every 2^7th non-positive f32 pattern (NaN, -inf and the underflow range included), 64 values
// either side of the underflow edge, and the near-ties: a certified e^w is always glibc's f32.
TEST(SoftmaxExact, EveryCertifiedExpIsLibms) {
  std::vector<float> w;
  for (uint64_t b = 0x80000000u; b <= 0xffffffffu; b += 1u << 7) w.push_back(fromBits(static_cast<uint32_t>(b + 0x35)));
  for (float in = -104.0f, out = -104.0f, k = 0; k < 64; ++k)
    w.push_back(in = std::nextafter(in, 0.0f)), w.push_back(out = std::nextafter(out, -INFINITY));
  for (float v : {0.0f, -0.0f, -INFINITY, NAN, -NAN, -1e9f, -3.4e38f, -1e-45f}) w.push_back(v);
  w.insert(w.end(), std::begin(kNearTies), std::end(kNearTies));
  const int64_t n = static_cast<int64_t>(w.size());
  for (VectorPath path : pathsToTest(true)) {
    std::vector<float> e(n);
    std::vector<uint8_t> ok(n);
    cpu::softmaxExpLanes(path, w.data(), e.data(), ok.data(), n);
    int64_t wrong = 0, open = 0;
    for (int64_t i = 0; i < n; ++i) {
      const float want = static_cast<float>(std::exp(double(w[i])));
      if (std::isnan(w[i])) {
        EXPECT_FALSE(ok[i]) << "NaN must take the reference's expression";
        continue;
      }
      open += !ok[i];
      if (ok[i] && bitsOf(e[i]) != bitsOf(want) && wrong++ < 5)
        ADD_FAILURE() << cpu::vectorPathName(path) << ": w = " << std::hexfloat << w[i] << " certified " << e[i]
                      << ", glibc gives " << want;
    }
    EXPECT_EQ(wrong, 0);
    std::printf("%s: %lld of %lld e^w left to libm\n", cpu::vectorPathName(path), static_cast<long long>(open),
                static_cast<long long>(n));
  }
}

// The certificate is what guards the near-ties: each lies within the bound of an f32 midpoint, and
// each is left to libm (the polynomial happens to round them right, but nothing proves it would).
TEST(SoftmaxExact, NearTiesAreLeftToLibm) {
  for (float w : kNearTies) {
    const double e = std::exp(double(w));
    const float down = static_cast<float>(e), other = e > double(down) ? std::nextafter(down, 2.0f)
                                                                         : std::nextafter(down, 0.0f);
    const double mid = (double(down) + double(other)) / 2;
    EXPECT_LE(std::fabs(e - mid), 2 * cpu::softmax_exact::kBoundPerE * e) << std::hexfloat << w;
  }
  for (VectorPath path : pathsToTest(true)) {
    std::vector<float> e(26);
    std::vector<uint8_t> ok(26);
    cpu::softmaxExpLanes(path, kNearTies, e.data(), ok.data(), 26);
    for (int i = 0; i < 26; ++i)
      EXPECT_FALSE(ok[i]) << cpu::vectorPathName(path) << ": w = " << std::hexfloat << kNearTies[i] << " was certified";
  }
}

// |g - e^w| / e^w of the polynomial on every 2^8th f32 w in [-104, 0], against long double expl:
// within the kExpError the certificate assumes (GeluExactTest measures the same code on its range).
TEST(SoftmaxExact, ApproximationErrorStaysWithinTheClaimedBound) {
  std::vector<double> w;
  for (uint32_t b = 0x80000000u; fromBits(b) >= -104.0f; b += 1u << 8) w.push_back(fromBits(b));
  while (w.size() % 8) w.push_back(0.0);
  for (VectorPath path : pathsToTest(true)) {
    std::vector<double> e(w.size());
    cpu::softmaxApproxExp(path, w.data(), e.data(), static_cast<int64_t>(w.size()));
    long double worst = 0;
    for (size_t i = 0; i < w.size(); ++i) {
      const long double want = expl(static_cast<long double>(w[i]));
      worst = std::max(worst, fabsl((static_cast<long double>(e[i]) - want) / want));
    }
    std::printf("%s: worst relative error of e^w on [-104, 0]: 2^%.1f (claimed 2^%.0f)\n", cpu::vectorPathName(path),
                std::log2(static_cast<double>(worst)), std::log2(cpu::softmax_exact::kExpError));
    EXPECT_LE(static_cast<double>(worst), cpu::softmax_exact::kExpError / 4);
  }
}

// Attention-like rows: a causal mask of -inf over scaled N(0, 1) scores.
TEST(SoftmaxExact, FallbackIsRare) {
  const int64_t len = 128, rows = 4096;
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> gauss(rows * len), attention(rows * len), y(rows * len), scratch(cpu::softmaxScratchFloats(len));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < len; ++j) {
      gauss[r * len + j] = normal(rng);
      attention[r * len + j] = j > r % len ? -INFINITY : 3.0f * normal(rng);
    }
  for (VectorPath path : pathsToTest(true))
    for (const auto* data : {&gauss, &attention}) {
      const int64_t fallbacks = cpu::softmaxRows(path, data->data(), rows, len, false, y.data(), scratch.data());
      std::printf("%s, %s: %lld of %lld e^w from libm\n", cpu::vectorPathName(path),
                  data == &gauss ? "N(0,1) rows" : "masked attention rows", static_cast<long long>(fallbacks),
                  static_cast<long long>(rows * len));
      EXPECT_LE(fallbacks, rows * len / 100000);
    }
}

}  // namespace
}  // namespace amp::rt
