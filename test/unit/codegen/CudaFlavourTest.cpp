// The CUDA flavour of the kernel emitter on hand-built fused steps: the kernel's signature, its
// vector and scalar paths, the column kernel of row reductions, the step annotations next to the
// C++ flavour's, and identical bodies sharing one kernel. No GPU and no NVRTC needed.
#include "codegen/emit/KernelEmitter.h"
#include "gtest/gtest.h"
#include "runtime/plan/KernelBinding.h"
#include "test/unit/common/FusedPlan.h"

namespace amp::rt {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

size_t count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// The MLP's forward pattern: bf16 GEMM output -> f32 -> + bias -> relu -> bf16.
FusedCase biasReluCast() {
  return {{{DType::BF16, {128, 256}}, {DType::F32, {256}}},
          {128, 256},
          {{"amp.cast", {0}, DType::F32}, {"amp.add", {2, 1}, DType::F32}, {"amp.relu", {3}, DType::F32},
           {"amp.cast", {4}, DType::BF16}},
          {3, 5}};
}

TEST(CudaFlavour, ElementwiseKernelHasVectorAndScalarPaths) {
  Plan plan = fusedPlan(biasReluCast());
  std::string source, error;
  ASSERT_TRUE(codegen::emitCudaSource(plan, source, error)) << error;
  const PlanStep& step = plan.entries[0].steps[0];
  // The kernel is named by what it computes, and the step records that name.
  const std::string name = cudaKernelName(plan, step);
  EXPECT_EQ(name.size(), 5u + 64u);
  EXPECT_EQ(*step.attrs.getString(step.op, "cuda_symbol"), name);
  EXPECT_TRUE(contains(source, "extern \"C\" __global__ void __launch_bounds__(256) " + name +
                                   "(const unsigned short* __restrict__ in0, const float* __restrict__ in1, float* "
                                   "__restrict__ out0, unsigned short* __restrict__ out1) {"))
      << source;
  // The widest operand is f32 (the bias is read per column, not per element): 4 lanes.
  EXPECT_EQ(*step.attrs.getInt(step.op, "cuda_vector_width"), 4);
  EXPECT_EQ(*step.attrs.getInt(step.op, "row_length"), 256);
  // 16-byte f32 stores, 8-byte bf16 loads and stores, only when every vector pointer is aligned.
  EXPECT_TRUE(contains(source, "if ((((unsigned long)in0 | (unsigned long)out0 | (unsigned long)out1) & 15) == 0)"));
  EXPECT_TRUE(contains(source, "lanes0.raw = ((const uint2*)in0)[q];"));
  EXPECT_TRUE(contains(source, "((uint4*)out0)[q] = result0.raw;"));
  EXPECT_TRUE(contains(source, "((uint2*)out1)[q] = result1.raw;"));
  EXPECT_TRUE(contains(source, "for (long q = first; q < 8192; q += stride)"));  // 32768 / 4
  EXPECT_TRUE(contains(source, "const float v1 = in1[j];"));                      // the bias, per column
  EXPECT_TRUE(contains(source, "const float v0 = amp_ld_bf16(lanes0.x[t]);"));
  EXPECT_TRUE(contains(source, "result1.x[t] = amp_st_bf16(v5);"));
  // The scalar loop starts after the last whole vector (none here) and is grid-stride.
  EXPECT_TRUE(contains(source, "scalarFrom = 32768;"));
  EXPECT_TRUE(contains(source, "for (long e = scalarFrom + first; e < 32768; e += stride)"));
  EXPECT_TRUE(contains(source, "out1[i] = amp_st_bf16(v5);"));
}

TEST(CudaFlavour, ElementCountsOffTheVectorWidthGetAScalarTail) {
  Plan plan = fusedPlan({{{DType::F16, {3, 7}}, {DType::F16, {3, 7}}}, {3, 7}, {{"amp.mul", {0, 1}, DType::F16}}, {2}});
  std::string source, error;
  ASSERT_TRUE(codegen::emitCudaSource(plan, source, error)) << error;
  const PlanStep& step = plan.entries[0].steps[0];
  EXPECT_EQ(*step.attrs.getInt(step.op, "cuda_vector_width"), 8);  // all f16: 8 halves = 16 bytes
  EXPECT_TRUE(contains(source, "lanes0.raw = ((const uint4*)in0)[q];"));
  EXPECT_TRUE(contains(source, "for (long q = first; q < 2; q += stride)"));  // 21 / 8
  EXPECT_TRUE(contains(source, "scalarFrom = 16;"));                         // 5 elements left
  EXPECT_TRUE(contains(source, "const float v2 = amp_rn_f16(v0 * v1);  // amp.mul"));
}

TEST(CudaFlavour, TinyStepsAreScalarOnly) {
  Plan plan = fusedPlan({{{DType::F32, {3}}, {DType::F32, {}}}, {3}, {{"amp.add", {0, 1}, DType::F32}}, {2}});
  std::string source, error;
  ASSERT_TRUE(codegen::emitCudaSource(plan, source, error)) << error;
  const PlanStep& step = plan.entries[0].steps[0];
  EXPECT_EQ(*step.attrs.getInt(step.op, "cuda_vector_width"), 1);
  EXPECT_FALSE(contains(source, "lanes0"));
  EXPECT_TRUE(contains(source, "const float v1 = in1[0];"));  // the scalar input
  EXPECT_TRUE(contains(source, "for (long e = scalarFrom + first; e < 3; e += stride)"));
}

// The relu backward with its bias gradient: one thread per column visits every row in order.
TEST(CudaFlavour, RowReductionsRunOneThreadPerColumn) {
  AttrMap gt{{"predicate", std::string("gt")}};
  Plan plan = fusedPlan({{{DType::BF16, {128, 300}}, {DType::BF16, {}}, {DType::BF16, {128, 300}}},
                         {128, 300},
                         {{"amp.compare", {0, 1}, DType::Bool, gt},
                          {"amp.select", {3, 2, 1}, DType::BF16},
                          {"amp.reduce_sum", {4}, DType::BF16, {{"dims", std::vector<int64_t>{0}}, {"keepdim", false}}, {300}}},
                         {4, 5}});
  std::string source, error;
  ASSERT_TRUE(codegen::emitCudaSource(plan, source, error)) << error;
  const PlanStep& step = plan.entries[0].steps[0];
  EXPECT_EQ(*step.attrs.getInt(step.op, "cuda_vector_width"), 1);
  EXPECT_EQ(*step.attrs.getInts(step.op, "reduced_results"), std::vector<int64_t>{1});
  EXPECT_TRUE(contains(source, "for (long j = first; j < 300; j += stride) {"));
  EXPECT_TRUE(contains(source, "for (long row = 0; row < 128; ++row) {"));
  EXPECT_TRUE(contains(source, "acc0 += v4;"));
  EXPECT_TRUE(contains(source, "out1[j] = amp_st_bf16(acc0);"));
  EXPECT_TRUE(contains(source, "const bool v3 = (v0 > v1);  // amp.compare"));
  EXPECT_FALSE(contains(source, "lanes"));
}

TEST(CudaFlavour, AnnotatesStepsNextToTheCpuFlavour) {
  Plan plan = fusedPlan(biasReluCast());
  plan.entries[0].steps.push_back(plan.entries[0].steps[0]);  // an identical second step
  plan.entries[0].steps[1].attrs.set("kernel", std::string("test.k1"));
  std::string cpuSource, cudaSource, error;
  ASSERT_TRUE(codegen::emitCpuSource(plan, cpuSource, error)) << error;
  ASSERT_TRUE(codegen::emitCudaSource(plan, cudaSource, error)) << error;
  const std::string name = cudaKernelName(plan, plan.entries[0].steps[0]);
  for (const PlanStep& step : plan.entries[0].steps) {
    EXPECT_EQ(*step.attrs.getString(step.op, "symbol"), "amp_test_k0");  // the C++ flavour's, kept
    EXPECT_EQ(*step.attrs.getString(step.op, "cuda_symbol"), name);
  }
  // The generated kernels come before the device's library kernels (codegen::cudaLibrarySource).
  const std::string generated = cudaSource.substr(0, cudaSource.find("// The CUDA device's library kernels."));
  EXPECT_EQ(count(generated, "__global__"), 1u) << "identical bodies share one kernel";
  EXPECT_FALSE(contains(cudaSource, "amp_test_k"));
  // The C++ source is untouched by the CUDA annotations: emitting it again gives the same text.
  std::string again;
  ASSERT_TRUE(codegen::emitCpuSource(plan, again, error)) << error;
  EXPECT_EQ(again, cpuSource);
}

TEST(CudaFlavour, ReadsABroadcastAlongOneRunOfInnerDims) {
  // [64, 1, 5] against [64, 30, 5] (a softmax gradient's sum over a middle axis): element
  // (i / 150) * 5 + i % 5.
  Plan plan = fusedPlan({{{DType::F32, {64, 1, 5}}, {DType::F32, {64, 30, 5}}}, {64, 30, 5}, {{"amp.add", {0, 1}, DType::F32}}, {2}});
  std::string source, error;
  ASSERT_TRUE(codegen::emitCudaSource(plan, source, error)) << error;
  EXPECT_TRUE(contains(source, "in0[(i / 150) * 5 + i % 5]")) << source;
}

// The name covers every input of the kernel's text: a step that differs in its region, its
// buffers' shapes or its vector width gets another name.
TEST(CudaFlavour, KernelNamesChangeWithWhatTheKernelComputes) {
  Plan plan = fusedPlan(biasReluCast());
  std::string source, error;
  ASSERT_TRUE(codegen::emitCudaSource(plan, source, error)) << error;
  const PlanStep& step = plan.entries[0].steps[0];
  const std::string name = cudaKernelName(plan, step);
  PlanStep otherOp = step;
  otherOp.body[2].op = "amp.tanh";
  PlanStep otherWidth = step;
  otherWidth.attrs.set("cuda_vector_width", int64_t{2});
  PlanStep otherRow = step;
  otherRow.attrs.set("row_length", int64_t{128});
  PlanStep renamed = step;  // the names of kernels are not part of what they compute
  renamed.attrs.set("kernel", std::string("test.other"));
  renamed.attrs.set("symbol", std::string("amp_other"));
  renamed.attrs.set("cuda_symbol", std::string("amp_other"));
  EXPECT_NE(cudaKernelName(plan, otherOp), name);
  EXPECT_NE(cudaKernelName(plan, otherWidth), name);
  EXPECT_NE(cudaKernelName(plan, otherRow), name);
  EXPECT_EQ(cudaKernelName(plan, renamed), name);
  Plan wider = plan;
  wider.buffers[wider.entries[0].steps[0].operands[1]].dtype = DType::BF16;
  EXPECT_NE(cudaKernelName(wider, step), name);
}

TEST(CudaFlavour, RefusesStepsTheBodyCannotIndex) {
  // Two separate broadcast runs ([64, 1, 5, 1] against [64, 30, 5, 7]) fit no access.
  Plan plan = fusedPlan(
      {{{DType::F32, {64, 1, 5, 1}}, {DType::F32, {64, 30, 5, 7}}}, {64, 30, 5, 7}, {{"amp.add", {0, 1}, DType::F32}}, {2}});
  std::string source, error;
  EXPECT_FALSE(codegen::emitCudaSource(plan, source, error));
  EXPECT_TRUE(contains(error, "does not broadcast by leading dims")) << error;
}

}  // namespace
}  // namespace amp::rt

