// Block-wide helpers of the row kernels (LossKernels.cu, NormKernels.cu): a block of
// AMP_ROW_BLOCK threads takes a row's max with the exact tie-break of RowMath.h, and adds a row's
// terms in the contract's blocked pairwise order (SumOrder.h, the reference's order) while
// computing them 256 at a time: one block of the order per chunk.
#ifndef AMP_RUNTIME_KERNELS_CUDA_ROWKERNELS_CUH
#define AMP_RUNTIME_KERNELS_CUDA_ROWKERNELS_CUH

#define AMP_ROW_BLOCK 256
static_assert(AMP_ROW_BLOCK == AMP_SUM_BLOCK, "a chunk of the row kernels is one block of the sum order");

// The row's max (softmaxSlice's m, to the bit), by the whole block: each thread scans its elements in
// order, then a tree combines the partials. The caller synchronises before the arrays are reused.
template <int T>
__device__ float amp_row_block_max(const void* x, long long base, long long len, float* maxes,
                                  long long* firstAt) {
  float max = __uint_as_float(0xff800000u);  // -inf
  long long at = AMP_ROW_NO_INDEX;
  for (long long j = threadIdx.x; j < len; j += AMP_ROW_BLOCK)
    amp_row_max_step(&max, &at, amp_load<T>(x, base + j), j);
  maxes[threadIdx.x] = max;
  firstAt[threadIdx.x] = at;
  __syncthreads();
  for (int half = AMP_ROW_BLOCK / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      max = maxes[threadIdx.x];
      at = firstAt[threadIdx.x];
      amp_row_max_combine(&max, &at, maxes[threadIdx.x + half], firstAt[threadIdx.x + half]);
      maxes[threadIdx.x] = max;
      firstAt[threadIdx.x] = at;
    }
    __syncthreads();
  }
  return maxes[0];
}

// sum over j in [0, len) of term(j) in the contract's order, as the reference's amp_blocked_sum.
// The block evaluates 256 terms into one half of `chunks` (2 * 256 floats) while thread 0 adds the
// previous 256 from the other half in order from +0 and pushes that block sum into its tree: one
// barrier per chunk. The sum is thread 0's only; the caller synchronises before `chunks` is reused.
template <class Term>
__device__ float amp_row_ordered_sum(long long len, float* chunks, const Term& term) {
  AmpSumTree<float> tree;
  tree.reset();
  int half = 0;
  for (long long base = 0; base < len; base += AMP_ROW_BLOCK, half ^= 1) {
    float* chunk = chunks + half * AMP_ROW_BLOCK;
    const long long j = base + threadIdx.x;
    if (j < len) chunk[threadIdx.x] = term(j);
    __syncthreads();
    if (threadIdx.x == 0) {
      const int n = len - base < AMP_ROW_BLOCK ? (int)(len - base) : AMP_ROW_BLOCK;
      float sum = 0.0f;
      for (int i = 0; i < n; ++i) sum += chunk[i];
      tree.push(sum);
    }
  }
  return tree.result(0.0f);
}

#endif  // AMP_RUNTIME_KERNELS_CUDA_ROWKERNELS_CUH
