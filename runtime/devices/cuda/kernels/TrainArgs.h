// The argument structs of the finalize kernel (TrainKernels.cu), shared by the kernel and the host
// code that fills them, so both see one layout. Pointers are device addresses; null switches a
// part off. Each input and output is a separate buffer, as in the plan (the memory layout may make
// an output the same storage as its input).
#ifndef AMP_RUNTIME_DEVICES_CUDA_KERNELS_TRAINARGS_H
#define AMP_RUNTIME_DEVICES_CUDA_KERNELS_TRAINARGS_H

#if !defined(__CUDACC_RTC__)  // NVRTC sees TrainMath.h earlier in the same translation unit
#include "runtime/devices/cuda/kernels/TrainMath.h"
#endif

// What the finalize kernel decides for the optimizer pass of the same step.
struct AmpStepScalars {
  float invScale;  // of the scale the step's gradients carry (1 without loss scaling)
  float clipCoef;  // 1 without clipping
  float found;     // found_inf: the optimizer leaves every state bit untouched when set
  float lr;
  int clip;        // multiply by clipCoef (the plan clips)
  AmpAdamStep adam;
  AmpSgdStep sgd;
};

struct AmpFinalizeArgs {
  const float* partials;       // grad stats: one sum of squares per block (null: no global norm)
  const int* tensorFirstSlot;  // tensor t's blocks are partials[first[t] .. first[t + 1])
  int tensors;
  float* norms;                // scratch: one norm per tensor
  float* totalNorm;            // global_norm's result
  double maxNorm;
  const float* scale;          // the loss scale the gradients carry (null: none)
  const float* foundInf;       // unscale_check's found_inf
  const long long* stepIn;     // step_counters (null: none)
  const long long* skippedIn;
  long long* stepOut;
  long long* skippedOut;
  int lrCosine;                // lr_schedule's kind, unless lrFixed is set
  double baseLr, minLr;
  long long warmup, total;
  const float* lrFixed;        // a learning-rate tensor instead of a schedule
  float* lrOut;                // lr_schedule's result (may be null)
  int optimizer;               // 1 adam, 2 sgd
  double beta1, beta2, eps, weightDecay, momentum;
  int decoupled, nesterov;
  const float* scaleIn;        // update_scale (null: none)
  const int* trackerIn;
  float* scaleOut;
  int* trackerOut;
  double growth, backoff;
  long long interval;
  AmpStepScalars* out;
};

#endif  // AMP_RUNTIME_DEVICES_CUDA_KERNELS_TRAINARGS_H
