// Unary/binary math, compare, select, cast, constant: against f64 formulas written here.
#include <cmath>
#include <functional>
#include <limits>

#include "RefTestUtil.h"

namespace amp::rt {
namespace {
using namespace reftest;

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

struct UnaryCase {
  const char* op;
  std::function<double(double)> f;
  double lo, hi;  // input domain
  bool correctlyRounded;  // single IEEE operation: the f32 result must be exact
};

std::vector<UnaryCase> unaryCases() {
  return {
      {"amp.neg", [](double x) { return -x; }, -10, 10, true},
      {"amp.abs", [](double x) { return std::fabs(x); }, -10, 10, true},
      {"amp.exp", [](double x) { return std::exp(x); }, -20, 20, false},
      {"amp.log", [](double x) { return std::log(x); }, 1e-3, 100, false},
      {"amp.sqrt", [](double x) { return std::sqrt(x); }, 0, 100, true},
      {"amp.rsqrt", [](double x) { return 1 / std::sqrt(x); }, 1e-3, 100, false},
      {"amp.reciprocal", [](double x) { return 1 / x; }, 0.01, 100, true},
      {"amp.tanh", [](double x) { return std::tanh(x); }, -5, 5, false},
      {"amp.erf", [](double x) { return std::erf(x); }, -4, 4, false},
      {"amp.sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }, -10, 10, false},
      {"amp.relu", [](double x) { return x > 0 ? x : 0.0; }, -5, 5, true},
      {"amp.silu", [](double x) { return x / (1 + std::exp(-x)); }, -10, 10, false},
  };
}

// f32: exact where the op is one IEEE operation; otherwise within 1 f32 ulp of the f64 value
// (the kernel rounds an f64 evaluation once; 1 ulp absorbs libm differences).
TEST(RefElementwise, UnaryF32MatchesF64Formulas) {
  for (const UnaryCase& uc : unaryCases()) {
    std::vector<double> x = randomValues(64, uc.lo, uc.hi, 7);
    Tensor t = make(DType::F32, {8, 8}, x);
    Tensor y = runOk(uc.op, {&t}, {}, {DType::F32, {8, 8}});
    std::vector<double> want(x.size());
    for (size_t i = 0; i < x.size(); ++i) want[i] = uc.f(x[i]);
    if (uc.correctlyRounded) expectRoundedEq(y, want, uc.op);
    else expectWithinUlps(y, want, 1.0, uc.op);
  }
}

// f16/bf16: the result is the f64 value of the f32-widened input rounded to the result type.
TEST(RefElementwise, UnaryLowPrecisionEqualsRoundedF64) {
  for (DType dt : {DType::F16, DType::BF16})
    for (const UnaryCase& uc : unaryCases()) {
      std::vector<double> x = randomValues(64, uc.lo, std::min(uc.hi, 10.0), 11, dt);
      Tensor t = make(dt, {64}, x);
      Tensor y = runOk(uc.op, {&t}, {}, {dt, {64}});
      ASSERT_EQ(y.dtype(), dt);
      std::vector<double> want(x.size());
      for (size_t i = 0; i < x.size(); ++i) want[i] = uc.f(x[i]);
      expectRoundedEq(y, want, std::string(uc.op) + " " + std::string(dtypeName(dt)));
    }
}

TEST(RefElementwise, GeluBothApproximations) {
  std::vector<double> x = {-3, -1, -0.5, 0, 0.5, 1, 2, 3};
  Tensor t = make(DType::F32, {8}, x);
  Tensor exact = runOk("amp.gelu", {&t}, {{"approximate", std::string("none")}}, {DType::F32, {8}});
  Tensor dflt = runOk("amp.gelu", {&t}, {}, {DType::F32, {8}});
  Tensor approx = runOk("amp.gelu", {&t}, {{"approximate", std::string("tanh")}}, {DType::F32, {8}});
  std::vector<double> wantExact, wantTanh;
  for (double v : x) {
    wantExact.push_back(0.5 * v * (1 + std::erf(v / std::sqrt(2.0))));
    wantTanh.push_back(0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))));
  }
  expectWithinUlps(exact, wantExact, 1.0, "gelu none");
  expectWithinUlps(dflt, wantExact, 1.0, "gelu default");
  expectWithinUlps(approx, wantTanh, 1.0, "gelu tanh");
  // Known values: gelu(1) = 0.841344746..., tanh-gelu(1) = 0.841191990...
  EXPECT_NEAR(values(exact)[5], 0.8413447460685429, 1e-7);
  EXPECT_NEAR(values(approx)[5], 0.8411919906082768, 1e-7);
  expectError(run("amp.gelu", {&t}, {{"approximate", std::string("fast")}}, {DType::F32, {8}}),
              "attribute 'approximate'");
}

