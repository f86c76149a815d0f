// Shared by the cpu parity tests: runs one op as a single-step plan on the reference and on the
// cpu device with the same random operands and expects bit-identical results, and that the cpu
// device ran the step with its own kernel (no reference fallback).
#ifndef AMP_TEST_UNIT_CPU_PARITYUTIL_H
#define AMP_TEST_UNIT_CPU_PARITYUTIL_H

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

}  // namespace parity
}  // namespace amp::rt

#endif  // AMP_TEST_UNIT_CPU_PARITYUTIL_H
