// The CUDA device's loss kernels. Cross-entropy: amp.cross_entropy (the mean loss over the rows whose label
// is not ignore_index, with label_smoothing) and amp.cross_entropy_grad, bit for bit the reference
// executor's results (arithmetic in LossMath.h). ampc appends this file, after LossMath.h, to the
// CUDA kernels of every cuda bundle, behind the prelude's amp_ld_*/amp_st_* conversions
// (codegen/emit/CudaFlavour.cpp).
//
// The reference's sums are sequential, in class order inside a row and in row order across rows,
// and f32 addition does not reassociate, so the kernels keep those orders: a block of 256 threads
// evaluates a row's terms (exp, -logp) 256 at a time into shared memory while its thread 0 adds
// them in class order, and one thread adds the row losses for the mean. The row max, the only
// reduction whose order cannot change a bit (LossMath.h), is a tree.
//
// Names end in the logits' type T (f32, bf16, f16) and the labels' type L (i64: long long, i32:
// int). logits [N, C] (rows, classes; dense, row-major), loss, dloss and dlogits are device pointers
// (void*) to elements of type T, bf16 and f16 as their 16-bit patterns; labels [N] are of type L.
// The kernels launched with 256 threads need blockDim = (256, 1, 1) exactly, take any gridDim.x >= 1
// (rows are grid-strided, one block per row at a time: gridDim.x = min(N, 2^31 - 1) gives every row
// its own block) and use 5124 bytes of static shared memory (the count kernel 2052), no dynamic.
//
// amp.cross_entropy: two launches in this order on one stream, with a scratch of N floats
// (4 * N bytes, need not be initialised) between them.
//   amp_cross_entropy_<T>_<L>(const void* logits, const L* labels, float* rowLoss, long long rows,
//                             long long classes, long long ignoreIndex, double labelSmoothing)
//     grid (any, 1, 1), block (256, 1, 1). rowLoss[i] = row i's loss in f32: (1 - eps) * -logp[label]
//     + eps * mean_c(-logp_c), or -logp[label] at eps = 0; 0 for an ignored row and NaN for an
//     invalid label (the mean reads neither). With N = 0 it may be skipped.
//   amp_cross_entropy_mean_<T>_<L>(const float* rowLoss, const L* labels, void* loss, long long rows,
//                                  long long classes, long long ignoreIndex)
//     grid (1, 1, 1), block (1, 1, 1). *loss (a T scalar) = the counted rows' losses summed in row
//     order from +0, divided by their number, rounded once to T: NaN when no row is counted (0 / 0,
//     as the reference, N = 0 included), and NaN when any label is neither ignore_index nor in
//     [0, C) (the reference rejects the op instead).
//
// amp.cross_entropy_grad: two launches in this order on one stream, with a scratch of one long long
// (8 bytes, need not be initialised) between them.
//   amp_cross_entropy_count_<L>(const L* labels, long long rows, long long classes,
//                               long long ignoreIndex, long long* counted)
//     grid (1, 1, 1), block (256, 1, 1). *counted = the number of counted rows (label not
//     ignore_index and in [0, C)), or -1 when any label is invalid.
//   amp_cross_entropy_grad_<T>_<L>(const void* logits, const L* labels, const void* dloss,
//                                  const long long* counted, void* dlogits, long long rows,
//                                  long long classes, long long ignoreIndex, double labelSmoothing)
//     grid (any, 1, 1), block (256, 1, 1). dloss is the upstream T scalar. Writes every element of
//     dlogits [N, C] (T): (softmax - target) * (dloss / counted) on a counted row, +0 on an ignored
//     one, and NaN everywhere when *counted is -1 (the reference rejects the op instead).

#define AMP_CE_BLOCK 256

// Logits, loss and gradients by type: 0 f32, 1 bf16, 2 f16.

// What an invalid label produces where the reference reports an error.
__device__ __forceinline__ float amp_ce_nan() { return __uint_as_float(0x7fffffffu); }


template <int T, class L>
__device__ void amp_ce_forward_rows(const void* logits, const L* labels, float* rowLoss, long long rows,
                                    long long classes, long long ignoreIndex, double smoothing) {
  __shared__ float maxes[AMP_CE_BLOCK];
  __shared__ long long firstAt[AMP_CE_BLOCK];
  __shared__ float chunks[2 * AMP_CE_BLOCK];
  __shared__ float lseShared;
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    const long long label = (long long)labels[row];
    const AmpCeLabel state = amp_ce_label_state(label, classes, ignoreIndex);
    if (state != AMP_CE_COUNTED) {  // the same for the whole block: no barrier is skipped unevenly
      if (threadIdx.x == 0) rowLoss[row] = state == AMP_CE_INVALID ? amp_ce_nan() : 0.0f;
      continue;
    }
    const long long base = row * classes;
    const float max = amp_row_block_max<T>(logits, base, classes, maxes, firstAt);
    const float sumExp = amp_row_ordered_sum(
        classes, chunks, [&](long long j) { return amp_ce_exp(amp_load<T>(logits, base + j), max); });
    if (threadIdx.x == 0) lseShared = amp_ce_lse(sumExp);
    __syncthreads();
    const float lse = lseShared;
    float negLogpSum = 0.0f;
    if (smoothing > 0.0)
      negLogpSum = amp_row_ordered_sum(
          classes, chunks, [&](long long j) { return amp_ce_neg_logp(amp_load<T>(logits, base + j), max, lse); });
    if (threadIdx.x == 0) {
      const float nll = amp_ce_neg_logp(amp_load<T>(logits, base + label), max, lse);
      rowLoss[row] = amp_ce_row_loss(nll, negLogpSum, classes, smoothing);
    }
    __syncthreads();  // the next row reuses the shared arrays
  }
}

