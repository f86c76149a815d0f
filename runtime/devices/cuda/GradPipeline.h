// The cuda device's rewrite of a training entry's gradient pipeline into two passes over the
// gradients. The plan runs unscale_check (read the scaled gradients, write unscaled copies),
// global_norm (read them again), clip_grads (read and write them again) and the optimizer (read
// them a fourth time), with casts widening f16/bf16 gradients to f32 before and casts narrowing
// the updated f32 masters to the low-precision weight copies after. When nothing else reads the
// intermediate gradients, the device runs instead:
//
//  - `cuda.grad_stats`, one multi-tensor pass reading each gradient once, as stored (f16/bf16 when
//    the plan widened it): found_inf, and the per-block sums of squares of the unscaled values
//    when the plan takes a global norm, then the norm;
//  - the optimizer pass, which unscales and clips each element on the fly (the unscaled value
//    rounded to the type the plan's unscaled gradient had, times the clip coefficient: the same
//    f32 operations in the same order), updates the masters and moments, and writes the
//    low-precision copy the plan's cast would have written, also on a skipped step.
//
// Every value is the bits the unfused steps produce. Pure host logic on the plan; the memory of
// the rewritten entry is planned again, since gradients now live until the optimizer reads them.
#ifndef AMP_RUNTIME_DEVICES_CUDA_GRADPIPELINE_H
#define AMP_RUNTIME_DEVICES_CUDA_GRADPIPELINE_H

#include <optional>
#include <string>
#include <vector>

#include "runtime/plan/Plan.h"

namespace amp::rt::cuda {

// The internal op of the fused statistics pass. Operands: the gradients as stored, then the loss
// scale when the plan unscales by one. Results: found_inf, then the global norm when the plan takes
// one. Attribute "widened" (integer array, one per gradient): 1 where the plan's unscaled gradient
// is the f32 widening of a 16-bit one, 0 where it has the stored type.
inline constexpr char kGradStatsOp[] = "cuda.grad_stats";

// Attributes the rewrite adds to each fused optimizer update, whose gradient operand is then the
// stored gradient: "cuda_widened" (bool) as above; "cuda_unscale" (bool): the loss scale follows the
// plan's operands; "cuda_max_norm" (float, with the norm after the scale): clip by the global
// norm. A fused update may have one more result than the plan's op: the low-precision weight copy.
inline constexpr char kWidenedAttr[] = "cuda_widened";
inline constexpr char kUnscaleAttr[] = "cuda_unscale";
inline constexpr char kMaxNormAttr[] = "cuda_max_norm";

struct FusedGradPipeline {
  EntryPoint entry;     // the rewritten entry, without a stored memory layout
  std::vector<size_t> planStep;  // for each of its steps, the plan's step it comes from
  std::string summary;  // what was fused, for reports
};

// The rewritten entry, or nullopt when `entry` has no gradient pipeline this rewrite applies to
// (no unscale_check, or an intermediate gradient another step or the caller reads).
std::optional<FusedGradPipeline> fuseGradPipeline(const Plan& plan, const EntryPoint& entry);

}  // namespace amp::rt::cuda

#endif  // AMP_RUNTIME_DEVICES_CUDA_GRADPIPELINE_H
