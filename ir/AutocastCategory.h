// The autocast categories of the two policy styles, and the built-in category of each model op
// (AutocastOpInterface in ir/AmpInterfaces.td, defined per op in ir/AmpAutocast.cpp).
#ifndef AMP_IR_AUTOCASTCATEGORY_H
#define AMP_IR_AUTOCASTCATEGORY_H

namespace mlir::amp {

enum class Category {
  // PyTorch (CastPolicy in aten/src/ATen/autocast_mode.h).
  LowerPrecisionFp,  // cast float inputs to the low dtype, run low
  Fp32,              // cast float inputs to f32, run f32
  Fp32SetOptDtype,   // compute in f32, output f32 (softmax, sum, ...)
  Fp32AppendDtype,   // norm overloads; same effect as Fp32SetOptDtype here
  Promote,           // widest input; mixing f16 and bf16 is an error
  Fallthrough,       // not autocast: runs in its input dtype (native type promotion)
  Banned,            // refuses to compile under autocast
  // TensorFlow (auto_mixed_precision_lists.h).
  Allow,
  Infer,
  Deny,
  Clear,
  Unlisted,  // not on any TF list: never painted, stays f32
};

// A model op's place in the built-in policies: PyTorch's autocast lists, and TensorFlow's
// AutoMixedPrecisionLists for f16 (CUDA) and for bf16 (oneDNN), which differ for a few ops.
// Unlisted (TensorFlow) means on no list: never painted, stays f32.
struct AutocastCategories {
  Category pytorch;
  Category tensorflowFp16;
  Category tensorflowBf16;
};

}  // namespace mlir::amp

#endif  // AMP_IR_AUTOCASTCATEGORY_H