template <int T, class L>
__device__ void amp_ce_mean_of_rows(const float* rowLoss, const L* labels, void* loss, long long rows,
                                    long long classes, long long ignoreIndex) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  AmpBlockedSum<float> total;  // the counted rows in order
  total.reset(0.0f);
  long long counted = 0;
  bool invalid = false;
  for (long long row = 0; row < rows; ++row) {
    const AmpCeLabel state = amp_ce_label_state((long long)labels[row], classes, ignoreIndex);
    if (state == AMP_CE_INVALID) invalid = true;
    if (state != AMP_CE_COUNTED) continue;
    total.add(rowLoss[row]);
    ++counted;
  }
  amp_store<T>(loss, 0, invalid ? amp_ce_nan() : amp_ce_mean(total.result(), counted));
}

// Integer counts: any order gives the same result.
template <class L>
__device__ void amp_ce_count_rows(const L* labels, long long rows, long long classes, long long ignoreIndex,
                                  long long* counted) {
  __shared__ long long counts[AMP_CE_BLOCK];
  __shared__ int anyInvalid;
  if (blockIdx.x != 0) return;
  if (threadIdx.x == 0) anyInvalid = 0;
  __syncthreads();
  long long mine = 0;
  for (long long row = threadIdx.x; row < rows; row += AMP_CE_BLOCK) {
    const AmpCeLabel state = amp_ce_label_state((long long)labels[row], classes, ignoreIndex);
    if (state == AMP_CE_INVALID) anyInvalid = 1;
    if (state == AMP_CE_COUNTED) ++mine;
  }
  counts[threadIdx.x] = mine;
  __syncthreads();
  for (int half = AMP_CE_BLOCK / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) counts[threadIdx.x] += counts[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) *counted = anyInvalid ? -1 : counts[0];
}

template <int T, class L>
__device__ void amp_ce_backward_rows(const void* logits, const L* labels, const void* dloss, const long long* counted,
                                     void* dlogits, long long rows, long long classes, long long ignoreIndex,
                                     double smoothing) {
  __shared__ float maxes[AMP_CE_BLOCK];
  __shared__ long long firstAt[AMP_CE_BLOCK];
  __shared__ float chunks[2 * AMP_CE_BLOCK];
  __shared__ float sumShared;
  const long long numCounted = *counted;
  const float coeff = amp_ce_grad_coeff(amp_load<T>(dloss, 0), numCounted);
  const float keepWeight = amp_ce_keep_weight(smoothing);
  const float smoothWeight = amp_ce_grad_smooth_weight(smoothing, classes);
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    const long long base = row * classes;
    const long long label = (long long)labels[row];
    const AmpCeLabel state = numCounted < 0 ? AMP_CE_INVALID : amp_ce_label_state(label, classes, ignoreIndex);
    if (state != AMP_CE_COUNTED) {  // uniform across the block, like the forward's
      const float fill = state == AMP_CE_INVALID ? amp_ce_nan() : 0.0f;
      for (long long j = threadIdx.x; j < classes; j += AMP_CE_BLOCK) amp_store<T>(dlogits, base + j, fill);
      continue;
    }
    const float max = amp_row_block_max<T>(logits, base, classes, maxes, firstAt);
    const float sumExp = amp_row_ordered_sum(
        classes, chunks, [&](long long j) { return amp_ce_exp(amp_load<T>(logits, base + j), max); });
    if (threadIdx.x == 0) sumShared = sumExp;
    __syncthreads();
    const float sum = sumShared;
    for (long long j = threadIdx.x; j < classes; j += AMP_CE_BLOCK) {
      const float e = amp_ce_exp(amp_load<T>(logits, base + j), max);  // the same bits the sum added
      amp_store<T>(dlogits, base + j, amp_ce_grad_element(e, sum, j == label, keepWeight, smoothWeight, coeff));
    }
    __syncthreads();  // the next row reuses the shared arrays
  }
}

