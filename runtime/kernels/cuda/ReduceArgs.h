// The argument block of the reduction kernel (ReduceKernels.cu), shared with the host code that
// fills it (runtime/devices/cuda/CudaReduceActions.cpp). Dims are split into the kept ones (the output's,
// row-major) and the reduced ones (visited row-major, the reference's order), each with its input
// stride in elements.
#ifndef AMP_RUNTIME_KERNELS_CUDA_REDUCEARGS_H
#define AMP_RUNTIME_KERNELS_CUDA_REDUCEARGS_H

#define AMP_REDUCE_MAX_DIMS 8

struct AmpReduceShape {
  int keptDims;
  int reducedDims;
  long long keptSize[AMP_REDUCE_MAX_DIMS];
  long long keptStride[AMP_REDUCE_MAX_DIMS];
  long long reducedSize[AMP_REDUCE_MAX_DIMS];
  long long reducedStride[AMP_REDUCE_MAX_DIMS];
  long long outputs;       // elements of the result
  long long reducedCount;  // elements summed into each
};

#endif  // AMP_RUNTIME_KERNELS_CUDA_REDUCEARGS_H
