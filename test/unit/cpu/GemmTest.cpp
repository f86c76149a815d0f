// The CPU device's prepared GEMM against the reference executor's amp.matmul, and the CPU feature
// detector against /proc/cpuinfo.
//
// Error bound. oneDNN sums in its own (blocked, FMA) order, so f32 results are not bit-identical to
// the reference's k = 0, 1, ... order. For one output element, any f32 summation order of the K
// products has |computed - exact| <= K * u * S (u = 2^-24, S = sum_k |a_mk * b_kn|; Higham 3.1,
// to first order; FMA only removes roundings). Both sides obey it, so
// |ours - ref| <= 2 * K * u * S. Each side is then rounded once to the result type, which adds at
// most one ulp of that type between them. The check per element is therefore
//   |ours - ref| <= 2 * K * 2^-24 * S + ulp_T(max(|ours|, |ref|)),
// with S computed in double from the (exact) operand values.
//
// With a bias (amp.linear's epilogue) both sides add f32(bias[n]) to their f32 accumulators and
// round once more in f32 before the rounding to the result type: the difference of the sums grows
// by at most one f32 ulp of |acc + b| <= S + |b|, so the check becomes
//   |ours - ref| <= 2 * (K + 1) * 2^-24 * (S + |b_n|) + ulp_T(max(|ours|, |ref|)).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/Tensor.h"
#include "runtime/devices/cpu/CpuExecutor.h"
#include "runtime/schema/CpuFeatures.h"
#include "runtime/devices/cpu/kernels/Gemm.h"
#include "runtime/reference/ReferenceKernels.h"
#include "runtime/exec/Session.h"
#include "runtime/numerics/Convert.h"
#include "runtime/numerics/SimdConvert.h"
#include "runtime/devices/Devices.h"
#include "test/unit/cpu/OneDnnCalls.h"

// Counts every global operator new in this test binary (oneDNN's included: its C++ allocations
// resolve to this definition), split by whether a oneDNN call was running (OneDnnCalls.h), so a
// test can check what run() itself allocates.
namespace {
std::atomic<int64_t> gAmpNewCalls{0}, gOneDnnNewCalls{0};
}  // namespace

void* operator new(size_t n) {
  (amp::test::insideOneDnn() ? gOneDnnNewCalls : gAmpNewCalls).fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
// GCC flags free() on memory from "operator new", not knowing both are the replacements here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace amp::rt::cpu {
namespace {

// Features of this host with native bf16 switched off, to force the widening path for bf16.
CpuFeatures withoutNativeBf16() {
  CpuFeatures f = CpuFeatures::host();
  f.avx512_bf16 = false;
  f.amx_bf16 = false;
  return f;
}

// Features of this host that take the native bf16 kernel wherever its instructions exist: an Intel
// CPU with AVX512-BF16 but no AMX widens by default (CpuFeatures::nativeBf16), and its native
// kernel is still tested here.
CpuFeatures nativeBf16WhereAvailable() {
  CpuFeatures f = CpuFeatures::host();
  if (f.avx512_bf16) f.amd = true;
  return f;
}

// Random values in [-1, 1), rounded to `t` so every operand value is exact in its dtype.
Tensor randomTensor(DType t, const Shape& s, uint32_t seed) {
  Tensor x(t, s);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < x.numel(); ++i) storeFromF32(t, x.data(), i, dist(rng));
  return x;
}

// ulp of format `t` at magnitude v: 2^(e - (p - 1)) with e = max(floor(log2 v), emin).
double ulpOf(DType t, double v) {
  int p = 24, emin = -126;
  if (t == DType::BF16) p = 8;
  if (t == DType::F16) p = 11, emin = -14;
  if (t == DType::F8E4M3FN) p = 4, emin = -6;
  if (t == DType::F8E5M2) p = 3, emin = -14;
  int e = emin;
  if (v != 0) {
    int ex;
    std::frexp(v, &ex);  // v = m * 2^ex, m in [0.5, 1)
    e = std::max(ex - 1, emin);
  }
  return std::ldexp(1.0, e - (p - 1));
}

// S[i] = sum_k |a_mk * b_kn| in double for every result element, with its own broadcast indexing
// (independent of both implementations under test).
std::vector<double> absProductSums(const GemmDesc& d, const Tensor& a, const Tensor& b, const Shape& out) {
  const size_t ra = d.a.size(), rb = d.b.size(), ro = out.size();
  const int64_t M = out[ro - 2], N = out[ro - 1];
  const int64_t K = d.transA ? d.a[ra - 2] : d.a[ra - 1];
  const int64_t batch = numElements(Shape(out.begin(), out.end() - 2));
  std::vector<double> s(size_t(batch * M * N), 0.0);
  for (int64_t bi = 0; bi < batch; ++bi) {
    // Batch offset of each operand: walk the output batch index right to left.
    int64_t rem = bi, offA = 0, offB = 0, strideA = M * K, strideB = K * N;
    for (size_t j = 0; j + 2 < ro; ++j) {
      const size_t od = ro - 3 - j;  // output batch dim, right-aligned
      const int64_t idx = rem % out[od];
      rem /= out[od];
      if (j + 2 < ra) {
        const int64_t ext = d.a[ra - 3 - j];
        if (ext != 1) offA += idx * strideA;
        strideA *= ext;
      }
      if (j + 2 < rb) {
        const int64_t ext = d.b[rb - 3 - j];
        if (ext != 1) offB += idx * strideB;
        strideB *= ext;
      }
    }
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k) {
          const int64_t ia = offA + (d.transA ? k * M + m : m * K + k);
          const int64_t ib = offB + (d.transB ? n * K + k : k * N + n);
          acc += std::fabs(double(loadAsF32(a.dtype(), a.data(), ia)) * loadAsF32(b.dtype(), b.data(), ib));
        }
        s[size_t((bi * M + m) * N + n)] = acc;
      }
  }
  return s;
}

struct RunResult {
  Tensor out;
  std::string impl;
};

RunResult runGemm(const GemmDesc& d, const CpuFeatures& f, const Tensor& a, const Tensor& b,
                  const Tensor* bias = nullptr) {
  absl::StatusOr<std::unique_ptr<Gemm>> g = Gemm::create(d, f);
  EXPECT_TRUE(g.ok()) << g.status();
  if (!g.ok()) return {};
  Tensor out(d.dtype, (*g)->resultShape());
  // Tensor storage is 64-byte aligned; garbage-filled to show run() does not rely on its contents.
  Tensor scratch(DType::U8, {int64_t((*g)->scratchBytes())});
  std::memset(scratch.data(), 0xff, scratch.nbytes());
  const void* pbias = bias ? bias->data() : nullptr;
  (*g)->run(a.data(), b.data(), pbias, out.data(), scratch.data());
  // A second run with dirty scratch must give the same bits.
  Tensor again(d.dtype, (*g)->resultShape());
  (*g)->run(a.data(), b.data(), pbias, again.data(), scratch.data());
  EXPECT_TRUE(again.bitwiseEquals(out)) << "run() is not repeatable";
  return {std::move(out), (*g)->implName()};
}

