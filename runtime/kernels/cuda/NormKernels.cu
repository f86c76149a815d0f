// The CUDA device's softmax and normalisation kernels: amp.softmax, amp.log_softmax,
// amp.softmax_grad, amp.layer_norm, amp.layer_norm_grad, amp.rms_norm, amp.rms_norm_grad,
// amp.batch_norm and amp.batch_norm_grad, bit for bit the reference executor's
// results (arithmetic in NormMath.h). ampc appends this file, after NormMath.h, to the CUDA kernels
// of every cuda bundle, behind the prelude's amp_ld_*/amp_st_* conversions
// (codegen/emit/CudaFlavour.cpp).
//
// The reference's sums are sequential, in element order inside a slice or group and in group order
// across groups, and f32 addition does not reassociate, so the kernels keep those orders: a block
// of 256 threads evaluates a row's terms 256 at a time into shared memory while its thread 0 adds
// them in element order; the weight and bias gradients run one thread per column, adding the
// groups in order (neighbouring threads read neighbouring columns: coalesced; few columns means
// few threads, but splitting the groups would change the order and the bits). The slice max, the
// only reduction whose order cannot change a bit (NormMath.h), is a tree. A NaN result is NaN
// with the GPU's canonical bits: NaN payloads and signs are outside the numeric contract
// (docs/numerics.md).
//
// Names end in the element type T (f32, bf16, f16) that every tensor operand and result of the op
// shares (amp_softmax_grad_f32_<G>'s dy excepted); those are device pointers (void*) to dense
// row-major elements of type T, bf16 and f16 as their 16-bit patterns. Values are loaded to f32,
// computed in f32 and rounded once to T on store.
// Scratch buffers are f32 device memory, need not be initialised and are only read by the launch
// that follows on the same stream. Every kernel needs blockDim = (256, 1, 1) exactly and takes any
// gridDim = (x >= 1, 1, 1): work units are grid-strided, so gridDim.x = min(units, 2^31 - 1) gives
// every unit its own block (the unit count is given per kernel). No dynamic shared memory; static
// shared memory per block: softmax and log_softmax 5124 bytes, softmax_grad 2052, layer_norm 2056,
// layer_norm_grad 4112, rms_norm 2052, rms_norm_grad 2056, the *_affine kernels none, batch_norm
// 2056, batch_norm_grad 4112. A kernel whose unit count is 0
// may be skipped unless said otherwise.
//
// amp.softmax / amp.log_softmax (x; attribute axis): one launch.
//   amp_softmax_<T>(const void* x, void* y, long long outer, long long len, long long inner)
//   amp_log_softmax_<T>(same parameters)
//     x and y have the same shape; outer = product of the dims before `axis`, len = dims[axis],
//     inner = product of the dims after it (each 1 when there are none): slice (o, i) is the len
//     elements x[(o * len + j) * inner + i], j = 0 .. len - 1. Units: inner == 1: outer (one block
//     per slice, all 256 threads on it); inner > 1: outer * ceil(inner / 256) (a block takes 256
//     neighbouring slices of one o, one thread each). len == 0 writes nothing.
//
// amp.softmax_grad (y, dy; attribute axis): one launch.
//   amp_softmax_grad_<T>(const void* y, const void* dy, void* dx, long long outer, long long len,
//                        long long inner)
//   amp_softmax_grad_f32_bf16, amp_softmax_grad_f32_f16 (same parameters): y and dx f32, dy bf16 /
//     f16 (widened exactly; every rounding to T is then the identity).
//     y, dy and dx have one shape; outer, len, inner, the slices and the units as amp_softmax_<T>.
//     dx may be y itself (the memory planner runs the op in place): a slice's every y (and dy) is
//     read for its sum before a barrier that no dx store of the slice precedes, and dx_j is then
//     stored by the thread that has just read y_j and dy_j for it. len == 0 writes nothing.
//
// amp.layer_norm (x, [weight], [bias]; normalized_ndim, eps, has_weight, has_bias): one launch.
//   amp_layer_norm_<T>(const void* x, const void* weight, const void* bias, void* y, long long groups,
//                      long long n, double eps)
//     n = product of the trailing normalized_ndim dims of x, groups = numel(x) / n (0 when n is 0);
//     weight and bias [n] are null when has_weight / has_bias is false; y has x's shape; eps is the
//     op's f64 attribute as is (here and below). Units: groups.
//
// amp.layer_norm_grad (x, [weight], dy -> dx, dweight, dbias; normalized_ndim, eps; the weight is
// present iff the op has 3 operands): two launches in this order on one stream, with a scratch
// `stats` of 2 * groups floats (8 * groups bytes) between them. Nothing to launch when n is 0.
//   amp_layer_norm_grad_<T>(const void* x, const void* weight, const void* dy, void* dx, float* stats,
//                           long long groups, long long n, double eps)
//     weight [n] is null without a weight; dy and dx have x's shape. Writes dx and, per group g,
//     stats[g] = mean and stats[groups + g] = rstd. Units: groups (skip it when groups is 0).
//   amp_layer_norm_grad_affine_<T>(const void* x, const void* dy, const float* stats, void* dweight,
//                                  void* dbias, long long groups, long long n)
//     dweight [n] and dbias [n] (always produced; +0 when groups is 0, so launch it even then).
//     Units: ceil(n / 256), one thread per column.
//
// amp.rms_norm (x, [weight]; normalized_ndim, eps, has_weight): one launch.
//   amp_rms_norm_<T>(const void* x, const void* weight, void* y, long long groups, long long n,
//                    double eps)
//     as amp_layer_norm_<T>, without a bias. Units: groups.
//
// amp.rms_norm_grad (x, [weight], dy -> dx, dweight; normalized_ndim, eps; the weight is present iff
// the op has 3 operands): two launches in this order on one stream, with a scratch `stats` of
// groups floats (4 * groups bytes) between them. Nothing to launch when n is 0.
//   amp_rms_norm_grad_<T>(const void* x, const void* weight, const void* dy, void* dx, float* stats,
//                         long long groups, long long n, double eps)
//     as amp_layer_norm_grad_<T>; stats[g] = rstd. Units: groups (skip it when groups is 0).
//   amp_rms_norm_grad_affine_<T>(const void* x, const void* dy, const float* stats, void* dweight,
//                                long long groups, long long n)
//     dweight [n] (always produced; +0 when groups is 0, so launch it even then). Units:
//     ceil(n / 256), one thread per column.
//
// amp.batch_norm (x, scale, bias, running_mean, running_var -> y, new_running_mean,
// new_running_var; epsilon, momentum, training): one launch. Nothing to launch when C is 0.
//   amp_batch_norm_<T>(const void* x, const float* scale, const float* bias, const float* running_mean,
//                      const float* running_var, void* y, float* new_mean, float* new_var, long long n,
//                      long long c, long long s, double eps, double momentum, int training)
//     x and y are [n, c, ...] of type T, s = the product of the dims after c (1 when there are
//     none); the other six are f32 [c]. training is 0 or 1; with it n * s >= 2 (the lowering
//     refuses less). Units: c, one block per channel. The block reads x, then writes y; thread 0
//     reads the running statistics of its channel before writing its new ones.
//
// amp.batch_norm_grad (x, dy, scale, running_mean, running_var -> dx, dscale, dbias; epsilon,
// training): one launch. Nothing to launch when C is 0.
//   amp_batch_norm_grad_<T>(const void* x, const void* dy, const float* scale, const float* running_mean,
//                           const float* running_var, void* dx, float* dscale, float* dbias, long long n,
//                           long long c, long long s, double eps, int training)
//     as amp_batch_norm_<T>; dy and dx have x's shape, dscale and dbias are f32 [c] (+0 when n * s
//     is 0). Units: c, one block per channel.