namespace amp::rt {
namespace {

// A lone elementwise op becomes a one-op kernel; an operand broadcast per row ([M, 1] against
// [M, N], the attention softmax's `x - max`) is read at i / N.
TEST(CudaFlavour, LoneOpsBecomeKernelsWithRowBroadcasts) {
  Plan plan;
  plan.buffers = {{"x", DType::F32, {4, 8}, BufferKind::Input},
                  {"m", DType::F32, {4, 1}, BufferKind::Input},
                  {"%2", DType::F32, {4, 8}, BufferKind::Temp},
                  {"%3", DType::F32, {4, 8}, BufferKind::Temp}};
  EntryPoint e;
  e.name = "eval";
  PlanStep sub;
  sub.op = "amp.sub";
  sub.code = opCodeOf(sub.op);
  sub.operands = {0, 1};
  sub.results = {2};
  PlanStep transpose;  // not elementwise: left for the device's library kernels
  transpose.op = "amp.transpose";
  transpose.code = opCodeOf(transpose.op);
  transpose.operands = {2};
  transpose.results = {3};
  transpose.attrs.set("permutation", std::vector<int64_t>{0, 1});
  e.steps = {sub, transpose};
  e.results = {3};
  plan.entries = {e};
  std::string source, error;
  ASSERT_TRUE(codegen::emitCudaSource(plan, source, error)) << error;
  const PlanStep& step = plan.entries[0].steps[0];
  ASSERT_TRUE(step.attrs.has("cuda_symbol"));
  EXPECT_EQ(*step.attrs.getString(step.op, "cuda_symbol"), cudaKernelName(plan, step));
  EXPECT_TRUE(contains(source, "const float v1 = in1[i / 8];")) << source;
  EXPECT_FALSE(plan.entries[0].steps[1].attrs.has("cuda_symbol"));
}

}  // namespace
}  // namespace amp::rt
