// The CUDA device's loss-scaling and optimizer kernels: one multi-tensor pass over the gradients
// for found_inf and the sum of squares, one single-block kernel for everything per step (global
// norm, clip coefficient, step counters, learning rate, the optimizer's step constants, the
// scale update), and one multi-tensor optimizer pass that unscales, clips, updates the f32
// masters and moments and writes the low-precision copy. No host synchronisation: every scalar
// lives in device memory. ampc appends this file, after MultiTensorArgs.h, TrainMath.h and
// TrainArgs.h (the argument structs the host fills), to the
// CUDA kernels of every cuda bundle, behind the prelude's amp_st_bf16/amp_st_f16 conversions
// (codegen/emit/CudaFlavour.cpp); the host fills the argument blocks
// (runtime/devices/cuda/MultiTensor.h).

template <int G>
__device__ __forceinline__ float amp_mt_load(const void* p, long long i) {
  if (G == 1) return amp_ld_bf16(((const unsigned short*)p)[i]);
  if (G == 2) return amp_ld_f16(((const unsigned short*)p)[i]);
  return ((const float*)p)[i];
}
// The value rounded to the gradient's type, as the unscaled gradient tensor holds it.
template <int G>
__device__ __forceinline__ float amp_mt_round(float x) {
  if (G == 1) return amp_rn_bf16(x);
  if (G == 2) return amp_rn_f16(x);
  return x;
}
template <int C>
__device__ __forceinline__ void amp_mt_store_copy(void* p, long long i, float x) {
  if (C == 1) ((unsigned short*)p)[i] = amp_st_bf16(x);
  if (C == 2) ((unsigned short*)p)[i] = amp_st_f16(x);
}

// found_inf and per-block sums of squares of the unscaled gradients. The caller zeroes
// *foundInf before the launch (a memset node of the step's graph); blocks only ever set it.
// Each block reduces in a fixed tree, so the sums are the same bits on every run.
template <int G>
__device__ void amp_mt_grad_stats(const AmpTensorList<1>& list, const float* scale, float* foundInf,
                                  float* partials) {
  __shared__ float sums[256];
  const int b = blockIdx.x;
  if (b >= list.blocks) return;
  const int t = list.blockTensor[b];
  const long long begin = (long long)list.blockChunk[b] * AMP_MT_CHUNK;
  long long end = begin + AMP_MT_CHUNK;
  if (end > list.numel[t]) end = list.numel[t];
  const float invScale = scale ? amp_inv_scale(*scale) : 1.0f;
  const void* g = list.ptr[0][t];
  float acc = 0.0f;
  bool found = false;
  for (long long i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const float v = amp_mt_load<G>(g, i);
    if (!isfinite(v)) found = true;
    const float u = amp_mt_round<G>(amp_unscale(v, invScale));
    acc += u * u;
  }
  if (found) *foundInf = 1.0f;
  if (!partials) return;
  sums[threadIdx.x] = acc;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) sums[threadIdx.x] += sums[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[list.firstSlot + b] = sums[0];
}

// One block of 256 threads: the tensors' norms in parallel, then thread 0 for the scalars, in
// the plan's order (global_norm, clip_grads, step_counters, lr_schedule, the optimizer's step
// constants, update_scale).
extern "C" __global__ void __launch_bounds__(256) amp_step_finalize(AmpFinalizeArgs a) {
  if (a.partials) {
    for (int t = threadIdx.x; t < a.tensors; t += blockDim.x) {
      float sum = 0.0f;
      for (int s = a.tensorFirstSlot[t]; s < a.tensorFirstSlot[t + 1]; ++s) sum += a.partials[s];
      a.norms[t] = sqrtf(sum);  // vector_norm(g, 2)
    }
    __syncthreads();
  }
  if (threadIdx.x != 0) return;
  AmpStepScalars s;
  s.invScale = a.scale ? amp_inv_scale(*a.scale) : 1.0f;
  s.found = *a.foundInf;
  s.clip = a.partials != 0;
  s.clipCoef = 1.0f;
  if (a.partials) {
    float total = 0.0f;
    for (int t = 0; t < a.tensors; ++t) total += a.norms[t] * a.norms[t];  // vector_norm(stack(norms))
    const float norm = sqrtf(total);
    if (a.totalNorm) *a.totalNorm = norm;
    s.clipCoef = amp_clip_coef(norm, a.maxNorm);
  }
  long long step = 0;
  if (a.stepIn) {
    long long applied = *a.stepIn, skipped = *a.skippedIn;
    amp_step_counters(&applied, &skipped, s.found);
    *a.stepOut = applied;
    *a.skippedOut = skipped;
    step = applied;
  }
  s.lr = a.lrFixed ? *a.lrFixed : amp_lr_schedule(a.lrCosine != 0, a.baseLr, a.warmup, a.total, a.minLr, step);
  if (a.lrOut) *a.lrOut = s.lr;
  if (a.optimizer == 1) s.adam = amp_adam_step(s.lr, step, a.beta1, a.beta2, a.eps, a.weightDecay, a.decoupled != 0);
  if (a.optimizer == 2) s.sgd = amp_sgd_step(s.lr, a.momentum, a.weightDecay, a.nesterov != 0);
  if (a.scaleOut) {
    float scale = *a.scaleIn;
    int tracker = *a.trackerIn;
    amp_update_scale(&scale, &tracker, s.found, a.growth, a.backoff, a.interval);
    *a.scaleOut = scale;
    *a.trackerOut = tracker;
  }
  *a.out = s;
}

