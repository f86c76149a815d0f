// Gradient checks of every VJP rule of amp-autodiff. Each case is a tiny model whose params feed
// one op; the loss is reduce_sum(op(params) * R) with a fixed random constant R, so every output
// element matters. The module goes through amp-autodiff (in process), codegen (buildPlan) and the
// reference Session: the analytic gradients of the "train_step" entry (seed 1) are compared with
// central finite differences of the "eval" entry's loss, differenced in f64.
//
// Step and tolerance. The executor evaluates in f32, so a loss value carries a rounding error of
// about |L| * 2^-24 per accumulated term (|L| ~ 1..10 here, <= 40 terms): at most ~2e-5 absolute,
// typically ~1e-6. The central difference (L+ - L-) / 2h turns that into ~eps_L / h, and its
// truncation error is h^2/6 * |f'''|. h = 2^-7 (~7.8e-3; exact steps: the denominator is the
// difference of the two perturbed f32 params) balances both: ~1e-4 roundoff, ~1e-5 truncation
// for the smooth ops here. Errors are measured relative to the gradient's largest element
// (||analytic - fd||_inf / ||fd||_inf, the gradients are O(0.1..1)), with tolerance 5e-3: 10x the
// observed worst case and far below the O(1) error a wrong rule gives. Inputs avoid kinks
// (relu/abs at 0, max ties, window argmax changes) by at least 5h.
#include <set>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/PlanBuilder.h"
#include "gtest/gtest.h"
#include "ir/AmpDialect.h"
#include "ir/AmpOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "passes/Passes.h"
#include "ir/AmpOps.h"
#include "runtime/io/NamedTensor.h"
#include "runtime/numerics/Convert.h"
#include "runtime/exec/Session.h"
#include "runtime/devices/Devices.h"

namespace {
namespace rt = ::amp::rt;
using mlir::MLIRContext;
using mlir::ModuleOp;

constexpr double kStep = 1.0 / 128;
constexpr double kTolerance = 5e-3;

struct Param {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

struct IntInput {
  std::string name;
  std::string role;  // "input" or "label"
  std::vector<int64_t> shape;
  std::vector<int64_t> values;
};

struct Case {
  std::vector<Param> params;
  std::vector<IntInput> ints;
  std::string body;               // MLIR that defines %out (f32)
  std::vector<int64_t> outShape;  // shape of %out
};

std::string typeStr(const std::vector<int64_t>& shape, const std::string& elem = "f32") {
  std::string s = "tensor<";
  for (int64_t d : shape) s += std::to_string(d) + "x";
  return s + elem + ">";
}

std::string literal(const std::vector<float>& v, const std::vector<int64_t>& shape, size_t dim, size_t& pos) {
  if (dim == shape.size()) {
    std::ostringstream os;
    os.precision(9);
    os << std::scientific << v[pos++];
    return os.str();
  }
  std::string s = "[";
  for (int64_t i = 0; i < shape[dim]; ++i) s += (i ? ", " : "") + literal(v, shape, dim + 1, pos);
  return s + "]";
}
std::string dense(const std::vector<float>& v, const std::vector<int64_t>& shape) {
  size_t pos = 0;
  return "dense<" + literal(v, shape, 0, pos) + ">";
}

int64_t numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// Value generators (fixed seeds: every run checks the same numbers).
std::vector<float> uniform(int64_t n, double lo, double hi, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(dist(gen));
  return v;
}
// |x| in [lo, hi] with a random sign: away from the kink at 0.
std::vector<float> awayFromZero(int64_t n, double lo, double hi, unsigned seed) {
  std::vector<float> v = uniform(n, lo, hi, seed);
  std::mt19937 gen(seed + 1000);
  for (auto& x : v)
    if (gen() & 1) x = -x;
  return v;
}
// A shuffled grid offset + k*spacing: distinct values, pairwise at least `spacing` apart.
std::vector<float> distinct(int64_t n, double spacing, double offset, unsigned seed) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(offset + spacing * (i - n / 2));
  std::shuffle(v.begin(), v.end(), std::mt19937(seed));
  return v;
}

std::string moduleText(const Case& c) {
  std::string args;
  for (const Param& p : c.params)
    args += (args.empty() ? "" : ", ") + ("%" + p.name + ": " + typeStr(p.shape) +
                                          " {amp.role = \"param\", amp.name = \"" + p.name + "\"}");
  for (const IntInput& in : c.ints)
    args += (args.empty() ? "" : ", ") + ("%" + in.name + ": " + typeStr(in.shape, "i64") +
                                          " {amp.role = \"" + in.role + "\", amp.name = \"" + in.name + "\"}");
  std::string t = typeStr(c.outShape);
  std::string dims;
  for (size_t d = 0; d < c.outShape.size(); ++d) dims += (d ? ", " : "") + std::to_string(d);
  std::vector<float> r = awayFromZero(numel(c.outShape), 0.5, 1.5, 99);
  std::string loss = c.outShape.empty() ? "%gc_p" : "%gc_l";
  return "func.func @m(" + args + ") -> tensor<f32> {\n" + c.body + "\n" +
         "  %gc_r = amp.constant " + dense(r, c.outShape) + " : " + t + "\n" +
         "  %gc_p = amp.mul %out, %gc_r : " + t + ", " + t + "\n" +
         (c.outShape.empty() ? "" : "  %gc_l = amp.reduce_sum %gc_p dims = [" + dims + "] : " + t + "\n") +
         "  return " + loss + " : tensor<f32>\n}\n";
}

rt::Tensor f32Tensor(const std::vector<int64_t>& shape, const std::vector<float>& v) {
  rt::Tensor t(rt::DType::F32, shape);
  std::memcpy(t.data(), v.data(), v.size() * sizeof(float));
  return t;
}

std::vector<float> toFloats(const rt::Tensor& t) {
  std::vector<float> v(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = rt::loadAsF32(t.dtype(), t.data(), i);
  return v;
}

class AutodiffTest : public ::testing::Test {
 protected:
  AutodiffTest() {
    mlir::DialectRegistry registry;
    registry.insert<mlir::amp::AmpDialect, mlir::func::FuncDialect>();
    ctx.appendDialectRegistry(registry);
    ctx.loadAllAvailableDialects();
    mlir::amp::registerAmpPasses();
  }

  // Parses `text`, runs `pipeline` (amp-autodiff when empty) and lowers to a plan. Diagnostics
  // are collected into `diagnostics`.
  std::optional<rt::Plan> compile(const std::string& text, const std::string& pipeline = "",
                                  mlir::OwningOpRef<ModuleOp>* keep = nullptr) {
    mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic& d) {
      diagnostics += d.str() + "\n";
      return mlir::success();
    });
    auto module = mlir::parseSourceString<ModuleOp>(text, &ctx);
    if (!module) return std::nullopt;
    mlir::PassManager pm(&ctx);
    if (pipeline.empty()) {
      pm.addPass(mlir::amp::createAmpAutodiffPass());
    } else if (failed(mlir::parsePassPipeline(pipeline, pm))) {
      diagnostics += "bad pipeline " + pipeline;
      return std::nullopt;
    }
    if (failed(pm.run(*module))) return std::nullopt;
    auto plan = mlir::amp::buildPlan(*module);
    if (failed(plan)) return std::nullopt;
    if (keep) *keep = std::move(module);
    return std::move(*plan);
  }

