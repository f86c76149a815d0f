// The CUDA device's loss-scaling, clipping and optimizer kernels, with every scalar in device
// memory so no step waits for the host. In the plan's order: amp.unscale_check as a multi-tensor
// pass writing found_inf and the unscaled gradients; amp.global_norm as per-block sums of squares
// plus a one-block combine; amp.clip_grads as a multi-tensor scaling; step_counters, lr_schedule and
// update_scale as one-thread kernels; and each run of adam/sgd updates as a one-thread kernel for
// the step's constants followed by one multi-tensor pass that updates the f32 masters and moments
// in place, leaving every bit untouched on a skipped step. As ampc's amp-fuse-grad-pipeline leaves
// the step (docs/training-ir.md): amp.grad_stats reads each stored gradient once for found_inf and
// the sums of squares, and the optimizer pass unscales, clips and writes the weight copy itself.
// ampc appends this file, after MultiTensorArgs.h, TrainMath.h and TrainArgs.h, to the CUDA
// kernels of every training bundle, behind the prelude's conversions (codegen/emit/CudaFlavour.cpp);
// the host fills the argument blocks (runtime/devices/cuda/MultiTensor.h, CudaTrainActions.cpp).

// The elements [begin, end) block b of a launch covers.
template <int D>
__device__ __forceinline__ bool amp_mt_block(const AmpTensorList<D>& list, int& t, long long& begin, long long& end) {
  const int b = blockIdx.x;
  if (b >= list.blocks) return false;
  t = list.blockTensor[b];
  begin = (long long)list.blockChunk[b] * AMP_MT_CHUNK;
  end = begin + AMP_MT_CHUNK;
  if (end > list.numel[t]) end = list.numel[t];
  return true;
}

// amp.unscale_check over [grad, unscaled grad]: found_inf and the unscaled gradients, each rounded
// to its gradient's type. The caller zeroes *foundInf before the first launch (a fill node of the
// step's graph); blocks only ever set it.
template <int G>
__device__ void amp_mt_unscale_check(const AmpTensorList<2>& list, const float* scale, float* foundInf) {
  int t;
  long long begin, end;
  if (!amp_mt_block(list, t, begin, end)) return;
  const float invScale = scale ? amp_inv_scale(*scale) : 1.0f;
  const void* g = list.ptr[0][t];
  void* out = list.ptr[1][t];
  bool found = false;
  for (long long i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const float v = amp_load<G>(g, i);
    if (!isfinite(v)) found = true;
    amp_store<G>(out, i, amp_unscale(v, invScale));
  }
  if (found) *foundInf = 1.0f;
}

// The block's threads' values added in one fixed tree, written by thread 0 to *out: every block
// sum of squares goes through here, so the fused statistics pass gives the unfused norm's bits.
__device__ __forceinline__ void amp_mt_block_sum(float acc, float* out) {
  __shared__ float sums[AMP_MT_BLOCK_THREADS];
  sums[threadIdx.x] = acc;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) sums[threadIdx.x] += sums[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = sums[0];
}

// Per-block sums of squares of f32 gradients (amp.global_norm's first pass). Each block reduces in
// a fixed tree, so the sums are the same bits on every run; the global-norm kernel then adds each
// tensor's blocks in order.
__device__ void amp_mt_sum_squares(const AmpTensorList<1>& list, float* partials) {
  int t;
  long long begin, end;
  if (!amp_mt_block(list, t, begin, end)) return;
  const float* g = (const float*)list.ptr[0][t];
  float acc = 0.0f;
  for (long long i = begin + threadIdx.x; i < end; i += blockDim.x) acc += g[i] * g[i];
  amp_mt_block_sum(acc, partials + list.firstSlot + blockIdx.x);
}

// The unscaled gradient value as the plan's unscaled tensor holds it: the stored gradient (type
// L) times the inverse scale, rounded to type R (L, or f32 where the plan widened it first).
template <int L, int R>
__device__ __forceinline__ float amp_mt_unscaled(const void* g, long long i, float invScale) {
  return amp_round<R>(amp_unscale(amp_load<L>(g, i), invScale));
}

// amp.grad_stats over [stored grad]: found_inf, and (partials non-null) each block's sum of
// squares of the unscaled values in amp_mt_sum_squares's tree, so the norm is the unfused bits.
template <int L, int R>
__device__ void amp_mt_grad_stats(const AmpTensorList<1>& list, const float* scale, float* foundInf, float* partials) {
  int t;
  long long begin, end;
  if (!amp_mt_block(list, t, begin, end)) return;
  const float invScale = scale ? amp_inv_scale(*scale) : 1.0f;
  const void* g = list.ptr[0][t];
  bool found = false;
  float acc = 0.0f;
  for (long long i = begin + threadIdx.x; i < end; i += blockDim.x) {
    if (!isfinite(amp_load<L>(g, i))) found = true;
    if (partials) {
      const float u = amp_mt_unscaled<L, R>(g, i, invScale);
      acc += u * u;
    }
  }
  if (found) *foundInf = 1.0f;
  if (!partials) return;
  amp_mt_block_sum(acc, partials + list.firstSlot + blockIdx.x);
}