// The unscaled, clipped gradient the optimizer applies: the unscale_check result (rounded to the
// gradient's type), times the clip coefficient when clipping (clip_grads takes f32 gradients).
template <int G>
__device__ __forceinline__ float amp_mt_applied_grad(const void* g, long long i, const AmpStepScalars& s) {
  const float u = amp_mt_round<G>(amp_unscale(amp_mt_load<G>(g, i), s.invScale));
  return s.clip ? u * s.clipCoef : u;
}

// Adam/AdamW over [grad, param, exp_avg, exp_avg_sq, low-precision copy (may be null)].
template <int G, int C>
__device__ void amp_mt_adam(const AmpTensorList<5>& list, const AmpStepScalars* scalars) {
  const AmpStepScalars s = *scalars;
  if (amp_found(s.found)) return;  // a skipped step changes nothing, on every element
  const int b = blockIdx.x;
  if (b >= list.blocks) return;
  const int t = list.blockTensor[b];
  const long long begin = (long long)list.blockChunk[b] * AMP_MT_CHUNK;
  long long end = begin + AMP_MT_CHUNK;
  if (end > list.numel[t]) end = list.numel[t];
  float* p = (float*)list.ptr[1][t];
  float* m = (float*)list.ptr[2][t];
  float* v = (float*)list.ptr[3][t];
  void* copy = list.ptr[4][t];
  for (long long i = begin + threadIdx.x; i < end; i += blockDim.x) {
    float pi = p[i], mi = m[i], vi = v[i];
    amp_adam_element(&pi, &mi, &vi, amp_mt_applied_grad<G>(list.ptr[0][t], i, s), s.adam);
    p[i] = pi;
    m[i] = mi;
    v[i] = vi;
    if (C && copy) amp_mt_store_copy<C>(copy, i, pi);
  }
}

// SGD over [grad, param, momentum_buffer (null without momentum), low-precision copy (may be null)].
template <int G, int C>
__device__ void amp_mt_sgd(const AmpTensorList<4>& list, const AmpStepScalars* scalars) {
  const AmpStepScalars s = *scalars;
  if (amp_found(s.found)) return;
  const int b = blockIdx.x;
  if (b >= list.blocks) return;
  const int t = list.blockTensor[b];
  const long long begin = (long long)list.blockChunk[b] * AMP_MT_CHUNK;
  long long end = begin + AMP_MT_CHUNK;
  if (end > list.numel[t]) end = list.numel[t];
  float* p = (float*)list.ptr[1][t];
  float* buf = (float*)list.ptr[2][t];
  void* copy = list.ptr[3][t];
  for (long long i = begin + threadIdx.x; i < end; i += blockDim.x) {
    float pi = p[i], bi = buf ? buf[i] : 0.0f;
    amp_sgd_element(&pi, buf ? &bi : 0, amp_mt_applied_grad<G>(list.ptr[0][t], i, s), s.sgd);
    p[i] = pi;
    if (buf) buf[i] = bi;
    if (C && copy) amp_mt_store_copy<C>(copy, i, pi);
  }
}

// A standalone scale update, for plans whose update_scale is not part of a finalize.
extern "C" __global__ void amp_update_scale_kernel(float* scale, int* tracker, const float* foundInf, double growth,
                                                   double backoff, long long interval) {
  if (blockIdx.x == 0 && threadIdx.x == 0) amp_update_scale(scale, tracker, *foundInf, growth, backoff, interval);
}

// The entry points, by gradient type (f32, bf16, f16) and low-precision copy (none, bf16, f16).
#define AMP_GRAD_STATS(name, G)                                                                        \
  extern "C" __global__ void __launch_bounds__(256)                                                    \
      amp_mt_grad_stats_##name(AmpTensorList<1> list, const float* scale, float* foundInf, float* partials) { \
    amp_mt_grad_stats<G>(list, scale, foundInf, partials);                                             \
  }
AMP_GRAD_STATS(f32, 0)
AMP_GRAD_STATS(bf16, 1)
AMP_GRAD_STATS(f16, 2)

#define AMP_OPTIMIZER(kind, depth, gname, G, cname, C)                                                  \
  extern "C" __global__ void __launch_bounds__(256)                                                    \
      amp_mt_##kind##_##gname##_##cname(AmpTensorList<depth> list, const AmpStepScalars* scalars) {    \
    amp_mt_##kind<G, C>(list, scalars);                                                                \
  }
#define AMP_OPTIMIZER_COPIES(kind, depth, gname, G) \
  AMP_OPTIMIZER(kind, depth, gname, G, none, 0)     \
  AMP_OPTIMIZER(kind, depth, gname, G, bf16, 1)     \
  AMP_OPTIMIZER(kind, depth, gname, G, f16, 2)
AMP_OPTIMIZER_COPIES(adam, 5, f32, 0)
AMP_OPTIMIZER_COPIES(adam, 5, bf16, 1)
AMP_OPTIMIZER_COPIES(adam, 5, f16, 2)
AMP_OPTIMIZER_COPIES(sgd, 4, f32, 0)
AMP_OPTIMIZER_COPIES(sgd, 4, bf16, 1)
AMP_OPTIMIZER_COPIES(sgd, 4, f16, 2)