Tensor runReference(const GemmDesc& d, const Tensor& a, const Tensor& b, const Shape& out) {
  AttrMap attrs;
  attrs.set("transpose_a", d.transA);
  attrs.set("transpose_b", d.transB);
  const Tensor* ops[] = {&a, &b};
  TensorType rt{d.dtype, out};
  auto r = evalReferenceOp("amp.matmul", ops, attrs, {&rt, 1}, EvalContext{});
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? std::move((*r)[0]) : Tensor();
}

// Runs one case and checks every element against the reference within the documented bound.
void checkAgainstReference(const GemmDesc& d, const CpuFeatures& f, uint32_t seed,
                           const std::string& expectImplSubstr = "") {
  SCOPED_TRACE(std::string(dtypeName(d.dtype)) + " " + shapeToString(d.a) + (d.transA ? "^T" : "") + " x " +
               shapeToString(d.b) + (d.transB ? "^T" : ""));
  const Tensor a = randomTensor(d.dtype, d.a, seed), b = randomTensor(d.dtype, d.b, seed + 1);
  RunResult ours = runGemm(d, f, a, b);
  if (ours.out.shape().empty()) return;  // create() failed (already reported)
  if (!expectImplSubstr.empty()) {
    EXPECT_NE(ours.impl.find(expectImplSubstr), std::string::npos) << ours.impl;
  }
  const Tensor ref = runReference(d, a, b, ours.out.shape());
  ASSERT_EQ(ref.shape(), ours.out.shape());
  const std::vector<double> s = absProductSums(d, a, b, ref.shape());
  const int64_t K = d.transA ? d.a[d.a.size() - 2] : d.a.back();
  const double u = std::ldexp(1.0, -24);
  int64_t bad = 0;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    const double r = loadAsF32(d.dtype, ref.data(), i), o = loadAsF32(d.dtype, ours.out.data(), i);
    const double bound = 2.0 * double(K) * u * s[size_t(i)] + ulpOf(d.dtype, std::max(std::fabs(r), std::fabs(o)));
    if (!(std::fabs(o - r) <= bound) && ++bad <= 5) {
      ADD_FAILURE() << "element " << i << ": ours " << o << " ref " << r << " bound " << bound << " ("
                    << ours.impl << ")";
    }
  }
  EXPECT_EQ(bad, 0) << "of " << ref.numel() << " elements, impl " << ours.impl;
}

struct Case {
  Shape a, b;
  bool transA = false, transB = false;
};

// Shapes every dtype runs: the MNIST-MLP layer, transposes, broadcast rank mixes, tiny ones.
std::vector<Case> cases() {
  return {
      {{128, 784}, {784, 256}},
      {{784, 128}, {784, 256}, true, false},
      {{128, 784}, {256, 784}, false, true},
      {{784, 128}, {256, 784}, true, true},
      {{2, 3, 4, 5}, {5, 6}},                 // weight shared by every batch: folded into M
      {{3, 4, 5}, {6, 5}, false, true},       // folded, with a transposed weight
      {{4, 5}, {2, 5, 6}},                    // a broadcast over b's batch
      {{2, 1, 4, 5}, {3, 5, 6}},              // both broadcast, different dims
      {{2, 3, 4, 5}, {2, 3, 5, 6}},           // full batch
      {{2, 3, 5, 4}, {2, 3, 6, 5}, true, true},
      {{2, 3, 5, 4}, {5, 6}, true, false},     // transposed a with shared b: batched, not folded
      {{1, 3, 4, 5}, {2, 1, 6, 5}, false, true},
      {{1, 1, 2, 3}, {3, 2}},                 // size-1 batch dims only
      {{1, 1}, {1, 1}},
      {{1, 3}, {3, 1}},
      {{3, 1}, {1, 3}},
      {{7, 13}, {13, 9}},
      {{8, 4096}, {4096, 16}},                // long sums: accumulation must be f32
  };
}

void runAllCases(DType t, const CpuFeatures& f, const std::string& implSubstr) {
  uint32_t seed = 1;
  for (const Case& c : cases()) checkAgainstReference({t, c.a, c.b, c.transA, c.transB}, f, seed += 7, implSubstr);
}

TEST(GemmTest, F32MatchesReference) { runAllCases(DType::F32, CpuFeatures::host(), ""); }

TEST(GemmTest, Bf16MatchesReference) {
  const CpuFeatures f = nativeBf16WhereAvailable();
  const bool native = f.nativeBf16();
  // Natively, the primitive itself is bf16; the impl string must not say "widened".
  runAllCases(DType::BF16, f, native ? "" : "bf16 widened to f32");
  if (native) {
    auto g = Gemm::create({DType::BF16, {128, 784}, {784, 256}}, f);
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_EQ((*g)->implName().find("widened"), std::string::npos) << (*g)->implName();
  }
}

TEST(GemmTest, Bf16WidenedMatchesReference) {
  runAllCases(DType::BF16, withoutNativeBf16(), "bf16 widened to f32");
}

TEST(GemmTest, F16MatchesReference) { runAllCases(DType::F16, CpuFeatures::host(), "f16 widened to f32"); }

TEST(GemmTest, Fp8MatchesReference) {
  // The reference accepts FP8 matmul too; it takes the widening path.
  checkAgainstReference({DType::F8E4M3FN, {16, 32}, {32, 8}}, CpuFeatures::host(), 3, "widened");
  checkAgainstReference({DType::F8E5M2, {2, 16, 32}, {32, 8}}, CpuFeatures::host(), 5, "widened");
}

// Operands k * 2^e with small integers k, chosen so that every product and partial sum is exact
// and the results are subnormal (or tiny normal) in the result type: any flush-to-zero in the
// path shows up as a mismatch, while both sides must otherwise agree exactly.
void checkSubnormalResultsExact(DType t, const CpuFeatures& f, int exp) {
  SCOPED_TRACE(std::string(dtypeName(t)));
  const Shape sa = {4, 16}, sb = {16, 8};
  Tensor a(t, sa), b(t, sb);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> small(-4, 4);
  for (int64_t i = 0; i < a.numel(); ++i) storeFromF32(t, a.data(), i, std::ldexp(float(small(rng)), exp));
  for (int64_t i = 0; i < b.numel(); ++i) storeFromF32(t, b.data(), i, std::ldexp(float(small(rng)), exp));
  RunResult ours = runGemm({t, sa, sb}, f, a, b);
  const Tensor ref = runReference({t, sa, sb}, a, b, {4, 8});
  ASSERT_EQ(ours.out.shape(), ref.shape());
  int64_t tiny = 0;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    const float r = loadAsF32(t, ref.data(), i), o = loadAsF32(t, ours.out.data(), i);
    EXPECT_EQ(o, r) << "element " << i << " (" << ours.impl << ")";
    tiny += r != 0;
  }
  EXPECT_GT(tiny, 0);  // the case really produces non-zero subnormal-range results
}

