// Every model op's place in the built-in precision policies (AutocastOpInterface): its PyTorch
// autocast category (aten/src/ATen/autocast_mode.h, the CUDA lists) and its TensorFlow
// AutoMixedPrecisionLists category for f16 and for bf16 (oneDNN: Mean, Sum and Rsqrt move to
// infer). Comments name the upstream ops mirrored; "project" marks a choice of ours where upstream
// has no such op. A model op without a line here does not link.
#include "ir/AmpOps.h"

namespace mlir::amp {

#define AMP_AUTOCAST(OP, PYTORCH, TF_FP16, TF_BF16)                                     \
  std::optional<AutocastCategories> OP::getAutocastCategories() {                      \
    return AutocastCategories{Category::PYTORCH, Category::TF_FP16, Category::TF_BF16}; \
  }
#define AMP_NOT_AUTOCAST(OP) \
  std::optional<AutocastCategories> OP::getAutocastCategories() { return std::nullopt; }

AMP_AUTOCAST(AbsOp, Fallthrough, Clear, Clear)  // tf: Abs
AMP_AUTOCAST(AddOp, Fallthrough, Infer, Infer)  // tf: Add, AddV2, BiasAdd
AMP_AUTOCAST(AvgPool2DOp, Fallthrough, Infer, Infer)  // tf: AvgPool
// torch: batch_norm is on no autocast list (it runs in its input's type; cuDNN takes f32 scale,
// bias and statistics with a bf16/f16 input); tf: FusedBatchNormV3 (infer, U = float)
AMP_AUTOCAST(BatchNormOp, Fallthrough, Infer, Infer)
AMP_AUTOCAST(BroadcastToOp, Fallthrough, Clear, Clear)  // tf: BroadcastTo
AMP_AUTOCAST(CompareOp, Fallthrough, Clear, Clear)  // tf: Less, Greater, Equal, ...
AMP_AUTOCAST(ConcatOp, Fallthrough, Clear, Clear)  // tf: ConcatV2
AMP_AUTOCAST(Conv2DOp, LowerPrecisionFp, Allow, Allow)  // torch: conv2d; tf: Conv2D
AMP_AUTOCAST(Conv2DGradInputOp, LowerPrecisionFp, Allow, Allow)  // torch: conv_transpose2d; tf: Conv2DBackpropInput
AMP_AUTOCAST(CrossEntropyOp, Fp32, Deny, Deny)  // torch: cross_entropy (docs fp32 list) = log_softmax + nll_loss; tf: SparseSoftmaxCrossEntropyWithLogits
AMP_AUTOCAST(DivOp, Fallthrough, Infer, Infer)  // tf: RealDiv
AMP_AUTOCAST(DropoutOp, Fallthrough, Infer, Infer)  // tf: Mul, Select
AMP_AUTOCAST(EmbeddingOp, Fallthrough, Clear, Clear)  // tf: GatherV2
AMP_AUTOCAST(ErfOp, Fallthrough, Infer, Infer)  // torch: on no list; tf: Erf
AMP_AUTOCAST(ExpOp, Fp32, Deny, Deny)  // torch: exp; tf: Exp
AMP_AUTOCAST(GeluOp, Fallthrough, Infer, Infer)  // tf: Erf/Tanh, Mul, Add
AMP_AUTOCAST(LayerNormOp, Fp32, Deny, Deny)  // torch: layer_norm, native_layer_norm; tf: (project: statistics in f32)
AMP_AUTOCAST(LinearOp, LowerPrecisionFp, Allow, Allow)  // torch: linear, addmm (every float input cast, the bias too); tf: MatMul + BiasAdd (_FusedMatMul)
AMP_AUTOCAST(LogOp, Fp32, Infer, Infer)  // torch: log; tf: Log
AMP_AUTOCAST(LogSoftmaxOp, Fp32SetOptDtype, Infer, Infer)  // torch: log_softmax.int; tf: LogSoftmax
AMP_AUTOCAST(MatmulOp, LowerPrecisionFp, Allow, Allow)  // torch: matmul, mm, bmm; tf: MatMul, BatchMatMulV2
AMP_AUTOCAST(MaxPool2DOp, Fallthrough, Clear, Clear)  // tf: MaxPool
AMP_AUTOCAST(MaximumOp, Fallthrough, Clear, Clear)  // tf: Maximum
AMP_AUTOCAST(MinimumOp, Fallthrough, Clear, Clear)  // tf: Minimum
AMP_AUTOCAST(MseLossOp, Fp32, Deny, Deny)  // torch: mse_loss; tf: L2Loss / Mean(SquaredDifference)
AMP_AUTOCAST(MulOp, Fallthrough, Infer, Infer)  // tf: Mul
AMP_AUTOCAST(NegOp, Fallthrough, Clear, Clear)  // tf: Neg
AMP_AUTOCAST(PowOp, Fp32, Deny, Deny)  // torch: pow.Tensor_Tensor; tf: Pow
AMP_AUTOCAST(ReciprocalOp, Fp32, Infer, Infer)  // torch: reciprocal; tf: Reciprocal, Inv
AMP_AUTOCAST(ReduceMaxOp, Fallthrough, Clear, Clear)  // tf: Max
AMP_AUTOCAST(ReduceMeanOp, Fallthrough, Deny, Infer)  // tf: Mean
AMP_AUTOCAST(ReduceSumOp, Fp32SetOptDtype, Deny, Infer)  // torch: sum.dim_IntList; tf: Sum
AMP_AUTOCAST(ReluOp, Fallthrough, Clear, Clear)  // tf: Relu
AMP_AUTOCAST(ReshapeOp, Fallthrough, Clear, Clear)  // tf: Reshape
AMP_AUTOCAST(RmsNormOp, Fp32, Deny, Deny)  // torch: (not listed upstream; statistics in f32 like layer_norm); tf: (project: statistics in f32)
AMP_AUTOCAST(RsqrtOp, Fp32, Unlisted, Infer)  // torch: rsqrt
AMP_AUTOCAST(SelectOp, Fallthrough, Clear, Clear)  // tf: Select, SelectV2
AMP_AUTOCAST(SigmoidOp, Fallthrough, Infer, Infer)  // tf: Sigmoid
AMP_AUTOCAST(SiluOp, Fallthrough, Infer, Infer)  // tf: x * Sigmoid(x) (Mul, Sigmoid)
AMP_AUTOCAST(SliceOp, Fallthrough, Clear, Clear)  // tf: Slice, StridedSlice
AMP_AUTOCAST(SoftmaxOp, Fp32SetOptDtype, Infer, Infer)  // torch: softmax.int; tf: Softmax
AMP_AUTOCAST(SqrtOp, Fallthrough, Infer, Infer)  // tf: Sqrt
AMP_AUTOCAST(SubOp, Fallthrough, Infer, Infer)  // tf: Sub
AMP_AUTOCAST(TanhOp, Fallthrough, Infer, Infer)  // tf: Tanh
AMP_AUTOCAST(TransposeOp, Fallthrough, Clear, Clear)  // tf: Transpose

// Casts are what autocast inserts, and constants take the precision of their users.
AMP_NOT_AUTOCAST(CastOp)
AMP_NOT_AUTOCAST(ConstantOp)

#undef AMP_AUTOCAST
#undef AMP_NOT_AUTOCAST

}  // namespace mlir::amp