  static void setSeed(rt::Session& s, float seed) {
    std::vector<rt::NamedTensor> all;
    for (const auto& ref : s.persistent())
      all.push_back({ref.name, ref.name == "amp.grad_seed" ? f32Tensor({}, {seed}) : *ref.tensor});
    ASSERT_TRUE(s.restore(all).ok());
  }

  static std::map<std::string, rt::Tensor> feeds(const Case& c) {
    std::map<std::string, rt::Tensor> f;
    for (const IntInput& in : c.ints) {
      rt::Tensor t(rt::DType::I64, in.shape);
      std::memcpy(t.data(), in.values.data(), in.values.size() * sizeof(int64_t));
      f.emplace(in.name, std::move(t));
    }
    return f;
  }

  static std::map<std::string, rt::Tensor> byName(std::vector<rt::NamedTensor> v) {
    std::map<std::string, rt::Tensor> m;
    for (auto& nt : v) m.emplace(nt.name, std::move(nt.tensor));
    return m;
  }

  // Runs the gradient check; returns the worst relative error over the params.
  double gradCheck(const Case& c) {
    std::string text = moduleText(c);
    auto plan = compile(text);
    EXPECT_TRUE(plan) << diagnostics << "\n" << text;
    if (!plan) return 1e9;
    auto session = rt::openSession(std::move(*plan), rt::Device::Reference);
    EXPECT_TRUE(session.ok()) << session.status();
    if (!session.ok()) return 1e9;
    rt::Session& s = *session;
    auto setParam = [&](const Param& p, const std::vector<float>& v) {
      EXPECT_TRUE(s.setParams({{p.name, f32Tensor(p.shape, v)}}, nullptr).ok());
    };
    for (const Param& p : c.params) setParam(p, p.values);
    setSeed(s, 1.0f);
    auto f = feeds(c);
    auto step = s.run("train_step", f);
    EXPECT_TRUE(step.ok()) << step.status() << "\n" << text;
    if (!step.ok()) return 1e9;
    auto out = byName(std::move(*step));
    auto evalLoss = [&]() -> double {
      auto r = s.run("eval", f);
      EXPECT_TRUE(r.ok()) << r.status();
      return r.ok() ? rt::loadAsF32(rt::DType::F32, (*r)[0].tensor.data(), 0) : NAN;
    };
    double worst = 0;
    for (const Param& p : c.params) {
      auto it = out.find("grad:" + p.name);
      EXPECT_NE(it, out.end()) << "no gradient for " << p.name;
      if (it == out.end()) return 1e9;
      EXPECT_EQ(it->second.dtype(), rt::DType::F32);
      std::vector<float> analytic = toFloats(it->second);
      double maxDiff = 0, maxFd = 0;
      for (size_t j = 0; j < p.values.size(); ++j) {
        std::vector<float> plus = p.values, minus = p.values;
        plus[j] = static_cast<float>(p.values[j] + kStep);
        minus[j] = static_cast<float>(p.values[j] - kStep);
        setParam(p, plus);
        double lp = evalLoss();
        setParam(p, minus);
        double lm = evalLoss();
        double fd = (lp - lm) / (double(plus[j]) - double(minus[j]));
        maxDiff = std::max(maxDiff, std::fabs(fd - analytic[j]));
        maxFd = std::max(maxFd, std::fabs(fd));
      }
      setParam(p, p.values);
      EXPECT_GT(maxFd, 1e-3) << p.name << ": the check needs a non-trivial gradient";
      double rel = maxDiff / std::max(maxFd, 1e-12);
      EXPECT_LT(rel, kTolerance) << "param " << p.name << "\n" << text;
      worst = std::max(worst, rel);
    }
    return worst;
  }