TEST(GemmTest, SubnormalResultsAreNotFlushed) {
  // f32: products 2^-140 * k, subnormal in f32 (below 2^-126).
  checkSubnormalResultsExact(DType::F32, CpuFeatures::host(), -70);
  // f16: products 2^-20 * k, subnormal in f16 (below 2^-14, multiples of 2^-24).
  checkSubnormalResultsExact(DType::F16, CpuFeatures::host(), -10);
  // bf16 through f32: products 2^-136 * k, sums f32-subnormal, rounded RNE onto bf16's 2^-133
  // subnormal grid (not flushed as vcvtneps2bf16 would). The native bf16 path is exempt:
  // VDPBF16PS/TDPBF16PS treat subnormal inputs as zero and flush subnormal results in hardware
  // (see Gemm.h).
  checkSubnormalResultsExact(DType::BF16, withoutNativeBf16(), -68);
}

// ---------------------------------------------------------------------------------------------
// Bias in the epilogue (amp.linear)

Tensor widenedToF32(const Tensor& t) {
  Tensor w(DType::F32, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) storeFromF32(DType::F32, w.data(), i, loadAsF32(t.dtype(), t.data(), i));
  return w;
}

// The contract: the f32 accumulator (the reference matmul of the exactly widened operands: same
// products, same k order), plus f32(bias[n]) in f32, rounded once to the dtype.
Tensor referenceWithBias(const GemmDesc& d, const Tensor& a, const Tensor& b, const Tensor& bias, const Shape& out) {
  GemmDesc d32 = d;
  d32.dtype = DType::F32;
  const Tensor acc = runReference(d32, widenedToF32(a), widenedToF32(b), out);
  Tensor r(d.dtype, out);
  if (acc.shape() != out) return r;
  const int64_t N = out.back();
  for (int64_t i = 0; i < r.numel(); ++i)
    storeFromF32(d.dtype, r.data(), i, loadAsF32(DType::F32, acc.data(), i) + loadAsF32(d.dtype, bias.data(), i % N));
  return r;
}

// One bias case against the contract within the bound above; linear-shaped cases (a [..., K] not
// transposed, b 2-D) are also checked against the reference kernel of amp.linear itself.
void checkBiasAgainstReference(const GemmDesc& d0, const CpuFeatures& f, uint32_t seed,
                               const std::string& expectImplSubstr = "") {
  GemmDesc d = d0;
  d.bias = true;
  SCOPED_TRACE(std::string(dtypeName(d.dtype)) + " " + shapeToString(d.a) + (d.transA ? "^T" : "") + " x " +
               shapeToString(d.b) + (d.transB ? "^T" : "") + " + bias");
  const Tensor a = randomTensor(d.dtype, d.a, seed), b = randomTensor(d.dtype, d.b, seed + 1);
  const int64_t N = d.transB ? d.b[d.b.size() - 2] : d.b.back();
  const Tensor bias = randomTensor(d.dtype, {N}, seed + 2);
  RunResult ours = runGemm(d, f, a, b, &bias);
  if (ours.out.shape().empty()) return;
  EXPECT_NE(ours.impl.find("bias in the epilogue"), std::string::npos) << ours.impl;
  if (!expectImplSubstr.empty()) {
    EXPECT_NE(ours.impl.find(expectImplSubstr), std::string::npos) << ours.impl;
  }
  const Tensor ref = referenceWithBias(d, a, b, bias, ours.out.shape());
  if (!d.transA && d.b.size() == 2) {
    AttrMap attrs;
    attrs.set("transpose_w", d.transB);
    const Tensor* ops[] = {&a, &b, &bias};
    TensorType rt{d.dtype, ours.out.shape()};
    auto lin = evalReferenceOp("amp.linear", ops, attrs, {&rt, 1}, EvalContext{});
    ASSERT_TRUE(lin.ok()) << lin.status();
    EXPECT_TRUE((*lin)[0].bitwiseEquals(ref)) << "the amp.linear reference kernel is not matmul + f32 bias + one rounding";
  }
  const std::vector<double> s = absProductSums(d, a, b, ref.shape());
  const int64_t K = d.transA ? d.a[d.a.size() - 2] : d.a.back();
  const double u = std::ldexp(1.0, -24);
  int64_t bad = 0;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    const double r = loadAsF32(d.dtype, ref.data(), i), o = loadAsF32(d.dtype, ours.out.data(), i);
    const double bj = std::fabs(double(loadAsF32(d.dtype, bias.data(), i % N)));
    const double bound = 2.0 * double(K + 1) * u * (s[size_t(i)] + bj) +
                         ulpOf(d.dtype, std::max(std::fabs(r), std::fabs(o)));
    if (!(std::fabs(o - r) <= bound) && ++bad <= 5) {
      ADD_FAILURE() << "element " << i << ": ours " << o << " ref " << r << " bound " << bound << " (" << ours.impl << ")";
    }
  }
  EXPECT_EQ(bad, 0) << "of " << ref.numel() << " elements, impl " << ours.impl;
}

// Linear layers as PyTorch ([out, in] weights, transB) and as the examples ([in, out]) write them,
// batched inputs (folded into M), and general batched/transposed products with a broadcast bias.
std::vector<Case> biasCases() {
  return {
      {{128, 784}, {256, 784}, false, true},  // nn.Linear(784, 256) on a batch of 128
      {{128, 784}, {784, 256}},               // the same weight stored [in, out]
      {{128, 256}, {10, 256}, false, true},
      {{8, 32, 64}, {256, 64}, false, true},  // transformer MLP: [B, T, D] folded into M
      {{8, 32, 256}, {256, 64}},
      {{2, 3, 4, 5}, {5, 6}},
      {{2, 3, 4, 5}, {2, 3, 5, 6}},           // full batch: the bias broadcasts over it
      {{2, 3, 5, 4}, {5, 6}, true, false},    // transposed a, batched, not folded
      {{1, 1}, {1, 1}},
      {{7, 13}, {9, 13}, false, true},
      {{8, 4096}, {16, 4096}, false, true},   // long sums
  };
}

void runAllBiasCases(DType t, const CpuFeatures& f, const std::string& implSubstr) {
  uint32_t seed = 101;
  for (const Case& c : biasCases()) checkBiasAgainstReference({t, c.a, c.b, c.transA, c.transB}, f, seed += 7, implSubstr);
}

TEST(GemmBiasTest, F32MatchesReference) { runAllBiasCases(DType::F32, CpuFeatures::host(), ""); }

TEST(GemmBiasTest, Bf16MatchesReference) {
  const CpuFeatures f = nativeBf16WhereAvailable();
  const bool native = f.nativeBf16();
  runAllBiasCases(DType::BF16, f, native ? "" : "bf16 widened to f32");
  if (native) {  // the native primitive takes the bf16 bias itself
    auto g = Gemm::create({DType::BF16, {128, 784}, {256, 784}, false, true, true}, f);
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_EQ((*g)->implName().find("widened"), std::string::npos) << (*g)->implName();
  }
}

TEST(GemmBiasTest, Bf16WidenedMatchesReference) {
  runAllBiasCases(DType::BF16, withoutNativeBf16(), "bf16 widened to f32");
}

TEST(GemmBiasTest, F16MatchesReference) { runAllBiasCases(DType::F16, CpuFeatures::host(), "f16 widened to f32"); }

