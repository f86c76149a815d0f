// The argument structs of the optimizer-scalars kernel and the optimizer passes (TrainKernels.cu),
// shared by the kernels and the host code that fills them, so both see one layout. Pointers are
// device addresses.
#ifndef AMP_RUNTIME_KERNELS_CUDA_TRAINARGS_H
#define AMP_RUNTIME_KERNELS_CUDA_TRAINARGS_H

#if !defined(__CUDACC_RTC__)  // NVRTC sees TrainMath.h earlier in the same translation unit
#include "runtime/kernels/math/TrainMath.h"
#endif

// What one step's optimizer pass applies, decided on the device from the step's scalars.
struct AmpStepScalars {
  float invScale;  // applied to the gradients read (1: they are unscaled already)
  float clipCoef;  // applied after unscaling when `clip` is set
  float found;     // found_inf: the optimizer leaves every state bit untouched when set
  float lr;
  int clip;
  AmpAdamStep adam;
  AmpSgdStep sgd;
};

// The optimizer-scalars kernel's inputs: the update ops' step, lr and found_inf operands and their
// attributes; for a fused update (unscale(...), clip(...): docs/training-ir.md) also the loss scale
// to unscale by and the global norm to clip by.
struct AmpOptimizerArgs {
  const long long* step;  // adam: the applied-step count (>= 1 on an applied step)
  const float* lr;
  const float* foundInf;
  const float* scale;     // null: the gradients arrive unscaled
  const float* norm;      // null: no clipping in this pass
  double maxNorm;
  int optimizer;          // 1 adam, 2 sgd
  double beta1, beta2, eps, weightDecay, momentum;
  int decoupled, nesterov;
  AmpStepScalars* out;
};

#endif  // AMP_RUNTIME_KERNELS_CUDA_TRAINARGS_H
