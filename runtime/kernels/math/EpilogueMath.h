// The arithmetic of the passes around a linear layer's cuBLASLt call (EpilogueKernels.cu): the
// reference's relu after amp.linear (ReferenceLinalg.cpp), applied to the rounded result. NaN
// stays NaN, everything not above zero (-0 included) becomes +0. cuBLASLt's RELU_BIAS epilogue
// computes max(x, 0), which turns NaN into 0, so the device runs this pass instead.
#ifndef AMP_RUNTIME_KERNELS_MATH_EPILOGUEMATH_H
#define AMP_RUNTIME_KERNELS_MATH_EPILOGUEMATH_H

#if !defined(__CUDACC_RTC__)  // NVRTC sees HostDevice.h first in the same translation unit
#include "runtime/kernels/math/HostDevice.h"
#endif

// Whether the relu keeps v as it is; otherwise it stores +0.
AMP_TM bool amp_relu_keeps(float v) { return v > 0.0f || v != v; }

#endif  // AMP_RUNTIME_KERNELS_MATH_EPILOGUEMATH_H