// amp.global_norm from the partial sums: one block of 256 threads, the tensors' norms in parallel
// (tensor t's slots are [slotRange[2t], slotRange[2t + 1])), then thread 0 combines them in tensor
// order as vector_norm(stack(norms)).
extern "C" __global__ void __launch_bounds__(256)
    amp_global_norm(const float* partials, const int* slotRange, int tensors, float* norms, float* out) {
  for (int t = threadIdx.x; t < tensors; t += blockDim.x) {
    float sum = 0.0f;
    for (int s = slotRange[2 * t]; s < slotRange[2 * t + 1]; ++s) sum += partials[s];
    norms[t] = sqrtf(sum);
  }
  __syncthreads();
  if (threadIdx.x != 0) return;
  float total = 0.0f;
  for (int t = 0; t < tensors; ++t) total += norms[t] * norms[t];
  *out = sqrtf(total);
}

// amp.clip_grads over [grad, clipped grad] (f32): every element times the clip coefficient.
extern "C" __global__ void __launch_bounds__(256) amp_mt_clip(AmpTensorList<2> list, const float* norm, double maxNorm) {
  int t;
  long long begin, end;
  if (!amp_mt_block(list, t, begin, end)) return;
  const float coef = amp_clip_coef(*norm, maxNorm);
  const float* g = (const float*)list.ptr[0][t];
  float* out = (float*)list.ptr[1][t];
  for (long long i = begin + threadIdx.x; i < end; i += blockDim.x) out[i] = g[i] * coef;
}

// amp.step_counters, amp.lr_schedule and amp.update_scale: one thread each, reading and writing
// device scalars, so no value crosses to the host.
extern "C" __global__ void amp_step_counters_kernel(const long long* stepIn, const long long* skippedIn,
                                                    const float* foundInf, long long* stepOut, long long* skippedOut) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  long long step = *stepIn, skipped = *skippedIn;
  amp_step_counters(&step, &skipped, *foundInf);
  *stepOut = step;
  *skippedOut = skipped;
}

extern "C" __global__ void amp_lr_schedule_kernel(const long long* step, int cosine, double base, long long warmup,
                                                  long long total, double minLr, float* out) {
  if (blockIdx.x == 0 && threadIdx.x == 0) *out = amp_lr_schedule(cosine != 0, base, warmup, total, minLr, *step);
}

extern "C" __global__ void amp_update_scale_kernel(const float* scaleIn, const int* trackerIn, const float* foundInf,
                                                   float* scaleOut, int* trackerOut, double growth, double backoff,
                                                   long long interval) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  float scale = *scaleIn;
  int tracker = *trackerIn;
  amp_update_scale(&scale, &tracker, *foundInf, growth, backoff, interval);
  *scaleOut = scale;
  *trackerOut = tracker;
}

// The per-step constants of a run of optimizer updates that share their scalars and attributes.
extern "C" __global__ void amp_optimizer_scalars(AmpOptimizerArgs a) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  AmpStepScalars s;
  s.invScale = a.scale ? amp_inv_scale(*a.scale) : 1.0f;
  s.clip = a.norm != 0;
  s.clipCoef = a.norm ? amp_clip_coef(*a.norm, a.maxNorm) : 1.0f;
  s.found = *a.foundInf;
  s.lr = *a.lr;
  if (a.optimizer == 1 && !amp_found(s.found))
    s.adam = amp_adam_step(s.lr, *a.step, a.beta1, a.beta2, a.eps, a.weightDecay, a.decoupled != 0);
  if (a.optimizer == 2) s.sgd = amp_sgd_step(s.lr, a.momentum, a.weightDecay, a.nesterov != 0);
  *a.out = s;
}

// The unscaled, clipped gradient the optimizer applies: the stored gradient (type L) unscaled and
// rounded to R as unscale_check would store it, times the clip coefficient when clipping
// (clip_grads takes f32 gradients). Unfused, the gradient arrives unscaled: L = R, invScale 1.
template <int L, int R>
__device__ __forceinline__ float amp_mt_applied_grad(const void* g, long long i, const AmpStepScalars& s) {
  const float u = amp_mt_unscaled<L, R>(g, i, s.invScale);
  return s.clip ? u * s.clipCoef : u;
}

// The low-precision copy of a master that a skipped step leaves as it was: the cast the plan
// runs after the optimizer, which the fused pass writes instead.
template <int C>
__device__ __forceinline__ void amp_mt_copy_only(const float* p, void* copy, long long begin, long long end) {
  if (C && copy)
    for (long long i = begin + threadIdx.x; i < end; i += blockDim.x) amp_store<C>(copy, i, p[i]);
}