// The entry points, by logits type (f32, bf16, f16) and labels type (i64, i32).
#define AMP_CE_KERNELS(tname, T, lname, L)                                                                          \
  extern "C" __global__ void __launch_bounds__(256)                                                                 \
      amp_cross_entropy_##tname##_##lname(const void* logits, const L* labels, float* rowLoss, long long rows,      \
                                          long long classes, long long ignoreIndex, double labelSmoothing) {        \
    amp_ce_forward_rows<T, L>(logits, labels, rowLoss, rows, classes, ignoreIndex, labelSmoothing);                 \
  }                                                                                                                 \
  extern "C" __global__ void amp_cross_entropy_mean_##tname##_##lname(const float* rowLoss, const L* labels,        \
                                                                      void* loss, long long rows, long long classes, \
                                                                      long long ignoreIndex) {                      \
    amp_ce_mean_of_rows<T, L>(rowLoss, labels, loss, rows, classes, ignoreIndex);                                   \
  }                                                                                                                 \
  extern "C" __global__ void __launch_bounds__(256) amp_cross_entropy_grad_##tname##_##lname(                       \
      const void* logits, const L* labels, const void* dloss, const long long* counted, void* dlogits,              \
      long long rows, long long classes, long long ignoreIndex, double labelSmoothing) {                            \
    amp_ce_backward_rows<T, L>(logits, labels, dloss, counted, dlogits, rows, classes, ignoreIndex, labelSmoothing); \
  }
#define AMP_CE_COUNT_KERNEL(lname, L)                                                                     \
  extern "C" __global__ void __launch_bounds__(256) amp_cross_entropy_count_##lname(                      \
      const L* labels, long long rows, long long classes, long long ignoreIndex, long long* counted) {    \
    amp_ce_count_rows<L>(labels, rows, classes, ignoreIndex, counted);                                    \
  }
AMP_CE_COUNT_KERNEL(i64, long long)
AMP_CE_COUNT_KERNEL(i32, int)
AMP_CE_KERNELS(f32, 0, i64, long long)
AMP_CE_KERNELS(f32, 0, i32, int)
AMP_CE_KERNELS(bf16, 1, i64, long long)
AMP_CE_KERNELS(bf16, 1, i32, int)
AMP_CE_KERNELS(f16, 2, i64, long long)
AMP_CE_KERNELS(f16, 2, i32, int)

// amp.mse_loss: mean((pred - target)^2) over n elements of type T, in two launches on one stream
// with a scratch of ceil(n / AMP_MSE_CHUNK) floats between them. The reference adds the squares in
// one sequential f32 sum, which a GPU cannot run in parallel; these kernels add them in a fixed
// tree instead (each block's chunk by 256 strided sequential sums and a shared-memory tree, then
// the blocks in order), so the loss is the same bits on every run and GPU, within summation-order
// bounds of the reference's (docs/cuda-device.md). Each square is the reference's fl(fl(p - t)^2).
//   amp_mse_partials_<T>(const void* pred, const void* target, long long n, float* partials)
//     grid (ceil(n / AMP_MSE_CHUNK), 1, 1), block (256, 1, 1).
//   amp_mse_mean_<T>(const float* partials, long long blocks, long long n, void* loss)
//     grid (1, 1, 1), block (1, 1, 1). *loss = (the partials summed in order from +0) / n, rounded
//     once to T: NaN for n = 0 (0 / 0, as the reference).
#define AMP_MSE_CHUNK 16384

template <int T>
__device__ void amp_mse_partials(const void* pred, const void* target, long long n, float* partials) {
  __shared__ float sums[AMP_CE_BLOCK];
  const long long begin = (long long)blockIdx.x * AMP_MSE_CHUNK;
  const long long end = begin + AMP_MSE_CHUNK < n ? begin + AMP_MSE_CHUNK : n;
  float acc = 0.0f;
  for (long long i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const float d = amp_load<T>(pred, i) - amp_load<T>(target, i);
    acc += d * d;
  }
  sums[threadIdx.x] = acc;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) sums[threadIdx.x] += sums[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[blockIdx.x] = sums[0];
}

template <int T>
__device__ void amp_mse_mean(const float* partials, long long blocks, long long n, void* loss) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  float sum = 0.0f;
  for (long long b = 0; b < blocks; ++b) sum += partials[b];
  amp_store<T>(loss, 0, sum / (float)n);
}

#define AMP_MSE_KERNELS(tname, T)                                                                              \
  extern "C" __global__ void __launch_bounds__(256)                                                            \
      amp_mse_partials_##tname(const void* pred, const void* target, long long n, float* partials) {           \
    amp_mse_partials<T>(pred, target, n, partials);                                                            \
  }                                                                                                            \
  extern "C" __global__ void amp_mse_mean_##tname(const float* partials, long long blocks, long long n, void* loss) { \
    amp_mse_mean<T>(partials, blocks, n, loss);                                                                \
  }
AMP_MSE_KERNELS(f32, 0)
AMP_MSE_KERNELS(bf16, 1)
AMP_MSE_KERNELS(f16, 2)