TEST(GemmBiasTest, ScalarConversionPathMatchesReference) {
  CpuFeatures f = withoutNativeBf16();
  f.avx2 = f.f16c = false;
  checkBiasAgainstReference({DType::F16, {33, 70}, {9, 70}, false, true}, f, 131, "f16 widened to f32");
  checkBiasAgainstReference({DType::BF16, {2, 33, 70}, {70, 9}}, f, 133, "bf16 widened to f32");
}

TEST(GemmBiasTest, BatchLoopAddsTheBiasToEveryProduct) {
  const Shape a = {2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 3, 4}, b = {1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 4, 5};
  checkBiasAgainstReference({DType::F32, a, b}, CpuFeatures::host(), 141, "batch loop x2048");
  checkBiasAgainstReference({DType::F16, a, b}, CpuFeatures::host(), 143, "batch loop x2048");
}

// The rounding happens once, after the bias: values where rounding the product first and adding
// the bias second (matmul + add in the dtype) gives a different result, exactly, on every path.
TEST(GemmBiasTest, BiasIsAddedBeforeTheOneRounding) {
  struct Want {
    DType t;
    CpuFeatures f;
    float tie, bias, once;  // a.b = 1 + tie (a tie in t), + bias rounds up to `once`
  };
  const float bf16Ulp = std::ldexp(1.0f, -7), f16Ulp = std::ldexp(1.0f, -10);
  for (const Want& w : {Want{DType::BF16, nativeBf16WhereAvailable(), bf16Ulp / 2, bf16Ulp / 4, 1 + bf16Ulp},
                        Want{DType::BF16, withoutNativeBf16(), bf16Ulp / 2, bf16Ulp / 4, 1 + bf16Ulp},
                        Want{DType::F16, CpuFeatures::host(), f16Ulp / 2, f16Ulp / 4, 1 + f16Ulp}}) {
    SCOPED_TRACE(std::string(dtypeName(w.t)) + (w.f.nativeBf16() ? " native" : ""));
    Tensor a(w.t, {3, 2}), b(w.t, {4, 2}), bias(w.t, {4});
    for (int64_t i = 0; i < 3; ++i) {
      storeFromF32(w.t, a.data(), 2 * i, 1.0f);
      storeFromF32(w.t, a.data(), 2 * i + 1, 1.0f);
    }
    for (int64_t n = 0; n < 4; ++n) {
      storeFromF32(w.t, b.data(), 2 * n, 1.0f);
      storeFromF32(w.t, b.data(), 2 * n + 1, w.tie);
      storeFromF32(w.t, bias.data(), n, w.bias);
    }
    RunResult ours = runGemm({w.t, {3, 2}, {4, 2}, false, true, true}, w.f, a, b, &bias);
    ASSERT_EQ(ours.out.shape(), (Shape{3, 4}));
    for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(loadAsF32(w.t, ours.out.data(), i), w.once) << i << " " << ours.impl;
  }
}

TEST(GemmBiasTest, KZeroIsTheBias) {
  for (DType t : {DType::F32, DType::BF16, DType::F16}) {
    SCOPED_TRACE(std::string(dtypeName(t)));
    GemmDesc d{t, {3, 0}, {4, 0}, false, true, true};
    auto g = Gemm::create(d, CpuFeatures::host());
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_EQ((*g)->implName(), "none (K = 0: bias broadcast)");
    Tensor a(t, {3, 0}), b(t, {4, 0}), bias(t, {4}), out(t, {3, 4});
    const float vals[] = {1.5f, -0.0f, -2.25f, 0.0f};
    for (int64_t n = 0; n < 4; ++n) storeFromF32(t, bias.data(), n, vals[n]);
    std::memset(out.data(), 0x7f, out.nbytes());
    (*g)->run(a.data(), b.data(), bias.data(), out.data(), nullptr);
    // rne(+0 + b): the bias, with -0 becoming +0, like the reference.
    AttrMap attrs;
    const Tensor* ops[] = {&a, &b, &bias};
    TensorType rt{t, {3, 4}};
    auto ref = evalReferenceOp("amp.linear", ops, attrs, {&rt, 1}, EvalContext{});
    ASSERT_TRUE(ref.ok()) << ref.status();
    EXPECT_TRUE(out.bitwiseEquals((*ref)[0]));
    for (int64_t m = 0; m < 3; ++m) EXPECT_FALSE(std::signbit(loadAsF32(t, out.data(), m * 4 + 1)));
  }
}

// The cpu device's amp.linear step (CpuLinear.cpp) on single-step plans against the reference
// device: every dtype, both weight layouts, with and without bias, batched inputs; the step must
// run on the GEMM, not on the reference fallback.
TEST(CpuLinearStep, MatchesTheReferenceDevice) {
  struct LinCase {
    Shape x, w;
    bool tw, bias, relu = false;
  };
  // relu after the layer is 1-Lipschitz, so the same bound holds for the relu epilogue.
  const LinCase cases[] = {{{128, 784}, {256, 784}, true, true},
                           {{128, 784}, {784, 256}, false, true},
                           {{8, 32, 64}, {64, 64}, false, false},
                           {{8, 32, 64}, {256, 64}, true, true},
                           {{2, 3, 4, 16}, {5, 16}, true, false},
                           {{128, 784}, {784, 256}, false, true, true},
                           {{8, 32, 64}, {64, 64}, false, false, true}};
  uint32_t seed = 300;
  for (DType t : {DType::F32, DType::BF16, DType::F16})
    for (const LinCase& c : cases) {
      SCOPED_TRACE(std::string(dtypeName(t)) + " " + shapeToString(c.x) + " x " + shapeToString(c.w) +
                   (c.tw ? "^T" : "") + (c.bias ? " + b" : "") + (c.relu ? ", relu" : ""));
      const int64_t out = c.tw ? c.w[0] : c.w[1], in = c.x.back();
      Shape yShape(c.x.begin(), c.x.end() - 1);
      yShape.push_back(out);
      Plan plan;
      plan.buffers.push_back({"x", t, c.x, BufferKind::Input, std::nullopt});
      plan.buffers.push_back({"w", t, c.w, BufferKind::Input, std::nullopt});
      if (c.bias) plan.buffers.push_back({"b", t, {out}, BufferKind::Input, std::nullopt});
      const int32_t y = static_cast<int32_t>(plan.buffers.size());
      plan.buffers.push_back({"y", t, yShape, BufferKind::Temp, std::nullopt});
      PlanStep step{"amp.linear", {0, 1}, {y}, {}, "linear.mlir:1:1"};
      step.attrs.set("transpose_w", c.tw);
      if (c.relu) step.attrs.set("activation", std::string("relu"));
      if (c.bias) step.operands.push_back(2);
      EntryPoint e;
      e.name = "eval";
      e.steps.push_back(step);
      e.results.push_back(y);
      e.resultNames.push_back("y");
      plan.entries.push_back(e);
      std::map<std::string, Tensor> feeds;
      feeds.emplace("x", randomTensor(t, c.x, seed += 3));
      feeds.emplace("w", randomTensor(t, c.w, seed + 1));
      if (c.bias) feeds.emplace("b", randomTensor(t, {out}, seed + 2));

      auto ref = openSession(plan, Device::Reference);
      auto cpu = openSession(plan, Device::Cpu);
      ASSERT_TRUE(ref.ok()) << ref.status();
      ASSERT_TRUE(cpu.ok()) << cpu.status();
      auto want = ref->run("eval", feeds);
      auto got = cpu->run("eval", feeds);
      ASSERT_TRUE(want.ok()) << want.status();
      ASSERT_TRUE(got.ok()) << got.status();
      auto prepared = cpu->prepared("eval");
      ASSERT_TRUE(prepared.ok());
      const EntryReport* report = &(**prepared).report();
      ASSERT_NE(report, nullptr);
      EXPECT_EQ(report->referenceSteps, 0) << "amp.linear ran on the reference fallback";
      const Tensor &r = (*want)[0].tensor, &o = (*got)[0].tensor;
      ASSERT_EQ(r.shape(), o.shape());
      // The bound above with S_j = sum_k |x_k w_kj| (in double).
      const Tensor& X = feeds.at("x");
      const Tensor& W = feeds.at("w");
      const int64_t rows = X.numel() / in;
      int64_t bad = 0;
      for (int64_t i = 0; i < rows && bad <= 5; ++i)
        for (int64_t j = 0; j < out; ++j) {
          double sum = 0;
          for (int64_t k = 0; k < in; ++k)
            sum += std::fabs(double(loadAsF32(t, X.data(), i * in + k)) *
                             loadAsF32(t, W.data(), c.tw ? j * in + k : k * out + j));
          const double bj = c.bias ? std::fabs(double(loadAsF32(t, feeds.at("b").data(), j))) : 0.0;
          const double rv = loadAsF32(t, r.data(), i * out + j), ov = loadAsF32(t, o.data(), i * out + j);
          const double bound = 2.0 * double(in + 1) * std::ldexp(1.0, -24) * (sum + bj) +
                               ulpOf(t, std::max(std::fabs(rv), std::fabs(ov)));
          if (!(std::fabs(rv - ov) <= bound) && ++bad <= 5)
            ADD_FAILURE() << "element [" << i << ", " << j << "]: cpu " << ov << " reference " << rv << " bound " << bound;
        }
    }
}

