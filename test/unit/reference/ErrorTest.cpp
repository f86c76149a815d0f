// Error paths shared by all ops: every malformed call returns InvalidArgument, never crashes.
#include "RefTestUtil.h"

namespace amp::rt {
namespace {
using namespace reftest;

TEST(RefErrors, UnknownOpAndOpList) {
  Tensor X = make(DType::F32, {1}, {1});
  expectError(run("amp.frobnicate", {&X}, {}, {DType::F32, {1}}), "unknown op 'amp.frobnicate'");
  std::vector<std::string_view> names = referenceOpNames();
  // Every dialect op has a kernel: the build checks it (runtime/plan/OpCode.h).
  EXPECT_GE(names.size(), 43u);
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  for (std::string_view op : {"amp.matmul", "amp.layer_norm_grad", "amp.adam_update", "amp.update_scale"})
    EXPECT_TRUE(std::binary_search(names.begin(), names.end(), op)) << op;
}

TEST(RefErrors, NullOperandsResultCountAndNegativeDims) {
  Tensor X = make(DType::F32, {2}, {1, 2});
  expectError(run("amp.add", {&X, nullptr}, {}, {DType::F32, {2}}), "operand 1 is null");
  const Tensor* ops[] = {&X};
  auto none = evalReferenceOp("amp.neg", ops, {}, {}, EvalContext{});
  expectError(none, "expected 1 result type, got 0");
  expectError(run("amp.neg", {&X}, {}, {DType::F32, {-2}}), "negative dimension");
  Tensor bad(DType::F32, {-1, 2});
  expectError(run("amp.neg", {&bad}, {}, {DType::F32, {2}}), "operand 0 has a negative dimension");
}

TEST(RefErrors, OperandCountsAndTypes) {
  Tensor X = make(DType::F32, {2}, {1, 2});
  Tensor H = make(DType::F16, {2}, {1, 2});
  Tensor I = makeI64({2}, {1, 2});
  expectError(run("amp.neg", {&X, &X}, {}, {DType::F32, {2}}), "amp.neg: expected 1 operand(s), got 2");
  expectError(run("amp.add", {&X}, {}, {DType::F32, {2}}), "expected 2 operand(s), got 1");
  expectError(run("amp.add", {&X, &H}, {}, {DType::F32, {2}}), "must have the same element type");
  expectError(run("amp.exp", {&I}, {}, {DType::I64, {2}}), "element type i64");
  expectError(run("amp.conv2d", {&X}, {}, {DType::F32, {2}}), "expected 2 to 3 operands, got 1");
  // Result type disagreeing with what the op computes (dtype or shape).
  expectError(run("amp.add", {&X, &X}, {}, {DType::F16, {2}}),
              "amp.add: result type f16[2] does not match the computed type f32[2]");
  Tensor Y = make(DType::F32, {3}, {1, 2, 3});
  expectError(run("amp.mul", {&X, &Y}, {}, {DType::F32, {3}}), "not broadcast-compatible");
}

TEST(RefErrors, MatmulShapeChecks) {
  Tensor A = make(DType::F32, {2, 3}, std::vector<double>(6, 1.0));
  Tensor B = make(DType::F32, {2, 3}, std::vector<double>(6, 1.0));
  Tensor v = make(DType::F32, {3}, {1, 2, 3});
  expectError(run("amp.matmul", {&A, &B}, {}, {DType::F32, {2, 3}}), "contraction dims differ");
  EXPECT_TRUE(run("amp.matmul", {&A, &B}, {{"transpose_b", true}}, {DType::F32, {2, 2}}).ok());
  expectError(run("amp.matmul", {&A, &v}, {}, {DType::F32, {2}}), "rank >= 2");
  expectError(run("amp.matmul", {&A, &B}, {{"transpose_b", int64_t{1}}}, {DType::F32, {2, 2}}),
              "attribute 'transpose_b' must be a bool, got integer");
  Tensor A3 = make(DType::F32, {2, 2, 3}, std::vector<double>(12, 1.0));
  Tensor B3 = make(DType::F32, {3, 3, 2}, std::vector<double>(18, 1.0));
  expectError(run("amp.matmul", {&A3, &B3}, {}, {DType::F32, {3, 2, 2}}), "not broadcast-compatible");
}

TEST(RefErrors, MissingStorageIsRejected) {
  Tensor empty;  // default tensor: shape [] (one element) but no storage
  expectError(run("amp.neg", {&empty}, {}, {DType::F32, {}}), "operand 0 has no storage");
}

}  // namespace
}  // namespace amp::rt
