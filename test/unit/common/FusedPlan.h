// A plan with one fused step over Input buffers, for the tests of the kernel emitter's flavours
// (test/unit/cpu/FusedKernelTest.cpp, test/unit/codegen/CudaFlavourTest.cpp).
#ifndef AMP_TEST_UNIT_COMMON_FUSEDPLAN_H
#define AMP_TEST_UNIT_COMMON_FUSEDPLAN_H

#include <string>
#include <vector>

#include "runtime/plan/Plan.h"

namespace amp::rt {

struct BodyOp {
  std::string op;
  std::vector<int32_t> operands;
  DType dtype;
  AttrMap attrs = {};
  Shape shape = {};  // empty: the iteration space (a row reduction's result is [N])
};

// One fused step over Input buffers with the given types; body ops are appended as locals.
struct FusedCase {
  std::vector<std::pair<DType, Shape>> inputs;
  Shape space;
  std::vector<BodyOp> body;
  std::vector<int32_t> yields;
};

inline Plan fusedPlan(const FusedCase& c) {
  Plan plan;
  PlanStep step;
  step.op = "amp.fused";
  step.code = opCodeOf(step.op);
  step.kind = StepKind::Fused;
  step.attrs.set("kernel", std::string("test.k0"));
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    plan.buffers.push_back({"in" + std::to_string(i), c.inputs[i].first, c.inputs[i].second, BufferKind::Input, std::nullopt});
    step.operands.push_back(static_cast<int32_t>(i));
    step.locals.push_back({c.inputs[i].first, c.inputs[i].second});
  }
  for (const BodyOp& b : c.body) {
    PlanStep inner{b.op, b.operands, {static_cast<int32_t>(step.locals.size())}, b.attrs, "fused.mlir:1:1"};
    step.locals.push_back({b.dtype, b.shape.empty() ? c.space : b.shape});
    step.body.push_back(inner);
  }
  EntryPoint e;
  e.name = "eval";
  for (size_t r = 0; r < c.yields.size(); ++r) {
    const int32_t id = static_cast<int32_t>(plan.buffers.size());
    plan.buffers.push_back({"t" + std::to_string(r), step.locals[c.yields[r]].dtype, step.locals[c.yields[r]].shape,
                            BufferKind::Temp, std::nullopt});
    step.results.push_back(id);
    e.results.push_back(id);
    e.resultNames.push_back("r" + std::to_string(r));
  }
  step.yields = c.yields;
  e.steps.push_back(step);
  plan.entries.push_back(e);
  return plan;
}

}  // namespace amp::rt

#endif  // AMP_TEST_UNIT_COMMON_FUSEDPLAN_H
