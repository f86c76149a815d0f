// Shared by the cpu parity tests: runs one op as a single-step plan on the reference and on the
// cpu device with the same random operands and expects bit-identical results, and that the cpu
// device ran the step with its own kernel (no reference fallback).
#ifndef AMP_TEST_UNIT_CPU_PARITYUTIL_H
#define AMP_TEST_UNIT_CPU_PARITYUTIL_H

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/devices/cpu/CpuExecutor.h"
#include "runtime/exec/Session.h"
#include "runtime/numerics/Convert.h"
#include "runtime/devices/Devices.h"

namespace amp::rt {
namespace parity {

struct Operand {
  DType dtype;
  Shape shape;
  std::vector<double> values = {};  // explicit values (else random)
};

inline Tensor randomTensor(const Operand& o, std::mt19937& rng) {
  Tensor t(o.dtype, o.shape);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = o.values.empty() ? 0.0 : o.values[i % o.values.size()];
    switch (o.dtype) {
      case DType::I64: t.as<int64_t>()[i] = o.values.empty() ? int64_t(rng() % 10) : int64_t(v); break;
      case DType::I32: t.as<int32_t>()[i] = o.values.empty() ? int32_t(rng() % 10) : int32_t(v); break;
      case DType::Bool: t.as<uint8_t>()[i] = o.values.empty() ? uint8_t(rng() % 2) : uint8_t(v != 0); break;
      default: storeFromF32(o.dtype, t.data(), i, o.values.empty() ? normal(rng) : float(v));
    }
  }
  // Specials where random floats are used: NaN, infinities and signed zeros must match too.
  if (o.values.empty() && isFloat(o.dtype) && t.numel() >= 8) {
    storeFromF32(o.dtype, t.data(), 1, NAN);
    storeFromF32(o.dtype, t.data(), 3, -0.0f);
    storeFromF32(o.dtype, t.data(), 5, INFINITY);
    storeFromF32(o.dtype, t.data(), 7, 0.0f);
  }
  return t;
}

// A plan with one entry "eval" holding one step `op` over Input buffers in0, in1, ... (random
// values from `seed`, see randomTensor; non-finite floats replaced by 0.5 when !specials) and
// Temp results t0, t1, ... returned as r0, r1, ...
struct SingleStep {
  Plan plan;
  std::map<std::string, Tensor> feeds;
};

inline SingleStep singleStepPlan(const std::string& op, const std::vector<Operand>& operands,
                                 const std::vector<std::pair<DType, Shape>>& results, AttrMap attrs, bool specials,
                                 uint32_t seed) {
  SingleStep s;
  Plan& plan = s.plan;
  std::mt19937 rng(seed);
  PlanStep step{op, {}, {}, std::move(attrs), "parity.mlir:1:1"};
  for (size_t i = 0; i < operands.size(); ++i) {
    std::string name = "in" + std::to_string(i);
    plan.buffers.push_back({name, operands[i].dtype, operands[i].shape, BufferKind::Input, std::nullopt});
    Tensor t = randomTensor(operands[i], rng);
    if (!specials && isFloat(t.dtype()))  // ops whose domain excludes NaN/inf inputs by contract
      for (int64_t k = 0; k < t.numel(); ++k)
        if (!std::isfinite(loadAsF32(t.dtype(), t.data(), k))) storeFromF32(t.dtype(), t.data(), k, 0.5f);
    s.feeds.emplace(name, std::move(t));
    step.operands.push_back(static_cast<int32_t>(i));
  }
  EntryPoint e;
  e.name = "eval";
  for (size_t r = 0; r < results.size(); ++r) {
    step.results.push_back(static_cast<int32_t>(plan.buffers.size()));
    e.results.push_back(static_cast<int32_t>(plan.buffers.size()));
    e.resultNames.push_back("r" + std::to_string(r));
    plan.buffers.push_back({"t" + std::to_string(r), results[r].first, results[r].second, BufferKind::Temp, std::nullopt});
  }
  e.steps.push_back(step);
  plan.entries.push_back(e);
  return s;
}

// Runs `op` on both devices and expects bitwise-equal results. `step` is the call's step counter
// (what dropout keys its mask on). With `anyNan`, a NaN matches any NaN (docs/numerics.md: NaN
// payloads, sign included, are outside the contract): for ops where which of two NaN operands an
// f32 add returns depends on the compiler's operand order, not on the documented evaluation order.
inline void expectParity(const std::string& op, const std::vector<Operand>& operands,
                         const std::vector<std::pair<DType, Shape>>& results, AttrMap attrs = {}, bool specials = true,
                         uint32_t seed = 1, int64_t step = 0, bool anyNan = false) {
  SCOPED_TRACE(op);
  SingleStep single = singleStepPlan(op, operands, results, std::move(attrs), specials, seed);
  const Plan& plan = single.plan;
  const std::map<std::string, Tensor>& feeds = single.feeds;
  Session::RunOptions options;
  options.step = step;
  auto ref = openSession(plan, Device::Reference);
  auto cpu = openSession(plan, Device::Cpu);
  ASSERT_TRUE(ref.ok()) << ref.status();
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  auto want = ref->run("eval", feeds, options);
  auto got = cpu->run("eval", feeds, options);
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_TRUE(got.ok()) << got.status();
  auto prepared = cpu->prepared("eval");
  ASSERT_TRUE(prepared.ok());
  const EntryReport* report = &(**prepared).report();
  ASSERT_NE(report, nullptr);
  EXPECT_EQ(report->referenceSteps, 0) << op << " ran on the reference fallback";
  ASSERT_EQ(want->size(), got->size());
  for (size_t r = 0; r < want->size(); ++r) {
    const Tensor &w = (*want)[r].tensor, &g = (*got)[r].tensor;
    ASSERT_EQ(w.nbytes(), g.nbytes());
    int64_t firstDiff = -1;
    const size_t es = dtypeSize(w.dtype());
    for (int64_t k = 0; k < w.numel() && firstDiff < 0; ++k)
      if (std::memcmp(w.data() + k * es, g.data() + k * es, es) != 0 &&
          !(anyNan && isFloat(w.dtype()) && std::isnan(loadAsF32(w.dtype(), w.data(), k)) &&
            std::isnan(loadAsF32(g.dtype(), g.data(), k))))
        firstDiff = k;
    EXPECT_EQ(firstDiff, -1) << "result " << r << " differs at element " << firstDiff << ": reference "
                             << loadAsF32(w.dtype(), w.data(), firstDiff) << ", cpu "
                             << loadAsF32(g.dtype(), g.data(), firstDiff);
  }
}

// Every value of a 16-bit float format, in the order of its bit patterns (NaNs, infinities,
// subnormals and signed zeros included), as doubles for Operand::values.
inline std::vector<double> every16BitValue(DType t) {
  std::vector<double> values;
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    const uint16_t b = static_cast<uint16_t>(bits);
    values.push_back(loadAsF32(t, &b, 0));
  }
  return values;
}