#define AMP_NRM_BLOCK 256

// Tensors by type: 0 f32, 1 bf16, 2 f16.

// An optional operand's element j: the value is unused when the operand is absent.
template <int T>
__device__ __forceinline__ float amp_nrm_load_optional(const void* p, long long j) {
  return p ? amp_load<T>(p, j) : 0.0f;
}


// Two such sums over one pass (layer_norm_grad's sg and sgx): terms(j, a, b) sets both terms;
// `chunks` holds 4 * 256 floats. Thread 0's two running sums are independent chains.
template <class Terms>
__device__ void amp_row_ordered_sum2(long long len, float* chunks, const Terms& terms, float* sumA, float* sumB) {
  AmpSumTree<float> treeA, treeB;
  treeA.reset();
  treeB.reset();
  int half = 0;
  for (long long base = 0; base < len; base += AMP_NRM_BLOCK, half ^= 1) {
    float* chunkA = chunks + half * 2 * AMP_NRM_BLOCK;
    float* chunkB = chunkA + AMP_NRM_BLOCK;
    const long long j = base + threadIdx.x;
    if (j < len) terms(j, chunkA[threadIdx.x], chunkB[threadIdx.x]);
    __syncthreads();
    if (threadIdx.x == 0) {
      const int count = len - base < AMP_NRM_BLOCK ? (int)(len - base) : AMP_NRM_BLOCK;
      float a = 0.0f, b = 0.0f;
      for (int i = 0; i < count; ++i) {
        a += chunkA[i];
        b += chunkB[i];
      }
      treeA.push(a);
      treeB.push(b);
    }
  }
  *sumA = treeA.result(0.0f);
  *sumB = treeB.result(0.0f);
}

