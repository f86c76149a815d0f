// Which factory builds each op's step on the cpu device: one switch over every OpCode, compiled
// with -Werror=switch, so a new dialect op is a build error here until the device says how it
// runs it (its own kernel, or the reference kernel).
#include "runtime/devices/cpu/CpuStep.h"

namespace amp::rt::cpu {

StepFactories factoriesFor(OpCode code) {
  switch (code) {
    case OpCode::Abs:
    case OpCode::Add:
    case OpCode::Cast:
    case OpCode::Div:
    case OpCode::Exp:
    case OpCode::Gelu:
    case OpCode::Log:
    case OpCode::Maximum:
    case OpCode::Minimum:
    case OpCode::Mul:
    case OpCode::Neg:
    case OpCode::Pow:
    case OpCode::Reciprocal:
    case OpCode::Relu:
    case OpCode::Rsqrt:
    case OpCode::Select:
    case OpCode::Sigmoid:
    case OpCode::Silu:
    case OpCode::Sqrt:
    case OpCode::Sub:
    case OpCode::Tanh:
    case OpCode::Erf:
      return {makeElementwiseStep};
    // Float compares and reductions over trailing dims have fast kernels; integer and f8
    // compares, and reductions over any dims, the general ones.
    case OpCode::Compare:
      return {makeElementwiseStep, makeSlowPathStep};
    case OpCode::ReduceMax:
    case OpCode::ReduceMean:
    case OpCode::ReduceSum:
      return {makeReductionStep, makeSlowPathStep};
    // A scalar-element transpose is a general copy; others, a blocked layout kernel.
    case OpCode::Transpose:
      return {makeSlowPathStep, makeLayoutStep};
    case OpCode::Matmul:
      return {makeMatmulStep};
    case OpCode::Linear:
      return {makeLinearStep};
    case OpCode::Fused:
      return {makeFusedStep};
    case OpCode::CrossEntropy:
    case OpCode::CrossEntropyGrad:
      return {makeLossStep};
    case OpCode::AdamUpdate:
    case OpCode::ClipGrads:
    case OpCode::GlobalNorm:
    case OpCode::GradStats:
    case OpCode::LrSchedule:
    case OpCode::SgdUpdate:
    case OpCode::StepCounters:
    case OpCode::UnscaleCheck:
    case OpCode::UpdateScale:
      return {makeTrainStep};
    case OpCode::LayerNorm:
    case OpCode::LayerNormGrad:
    case OpCode::LogSoftmax:
    case OpCode::RmsNorm:
    case OpCode::RmsNormGrad:
    case OpCode::Softmax:
      return {makeNormStep};
    case OpCode::SoftmaxGrad:
      return {makeSoftmaxGradStep};
    case OpCode::Dropout:
    case OpCode::Embedding:
    case OpCode::EmbeddingGrad:
      return {makeEmbeddingStep};
    case OpCode::BroadcastTo:
    case OpCode::Concat:
    case OpCode::Slice:
    case OpCode::SliceGrad:
      return {makeShapeStep};
    case OpCode::GeluGrad:
    case OpCode::MseLoss:
      return {makeGradStep};
    case OpCode::AvgPool2D:
    case OpCode::AvgPool2DGrad:
    case OpCode::MaxPool2D:
    case OpCode::MaxPool2DGrad:
      return {makePoolStep};
    case OpCode::Conv2D:
    case OpCode::Conv2DGradInput:
    case OpCode::Conv2DGradWeight:
      return {makeConvStep};
    case OpCode::AllGather:
    case OpCode::AllReduce:
    case OpCode::RankChunk:
    case OpCode::ReduceScatter:
      return {makeCollectiveStep};
    case OpCode::BatchNorm:
    case OpCode::BatchNormGrad:
      return {makeBatchNormStep};
    // A cuBLASLt epilogue GEMM (formed for cuda targets only): the reference's unfused ops.
    case OpCode::GemmEpilogue:
      return {};
    // Prepared by the entry itself: a reshape is a view (the memory plan aliases it), a constant
    // is copied into its buffer once.
    case OpCode::Reshape:
    case OpCode::Constant:
    // Only inside a fused body, which its kernel (or the reference) runs.
    case OpCode::Yield:
      return {};
  }
  return {};
}

}  // namespace amp::rt::cpu