// Independent f64 broadcasting: index each operand with its own strides (0 on broadcast dims).
std::vector<double> broadcastRef(const std::vector<double>& a, const Shape& sa, const std::vector<double>& b,
                                 const Shape& sb, const Shape& out, const std::function<double(double, double)>& f) {
  std::vector<double> r;
  const int64_t n = numElements(out);
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, ia = 0, ib = 0, stA = 1, stB = 1;
    for (int64_t d = static_cast<int64_t>(out.size()) - 1; d >= 0; --d) {
      const int64_t idx = rem % out[d];
      rem /= out[d];
      const int64_t da = d - (int64_t(out.size()) - int64_t(sa.size()));
      const int64_t db = d - (int64_t(out.size()) - int64_t(sb.size()));
      if (da >= 0) { ia += (sa[da] == 1 ? 0 : idx) * stA; stA *= sa[da]; }
      if (db >= 0) { ib += (sb[db] == 1 ? 0 : idx) * stB; stB *= sb[db]; }
    }
    r.push_back(f(a[ia], b[ib]));
  }
  return r;
}

TEST(RefElementwise, BinaryBroadcastingAllOps) {
  struct Case { Shape a, b, out; };
  const std::vector<Case> shapes = {{{2, 3}, {3}, {2, 3}}, {{2, 1}, {1, 3}, {2, 3}},
                                    {{4, 1, 3}, {2, 1}, {4, 2, 3}}, {{}, {2, 2}, {2, 2}}};
  const std::vector<std::pair<const char*, std::function<double(double, double)>>> ops = {
      {"amp.add", [](double x, double y) { return x + y; }},
      {"amp.sub", [](double x, double y) { return x - y; }},
      {"amp.mul", [](double x, double y) { return x * y; }},
      {"amp.div", [](double x, double y) { return x / y; }},
      {"amp.maximum", [](double x, double y) { return std::max(x, y); }},
      {"amp.minimum", [](double x, double y) { return std::min(x, y); }},
      {"amp.pow", [](double x, double y) { return std::pow(x, y); }}};
  unsigned seed = 1;
  for (const Case& c : shapes)
    for (DType dt : {DType::F32, DType::F16, DType::BF16})
      for (const auto& [op, f] : ops) {
        std::vector<double> a = randomValues(numElements(c.a), 0.5, 4, seed++, dt);
        std::vector<double> b = randomValues(numElements(c.b), 0.5, 3, seed++, dt);
        Tensor ta = make(dt, c.a, a), tb = make(dt, c.b, b);
        Tensor y = runOk(op, {&ta, &tb}, {}, {dt, c.out});
        std::vector<double> want = broadcastRef(a, c.a, b, c.b, c.out, f);
        // + - * / of f32 values: f32(f64 op) is the IEEE f32 result (53 >= 2*24+2), so exact;
        // pow is within 1 ulp in f32 and exact after rounding to f16/bf16.
        if (std::string(op) == "amp.pow" && dt == DType::F32) expectWithinUlps(y, want, 1.0, op);
        else expectRoundedEq(y, want, std::string(op) + " " + shapeToString(c.out) + " " +
                                          std::string(dtypeName(dt)));
      }
}

TEST(RefElementwise, F32ArithmeticIsTheIeeeF32Operation) {
  std::vector<double> a = randomValues(256, -1e3, 1e3, 5), b = randomValues(256, -1e3, 1e3, 6);
  Tensor ta = make(DType::F32, {256}, a), tb = make(DType::F32, {256}, b);
  Tensor add = runOk("amp.add", {&ta, &tb}, {}, {DType::F32, {256}});
  Tensor mul = runOk("amp.mul", {&ta, &tb}, {}, {DType::F32, {256}});
  Tensor div = runOk("amp.div", {&ta, &tb}, {}, {DType::F32, {256}});
  for (int i = 0; i < 256; ++i) {
    const float x = float(a[i]), y = float(b[i]);
    EXPECT_EQ(add.as<float>()[i], x + y);
    EXPECT_EQ(mul.as<float>()[i], x * y);
    EXPECT_EQ(div.as<float>()[i], x / y);
  }
}