// One unit in the last place of `t` at magnitude |v| (subnormal spacing below the normal range).
inline double ulpOf(DType t, double v) {
  int mbits = 23, emin = -126;
  switch (t) {
    case DType::BF16: mbits = 7; break;
    case DType::F16: mbits = 10, emin = -14; break;
    case DType::F8E4M3FN: mbits = 3, emin = -6; break;
    case DType::F8E5M2: mbits = 2, emin = -14; break;
    default: break;
  }
  const int e = v == 0.0 || !std::isfinite(v) ? emin : std::max(emin, std::ilogb(v));
  return std::ldexp(1.0, e - mbits);
}

// For ops that are sums of K products per result element (GEMM-like, computed by a library in its
// own summation order): runs `op` on the reference and on the cpu device with the same operands
// and requires every result element to satisfy
//   |cpu - ref| <= 2·K·2^-24·S + 1 ulp of the result type (at the larger magnitude),
// where S = Σ|terms| is the reference's result on the operands' absolute values. Non-finite
// reference results must be matched exactly (a NaN by any NaN, an infinity by the same one).
// Also requires that the cpu device ran its own kernel. Returns the worst |cpu - ref| / bound seen
// (0 when all equal).
inline double expectParityWithinDotBound(const std::string& op, const std::vector<Operand>& operands,
                                         const std::vector<std::pair<DType, Shape>>& results, const AttrMap& attrs,
                                         int64_t K, bool specials = true, uint32_t seed = 1) {
  SCOPED_TRACE(op);
  SingleStep single = singleStepPlan(op, operands, results, attrs, specials, seed);
  std::map<std::string, Tensor> absFeeds;
  for (const auto& [name, t] : single.feeds) {
    Tensor a(t.dtype(), t.shape());
    std::memcpy(a.data(), t.data(), t.nbytes());
    if (isFloat(a.dtype()))
      for (int64_t k = 0; k < a.numel(); ++k) storeFromF32(a.dtype(), a.data(), k, std::fabs(loadAsF32(a.dtype(), a.data(), k)));
    absFeeds.emplace(name, std::move(a));
  }
  auto ref = openSession(single.plan, Device::Reference);
  auto cpu = openSession(single.plan, Device::Cpu);
  EXPECT_TRUE(ref.ok()) << ref.status();
  EXPECT_TRUE(cpu.ok()) << cpu.status();
  if (!ref.ok() || !cpu.ok()) return 0.0;
  auto want = ref->run("eval", single.feeds);
  auto sums = ref->run("eval", absFeeds);
  auto got = cpu->run("eval", single.feeds);
  EXPECT_TRUE(want.ok() && sums.ok() && got.ok());
  if (!want.ok() || !sums.ok() || !got.ok()) return 0.0;
  auto prepared = cpu->prepared("eval");
  EXPECT_TRUE(prepared.ok());
  if (prepared.ok()) EXPECT_EQ((**prepared).report().referenceSteps, 0) << op << " ran on the reference fallback";
  double worst = 0.0;
  for (size_t r = 0; r < want->size(); ++r) {
    const Tensor &w = (*want)[r].tensor, &g = (*got)[r].tensor, &s = (*sums)[r].tensor;
    int64_t bad = -1;
    double badBound = 0.0;
    for (int64_t k = 0; k < w.numel() && bad < 0; ++k) {
      const double rv = loadAsF32(w.dtype(), w.data(), k), gv = loadAsF32(g.dtype(), g.data(), k);
      const double sv = loadAsF32(s.dtype(), s.data(), k);
      if (!std::isfinite(rv)) {
        if (std::isnan(rv) ? !std::isnan(gv) : rv != gv) bad = k;
        continue;
      }
      if (gv == rv) continue;  // equal (S may be NaN where the absolute values meet inf * 0)
      const double bound =
          2.0 * double(K) * std::ldexp(std::fabs(sv), -24) + ulpOf(w.dtype(), std::max(std::fabs(rv), std::fabs(gv)));
      const double err = std::fabs(gv - rv);
      if (!(err <= bound)) bad = k, badBound = bound;
      else worst = std::max(worst, err / bound);
    }
    EXPECT_EQ(bad, -1) << "result " << r << " element " << bad << ": reference " << loadAsF32(w.dtype(), w.data(), bad)
                       << ", cpu " << loadAsF32(g.dtype(), g.data(), bad) << ", bound " << badBound << " (K = " << K
                       << ", sum of |terms| " << loadAsF32(s.dtype(), s.data(), bad) << ")";
  }
  return worst;
}

}  // namespace parity
}  // namespace amp::rt

#endif  // AMP_TEST_UNIT_CPU_PARITYUTIL_H