TEST(GemmTest, FoldsSharedWeightIntoM) {
  auto g = Gemm::create({DType::F32, {2, 3, 4, 5}, {5, 6}}, CpuFeatures::host());
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ((*g)->resultShape(), (Shape{2, 3, 4, 6}));
  EXPECT_NE((*g)->implName().find("folded"), std::string::npos) << (*g)->implName();
}

// Below AVX-512 oneDNN runs f32 GEMMs in gemm:jit, which is about 1.7x faster on a transposed
// weight; the Gemm then reads a transposed copy of b made in its scratch (Gemm.cpp). The copy and
// the product stay within the bound, widened or not, with a bias and without; small M keeps b as
// it is. Where oneDNN runs brgemm (AVX-512 and up), both layouts run at one speed and the test has
// nothing to check: scripts/cpu-level-tests.sh runs it again at x86-64-v3.
TEST(GemmTest, BelowAvx512TheWeightIsReadTransposedFromScratch) {
  auto probe = Gemm::create({DType::F32, {256, 96}, {96, 80}}, CpuFeatures::host());
  ASSERT_TRUE(probe.ok()) << probe.status();
  if ((*probe)->implName().rfind("gemm:", 0) != 0)
    GTEST_SKIP() << "oneDNN runs " << (*probe)->implName() << " here (AMP_CPU_FEATURES=x86-64-v3 ONEDNN_MAX_CPU_ISA=AVX2 "
                 << "reaches gemm:jit)";
  EXPECT_NE((*probe)->implName().find("weights transposed in scratch"), std::string::npos) << (*probe)->implName();
  EXPECT_GE((*probe)->scratchBytes(), size_t{96} * 80 * 4);
  checkAgainstReference({DType::F32, {256, 96}, {96, 80}}, CpuFeatures::host(), 41, "weights transposed in scratch");
  checkAgainstReference({DType::F32, {4, 64, 96}, {96, 80}}, CpuFeatures::host(), 43, "weights transposed in scratch");
  checkAgainstReference({DType::F16, {256, 96}, {96, 80}}, CpuFeatures::host(), 45, "weights transposed in scratch");
  checkAgainstReference({DType::F32, {96, 200}, {96, 80}, true, false}, CpuFeatures::host(), 47,
                        "weights transposed in scratch");
  // A widened b goes straight into its transposed copy: beyond the f32 GEMM's scratch (the same
  // f32 primitive, so the same transposed b and oneDNN scratchpad) only the widened a and c.
  for (DType t : {DType::F16, DType::BF16}) {
    auto w = Gemm::create({t, {256, 96}, {96, 80}}, CpuFeatures::host());
    ASSERT_TRUE(w.ok()) << w.status();
    if ((*w)->implName().find("widened") == std::string::npos) continue;  // native bf16
    EXPECT_NE((*w)->implName().find("weights transposed in scratch"), std::string::npos) << (*w)->implName();
    EXPECT_EQ((*w)->scratchBytes(), (*probe)->scratchBytes() + size_t{256} * 96 * 4 + size_t{256} * 80 * 4)
        << dtypeName(t);
    // Bit for bit the f32 GEMM of the widened operands, rounded once (odd sizes: partial tiles).
    const GemmDesc narrow{t, {200, 75}, {75, 33}}, wide{DType::F32, {200, 75}, {75, 33}};
    const Tensor a = randomTensor(t, narrow.a, 51), b = randomTensor(t, narrow.b, 52);
    Tensor a32(DType::F32, narrow.a), b32(DType::F32, narrow.b);
    convertBuffer(t, a.data(), DType::F32, a32.data(), a.numel());
    convertBuffer(t, b.data(), DType::F32, b32.data(), b.numel());
    const RunResult got = runGemm(narrow, CpuFeatures::host(), a, b), f32 = runGemm(wide, CpuFeatures::host(), a32, b32);
    ASSERT_EQ(got.out.numel(), f32.out.numel());
    EXPECT_NE(got.impl.find("weights transposed in scratch"), std::string::npos) << got.impl;
    Tensor rounded(t, f32.out.shape());
    convertBuffer(DType::F32, f32.out.data(), t, rounded.data(), f32.out.numel());
    EXPECT_EQ(std::memcmp(rounded.data(), got.out.data(), size_t(rounded.numel()) * 2), 0) << dtypeName(t);
  }
  checkAgainstReference({DType::BF16, {256, 96}, {96, 80}}, CpuFeatures::host(), 49, "weights transposed in scratch");
  // A transposed b, a batched b, or an M below 128: b is read in place.
  for (const GemmDesc& d : {GemmDesc{DType::F32, {256, 96}, {80, 96}, false, true},
                            GemmDesc{DType::F32, {2, 256, 96}, {2, 96, 80}},
                            GemmDesc{DType::F32, {64, 96}, {96, 80}}}) {
    auto g = Gemm::create(d, CpuFeatures::host());
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_EQ((*g)->implName().find("transposed in scratch"), std::string::npos) << (*g)->implName();
  }
}