TEST(RefElementwise, MaximumMinimumPropagateNaN) {
  Tensor a = make(DType::F32, {4}, {kNaN, 1, 2, 0.0});
  Tensor b = make(DType::F32, {4}, {1, kNaN, 3, -0.0});
  Tensor mx = runOk("amp.maximum", {&a, &b}, {}, {DType::F32, {4}});
  Tensor mn = runOk("amp.minimum", {&a, &b}, {}, {DType::F32, {4}});
  std::vector<double> x = values(mx), n = values(mn);
  EXPECT_TRUE(std::isnan(x[0]) && std::isnan(x[1]) && std::isnan(n[0]) && std::isnan(n[1]));
  EXPECT_EQ(x[2], 3);
  EXPECT_EQ(n[2], 2);
  EXPECT_FALSE(std::signbit(x[3]));  // max(+0, -0) = +0
  EXPECT_TRUE(std::signbit(n[3]));   // min(+0, -0) = -0
}

TEST(RefElementwise, F16OverflowGivesInf) {
  Tensor a = make(DType::F16, {3}, {300, -300, 65504});
  Tensor b = make(DType::F16, {3}, {300, 300, 1});
  std::vector<double> m = values(runOk("amp.mul", {&a, &b}, {}, {DType::F16, {3}}));
  EXPECT_EQ(m[0], kInf);   // 90000 > 65504
  EXPECT_EQ(m[1], -kInf);
  EXPECT_EQ(m[2], 65504);  // max finite stays finite
  // 65504 + 16 = 65520 is the tie between 65504 (odd mantissa) and 2^16: RNE goes to 2^16 = inf.
  Tensor c = make(DType::F16, {2}, {65504, 65504}), d = make(DType::F16, {2}, {16, 8});
  std::vector<double> s = values(runOk("amp.add", {&c, &d}, {}, {DType::F16, {2}}));
  EXPECT_EQ(s[0], kInf);
  EXPECT_EQ(s[1], 65504);  // below the tie: rounds back down
  Tensor e = make(DType::F16, {1}, {12});
  EXPECT_EQ(values(runOk("amp.exp", {&e}, {}, {DType::F16, {1}}))[0], kInf);  // e^12 = 162755
}

TEST(RefElementwise, BF16RoundsToNearestEven) {
  // ulp(1) in bf16 is 2^-7: 1 + 2^-8 is a tie and goes to the even neighbour 1; 1 + 3*2^-8 is a
  // tie between 1+2^-7 (odd) and 1+2^-6 (even); 1 + 1.5*2^-8 is above the tie and rounds up.
  Tensor a = make(DType::BF16, {3}, {1, 1, 1});
  Tensor b = make(DType::BF16, {3}, {std::ldexp(1, -8), 3 * std::ldexp(1, -8), 1.5 * std::ldexp(1, -8)});
  ASSERT_EQ(values(b)[1], 3 * std::ldexp(1, -8));  // operands are exact in bf16
  std::vector<double> s = values(runOk("amp.add", {&a, &b}, {}, {DType::BF16, {3}}));
  EXPECT_EQ(s[0], 1.0);
  EXPECT_EQ(s[1], 1 + std::ldexp(1, -6));
  EXPECT_EQ(s[2], 1 + std::ldexp(1, -7));
}