// ---------------------------------------------------------------------------------------------
// softmax / log_softmax

template <int T, bool Log>
__device__ void amp_nrm_softmax(const void* x, void* y, long long outer, long long len, long long inner) {
  __shared__ float maxes[AMP_NRM_BLOCK];
  __shared__ long long firstAt[AMP_NRM_BLOCK];
  __shared__ float chunks[2 * AMP_NRM_BLOCK];
  __shared__ float sumShared;
  if (inner == 1) {  // contiguous slices: the block shares each one
    for (long long slice = blockIdx.x; slice < outer; slice += gridDim.x) {
      const long long base = slice * len;
      const float max = amp_row_block_max<T>(x, base, len, maxes, firstAt);
      const float sumExp = amp_row_ordered_sum(
          len, chunks, [&](long long j) { return amp_nrm_exp(amp_load<T>(x, base + j), max); });
      if (threadIdx.x == 0) sumShared = Log ? amp_nrm_lse(sumExp) : sumExp;
      __syncthreads();
      const float shared = sumShared;  // s, or lse for log_softmax
      for (long long j = threadIdx.x; j < len; j += AMP_NRM_BLOCK) {
        const float v = amp_load<T>(x, base + j);
        // e_j is evaluated again: the same bits the sum added.
        const float out =
            Log ? amp_nrm_log_softmax_out(v, max, shared) : amp_nrm_softmax_out(amp_nrm_exp(v, max), shared);
        amp_store<T>(y, base + j, out);
      }
      __syncthreads();  // the next slice reuses the shared arrays
    }
    return;
  }
  // Strided slices: one thread each, the reference's sequential loops, and neighbouring threads on
  // neighbouring i, so every load is coalesced. No barrier here, so idle threads may leave early.
  const long long tiles = (inner + AMP_NRM_BLOCK - 1) / AMP_NRM_BLOCK;
  for (long long unit = blockIdx.x; unit < outer * tiles; unit += gridDim.x) {
    const long long i = unit % tiles * AMP_NRM_BLOCK + threadIdx.x;
    if (i >= inner) continue;
    const long long base = unit / tiles * len * inner + i;
    float max = __uint_as_float(0xff800000u);  // -inf
    long long at = AMP_ROW_NO_INDEX;
    for (long long j = 0; j < len; ++j) amp_row_max_step(&max, &at, amp_load<T>(x, base + j * inner), j);
    const float sumExp =
        amp_blocked_sum(len, [&](long long j) { return amp_nrm_exp(amp_load<T>(x, base + j * inner), max); });
    const float lse = Log ? amp_nrm_lse(sumExp) : 0.0f;
    for (long long j = 0; j < len; ++j) {
      const float v = amp_load<T>(x, base + j * inner);
      const float out = Log ? amp_nrm_log_softmax_out(v, max, lse) : amp_nrm_softmax_out(amp_nrm_exp(v, max), sumExp);
      amp_store<T>(y, base + j * inner, out);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// softmax_grad: the reference's softmaxGradSlice (runtime/numerics/Softmax.h), the amp.mul,
// amp.reduce_sum (keepdim), amp.sub and amp.mul it replaces, each rounded to T. No dx store of a
// slice comes before every load of the slice's y for its sum, so dx may overwrite y in place. The
// arithmetic is here rather than in NormMath.h because it rounds to T between steps (amp_round,
// the prelude's conversions).

// p_j = T(fl(dy_j * y_j)), added in element order from +0.
template <int T>
__device__ __forceinline__ float amp_sg_term(float y, float dy) {
  return amp_round<T>(dy * y);
}

// dx_j = T(fl(y_j * T(fl(dy_j - s)))); the outer rounding is the store's.
template <int T>
__device__ __forceinline__ float amp_sg_out(float y, float dy, float s) {
  return y * amp_round<T>(dy - s);
}

// T types y and dx, G types dy (T, or bf16/f16 under an f32 T).
template <int T, int G>
__device__ void amp_nrm_softmax_grad(const void* y, const void* dy, void* dx, long long outer, long long len,
                                     long long inner) {
  __shared__ float chunks[2 * AMP_NRM_BLOCK];
  __shared__ float sumShared;
  if (inner == 1) {  // contiguous slices: the block shares each one
    for (long long slice = blockIdx.x; slice < outer; slice += gridDim.x) {
      const long long base = slice * len;
      const float sum = amp_row_ordered_sum(len, chunks, [&](long long j) {
        return amp_sg_term<T>(amp_load<T>(y, base + j), amp_load<G>(dy, base + j));
      });
      if (threadIdx.x == 0) sumShared = amp_round<T>(sum);
      // Broadcasts s, and is the in-place barrier: every thread has loaded its y of the slice for
      // the sum above, and no thread stores a dx of the slice before it.
      __syncthreads();
      const float s = sumShared;
      for (long long j = threadIdx.x; j < len; j += AMP_NRM_BLOCK) {
        const float yj = amp_load<T>(y, base + j);  // loaded before this thread's own dx_j replaces it
        amp_store<T>(dx, base + j, amp_sg_out<T>(yj, amp_load<G>(dy, base + j), s));
      }
      __syncthreads();  // the next slice reuses the shared arrays
    }
    return;
  }
  // Strided slices: one thread each, the reference's two sequential loops; a slice is one thread's
  // alone, so its loads for the sum precede its stores without a barrier.
  const long long tiles = (inner + AMP_NRM_BLOCK - 1) / AMP_NRM_BLOCK;
  for (long long unit = blockIdx.x; unit < outer * tiles; unit += gridDim.x) {
    const long long i = unit % tiles * AMP_NRM_BLOCK + threadIdx.x;
    if (i >= inner) continue;
    const long long base = unit / tiles * len * inner + i;
    const float sum = amp_blocked_sum(
        len, [&](long long j) { return amp_sg_term<T>(amp_load<T>(y, base + j * inner), amp_load<G>(dy, base + j * inner)); });
    const float s = amp_round<T>(sum);
    for (long long j = 0; j < len; ++j) {
      const float yj = amp_load<T>(y, base + j * inner);
      amp_store<T>(dx, base + j * inner, amp_sg_out<T>(yj, amp_load<G>(dy, base + j * inner), s));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// layer_norm / rms_norm: one block per group

// layer_norm's statistics of the group at `base`: mean, then the centred sum of squares, each
// broadcast through shared memory. Every thread returns both.
template <int T>
__device__ void amp_nrm_layer_stats(const void* x, long long base, long long n, double eps, float* chunks,
                                    float* broadcast, float* mean, float* rstd) {
  const float sum = amp_row_ordered_sum(n, chunks, [&](long long j) { return amp_load<T>(x, base + j); });
  if (threadIdx.x == 0) broadcast[0] = amp_nrm_mean(sum, n);
  __syncthreads();
  const float m = broadcast[0];
  const float sq = amp_row_ordered_sum(
      n, chunks, [&](long long j) { return amp_nrm_centered_square(amp_load<T>(x, base + j), m); });
  if (threadIdx.x == 0) broadcast[1] = amp_nrm_rstd(sq, n, eps);
  __syncthreads();
  *mean = m;
  *rstd = broadcast[1];
}

// rms_norm's rstd of the group at `base`, broadcast through shared memory.
template <int T>
__device__ float amp_nrm_rms_stats(const void* x, long long base, long long n, double eps, float* chunks,
                                   float* broadcast) {
  const float sq =
      amp_row_ordered_sum(n, chunks, [&](long long j) { return amp_nrm_square(amp_load<T>(x, base + j)); });
  if (threadIdx.x == 0) broadcast[0] = amp_nrm_rstd(sq, n, eps);
  __syncthreads();
  return broadcast[0];
}

template <int T>
__device__ void amp_nrm_layer_norm(const void* x, const void* weight, const void* bias, void* y, long long groups,
                                   long long n, double eps) {
  __shared__ float chunks[2 * AMP_NRM_BLOCK];
  __shared__ float broadcast[2];
  const bool hasWeight = weight != nullptr, hasBias = bias != nullptr;
  for (long long group = blockIdx.x; group < groups; group += gridDim.x) {
    const long long base = group * n;
    float mean, rstd;
    amp_nrm_layer_stats<T>(x, base, n, eps, chunks, broadcast, &mean, &rstd);
    for (long long j = threadIdx.x; j < n; j += AMP_NRM_BLOCK) {
      const float out = amp_nrm_layer_out(amp_load<T>(x, base + j), mean, rstd, hasWeight,
                                          amp_nrm_load_optional<T>(weight, j), hasBias,
                                          amp_nrm_load_optional<T>(bias, j));
      amp_store<T>(y, base + j, out);
    }
    __syncthreads();  // the next group reuses the shared arrays
  }
}

template <int T>
__device__ void amp_nrm_rms_norm(const void* x, const void* weight, void* y, long long groups, long long n,
                                 double eps) {
  __shared__ float chunks[2 * AMP_NRM_BLOCK];
  __shared__ float broadcast[1];
  const bool hasWeight = weight != nullptr;
  for (long long group = blockIdx.x; group < groups; group += gridDim.x) {
    const long long base = group * n;
    const float rstd = amp_nrm_rms_stats<T>(x, base, n, eps, chunks, broadcast);
    for (long long j = threadIdx.x; j < n; j += AMP_NRM_BLOCK) {
      const float out =
          amp_nrm_rms_out(amp_load<T>(x, base + j), rstd, hasWeight, amp_nrm_load_optional<T>(weight, j));
      amp_store<T>(y, base + j, out);
    }
    __syncthreads();
  }
}

template <int T>
__device__ void amp_nrm_layer_norm_grad(const void* x, const void* weight, const void* dy, void* dx, float* stats,
                                        long long groups, long long n, double eps) {
  __shared__ float chunks[4 * AMP_NRM_BLOCK];
  __shared__ float broadcast[4];
  const bool hasWeight = weight != nullptr;
  for (long long group = blockIdx.x; group < groups; group += gridDim.x) {
    const long long base = group * n;
    float mean, rstd;
    amp_nrm_layer_stats<T>(x, base, n, eps, chunks, broadcast, &mean, &rstd);
    if (threadIdx.x == 0) {
      stats[group] = mean;
      stats[groups + group] = rstd;
    }
    float sumG, sumGXhat;
    amp_row_ordered_sum2(
        n, chunks,
        [&](long long j, float& termG, float& termGXhat) {
          const float xhat = amp_nrm_layer_xhat(amp_load<T>(x, base + j), mean, rstd);
          const float g = amp_nrm_grad_g(amp_load<T>(dy, base + j), hasWeight, amp_nrm_load_optional<T>(weight, j));
          termG = g;
          termGXhat = amp_nrm_product(g, xhat);
        },
        &sumG, &sumGXhat);
    if (threadIdx.x == 0) {
      broadcast[2] = amp_nrm_mean(sumG, n);
      broadcast[3] = amp_nrm_mean(sumGXhat, n);
    }
    __syncthreads();
    const float meanG = broadcast[2], meanGXhat = broadcast[3];
    for (long long j = threadIdx.x; j < n; j += AMP_NRM_BLOCK) {
      const float xhat = amp_nrm_layer_xhat(amp_load<T>(x, base + j), mean, rstd);
      const float g = amp_nrm_grad_g(amp_load<T>(dy, base + j), hasWeight, amp_nrm_load_optional<T>(weight, j));
      amp_store<T>(dx, base + j, amp_nrm_layer_dx(g, xhat, rstd, meanG, meanGXhat));
    }
    __syncthreads();
  }
}

template <int T>
__device__ void amp_nrm_rms_norm_grad(const void* x, const void* weight, const void* dy, void* dx, float* stats,
                                      long long groups, long long n, double eps) {
  __shared__ float chunks[2 * AMP_NRM_BLOCK];
  __shared__ float broadcast[2];
  const bool hasWeight = weight != nullptr;
  for (long long group = blockIdx.x; group < groups; group += gridDim.x) {
    const long long base = group * n;
    const float rstd = amp_nrm_rms_stats<T>(x, base, n, eps, chunks, broadcast);
    if (threadIdx.x == 0) stats[group] = rstd;
    const float sumGXhat = amp_row_ordered_sum(n, chunks, [&](long long j) {
      const float xhat = amp_nrm_rms_xhat(amp_load<T>(x, base + j), rstd);
      const float g = amp_nrm_grad_g(amp_load<T>(dy, base + j), hasWeight, amp_nrm_load_optional<T>(weight, j));
      return amp_nrm_product(g, xhat);
    });
    if (threadIdx.x == 0) broadcast[1] = amp_nrm_mean(sumGXhat, n);
    __syncthreads();
    const float meanGXhat = broadcast[1];
    for (long long j = threadIdx.x; j < n; j += AMP_NRM_BLOCK) {
      const float xhat = amp_nrm_rms_xhat(amp_load<T>(x, base + j), rstd);
      const float g = amp_nrm_grad_g(amp_load<T>(dy, base + j), hasWeight, amp_nrm_load_optional<T>(weight, j));
      amp_store<T>(dx, base + j, amp_nrm_rms_dx(g, xhat, rstd, meanGXhat));
    }
    __syncthreads();
  }
}

// ---------------------------------------------------------------------------------------------
// Weight and bias gradients: one thread per column, the groups in order, xhat recomputed from the
// row pass's stats (the same bits as the row pass's).

template <int T, bool Layer>
__device__ void amp_nrm_affine_grad(const void* x, const void* dy, const float* stats, void* dweight, void* dbias,
                                    long long groups, long long n) {
  const long long stride = (long long)gridDim.x * AMP_NRM_BLOCK;
  for (long long j = (long long)blockIdx.x * AMP_NRM_BLOCK + threadIdx.x; j < n; j += stride) {
    AmpBlockedSum<float> dw, db;
    dw.reset(0.0f);
    db.reset(0.0f);
    for (long long group = 0; group < groups; ++group) {
      const float xv = amp_load<T>(x, group * n + j), dyv = amp_load<T>(dy, group * n + j);
      const float xhat = Layer ? amp_nrm_layer_xhat(xv, stats[group], stats[groups + group])
                               : amp_nrm_rms_xhat(xv, stats[group]);
      dw.add(amp_nrm_product(dyv, xhat));
      if (Layer) db.add(dyv);
    }
    amp_store<T>(dweight, j, dw.result());
    if (Layer) amp_store<T>(dbias, j, db.result());
  }
}

// ---------------------------------------------------------------------------------------------
// batch_norm / batch_norm_grad: one block per channel, its M = n * s strided elements visited in the
// reference's order (amp_bn_index) and summed by the same in-order helpers as a row.

// The mean and invstd channel c is normalised with, broadcast through shared memory (every thread
// returns both): with training the batch statistics, and in thread 0 the centred sum of squares
// `sq` (the running update's); without it the running statistics, read by thread 0 alone.
template <int T>
__device__ void amp_bn_stats(const void* x, const float* runningMean, const float* runningVar, long long c,
                             long long channels, long long spatial, long long count, double eps, bool training,
                             float* chunks, float* broadcast, float* mean, float* invstd, float* sq) {
  if (training) {
    const float sum = amp_row_ordered_sum(
        count, chunks, [&](long long j) { return amp_load<T>(x, amp_bn_index(j, c, channels, spatial)); });
    if (threadIdx.x == 0) broadcast[0] = amp_nrm_mean(sum, count);
    __syncthreads();
    const float m = broadcast[0];
    const float squares = amp_row_ordered_sum(count, chunks, [&](long long j) {
      return amp_nrm_centered_square(amp_load<T>(x, amp_bn_index(j, c, channels, spatial)), m);
    });
    if (threadIdx.x == 0) {
      broadcast[1] = amp_nrm_rstd(squares, count, eps);
      *sq = squares;
    }
  } else if (threadIdx.x == 0) {
    broadcast[0] = runningMean[c];
    broadcast[1] = amp_bn_invstd(runningVar[c], eps);
  }
  __syncthreads();
  *mean = broadcast[0];
  *invstd = broadcast[1];
}

template <int T>
__device__ void amp_bn_forward(const void* x, const float* scale, const float* bias, const float* runningMean,
                               const float* runningVar, void* y, float* newMean, float* newVar, long long n,
                               long long channels, long long spatial, double eps, double momentum, int training) {
  __shared__ float chunks[2 * AMP_NRM_BLOCK];
  __shared__ float broadcast[2];
  const long long count = n * spatial;
  for (long long c = blockIdx.x; c < channels; c += gridDim.x) {
    float mean, invstd, sq = 0.0f;
    amp_bn_stats<T>(x, runningMean, runningVar, c, channels, spatial, count, eps, training != 0, chunks, broadcast,
                    &mean, &invstd, &sq);
    const float sc = scale[c], b = bias[c];
    for (long long j = threadIdx.x; j < count; j += AMP_NRM_BLOCK) {
      const long long k = amp_bn_index(j, c, channels, spatial);
      amp_store<T>(y, k, amp_bn_out(amp_load<T>(x, k), mean, invstd, sc, b));
    }
    if (threadIdx.x == 0) {
      const float rm = runningMean[c], rv = runningVar[c];  // read before the writes (bit copies in eval)
      newMean[c] = training ? amp_bn_running(rm, mean, momentum) : rm;
      newVar[c] = training ? amp_bn_running(rv, amp_bn_unbiased(sq, count), momentum) : rv;
    }
    __syncthreads();  // the next channel reuses the shared arrays
  }
}

template <int T>
__device__ void amp_bn_backward(const void* x, const void* dy, const float* scale, const float* runningMean,
                                const float* runningVar, void* dx, float* dscale, float* dbias, long long n,
                                long long channels, long long spatial, double eps, int training) {
  __shared__ float chunks[4 * AMP_NRM_BLOCK];
  __shared__ float broadcast[4];
  const long long count = n * spatial;
  for (long long c = blockIdx.x; c < channels; c += gridDim.x) {
    float mean, invstd, sq = 0.0f;
    amp_bn_stats<T>(x, runningMean, runningVar, c, channels, spatial, count, eps, training != 0, chunks, broadcast,
                    &mean, &invstd, &sq);
    float sumG, sumGXhat;
    amp_row_ordered_sum2(
        count, chunks,
        [&](long long j, float& termG, float& termGXhat) {
          const long long k = amp_bn_index(j, c, channels, spatial);
          const float g = amp_load<T>(dy, k);
          termG = g;
          termGXhat = amp_nrm_product(g, amp_nrm_layer_xhat(amp_load<T>(x, k), mean, invstd));
        },
        &sumG, &sumGXhat);
    if (threadIdx.x == 0) {
      dbias[c] = sumG;
      dscale[c] = sumGXhat;
      broadcast[2] = amp_nrm_mean(sumG, count);
      broadcast[3] = amp_nrm_mean(sumGXhat, count);
    }
    __syncthreads();
    const float meanG = broadcast[2], meanGXhat = broadcast[3];
    const float a = amp_bn_grad_scale(scale[c], invstd);
    for (long long j = threadIdx.x; j < count; j += AMP_NRM_BLOCK) {
      const long long k = amp_bn_index(j, c, channels, spatial);
      const float g = amp_load<T>(dy, k);
      const float out = training ? amp_nrm_layer_dx(g, amp_nrm_layer_xhat(amp_load<T>(x, k), mean, invstd), a, meanG,
                                                    meanGXhat)
                                 : amp_bn_eval_dx(a, g);
      amp_store<T>(dx, k, out);
    }
    __syncthreads();
  }
}

// The entry points, by element type (f32, bf16, f16).
#define AMP_NRM_KERNELS(tname, T)                                                                                  \
  extern "C" __global__ void __launch_bounds__(256)                                                                \
      amp_softmax_##tname(const void* x, void* y, long long outer, long long len, long long inner) {              \
    amp_nrm_softmax<T, false>(x, y, outer, len, inner);                                                            \
  }                                                                                                                \
  extern "C" __global__ void __launch_bounds__(256)                                                                \
      amp_log_softmax_##tname(const void* x, void* y, long long outer, long long len, long long inner) {          \
    amp_nrm_softmax<T, true>(x, y, outer, len, inner);                                                             \
  }                                                                                                                \
  extern "C" __global__ void __launch_bounds__(256) amp_layer_norm_##tname(                                        \
      const void* x, const void* weight, const void* bias, void* y, long long groups, long long n, double eps) {  \
    amp_nrm_layer_norm<T>(x, weight, bias, y, groups, n, eps);                                                     \
  }                                                                                                                \
  extern "C" __global__ void __launch_bounds__(256)                                                                \
      amp_layer_norm_grad_##tname(const void* x, const void* weight, const void* dy, void* dx, float* stats,      \
                                  long long groups, long long n, double eps) {                                     \
    amp_nrm_layer_norm_grad<T>(x, weight, dy, dx, stats, groups, n, eps);                                          \
  }                                                                                                                \
  extern "C" __global__ void __launch_bounds__(256)                                                                \
      amp_layer_norm_grad_affine_##tname(const void* x, const void* dy, const float* stats, void* dweight,        \
                                         void* dbias, long long groups, long long n) {                             \
    amp_nrm_affine_grad<T, true>(x, dy, stats, dweight, dbias, groups, n);                                         \
  }                                                                                                                \
  extern "C" __global__ void __launch_bounds__(256) amp_rms_norm_##tname(                                          \
      const void* x, const void* weight, void* y, long long groups, long long n, double eps) {                     \
    amp_nrm_rms_norm<T>(x, weight, y, groups, n, eps);                                                             \
  }                                                                                                                \
  extern "C" __global__ void __launch_bounds__(256)                                                                \
      amp_rms_norm_grad_##tname(const void* x, const void* weight, const void* dy, void* dx, float* stats,        \
                                long long groups, long long n, double eps) {                                       \
    amp_nrm_rms_norm_grad<T>(x, weight, dy, dx, stats, groups, n, eps);                                            \
  }                                                                                                                \
  extern "C" __global__ void __launch_bounds__(256)                                                                \
      amp_rms_norm_grad_affine_##tname(const void* x, const void* dy, const float* stats, void* dweight,          \
                                       long long groups, long long n) {                                            \
    amp_nrm_affine_grad<T, false>(x, dy, stats, dweight, nullptr, groups, n);                                      \
  }                                                                                                                \
  extern "C" __global__ void __launch_bounds__(256)                                                                \
      amp_batch_norm_##tname(const void* x, const float* scale, const float* bias, const float* running_mean,      \
                             const float* running_var, void* y, float* new_mean, float* new_var, long long n,      \
                             long long c, long long s, double eps, double momentum, int training) {                \
    amp_bn_forward<T>(x, scale, bias, running_mean, running_var, y, new_mean, new_var, n, c, s, eps, momentum,     \
                      training);                                                                                   \
  }                                                                                                                \
  extern "C" __global__ void __launch_bounds__(256)                                                                \
      amp_batch_norm_grad_##tname(const void* x, const void* dy, const float* scale, const float* running_mean,    \
                                  const float* running_var, void* dx, float* dscale, float* dbias, long long n,    \
                                  long long c, long long s, double eps, int training) {                            \
    amp_bn_backward<T>(x, dy, scale, running_mean, running_var, dx, dscale, dbias, n, c, s, eps, training);        \
  }
AMP_NRM_KERNELS(f32, 0)
AMP_NRM_KERNELS(bf16, 1)
AMP_NRM_KERNELS(f16, 2)

// amp.softmax_grad by y's type T, then dy's type G where it is narrower (bf16/f16 under f32).
#define AMP_SOFTMAX_GRAD_KERNEL(suffix, T, G)                                                                     \
  extern "C" __global__ void __launch_bounds__(256)                                                                \
      amp_softmax_grad_##suffix(const void* y, const void* dy, void* dx, long long outer, long long len,          \
                                long long inner) {                                                                 \
    amp_nrm_softmax_grad<T, G>(y, dy, dx, outer, len, inner);                                                      \
  }
AMP_SOFTMAX_GRAD_KERNEL(f32, 0, 0)
AMP_SOFTMAX_GRAD_KERNEL(bf16, 1, 1)
AMP_SOFTMAX_GRAD_KERNEL(f16, 2, 2)
AMP_SOFTMAX_GRAD_KERNEL(f32_bf16, 0, 1)
AMP_SOFTMAX_GRAD_KERNEL(f32_f16, 0, 2)