// Adam/AdamW over [grad, param, exp_avg, exp_avg_sq, low-precision copy (may be null)].
template <int L, int R, int C>
__device__ void amp_mt_adam(const AmpTensorList<5>& list, const AmpStepScalars* scalars) {
  const AmpStepScalars s = *scalars;
  int t;
  long long begin, end;
  if (!amp_mt_block(list, t, begin, end)) return;
  float* p = (float*)list.ptr[1][t];
  float* m = (float*)list.ptr[2][t];
  float* v = (float*)list.ptr[3][t];
  void* copy = list.ptr[4][t];
  if (amp_found(s.found)) return amp_mt_copy_only<C>(p, copy, begin, end);  // no state bit changes
  for (long long i = begin + threadIdx.x; i < end; i += blockDim.x) {
    float pi = p[i], mi = m[i], vi = v[i];
    amp_adam_element(&pi, &mi, &vi, amp_mt_applied_grad<L, R>(list.ptr[0][t], i, s), s.adam);
    p[i] = pi;
    m[i] = mi;
    v[i] = vi;
    if (C && copy) amp_store<C>(copy, i, pi);
  }
}

// SGD over [grad, param, momentum_buffer (null without momentum), low-precision copy (may be null)].
template <int L, int R, int C>
__device__ void amp_mt_sgd(const AmpTensorList<4>& list, const AmpStepScalars* scalars) {
  const AmpStepScalars s = *scalars;
  int t;
  long long begin, end;
  if (!amp_mt_block(list, t, begin, end)) return;
  float* p = (float*)list.ptr[1][t];
  float* buf = (float*)list.ptr[2][t];
  void* copy = list.ptr[3][t];
  if (amp_found(s.found)) return amp_mt_copy_only<C>(p, copy, begin, end);
  for (long long i = begin + threadIdx.x; i < end; i += blockDim.x) {
    float pi = p[i], bi = buf ? buf[i] : 0.0f;
    amp_sgd_element(&pi, buf ? &bi : 0, amp_mt_applied_grad<L, R>(list.ptr[0][t], i, s), s.sgd);
    p[i] = pi;
    if (buf) buf[i] = bi;
    if (C && copy) amp_store<C>(copy, i, pi);
  }
}

// The entry points. Gradients by stored type and the type the plan unscales into: f32, bf16 and
// f16 as stored, bf16w and f16w read as stored where the plan widened them to f32 (fused). Copies:
// none, bf16, f16.
#define AMP_UNSCALE_CHECK(name, G)                                                                       \
  extern "C" __global__ void __launch_bounds__(256)                                                      \
      amp_mt_unscale_check_##name(AmpTensorList<2> list, const float* scale, float* foundInf) {          \
    amp_mt_unscale_check<G>(list, scale, foundInf);                                                      \
  }
AMP_UNSCALE_CHECK(f32, 0)
AMP_UNSCALE_CHECK(bf16, 1)
AMP_UNSCALE_CHECK(f16, 2)

extern "C" __global__ void __launch_bounds__(256) amp_mt_sum_squares_f32(AmpTensorList<1> list, float* partials) {
  amp_mt_sum_squares(list, partials);
}

#define AMP_GRAD_STATS(name, L, R)                                                                       \
  extern "C" __global__ void __launch_bounds__(256)                                                      \
      amp_mt_grad_stats_##name(AmpTensorList<1> list, const float* scale, float* foundInf, float* partials) { \
    amp_mt_grad_stats<L, R>(list, scale, foundInf, partials);                                            \
  }
AMP_GRAD_STATS(f32, 0, 0)
AMP_GRAD_STATS(bf16, 1, 1)
AMP_GRAD_STATS(f16, 2, 2)
AMP_GRAD_STATS(bf16w, 1, 0)
AMP_GRAD_STATS(f16w, 2, 0)

#define AMP_OPTIMIZER(kind, depth, gname, L, R, cname, C)                                               \
  extern "C" __global__ void __launch_bounds__(256)                                                    \
      amp_mt_##kind##_##gname##_##cname(AmpTensorList<depth> list, const AmpStepScalars* scalars) {    \
    amp_mt_##kind<L, R, C>(list, scalars);                                                             \
  }
#define AMP_OPTIMIZER_COPIES(kind, depth, gname, L, R) \
  AMP_OPTIMIZER(kind, depth, gname, L, R, none, 0)     \
  AMP_OPTIMIZER(kind, depth, gname, L, R, bf16, 1)     \
  AMP_OPTIMIZER(kind, depth, gname, L, R, f16, 2)
#define AMP_OPTIMIZER_GRADS(kind, depth)              \
  AMP_OPTIMIZER_COPIES(kind, depth, f32, 0, 0)        \
  AMP_OPTIMIZER_COPIES(kind, depth, bf16, 1, 1)       \
  AMP_OPTIMIZER_COPIES(kind, depth, f16, 2, 2)        \
  AMP_OPTIMIZER_COPIES(kind, depth, bf16w, 1, 0)      \
  AMP_OPTIMIZER_COPIES(kind, depth, f16w, 2, 0)
AMP_OPTIMIZER_GRADS(adam, 5)
AMP_OPTIMIZER_GRADS(sgd, 4)