TEST(RefElementwise, CompareAllPredicatesBroadcastAndNaN) {
  Tensor a = make(DType::F32, {2, 3}, {1, 2, 3, kNaN, 5, 6});
  Tensor b = make(DType::F32, {3}, {2, 2, 2});
  const std::vector<std::pair<std::string, std::vector<int>>> cases = {
      {"eq", {0, 1, 0, 0, 0, 0}}, {"ne", {1, 0, 1, 1, 1, 1}}, {"lt", {1, 0, 0, 0, 0, 0}},
      {"le", {1, 1, 0, 0, 0, 0}}, {"gt", {0, 0, 1, 0, 1, 1}}, {"ge", {0, 1, 1, 0, 1, 1}}};
  for (const auto& [pred, want] : cases) {
    Tensor y = runOk("amp.compare", {&a, &b}, {{"predicate", pred}}, {DType::Bool, {2, 3}});
    ASSERT_EQ(y.dtype(), DType::Bool);
    for (int i = 0; i < 6; ++i) EXPECT_EQ(y.as<uint8_t>()[i], want[i]) << pred << " " << i;
  }
  // Integers compare exactly: 2^53 + 1 and 2^53 are distinct though equal as f32 or f64.
  Tensor x = makeI64({2}, {(int64_t{1} << 53) + 1, 7}), z = makeI64({2}, {int64_t{1} << 53, 7});
  Tensor eq = runOk("amp.compare", {&x, &z}, {{"predicate", std::string("eq")}}, {DType::Bool, {2}});
  EXPECT_EQ(eq.as<uint8_t>()[0], 0);
  EXPECT_EQ(eq.as<uint8_t>()[1], 1);
  expectError(run("amp.compare", {&a, &b}, {{"predicate", std::string("lte")}}, {DType::Bool, {2, 3}}),
              "attribute 'predicate'");
}

TEST(RefElementwise, SelectBroadcastsAllThree) {
  Tensor cond = makeBool({2, 1}, {1, 0});
  Tensor a = make(DType::BF16, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = make(DType::BF16, {}, {-1});
  Tensor y = runOk("amp.select", {&cond, &a, &b}, {}, {DType::BF16, {2, 3}});
  EXPECT_EQ(values(y), (std::vector<double>{1, 2, 3, -1, -1, -1}));
  Tensor notBool = make(DType::F32, {2, 1}, {1, 0});
  expectError(run("amp.select", {&notBool, &a, &b}, {}, {DType::BF16, {2, 3}}), "condition");
}

TEST(RefElementwise, CastRoundsNearestEvenAndFp8DoesNotSaturate) {
  // 1 + 2^-11 is the f16 tie between 1 and 1 + 2^-10: goes to 1. 1 + 3*2^-11 goes to 1 + 2^-9.
  Tensor x = make(DType::F32, {4}, {1 + std::ldexp(1, -11), 1 + 3 * std::ldexp(1, -11), 1e5, -1e-8});
  std::vector<double> h = values(runOk("amp.cast", {&x}, {}, {DType::F16, {4}}));
  EXPECT_EQ(h[0], 1.0);
  EXPECT_EQ(h[1], 1 + std::ldexp(1, -9));
  EXPECT_EQ(h[2], kInf);
  EXPECT_EQ(h[3], 0.0);  // below half the smallest f16 subnormal (2^-25)
  EXPECT_TRUE(std::signbit(h[3]));
  Tensor big = make(DType::F32, {2}, {1000, 448});
  std::vector<double> e4 = values(runOk("amp.cast", {&big}, {}, {DType::F8E4M3FN, {2}}));
  EXPECT_TRUE(std::isnan(e4[0]));  // non-saturating: overflow is NaN in E4M3FN
  EXPECT_EQ(e4[1], 448);
  Tensor huge = make(DType::F32, {1}, {1e6});
  EXPECT_EQ(values(runOk("amp.cast", {&huge}, {}, {DType::F8E5M2, {1}}))[0], kInf);
  // Round trip f16 -> f32 is exact.
  Tensor hf = make(DType::F16, {2}, {0.333251953125, -2});
  EXPECT_EQ(values(runOk("amp.cast", {&hf}, {}, {DType::F32, {2}})), values(hf));
  expectError(run("amp.cast", {&x}, {}, {DType::F16, {2, 2}}), "result shape");
}

TEST(RefElementwise, ConstantConvertsToResultType) {
  Tensor v = make(DType::F32, {2}, {1 + std::ldexp(1, -8), 3.5});
  AttrMap attrs;
  attrs.set("value", v);
  Tensor y = runOk("amp.constant", {}, attrs, {DType::BF16, {2}});
  EXPECT_EQ(values(y), (std::vector<double>{1.0, 3.5}));
  expectError(run("amp.constant", {}, attrs, {DType::BF16, {3}}), "attribute 'value' has shape [2]");
  expectError(run("amp.constant", {}, {}, {DType::BF16, {2}}), "amp.constant: missing attribute 'value'");
}

}  // namespace
}  // namespace amp::rt
