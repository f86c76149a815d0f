// The argument block of a multi-tensor kernel launch (TrainKernels.cu), shared by the kernels and
// the host code that fills it (runtime/devices/cuda/MultiTensor.h), so both see one layout. It is
// passed by value: up to AMP_MT_MAX_BLOCKS blocks, each owning one chunk of one tensor, over up to
// amp_mt_capacity(Depth) tensors of Depth pointers each (grad, param, moments, low-precision copy).
// It stays under the 4 KB of kernel parameters every architecture and driver accepts.
#ifndef AMP_RUNTIME_KERNELS_CUDA_MULTITENSORARGS_H
#define AMP_RUNTIME_KERNELS_CUDA_MULTITENSORARGS_H

#define AMP_MT_MAX_BLOCKS 320
// Threads per block of every multi-tensor kernel (their __launch_bounds__ and shared arrays).
#define AMP_MT_BLOCK_THREADS 256
// Elements one block handles: a chunk of a tensor.
#define AMP_MT_CHUNK 65536
// Bytes of a launch's argument block, leaving room for the kernels' scalar pointers.
#define AMP_MT_ARG_BYTES 3712

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define AMP_MT_CONSTEXPR __host__ __device__ constexpr
#else
#define AMP_MT_CONSTEXPR constexpr
#endif

// Tensors per launch for `depth` pointers per tensor: what fits next to the block table.
AMP_MT_CONSTEXPR int amp_mt_capacity(int depth) {
  return (AMP_MT_ARG_BYTES - 8 - AMP_MT_MAX_BLOCKS * 5) / (8 * depth + 8);
}

template <int Depth>
struct AmpTensorList {
  void* ptr[Depth][amp_mt_capacity(Depth)];
  long long numel[amp_mt_capacity(Depth)];
  int firstSlot;                                // the partial-sum slot of block 0 (grad stats)
  int blocks;                                   // blocks of this launch
  int blockChunk[AMP_MT_MAX_BLOCKS];            // which chunk of its tensor block b handles
  unsigned char blockTensor[AMP_MT_MAX_BLOCKS]; // which tensor of this list block b works on
};

static_assert(amp_mt_capacity(5) <= 255, "blockTensor indexes tensors with one byte");
static_assert(sizeof(AmpTensorList<1>) <= AMP_MT_ARG_BYTES, "argument block of depth 1 too large");
static_assert(sizeof(AmpTensorList<5>) <= AMP_MT_ARG_BYTES, "argument block of depth 5 too large");

#endif  // AMP_RUNTIME_KERNELS_CUDA_MULTITENSORARGS_H