TEST(GemmTest, ManyBroadcastDimsUseTheBatchLoop) {
  // Eleven batch dims alternating which operand broadcasts cannot be merged, and 11 + 2 dims exceed
  // oneDNN's 12: the Gemm falls back to a loop of 2-D products over precomputed offsets.
  const Shape a = {2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 3, 4}, b = {1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 4, 5};
  checkAgainstReference({DType::F32, a, b}, CpuFeatures::host(), 21, "batch loop x2048");
  const Shape at = {2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 4, 3}, bt = {1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 5, 4};
  checkAgainstReference({DType::F16, at, bt, true, true}, CpuFeatures::host(), 23, "batch loop x2048");
  checkAgainstReference({DType::BF16, a, b}, CpuFeatures::host(), 25, "batch loop x2048");
}

TEST(GemmTest, ZeroSizedDims) {
  for (DType t : {DType::F32, DType::BF16, DType::F16}) {
    SCOPED_TRACE(std::string(dtypeName(t)));
    // K == 0: an empty sum is +0 everywhere (the output buffer starts as garbage).
    for (bool trans : {false, true}) {
      GemmDesc d{t, trans ? Shape{0, 4} : Shape{4, 0}, {0, 6}, trans, false};
      auto g = Gemm::create(d, CpuFeatures::host());
      ASSERT_TRUE(g.ok()) << g.status();
      ASSERT_EQ((*g)->resultShape(), (Shape{4, 6}));
      Tensor out(t, {4, 6});
      std::memset(out.data(), 0x7f, out.nbytes());
      (*g)->run(nullptr, nullptr, out.data(), nullptr);
      Tensor zeros(t, {4, 6});
      EXPECT_TRUE(out.bitwiseEquals(zeros));
      checkAgainstReference({t, {2, 4, 0}, {0, 6}}, CpuFeatures::host(), 9);
    }
    // Empty results: nothing to compute, nothing touched.
    for (const Case& c : std::vector<Case>{{{0, 5}, {5, 6}}, {{4, 5}, {5, 0}}, {{0, 4, 5}, {5, 6}},
                                           {{3, 0, 5}, {1, 5, 6}}}) {
      auto g = Gemm::create({t, c.a, c.b}, CpuFeatures::host());
      ASSERT_TRUE(g.ok()) << g.status();
      EXPECT_EQ(numElements((*g)->resultShape()), 0);
      EXPECT_EQ((*g)->scratchBytes(), 0u);
      (*g)->run(nullptr, nullptr, nullptr, nullptr);
    }
  }
}

TEST(GemmTest, RejectsBadShapesAndTypes) {
  const CpuFeatures& f = CpuFeatures::host();
  auto k = Gemm::create({DType::F32, {4, 5}, {6, 7}}, f);
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(k.status().message()).find("contraction"), std::string::npos) << k.status();
  EXPECT_NE(std::string(k.status().message()).find("f32[4, 5]"), std::string::npos) << k.status();
  // Transposes decide which dim is K: [5, 4]^T x [5, 6] contracts 5 with 5; [4, 5] x [5, 6]^T
  // contracts 5 with 6.
  EXPECT_TRUE(Gemm::create({DType::F32, {5, 4}, {5, 6}, true, false}, f).ok());
  EXPECT_FALSE(Gemm::create({DType::F32, {4, 5}, {5, 6}, false, true}, f).ok());

  for (DType t : {DType::I32, DType::I64, DType::U8, DType::Bool, DType::F64}) {
    auto g = Gemm::create({t, {4, 5}, {5, 6}}, f);
    ASSERT_FALSE(g.ok()) << dtypeName(t);
    EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(g.status().message()).find("element type"), std::string::npos) << g.status();
  }
  EXPECT_EQ(Gemm::create({DType::F32, {5}, {5, 6}}, f).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Gemm::create({DType::F32, {2, 4, 5}, {3, 5, 6}}, f).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Gemm::create({DType::F32, {4, -5}, {-5, 6}}, f).status().code(), absl::StatusCode::kInvalidArgument);
}

float floatFromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(GemmTest, SimdConversionsAreBitIdenticalToConvertBuffer) {
  const CpuFeatures& h = CpuFeatures::host();
  if (!(h.avx2 && h.f16c)) GTEST_SKIP() << "no AVX2/F16C: Gemm uses convertBuffer itself";
  // Widening: every 16-bit pattern (NaN payloads included). 65536 is a multiple of 8, so drop one
  // element to exercise the scalar tail too.
  std::vector<uint16_t> all(65535);
  for (size_t i = 0; i < all.size(); ++i) all[i] = uint16_t(i + 1);
  for (DType t : {DType::F16, DType::BF16}) {
    std::vector<float> ours(all.size()), want(all.size());
    widenToF32(t, all.data(), ours.data(), int64_t(all.size()), true);
    convertBuffer(t, all.data(), DType::F32, want.data(), int64_t(all.size()));
    EXPECT_EQ(std::memcmp(ours.data(), want.data(), ours.size() * 4), 0) << dtypeName(t);
  }
  // Narrowing: for every high part, the low bits that decide RNE (exact, just below / at / above
  // the tie, all ones) for bf16 (16 dropped bits) and for f16 normals (13 dropped bits), plus a
  // stride through all 2^32 patterns (subnormals, overflow, infinities, NaNs).
  std::vector<float> in;
  for (uint32_t hi = 0; hi < (1u << 16); ++hi)
    for (uint32_t lo : {0x0000u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu}) in.push_back(floatFromBits(hi << 16 | lo));
  for (uint32_t hi = 0; hi < (1u << 19); ++hi)
    for (uint32_t lo : {0x0000u, 0x0fffu, 0x1000u, 0x1001u, 0x1fffu}) in.push_back(floatFromBits(hi << 13 | lo));
  for (uint64_t u = 0; u < (1ull << 32); u += 4099) in.push_back(floatFromBits(uint32_t(u)));
  in.push_back(floatFromBits(0x7f800001u));  // an odd length: the scalar tail again
  for (DType t : {DType::F16, DType::BF16}) {
    std::vector<uint16_t> ours(in.size()), want(in.size());
    narrowFromF32(in.data(), t, ours.data(), int64_t(in.size()), true);
    convertBuffer(DType::F32, in.data(), t, want.data(), int64_t(in.size()));
    int64_t bad = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      if (ours[i] != want[i] && ++bad <= 5) {
        uint32_t u;
        std::memcpy(&u, &in[i], 4);
        ADD_FAILURE() << dtypeName(t) << " f32 bits 0x" << std::hex << u << ": simd 0x" << ours[i]
                      << " convertBuffer 0x" << want[i];
      }
    }
    EXPECT_EQ(bad, 0) << dtypeName(t) << " of " << in.size();
  }
}

TEST(GemmTest, ScalarConversionPathMatchesReference) {
  // Features without AVX2/F16C: the widening path uses convertBuffer itself.
  CpuFeatures f = withoutNativeBf16();
  f.avx2 = f.f16c = false;
  checkAgainstReference({DType::F16, {33, 70}, {70, 9}}, f, 31, "f16 widened to f32");
  checkAgainstReference({DType::BF16, {2, 33, 70}, {70, 9}}, f, 33, "bf16 widened to f32");
}

