// Internal to the cpu device: a prepared step. Factories validate operand counts, dtypes, shapes
// and attributes once, decode them into typed fields, and return a step whose run() touches only
// buffer pointers: no allocation, no string or map lookup.
#ifndef AMP_RUNTIME_DEVICES_CPU_CPUSTEP_H
#define AMP_RUNTIME_DEVICES_CPU_CPUSTEP_H

#include <cstdint>
#include <string_view>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/devices/cpu/kernels/Parallel.h"
#include "runtime/dist/Communicator.h"
#include "runtime/plan/OpCode.h"
#include "runtime/plan/Plan.h"
#include "runtime/schema/CpuFeatures.h"

namespace amp::rt::cpu {

// Buffer pointers of the current call, indexed by buffer id.
using BufferPtrs = uint8_t* const*;

class CpuStep {
 public:
  virtual ~CpuStep() = default;
  virtual absl::Status run(BufferPtrs ptr) = 0;
  // Elementwise steps read element i of an operand only to write element i of their results, so a
  // result may share storage with a same-typed operand (the optimizer updating params in place).
  virtual bool elementwiseInPlace() const { return false; }
  // Bytes of per-step scratch the step keeps (oneDNN scratchpad, widening buffers).
  virtual int64_t scratchBytes() const { return 0; }
  // Scratch needed only inside run() (GEMM widening buffers, oneDNN's scratchpad). Steps run one
  // at a time, so before the first run the entry binds each step to 64-byte aligned arena bytes
  // that no buffer live at that step holds (runtime/plan/StepScratch.h); their contents are
  // anything at each run.
  virtual int64_t sharedScratchBytes() const { return 0; }
  virtual void bindSharedScratch(uint8_t* /*scratch*/) {}
  // The count of the entry's report (CpuReport.h) this step adds one to, if any: how a step of
  // several possible forms was prepared (a convolution run as one GEMM).
  virtual std::string_view reportCount() const { return {}; }
};

struct StepContext {
  const Plan& plan;
  const PlanStep& step;
  OpCode code;  // step.op, resolved once: factories dispatch on it, never on the name
  const CpuFeatures& features;
  int64_t* dropoutStep;  // the current call's step counter (read by dropout at run time)
  const class NativeLibrary* native = nullptr;  // the bundle's fused kernels for this CPU, if any
  Communicator* const* communicator = nullptr;  // the current call's job (read by amp.all_reduce)

  const BufferDesc& operand(size_t i) const { return plan.buffers[step.operands[i]]; }
  const BufferDesc& result(size_t i) const { return plan.buffers[step.results[i]]; }
  // InvalidArgument("<op>: <message>"); the executor prefixes the location, entry and step.
  absl::Status error(absl::string_view message) const;
};

// Each factory returns nullptr when the step is outside what its kernel handles (the executor
// then runs the reference kernel for it) and an error when the step is malformed.
absl::StatusOr<std::unique_ptr<CpuStep>> makeElementwiseStep(const StepContext& c);
absl::StatusOr<std::unique_ptr<CpuStep>> makeReductionStep(const StepContext& c);
absl::StatusOr<std::unique_ptr<CpuStep>> makeLossStep(const StepContext& c);
absl::StatusOr<std::unique_ptr<CpuStep>> makeTrainStep(const StepContext& c);
absl::StatusOr<std::unique_ptr<CpuStep>> makeMatmulStep(const StepContext& c);
// amp.linear: one GEMM with the bias in its epilogue (CpuLinear.cpp).
absl::StatusOr<std::unique_ptr<CpuStep>> makeLinearStep(const StepContext& c);
absl::StatusOr<std::unique_ptr<CpuStep>> makeLayoutStep(const StepContext& c);
absl::StatusOr<std::unique_ptr<CpuStep>> makeFusedStep(const StepContext& c);
// softmax/log_softmax, layer_norm, rms_norm and their gradients (CpuNorm.cpp).
absl::StatusOr<std::unique_ptr<CpuStep>> makeNormStep(const StepContext& c);
// softmax_grad (CpuSoftmaxGrad.cpp).
absl::StatusOr<std::unique_ptr<CpuStep>> makeSoftmaxGradStep(const StepContext& c);
// batch_norm, batch_norm_grad (CpuBatchNorm.cpp).
absl::StatusOr<std::unique_ptr<CpuStep>> makeBatchNormStep(const StepContext& c);
// embedding, embedding_grad, dropout (CpuEmbedding.cpp).
absl::StatusOr<std::unique_ptr<CpuStep>> makeEmbeddingStep(const StepContext& c);
// broadcast_to, slice, slice_grad, concat (CpuShape.cpp).
absl::StatusOr<std::unique_ptr<CpuStep>> makeShapeStep(const StepContext& c);
// amp.all_reduce, amp.reduce_scatter, amp.all_gather, amp.rank_chunk (CpuCollective.cpp).
absl::StatusOr<std::unique_ptr<CpuStep>> makeCollectiveStep(const StepContext& c);
// gelu_grad, mse_loss (CpuGrad.cpp).
absl::StatusOr<std::unique_ptr<CpuStep>> makeGradStep(const StepContext& c);
// max/avg pooling and their gradients (CpuPool.cpp).
absl::StatusOr<std::unique_ptr<CpuStep>> makePoolStep(const StepContext& c);
// conv2d, conv2d_grad_input, conv2d_grad_weight (CpuConv.cpp).
absl::StatusOr<std::unique_ptr<CpuStep>> makeConvStep(const StepContext& c);
// reduce over any dims and f8, integer/f8 compare, scalar transpose (CpuSlowPaths.cpp).
absl::StatusOr<std::unique_ptr<CpuStep>> makeSlowPathStep(const StepContext& c);

using StepFactory = absl::StatusOr<std::unique_ptr<CpuStep>> (*)(const StepContext& c);
// The factories that build `code`'s step, tried in order until one takes it (a factory declines
// with nullptr a step outside what its kernel handles); when none does, the step runs on the
// reference kernel (CpuOpTable.cpp).
struct StepFactories {
  StepFactory first = nullptr, then = nullptr;
};
StepFactories factoriesFor(OpCode code);

}  // namespace amp::rt::cpu

#endif  // AMP_RUNTIME_DEVICES_CPU_CPUSTEP_H
