// AMP_TM marks the functions of the kernels' arithmetic headers (TrainMath.h, LossMath.h,
// NormMath.h, ShapeMath.h, RowMath.h): device functions under NVRTC or nvcc, inline host functions
// for the host tests that check them against the reference. ampc puts this file first among the
// library kernels; on the host each header includes it.
#ifndef AMP_RUNTIME_KERNELS_MATH_HOSTDEVICE_H
#define AMP_RUNTIME_KERNELS_MATH_HOSTDEVICE_H

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define AMP_TM __device__ __forceinline__
#else
#include <math.h>
#define AMP_TM inline
#endif

#endif  // AMP_RUNTIME_KERNELS_MATH_HOSTDEVICE_H