TEST(GemmTest, ConcurrentRunsOnOneGemm) {
  // run() is const: callers on several threads, each with its own scratch and output, get the same
  // bits as a single-threaded run.
  for (DType t : {DType::F32, DType::BF16, DType::F16}) {
    const GemmDesc d{t, {3, 40, 50}, {50, 30}};
    auto g = Gemm::create(d, CpuFeatures::host());
    ASSERT_TRUE(g.ok()) << g.status();
    const Tensor a = randomTensor(t, d.a, 11), b = randomTensor(t, d.b, 12);
    const RunResult want = runGemm(d, CpuFeatures::host(), a, b);
    std::vector<Tensor> outs;
    for (int i = 0; i < 4; ++i) outs.emplace_back(t, (*g)->resultShape());
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i) {
      threads.emplace_back([&, i] {
        Tensor scratch(DType::U8, {int64_t((*g)->scratchBytes())});
        for (int rep = 0; rep < 20; ++rep) (*g)->run(a.data(), b.data(), outs[i].data(), scratch.data());
      });
    }
    for (std::thread& th : threads) th.join();
    for (const Tensor& o : outs) EXPECT_TRUE(o.bitwiseEquals(want.out)) << dtypeName(t);
  }
}

// Allocations (global operator new) during one run() of a prepared Gemm, ampc's and oneDNN's apart.
struct RunAllocations {
  int64_t amp = 0, oneDnn = 0, oneDnnCalls = 0;  // per run
};

RunAllocations allocationsPerRun(const GemmDesc& d, const CpuFeatures& features) {
  auto g = Gemm::create(d, features);
  EXPECT_TRUE(g.ok()) << g.status();
  if (!g.ok()) return {-1, -1, -1};
  Tensor a = randomTensor(d.dtype, d.a, 1), b = randomTensor(d.dtype, d.b, 2);
  Tensor bias = randomTensor(d.dtype, {(*g)->resultShape().back()}, 3);
  const void* pbias = d.bias ? bias.data() : nullptr;
  Tensor c(d.dtype, (*g)->resultShape()), scratch(DType::U8, {int64_t((*g)->scratchBytes())});
  for (int i = 0; i < 2; ++i) (*g)->run(a.data(), b.data(), pbias, c.data(), scratch.data());  // warm up
  constexpr int kRuns = 10;
  const int64_t amp0 = gAmpNewCalls.load(), dnnl0 = gOneDnnNewCalls.load(), calls0 = amp::test::oneDnnCalls();
  for (int i = 0; i < kRuns; ++i) (*g)->run(a.data(), b.data(), pbias, c.data(), scratch.data());
  return {(gAmpNewCalls.load() - amp0) / kRuns, (gOneDnnNewCalls.load() - dnnl0) / kRuns,
          (amp::test::oneDnnCalls() - calls0) / kRuns};
}

TEST(GemmTest, RunAllocatesNothingOutsideOneDnn) {
  // What ampc controls: Gemm::run allocates nothing of its own, on every path (f32, native and
  // widened bf16/f16, batched, looped over batches, with a bias). oneDNN's own per-execute
  // bookkeeping (oneDNN 2.6 builds an argument map on every call) depends on the kernel it
  // dispatched to, so on the CPU: it is printed, not asserted.
  const struct {
    const char* name;
    GemmDesc desc;
  } cases[] = {
      {"small f32", {DType::F32, {4, 5}, {5, 6}}},
      {"128x784x256 f32", {DType::F32, {128, 784}, {784, 256}}},
      {"batched bf16", {DType::BF16, {2, 3, 64, 96}, {96, 32}}},
      {"broadcast batches f32", {DType::F32, {2, 1, 8, 16}, {3, 16, 8}}},
      {"f16", {DType::F16, {64, 96}, {96, 32}}},
      {"f32 + bias", {DType::F32, {128, 784}, {256, 784}, false, true, true}},
      {"bf16 + bias", {DType::BF16, {8, 32, 64}, {256, 64}, false, true, true}},
      {"f16 + bias", {DType::F16, {64, 96}, {96, 32}, false, false, true}},
  };
  for (const CpuFeatures& features : {CpuFeatures::host(), withoutNativeBf16(), nativeBf16WhereAvailable()}) {
    for (const auto& c : cases) {
      const RunAllocations n = allocationsPerRun(c.desc, features);
      std::printf("allocations per run(), %s (%s): ampc %lld, oneDNN %lld in %lld calls\n", c.name,
                  features.summary().c_str(), (long long)n.amp, (long long)n.oneDnn, (long long)n.oneDnnCalls);
      EXPECT_EQ(n.amp, 0) << c.name << " on " << features.summary();
      // The interposition took: run() went through the counted oneDNN entry points.
      EXPECT_GT(n.oneDnnCalls, 0) << c.name;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// CpuFeatures

std::set<std::string> cpuinfoFlags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  std::set<std::string> flags;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    for (std::string w; words >> w;) flags.insert(w);
    break;  // the first CPU is enough: features are uniform across cores here
  }
  return flags;
}

// The first "vendor_id" of /proc/cpuinfo, e.g. "GenuineIntel"; empty where there is none.
std::string cpuinfoVendor() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("vendor_id", 0) == 0) {
      std::istringstream words(line.substr(line.find(':') + 1));
      std::string vendor;
      words >> vendor;
      return vendor;
    }
  return "";
}

TEST(CpuFeaturesTest, NativeBf16GemmsWhereTheyBeatWidening) {
  const std::string vendor = cpuinfoVendor();
  if (!vendor.empty()) EXPECT_EQ(CpuFeatures::host().amd, vendor == "AuthenticAMD") << vendor;
  CpuFeatures f;
  EXPECT_FALSE(f.nativeBf16());
  f.avx512_bf16 = true;  // Intel without AMX: VDPBF16PS at half the FMA rate, so widen
  EXPECT_FALSE(f.nativeBf16());
  f.amd = true;  // Zen 4/5: VDPBF16PS at the FMA rate
  EXPECT_TRUE(f.nativeBf16());
  CpuFeatures amx;
  amx.avx512_bf16 = amx.amx_tile = amx.amx_bf16 = true;
  EXPECT_TRUE(amx.nativeBf16());
}

// Intel AVX512-BF16 without AMX: small GEMMs natively (no f32 copies in scratch), large ones
// widened to f32, whose kernel is faster there.
TEST(GemmTest, IntelAvx512Bf16WidensOnlyLargeGemms) {
  if (!CpuFeatures::host().avx512_bf16) GTEST_SKIP() << "no avx512_bf16 on this CPU";
  CpuFeatures intel = CpuFeatures::host();
  intel.amd = intel.amx_tile = intel.amx_bf16 = false;
  auto small = Gemm::create({DType::BF16, {64, 256}, {256, 256}}, intel);  // 8 MFLOP
  auto large = Gemm::create({DType::BF16, {256, 1024}, {1024, 1024}}, intel);  // 537 MFLOP
  ASSERT_TRUE(small.ok() && large.ok());
  EXPECT_EQ((*small)->implName().find("widened"), std::string::npos) << (*small)->implName();
  EXPECT_NE((*large)->implName().find("bf16 widened to f32"), std::string::npos) << (*large)->implName();
  EXPECT_EQ((*small)->scratchBytes() < (*large)->scratchBytes(), true);
  checkAgainstReference({DType::BF16, {256, 1024}, {1024, 1024}}, intel, 991, "bf16 widened to f32");
}