  MLIRContext ctx;
  std::string diagnostics;
};

// One test per op; the worst relative error is printed (RecordProperty + stdout) for the report.
#define GRAD_TEST(NAME, ...)                                  \
  TEST_F(AutodiffTest, NAME) {                                \
    Case c = __VA_ARGS__;                                     \
    double err = gradCheck(c);                                \
    RecordProperty("max_rel_error", std::to_string(err));     \
    std::printf("[gradcheck] %-24s max rel error %.3e\n", #NAME, err); \
  }

Param P(const std::string& name, std::vector<int64_t> shape, std::vector<float> values) {
  return Param{name, std::move(shape), std::move(values)};
}

// Unary ops on x [2, 3].
Case unary(const std::string& op, std::vector<float> x, const std::string& attrs = "") {
  return Case{{P("x", {2, 3}, std::move(x))}, {},
              "  %out = amp." + op + " %x" + attrs + " : tensor<2x3xf32>", {2, 3}};
}

GRAD_TEST(Neg, unary("neg", uniform(6, -1, 1, 1)))
GRAD_TEST(Abs, unary("abs", awayFromZero(6, 0.2, 1.5, 2)))
GRAD_TEST(Exp, unary("exp", uniform(6, -1, 1, 3)))
GRAD_TEST(Log, unary("log", uniform(6, 0.5, 2, 4)))
GRAD_TEST(Sqrt, unary("sqrt", uniform(6, 0.5, 2, 5)))
GRAD_TEST(Rsqrt, unary("rsqrt", uniform(6, 0.5, 2, 6)))
GRAD_TEST(Reciprocal, unary("reciprocal", awayFromZero(6, 0.5, 2, 7)))
GRAD_TEST(Tanh, unary("tanh", uniform(6, -1.5, 1.5, 8)))
GRAD_TEST(Erf, unary("erf", uniform(6, -2, 2, 21)))
GRAD_TEST(Sigmoid, unary("sigmoid", uniform(6, -2, 2, 9)))
GRAD_TEST(Relu, unary("relu", awayFromZero(6, 0.1, 1.5, 10)))
GRAD_TEST(Silu, unary("silu", uniform(6, -2, 2, 11)))
GRAD_TEST(Gelu, unary("gelu", uniform(6, -2, 2, 12)))
GRAD_TEST(GeluTanh, unary("gelu", uniform(6, -2, 2, 13), " approximate = tanh"))

// Binary ops with broadcasting on both sides: x [2, 1, 3] op w [4, 1] -> [2, 4, 3], so both
// gradients are reduce_sum + reshape over broadcast dims.
Case binary(const std::string& op, std::vector<float> x, std::vector<float> w) {
  return Case{{P("x", {2, 1, 3}, std::move(x)), P("w", {4, 1}, std::move(w))}, {},
              "  %out = amp." + op + " %x, %w : tensor<2x1x3xf32>, tensor<4x1xf32>", {2, 4, 3}};
}

GRAD_TEST(Add, binary("add", uniform(6, -1, 1, 20), uniform(4, -1, 1, 21)))
GRAD_TEST(Sub, binary("sub", uniform(6, -1, 1, 22), uniform(4, -1, 1, 23)))
GRAD_TEST(Mul, binary("mul", uniform(6, -1, 1, 24), uniform(4, -1, 1, 25)))
GRAD_TEST(Div, binary("div", uniform(6, -1, 1, 26), awayFromZero(4, 0.5, 2, 27)))
// x on the grid k*0.1, w on 0.05 + k*0.1: every pair differs by >= 0.05 > 5h.
GRAD_TEST(Maximum, binary("maximum", distinct(6, 0.1, 0.0, 28), distinct(4, 0.1, 0.05, 29)))
GRAD_TEST(Minimum, binary("minimum", distinct(6, 0.1, 0.0, 30), distinct(4, 0.1, 0.05, 31)))
GRAD_TEST(Pow, binary("pow", uniform(6, 0.5, 2, 32), uniform(4, 0.5, 2.5, 33)))

GRAD_TEST(Select, (Case{{P("a", {2, 3}, uniform(6, -1, 1, 40)), P("b", {2, 1}, uniform(2, -1, 1, 41))},
                        {},
                        "  %c = amp.constant dense<[true, false, true]> : tensor<3xi1>\n"
                        "  %out = amp.select %c, %a, %b : tensor<3xi1>, tensor<2x3xf32>, tensor<2x1xf32>",
                        {2, 3}}))

// matmul: every transpose combination, batched with broadcast, and the flattened weight path.
Case matmul(std::vector<int64_t> a, std::vector<int64_t> b, const std::string& flags,
            std::vector<int64_t> out) {
  return Case{{P("a", a, uniform(numel(a), -1, 1, 50)), P("b", b, uniform(numel(b), -1, 1, 51))}, {},
              "  %out = amp.matmul %a, %b" + flags + " : " + typeStr(a) + ", " + typeStr(b), out};
}
GRAD_TEST(Matmul, matmul({3, 4}, {4, 2}, "", {3, 2}))
GRAD_TEST(MatmulTransposeA, matmul({4, 3}, {4, 2}, " transpose_a", {3, 2}))
GRAD_TEST(MatmulTransposeB, matmul({3, 4}, {2, 4}, " transpose_b", {3, 2}))
GRAD_TEST(MatmulTransposeAB, matmul({4, 3}, {2, 4}, " transpose_a transpose_b", {3, 2}))
GRAD_TEST(MatmulBatchedWeight, matmul({2, 3, 4}, {4, 2}, "", {2, 3, 2}))
GRAD_TEST(MatmulBatchedWeightTransposeB, matmul({2, 3, 4}, {2, 4}, " transpose_b", {2, 3, 2}))
GRAD_TEST(MatmulBroadcastBatch, matmul({2, 1, 3, 4}, {3, 4, 2}, "", {2, 3, 3, 2}))
GRAD_TEST(MatmulBatchedTransposed, matmul({2, 4, 3}, {2, 2, 4}, " transpose_a transpose_b", {2, 3, 2}))

// linear: both weight layouts, with and without bias, 2-D and batched inputs (flattened dW).
Case linear(std::vector<int64_t> x, std::vector<int64_t> w, bool bias, const std::string& flags,
            std::vector<int64_t> out) {
  Case c{{P("x", x, uniform(numel(x), -1, 1, 52)), P("w", w, uniform(numel(w), -1, 1, 53))}, {}, "", out};
  std::string types = typeStr(x) + ", " + typeStr(w);
  if (bias) {
    c.params.push_back(P("b", {out.back()}, uniform(out.back(), -1, 1, 54)));
    types += ", " + typeStr({out.back()});
  }
  c.body = "  %out = amp.linear %x, %w" + std::string(bias ? ", %b" : "") + flags + " : " + types;
  return c;
}
GRAD_TEST(LinearBias, linear({3, 4}, {2, 4}, true, "", {3, 2}))
GRAD_TEST(LinearNoBias, linear({3, 4}, {2, 4}, false, "", {3, 2}))
GRAD_TEST(LinearInOutBias, linear({3, 4}, {4, 2}, true, " transpose_w = false", {3, 2}))
GRAD_TEST(LinearBatchedBias, linear({2, 3, 4}, {5, 4}, true, "", {2, 3, 5}))
GRAD_TEST(LinearBatchedInOut, linear({2, 1, 3, 4}, {4, 2}, true, " transpose_w = false", {2, 1, 3, 2}))
// The relu epilogue (what amp-fuse folds, also accepted in a model): masked by the output.
GRAD_TEST(LinearRelu, linear({3, 4}, {4, 2}, true, " transpose_w = false activation = relu", {3, 2}))

GRAD_TEST(Conv2dGroupsStridePadDilationBias,
          (Case{{P("x", {2, 4, 5, 5}, uniform(200, -1, 1, 60)), P("w", {4, 2, 3, 3}, uniform(72, -1, 1, 61)),
                 P("b", {4}, uniform(4, -1, 1, 62))},
                {},
                "  %out = amp.conv2d %x, %w, %b {stride = array<i64: 2, 1>, padding = array<i64: 1, 1>, "
                "dilation = array<i64: 1, 2>, groups = 2 : i64} : tensor<2x4x5x5xf32>, tensor<4x2x3x3xf32>, "
                "tensor<4xf32>",
                {2, 4, 3, 3}}))
GRAD_TEST(Conv2dPlain, (Case{{P("x", {1, 2, 4, 4}, uniform(32, -1, 1, 63)), P("w", {3, 2, 2, 2}, uniform(24, -1, 1, 64))},
                             {},
                             "  %out = amp.conv2d %x, %w : tensor<1x2x4x4xf32>, tensor<3x2x2x2xf32>",
                             {1, 3, 3, 3}}))
// A transposed convolution as a model op (ONNX ConvTranspose imports to it): both operands'
// gradients. The result is [2, 4, 6, 5]: (3 - 1) * 2 - 2 + (3 - 1) * 1 + 1 + 1 = 6 rows (one row of
// output_padding) and (3 - 1) * 1 - 2 + (3 - 1) * 2 + 1 = 5 columns.
GRAD_TEST(ConvTranspose2dGroupsStridePadDilation,
          (Case{{P("g", {2, 4, 3, 3}, uniform(72, -1, 1, 65)), P("w", {4, 2, 3, 3}, uniform(72, -1, 1, 66))},
                {},
                "  %out = amp.conv2d_grad_input %g, %w {stride = array<i64: 2, 1>, padding = array<i64: 1, 1>, "
                "dilation = array<i64: 1, 2>, groups = 2 : i64} : tensor<2x4x3x3xf32>, tensor<4x2x3x3xf32> "
                "-> tensor<2x4x6x5xf32>",
                {2, 4, 6, 5}}))

// Overlapping 3x3 windows, stride 2, padding 1; distinct inputs 0.05 apart keep each argmax.
GRAD_TEST(MaxPool2d, (Case{{P("x", {1, 2, 5, 5}, distinct(50, 0.05, 0.0, 70))},
                           {},
                           "  %out = amp.max_pool2d %x kernel = [3, 3] stride = [2, 2] {padding = array<i64: 1, 1>} "
                           ": tensor<1x2x5x5xf32>",
                           {1, 2, 3, 3}}))
GRAD_TEST(AvgPool2d, (Case{{P("x", {1, 2, 5, 5}, uniform(50, -1, 1, 71))},
                           {},
                           "  %out = amp.avg_pool2d %x kernel = [3, 3] stride = [2, 2] {padding = array<i64: 1, 1>} "
                           ": tensor<1x2x5x5xf32>",
                           {1, 2, 3, 3}}))

GRAD_TEST(ReduceSum, (Case{{P("x", {2, 3, 4}, uniform(24, -1, 1, 80))}, {},
                           "  %out = amp.reduce_sum %x dims = [1] : tensor<2x3x4xf32>", {2, 4}}))
GRAD_TEST(ReduceMeanKeepdim, (Case{{P("x", {2, 3, 4}, uniform(24, -1, 1, 81))}, {},
                                   "  %out = amp.reduce_mean %x dims = [0, 2] keepdim : tensor<2x3x4xf32>", {1, 3, 1}}))
GRAD_TEST(ReduceMax, (Case{{P("x", {2, 3, 4}, distinct(24, 0.05, 0.0, 82))}, {},
                           "  %out = amp.reduce_max %x dims = [1] : tensor<2x3x4xf32>", {2, 4}}))

GRAD_TEST(Softmax, (Case{{P("x", {2, 5}, uniform(10, -2, 2, 90))}, {},
                         "  %out = amp.softmax %x axis = 1 : tensor<2x5xf32>", {2, 5}}))
GRAD_TEST(LogSoftmax, (Case{{P("x", {3, 4}, uniform(12, -2, 2, 91))}, {},
                            "  %out = amp.log_softmax %x axis = 0 : tensor<3x4xf32>", {3, 4}}))

GRAD_TEST(LayerNormAffine,
          (Case{{P("x", {2, 3, 4}, uniform(24, -2, 2, 100)), P("g", {4}, uniform(4, 0.5, 1.5, 101)),
                 P("b", {4}, uniform(4, -1, 1, 102))},
                {},
                "  %out = amp.layer_norm %x weight(%g : tensor<4xf32>) bias(%b : tensor<4xf32>) : tensor<2x3x4xf32>",
                {2, 3, 4}}))
GRAD_TEST(LayerNormPlain2d, (Case{{P("x", {2, 3, 4}, uniform(24, -2, 2, 103))}, {},
                                  "  %out = amp.layer_norm %x {normalized_ndim = 2 : i64} : tensor<2x3x4xf32>",
                                  {2, 3, 4}}))
GRAD_TEST(LayerNormBiasOnly, (Case{{P("x", {3, 4}, uniform(12, -2, 2, 104)), P("b", {4}, uniform(4, -1, 1, 105))}, {},
                                   "  %out = amp.layer_norm %x bias(%b : tensor<4xf32>) : tensor<3x4xf32>", {3, 4}}))
GRAD_TEST(RmsNorm, (Case{{P("x", {2, 5}, uniform(10, -2, 2, 110)), P("g", {5}, uniform(5, 0.5, 1.5, 111))}, {},
                         "  %out = amp.rms_norm %x weight(%g : tensor<5xf32>) : tensor<2x5xf32>", {2, 5}}))
// batch_norm: the running statistics are constants here (buffers, not params); in training mode
// the batch statistics depend on x, in inference mode they do not.
const std::string kBnRunning =
    "  %rm = amp.constant dense<[0.25, -0.5, 0.125]> : tensor<3xf32>\n"
    "  %rv = amp.constant dense<[0.75, 1.5, 2.0]> : tensor<3xf32>\n";
GRAD_TEST(BatchNormTraining,
          (Case{{P("x", {2, 3, 2, 2}, uniform(24, -2, 2, 120)), P("g", {3}, uniform(3, 0.5, 1.5, 121)),
                 P("b", {3}, uniform(3, -1, 1, 122))},
                {},
                kBnRunning + "  %out, %nm, %nv = amp.batch_norm %x, %g, %b running(%rm, %rv) training"
                             " : tensor<2x3x2x2xf32>, tensor<3xf32>",
                {2, 3, 2, 2}}))
GRAD_TEST(BatchNormTraining2d,
          (Case{{P("x", {5, 3}, uniform(15, -2, 2, 123)), P("g", {3}, uniform(3, 0.5, 1.5, 124)),
                 P("b", {3}, uniform(3, -1, 1, 125))},
                {},
                kBnRunning + "  %out, %nm, %nv = amp.batch_norm %x, %g, %b running(%rm, %rv) training"
                             " {epsilon = 1.0e-3 : f64} : tensor<5x3xf32>, tensor<3xf32>",
                {5, 3}}))
GRAD_TEST(BatchNormInference,
          (Case{{P("x", {2, 3, 2, 2}, uniform(24, -2, 2, 126)), P("g", {3}, uniform(3, 0.5, 1.5, 127)),
                 P("b", {3}, uniform(3, -1, 1, 128))},
                {},
                kBnRunning + "  %out, %nm, %nv = amp.batch_norm %x, %g, %b running(%rm, %rv)"
                             " : tensor<2x3x2x2xf32>, tensor<3xf32>",
                {2, 3, 2, 2}}))
GRAD_TEST(RmsNormPlain, (Case{{P("x", {2, 5}, uniform(10, -2, 2, 112))}, {},
                              "  %out = amp.rms_norm %x : tensor<2x5xf32>", {2, 5}}))

// Repeated ids: the table gradient accumulates rows.
GRAD_TEST(Embedding, (Case{{P("table", {5, 3}, uniform(15, -1, 1, 120))},
                           {{"ids", "input", {2, 3}, {0, 2, 2, 4, 0, 1}}},
                           "  %out = amp.embedding %table[%ids] : tensor<5x3xf32>, tensor<2x3xi64>",
                           {2, 3, 3}}))

GRAD_TEST(Dropout, (Case{{P("x", {4, 6}, uniform(24, -1, 1, 130))}, {},
                         "  %out = amp.dropout %x rate = 3.000000e-01 seed = 7 : tensor<4x6xf32>", {4, 6}}))

GRAD_TEST(Reshape, (Case{{P("x", {2, 6}, uniform(12, -1, 1, 140))}, {},
                         "  %out = amp.reshape %x : tensor<2x6xf32> -> tensor<3x4xf32>", {3, 4}}))
GRAD_TEST(Transpose, (Case{{P("x", {2, 3, 4}, uniform(24, -1, 1, 141))}, {},
                           "  %out = amp.transpose %x permutation = [2, 0, 1] : tensor<2x3x4xf32>", {4, 2, 3}}))
GRAD_TEST(BroadcastTo, (Case{{P("x", {3, 1}, uniform(3, -1, 1, 142))}, {},
                             "  %out = amp.broadcast_to %x : tensor<3x1xf32> -> tensor<2x3x4xf32>", {2, 3, 4}}))
GRAD_TEST(SliceStrided, (Case{{P("x", {4, 6}, uniform(24, -1, 1, 143))}, {},
                              "  %out = amp.slice %x starts = [1, 0] limits = [4, 6] strides = [2, 2] : tensor<4x6xf32>",
                              {2, 3}}))
GRAD_TEST(Concat, (Case{{P("x", {2, 3}, uniform(6, -1, 1, 144)), P("w", {2, 2}, uniform(4, -1, 1, 145))}, {},
                        "  %out = amp.concat %x, %w, %x axis = 1 : tensor<2x3xf32>, tensor<2x2xf32>, tensor<2x3xf32>",
                        {2, 8}}))

GRAD_TEST(CrossEntropy, (Case{{P("logits", {4, 5}, uniform(20, -2, 2, 150))},
                              {{"labels", "label", {4}, {1, 0, 4, 2}}},
                              "  %out = amp.cross_entropy %logits, %labels : tensor<4x5xf32>, tensor<4xi64>",
                              {}}))
GRAD_TEST(CrossEntropyIgnoreSmoothing,
          (Case{{P("logits", {4, 5}, uniform(20, -2, 2, 151))},
                {{"labels", "label", {4}, {1, -100, 4, 2}}},
                "  %out = amp.cross_entropy %logits, %labels {ignore_index = -100 : i64, label_smoothing = 0.1 : f64} "
                ": tensor<4x5xf32>, tensor<4xi64>",
                {}}))
GRAD_TEST(MseLoss, (Case{{P("p", {3, 4}, uniform(12, -1, 1, 160)), P("t", {3, 4}, uniform(12, -1, 1, 161))}, {},
                         "  %out = amp.mse_loss %p, %t : tensor<3x4xf32>, tensor<3x4xf32>", {}}))

// Fan-out: x has four users; its cotangents are summed with amp.add.
GRAD_TEST(FanOutAccumulation,
          (Case{{P("x", {2, 3}, uniform(6, -1, 1, 170)), P("w", {3}, uniform(3, -1, 1, 171))}, {},
                "  %a = amp.mul %x, %x : tensor<2x3xf32>, tensor<2x3xf32>\n"
                "  %b = amp.tanh %x : tensor<2x3xf32>\n"
                "  %c = amp.mul %b, %w : tensor<2x3xf32>, tensor<3xf32>\n"
                "  %d = amp.add %a, %c : tensor<2x3xf32>, tensor<2x3xf32>\n"
                "  %out = amp.sub %d, %x : tensor<2x3xf32>, tensor<2x3xf32>",
                {2, 3}}))

// A small two-layer network end to end (matmul, bias broadcast, gelu, softmax, cross-entropy).
GRAD_TEST(TwoLayerNetwork,
          (Case{{P("w1", {4, 5}, uniform(20, -1, 1, 180)), P("b1", {5}, uniform(5, -0.5, 0.5, 181)),
                 P("w2", {5, 3}, uniform(15, -1, 1, 182))},
                {{"labels", "label", {2}, {2, 0}}},
                "  %x = amp.constant " + dense(uniform(8, -1, 1, 183), {2, 4}) + " : tensor<2x4xf32>\n"
                "  %h = amp.matmul %x, %w1 : tensor<2x4xf32>, tensor<4x5xf32>\n"
                "  %hb = amp.add %h, %b1 : tensor<2x5xf32>, tensor<5xf32>\n"
                "  %a = amp.gelu %hb : tensor<2x5xf32>\n"
                "  %o = amp.matmul %a, %w2 : tensor<2x5xf32>, tensor<5x3xf32>\n"
                "  %out = amp.cross_entropy %o, %labels : tensor<2x3xf32>, tensor<2xi64>",
                {}}))

//===----------------------------------------------------------------------===//
// Coverage, precision, seed scaling, errors
//===----------------------------------------------------------------------===//

TEST_F(AutodiffTest, ModelOpsAreExactlyTheOpsWithAVjp) {
  // The model ops (ir/AmpOps.td's Amp_ModelOp) declare the VJP interface and must define it to
  // link; gradient, training and fused-region ops are not model ops and have none, except
  // conv2d_grad_input, which is also the transposed convolution a model is written in.
  const char* model[] = {
      "amp.constant", "amp.compare",  // defined as producing no cotangents
      "amp.neg", "amp.abs", "amp.exp", "amp.log", "amp.sqrt", "amp.rsqrt", "amp.reciprocal",
      "amp.tanh", "amp.erf", "amp.sigmoid", "amp.relu", "amp.silu", "amp.gelu", "amp.add", "amp.sub",
      "amp.mul", "amp.div", "amp.maximum", "amp.minimum", "amp.pow", "amp.select", "amp.matmul",
      "amp.linear", "amp.conv2d", "amp.conv2d_grad_input", "amp.max_pool2d", "amp.avg_pool2d", "amp.reduce_sum", "amp.reduce_mean",
      "amp.reduce_max", "amp.softmax", "amp.log_softmax", "amp.layer_norm", "amp.rms_norm", "amp.batch_norm",
      "amp.embedding", "amp.dropout", "amp.reshape", "amp.transpose", "amp.broadcast_to",
      "amp.slice", "amp.concat", "amp.cross_entropy", "amp.mse_loss", "amp.cast"};
  std::set<std::string> expected(std::begin(model), std::end(model)), actual;
  for (mlir::RegisteredOperationName op : ctx.getRegisteredOperations())
    if (op.getDialectNamespace() == "amp" && op.hasInterface<mlir::amp::DifferentiableOpInterface>())
      actual.insert(op.getStringRef().str());
  EXPECT_EQ(actual, expected);
}

// A small MLP written in f32; autocast decides the precision.
const char* kMlp = R"(
func.func @mlp(%x: tensor<4x6xf32> {amp.role = "input", amp.name = "x"},
               %y: tensor<4xi64> {amp.role = "label", amp.name = "y"},
               %w1: tensor<6x5xf32> {amp.role = "param", amp.name = "w1", amp.init = #amp.init<kaiming_uniform, seed = 1>},
               %b1: tensor<5xf32> {amp.role = "param", amp.name = "b1", amp.init = #amp.init<uniform, scale = 0.1, seed = 2>},
               %w2: tensor<5x3xf32> {amp.role = "param", amp.name = "w2", amp.init = #amp.init<kaiming_uniform, seed = 3>})
    -> (tensor<f32>, tensor<4x3xf32>) {
  %h = amp.matmul %x, %w1 : tensor<4x6xf32>, tensor<6x5xf32>
  %hb = amp.add %h, %b1 : tensor<4x5xf32>, tensor<5xf32>
  %a = amp.tanh %hb : tensor<4x5xf32>
  %o = amp.matmul %a, %w2 : tensor<4x5xf32>, tensor<5x3xf32>
  %loss = amp.cross_entropy %o, %y : tensor<4x3xf32>, tensor<4xi64>
  return %loss, %o : tensor<f32>, tensor<4x3xf32>
}
)";

std::map<std::string, rt::Tensor> mlpFeeds() {
  std::map<std::string, rt::Tensor> f;
  f.emplace("x", f32Tensor({4, 6}, uniform(24, -1, 1, 200)));
  rt::Tensor y(rt::DType::I64, {4});
  int64_t labels[] = {0, 2, 1, 2};
  std::memcpy(y.data(), labels, sizeof(labels));
  f.emplace("y", std::move(y));
  return f;
}

TEST_F(AutodiffTest, LowPrecisionForwardGivesF32ParamGradients) {
  auto reference = compile(kMlp);
  ASSERT_TRUE(reference) << diagnostics;
  auto ref = rt::openSession(std::move(*reference), rt::Device::Reference);
  ASSERT_TRUE(ref.ok());
  setSeed(*ref, 1.0f);
  auto refOut = ref->run("train_step", mlpFeeds());
  ASSERT_TRUE(refOut.ok()) << refOut.status();
  auto want = byName(std::move(*refOut));

  for (const char* dtype : {"bf16", "f16"}) {
    SCOPED_TRACE(dtype);
    mlir::OwningOpRef<ModuleOp> module;
    auto plan = compile(kMlp, std::string("amp-autocast{dtype=") + dtype + "},amp-cast-cleanup,amp-autodiff", &module);
    ASSERT_TRUE(plan) << diagnostics;
    // The IR: low-precision matmuls forward and backward, f32 gradient results.
    auto step = module->lookupSymbol<mlir::func::FuncOp>("train_step");
    ASSERT_TRUE(step);
    int lowMatmuls = 0;
    step.walk([&](mlir::amp::MatmulOp mm) {
      if (!mm.getType().getElementType().isF32()) ++lowMatmuls;
    });
    EXPECT_EQ(lowMatmuls, 2 + 3) << "2 forward + 3 backward matmuls (dx of layer 1 is not needed)";
    for (unsigned r = 1; r < step.getNumResults(); ++r)
      EXPECT_TRUE(mlir::cast<mlir::RankedTensorType>(step.getResultTypes()[r]).getElementType().isF32());

    auto s = rt::openSession(std::move(*plan), rt::Device::Reference);
    ASSERT_TRUE(s.ok());
    setSeed(*s, 1.0f);
    auto out = s->run("train_step", mlpFeeds());
    ASSERT_TRUE(out.ok()) << out.status();
    auto got = byName(std::move(*out));
    // bf16 keeps 8 significant bits (rel. rounding 2^-9), f16 11; a few roundings per path.
    const double tol = std::string(dtype) == "bf16" ? 3e-2 : 5e-3;
    for (const char* name : {"grad:w1", "grad:b1", "grad:w2"}) {
      ASSERT_TRUE(got.count(name)) << name;
      EXPECT_EQ(got.at(name).dtype(), rt::DType::F32) << name;
      std::vector<float> a = toFloats(got.at(name)), b = toFloats(want.at(name));
      double maxDiff = 0, maxRef = 0;
      for (size_t i = 0; i < a.size(); ++i) {
        maxDiff = std::max(maxDiff, std::fabs(double(a[i]) - b[i]));
        maxRef = std::max(maxRef, std::fabs(double(b[i])));
      }
      std::printf("[precision] %-5s %-8s rel diff to f32 %.3e\n", dtype, name, maxDiff / maxRef);
      EXPECT_LT(maxDiff / maxRef, tol) << name;
    }
  }
}

TEST_F(AutodiffTest, SeedScalesGradientsExactly) {
  auto plan = compile(kMlp);
  ASSERT_TRUE(plan) << diagnostics;
  auto s = rt::openSession(std::move(*plan), rt::Device::Reference);
  ASSERT_TRUE(s.ok());
  setSeed(*s, 1.0f);
  auto one = s->run("train_step", mlpFeeds());
  ASSERT_TRUE(one.ok()) << one.status();
  setSeed(*s, 1024.0f);
  auto scaled = s->run("train_step", mlpFeeds());
  ASSERT_TRUE(scaled.ok()) << scaled.status();
  auto a = byName(std::move(*one)), b = byName(std::move(*scaled));
  // The loss does not depend on the seed; every gradient is exactly 1024x (a power of two).
  EXPECT_TRUE(a.at("loss").bitwiseEquals(b.at("loss")));
  for (const char* name : {"grad:w1", "grad:b1", "grad:w2"}) {
    std::vector<float> g1 = toFloats(a.at(name)), g2 = toFloats(b.at(name));
    for (size_t i = 0; i < g1.size(); ++i) EXPECT_EQ(g2[i], 1024.0f * g1[i]) << name << "[" << i << "]";
  }
}

TEST_F(AutodiffTest, EvalEntryIsTheUnchangedModel) {
  auto plan = compile(kMlp);
  ASSERT_TRUE(plan) << diagnostics;
  auto s = rt::openSession(std::move(*plan), rt::Device::Reference);
  ASSERT_TRUE(s.ok());
  setSeed(*s, 1.0f);
  auto eval = s->run("eval", mlpFeeds());
  auto step = s->run("train_step", mlpFeeds());
  ASSERT_TRUE(eval.ok() && step.ok());
  auto e = byName(std::move(*eval)), t = byName(std::move(*step));
  EXPECT_TRUE(e.at("loss").bitwiseEquals(t.at("loss")));
  EXPECT_EQ(t.size(), 4u) << "loss + 3 gradients; the logits are not returned by the step";
}

TEST_F(AutodiffTest, OpWithoutRuleIsALocatedError) {
  const char* text = R"(
func.func @m(%w: tensor<4xf32> {amp.role = "param", amp.name = "w"}) -> tensor<f32> {
  %n = amp.global_norm %w : tensor<4xf32> loc("model.mlir":3:8)
  return %n : tensor<f32>
}
)";
  EXPECT_FALSE(compile(text));
  EXPECT_NE(diagnostics.find("no VJP rule for 'amp.global_norm'"), std::string::npos) << diagnostics;
}

}  // namespace