TEST(CpuFeaturesTest, SummaryAndLevel) {
  const CpuFeatures& f = CpuFeatures::host();
  EXPECT_FALSE(f.summary().empty());
  EXPECT_EQ(&f, &CpuFeatures::host());  // detected once
  EXPECT_EQ(&CpuFeatures::detected(), &CpuFeatures::detected());
  EXPECT_EQ(f.nativeBf16(), f.amx_bf16 || (f.avx512_bf16 && f.amd));
  std::printf("host: %s (%s)\n", f.summary().c_str(), f.isaLevel().c_str());
  CpuFeatures none;
  EXPECT_EQ(none.summary(), "none");
  EXPECT_EQ(none.isaLevel(), "x86-64");
  CpuFeatures v3;
  v3.avx = v3.avx2 = v3.fma = v3.f16c = v3.bmi1 = v3.bmi2 = v3.lzcnt = v3.movbe = true;
  EXPECT_EQ(v3.isaLevel(), "x86-64-v3");
  EXPECT_EQ(v3.summary(), "avx2 fma f16c");
  CpuFeatures v4 = v3;
  v4.avx512f = v4.avx512bw = v4.avx512cd = v4.avx512dq = v4.avx512vl = true;
  EXPECT_EQ(v4.isaLevel(), "x86-64-v4");
}

// A Sapphire Rapids class machine: everything the detector knows.
CpuFeatures everything() {
  CpuFeatures f;
  for (bool* b : {&f.avx, &f.avx2, &f.fma, &f.f16c, &f.bmi1, &f.bmi2, &f.lzcnt, &f.movbe, &f.avx512f,
                  &f.avx512dq, &f.avx512cd, &f.avx512bw, &f.avx512vl, &f.avx512_bf16, &f.avx512_fp16,
                  &f.amx_tile, &f.amx_bf16})
    *b = true;
  return f;
}

TEST(CpuFeaturesTest, MaskLowersToEachLevelAndNeverRaises) {
  struct Want {
    const char* level;
    const char* isa;
    const char* summary;
  };
  const Want wants[] = {
      {"x86-64", "x86-64", "none"},
      {"x86-64-v3", "x86-64-v3", "avx2 fma f16c"},
      {"x86-64-v4", "x86-64-v4", "avx2 fma f16c avx512f avx512bw avx512vl"},
      {"avx512_bf16", "x86-64-v4", "avx2 fma f16c avx512f avx512bw avx512vl avx512_bf16 avx512_fp16"},
      {"host", "x86-64-v4",
       "avx2 fma f16c avx512f avx512bw avx512vl avx512_bf16 avx512_fp16 amx_tile amx_bf16"},
  };
  for (const Want& w : wants) {
    CpuFeatures f = everything();
    ASSERT_TRUE(f.lowerTo(w.level)) << w.level;
    EXPECT_EQ(f.isaLevel(), w.isa) << w.level;
    EXPECT_EQ(f.summary(), w.summary) << w.level;
  }
  // The native bf16 paths go with the level: none at v4 and below, AMD's at avx512_bf16.
  CpuFeatures amd = everything();
  amd.amd = true;
  ASSERT_TRUE(amd.lowerTo("avx512_bf16"));
  EXPECT_TRUE(amd.nativeBf16());
  ASSERT_TRUE(amd.lowerTo("x86-64-v4"));
  EXPECT_FALSE(amd.nativeBf16());
  EXPECT_FALSE(amd.nativeBf16Gemm(1.0));
  // A mask never adds a feature the machine lacks.
  CpuFeatures none;
  ASSERT_TRUE(none.lowerTo("host"));
  EXPECT_EQ(none.summary(), "none");
  // Unknown names change nothing.
  for (const char* bad : {"", "x86-64-v5", "AVX2", "avx2", "x86-64-v3 "}) {
    CpuFeatures f = everything();
    EXPECT_FALSE(f.lowerTo(bad)) << bad;
    EXPECT_EQ(f.summary(), everything().summary()) << bad;
  }
}

// host() is detected() lowered to AMP_CPU_FEATURES, the mask scripts/test.sh sets for its
// x86-64-v3 pass; without the variable the two agree.
TEST(CpuFeaturesTest, HostIsTheDetectedFeaturesUnderTheEnvironmentsMask) {
  const char* env = std::getenv("AMP_CPU_FEATURES");
  CpuFeatures want = CpuFeatures::detected();
  if (env != nullptr && *env != '\0') {
    ASSERT_TRUE(want.lowerTo(env)) << CpuFeatures::maskError();
    EXPECT_EQ(CpuFeatures::maskLevel(), env);
  }
  EXPECT_TRUE(CpuFeatures::maskError().empty()) << CpuFeatures::maskError();
  EXPECT_EQ(CpuFeatures::host().summary(), want.summary());
  EXPECT_EQ(CpuFeatures::host().isaLevel(), want.isaLevel());
  EXPECT_EQ(CpuFeatures::host().amd, want.amd);
  std::printf("detected: %s (%s); host under AMP_CPU_FEATURES=%s: %s (%s)\n",
              CpuFeatures::detected().summary().c_str(), CpuFeatures::detected().isaLevel().c_str(),
              env ? env : "", CpuFeatures::host().summary().c_str(), CpuFeatures::host().isaLevel().c_str());
}

TEST(CpuFeaturesTest, AgreesWithProcCpuinfo) {
  const std::set<std::string> flags = cpuinfoFlags();
  if (flags.empty()) GTEST_SKIP() << "no /proc/cpuinfo flags";
  const CpuFeatures& f = CpuFeatures::detected();
  // The kernel lists a flag only when the CPU has it and the OS enabled its state, which is what
  // the detector checks with XCR0.
  EXPECT_EQ(f.avx2, flags.count("avx2") > 0);
  EXPECT_EQ(f.fma, flags.count("fma") > 0);
  EXPECT_EQ(f.f16c, flags.count("f16c") > 0);
  EXPECT_EQ(f.avx512f, flags.count("avx512f") > 0);
  EXPECT_EQ(f.avx512bw, flags.count("avx512bw") > 0);
  EXPECT_EQ(f.avx512vl, flags.count("avx512vl") > 0);
  EXPECT_EQ(f.avx512_bf16, flags.count("avx512_bf16") > 0);
  EXPECT_EQ(f.avx512_fp16, flags.count("avx512_fp16") > 0);
  // AMX additionally needs the per-process tile permission, which a kernel that lists the flag
  // grants.
  EXPECT_EQ(f.amx_tile, flags.count("amx_tile") > 0);
  EXPECT_EQ(f.amx_bf16, flags.count("amx_bf16") > 0);
}

}  // namespace
}  // namespace amp::rt::cpu
