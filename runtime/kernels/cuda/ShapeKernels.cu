// The CUDA device's kernels for amp.embedding, amp.embedding_grad, amp.transpose, amp.gelu_grad and
// amp.dropout, bit for bit the reference executor's results (arithmetic and index math in
// ShapeMath.h). Exceptions: gelu_grad's f64 erf/exp/tanh come from CUDA's math library (below), and
// a NaN that arithmetic produces (gelu_grad, dropout, embedding_grad) is the GPU's canonical one
// rather than an operand's payload, which the numeric contract exempts (docs/numerics.md); the bit
// copies (embedding, transpose) keep every payload. ampc appends this file, after ShapeMath.h, to
// the CUDA kernels of every cuda bundle, behind the prelude's amp_ld_*/amp_st_* conversions
// (codegen/emit/CudaFlavour.cpp).
//
// Names end in the element type T of the float tensors (f32, bf16, f16; bf16 and f16 passed as
// their 16-bit patterns) and, for the embedding ops, the ids' type L (i64: long long, i32: int).
// Every pointer is a device address of dense row-major data; every count is in elements. Every
// kernel is grid-stride, uses no shared memory (static or dynamic) and no scratch unless stated,
// is declared __launch_bounds__(256) and is correct for any blockDim = (x, 1, 1) with 1 <= x <= 256
// (use 256) and any grid size >= 1 in the dims it names; the others must be 1. A suggested grid is
// gridDim.x = min(ceil(work / 256), 8 * multiprocessors) (runtime/devices/cuda/LaunchConfig.h's
// gridStrideLaunch of `work` items); with work = 0 the launch may be skipped, except where noted.
// Each op is one launch; ops have no launch-order constraints beyond their data dependencies.
//
// amp.embedding(table [V, D] T, ids S L) -> [S..., D] T: a bit copy of row ids[i] per token.
//   amp_embedding_<T>_<L>(const void* table, const L* ids, void* out, long long tokens,
//                         long long numEmbeddings, long long dim)
//     tokens = numel(ids), numEmbeddings = V, dim = D. grid (any, 1, 1), work = tokens * dim.
//     out[i * D + d] = table[ids[i] * D + d]; a token whose id is outside [0, V) gets a row of the
//     type's quiet NaN (0x7fc00000 f32, 0x7fc0 bf16, 0x7e00 f16) where the reference rejects the
//     op. out must not overlap table or ids.
//
// amp.embedding_grad(ids S L, dy [S..., D] T) num_embeddings = V -> [V, D] T: each cell the f32 sum
// from +0 of dy over the tokens carrying its row's id, tokens in row-major order (repeated ids add
// sequentially in that order), rounded once to T.
//   amp_embedding_grad_<T>_<L>(const L* ids, const void* dy, float* acc, void* dtable,
//                              long long tokens, long long numEmbeddings, long long dim)
//     tokens = numel(ids), numEmbeddings = V, dim = D. Scratch: acc, V * D floats (4 * V * D bytes,
//     need not be initialised, must not overlap anything else); for T = f32 pass acc = dtable
//     instead (the result is its own accumulator, no scratch). grid (gx, gy, 1): a thread owns
//     columns d = blockIdx.x * blockDim.x + threadIdx.x (stride gridDim.x * blockDim.x) of the table
//     rows of chunk blockIdx.y (gridDim.y contiguous chunks of ceil(V / gridDim.y) rows), zeroes
//     its cells, walks every token in order adding dy into its cells, and stores them rounded to T.
//     Each thread rereads all ids, so gy trades id reads for parallelism: gx = ceil(D / 256),
//     gy = min(V, 65535, max(1, 8 * multiprocessors / gx)) is a good start; any gx, gy >= 1 give
//     the same bits. Launch it even with tokens = 0 (it writes the zeros); skip it only when
//     V * D = 0. When any id is outside [0, V), every element of dtable is the quiet NaN (the
//     reference rejects the op instead).
//
// amp.transpose(x) permutation = perm -> result dim d = x dim perm[d], any element type: a bit copy
// by element size B in bytes (1: i1/u8/f8, 2: f16/bf16, 4: f32/i32, 8: i64/f64).
//   amp_transpose_<B>(const void* in, void* out, AmpTransposeShape shape)
//     shape filled on the host by amp_shp_transpose_shape(&shape, rank, xShape, perm) (ShapeMath.h),
//     which drops size-1 dims and merges runs contiguous in the input; it fails (returns 0) for a
//     perm that is not a permutation or when more than 8 dims remain, which the device must
//     refuse. grid (any, 1, 1), work = shape.elements (0: skip). out must not overlap in. (Reads
//     are strided where the last dim moves: correct at any size, not bandwidth-optimal.)
//
// amp.slice(x) starts, limits, strides: the transpose kernel above, on x + offset with the shape
//   amp_shp_slice_shape fills (ShapeMath.h).
// amp.slice_grad(dy) starts, limits, strides: dx zeroed (amp_zero_bytes), then dy written into the
//   slice's elements by the transpose kernel's index map run backwards:
//   amp_scatter_<B>(const void* in, void* out, AmpTransposeShape shape): out[source(o)] = in[o].
//   amp_zero_bytes(void* p, long long bytes): grid (any, 1, 1), work = bytes.
// amp.concat(x_0, ..., x_k) axis: one launch per operand, a bit copy by element size B.
//   amp_concat_part_<B>(const void* in, void* out, long long n, long long chunk, long long row,
//                       long long at)
//     n = numel(operand), chunk = its elements from the axis on (its [outer, chunk] view), row =
//     the result's, at = the elements of the operands before it in a row. grid (any, 1, 1), work n.
//
// amp.gelu_grad(x T, dy T) approximate = "none" (default) | "tanh" -> T, same shape:
// f32(dy * gelu'(x)) evaluated in f64, rounded once to f32, then to T.
//   amp_gelu_grad_<T>(const void* x, const void* dy, void* dx, long long n)        "none"
//   amp_gelu_grad_tanh_<T>(const void* x, const void* dy, void* dx, long long n)   "tanh"
//     n = numel(x). grid (any, 1, 1), work = n. dx may be x or dy (in place), no other overlap.
//     The f64 erf, exp and tanh are CUDA's (libdevice, within 2 ulp) where the reference's are
//     glibc's: the two agree on the f32 result except in the rare case where their f64 values
//     straddle an f32 rounding boundary, which no test can rule out.
//
// amp.dropout(x T) rate, seed -> T, same shape; its gradient is amp.dropout(dy) with the same rate
// and seed (ir/AmpVjp.cpp) in the same call, i.e. this kernel again at the same step.
//   amp_dropout_<T>(const void* x, void* y, long long n, long long seed, double rate,
//                   const long long* step)
//     n = numel(x); seed = the attribute as is; rate = the attribute (f64 in [0, 1), rounded to f32
//     on the device as the reference does); step = a device address holding the call's training
//     step (the reference's EvalContext::step, the high half of the Philox counter), read when the
//     kernel runs so a captured graph replays correctly once the host has written the word. A
//     thread draws one Philox call for each group of 4 elements (element i = 4g + l uses word l of
//     group g). grid (any, 1, 1), work = ceil(n / 4). y may be x (in place), no other overlap.

// Float elements by type: 0 f32, 1 bf16, 2 f16.

__device__ __forceinline__ long long amp_shp_first() { return (long long)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ long long amp_shp_stride() { return (long long)gridDim.x * blockDim.x; }

// Row copies move bits, so the element is an unsigned integer of the type's size.
template <int T>
struct amp_shp_bits {
  typedef unsigned short type;
};
template <>
struct amp_shp_bits<0> {
  typedef unsigned int type;
};

template <int T, class L>
__device__ void amp_shp_embedding_run(const void* table, const L* ids, void* out, long long tokens, long long rows,
                                  long long dim) {
  typedef typename amp_shp_bits<T>::type E;
  const E nan = (E)amp_shp_nan_bits(T);
  const long long total = tokens * dim;
  for (long long e = amp_shp_first(); e < total; e += amp_shp_stride()) {
    const long long i = e / dim, d = e - i * dim;
    const long long id = (long long)ids[i];
    ((E*)out)[e] = amp_shp_id_valid(id, rows) ? ((const E*)table)[id * dim + d] : nan;
  }
}

template <int T, class L>
__device__ void amp_shp_embedding_grad_run(const L* ids, const void* dy, float* acc, void* dtable, long long tokens,
                                       long long rows, long long dim) {
  long long v0, v1;
  amp_shp_row_chunk(rows, gridDim.y, blockIdx.y, &v0, &v1);
  if (v0 >= v1) return;
  for (long long d = amp_shp_first(); d < dim; d += amp_shp_stride()) {
    for (long long v = v0; v < v1; ++v) acc[v * dim + d] = 0.0f;
    bool invalid = false;
    for (long long i = 0; i < tokens; ++i) {  // row-major order of ids: the reference's sum order
      const long long id = (long long)ids[i];
      if (!amp_shp_id_valid(id, rows)) {
        invalid = true;
        continue;
      }
      if (id < v0 || id >= v1) continue;
      acc[id * dim + d] = amp_shp_accumulate(acc[id * dim + d], amp_load<T>(dy, i * dim + d));
    }
    const float nan = __uint_as_float(amp_shp_nan_bits(0));
    for (long long v = v0; v < v1; ++v) amp_store<T>(dtable, v * dim + d, invalid ? nan : acc[v * dim + d]);
  }
}

template <class E>
__device__ void amp_shp_transpose_run(const void* in, void* out, const AmpTransposeShape& s) {
  for (long long o = amp_shp_first(); o < s.elements; o += amp_shp_stride())
    ((E*)out)[o] = ((const E*)in)[amp_shp_transpose_source(&s, o)];
}

template <class E>
__device__ void amp_shp_scatter_run(const void* in, void* out, const AmpTransposeShape& s) {
  for (long long o = amp_shp_first(); o < s.elements; o += amp_shp_stride())
    ((E*)out)[amp_shp_transpose_source(&s, o)] = ((const E*)in)[o];
}

template <class E>
__device__ void amp_shp_concat_run(const void* in, void* out, long long n, long long chunk, long long row, long long at) {
  for (long long i = amp_shp_first(); i < n; i += amp_shp_stride())
    ((E*)out)[amp_shp_concat_target(i, chunk, row, at)] = ((const E*)in)[i];
}

template <int T, bool Tanh>
__device__ void amp_shp_gelu_grad_run(const void* x, const void* dy, void* dx, long long n) {
  for (long long i = amp_shp_first(); i < n; i += amp_shp_stride()) {
    const float xv = amp_load<T>(x, i), g = amp_load<T>(dy, i);
    amp_store<T>(dx, i, Tanh ? amp_shp_gelu_grad_tanh(xv, g) : amp_shp_gelu_grad(xv, g));
  }
}

template <int T>
__device__ void amp_shp_dropout_run(const void* x, void* y, long long n, long long seed, double rate,
                                const long long* step) {
  const float p = amp_drop_rate(rate), scale = amp_drop_scale(p);
  const unsigned long long s = (unsigned long long)seed, st = (unsigned long long)*step;
  const long long groups = (n + 3) / 4;
  for (long long g = amp_shp_first(); g < groups; g += amp_shp_stride()) {
    unsigned bits[4];
    amp_drop_group_bits(s, st, (unsigned long long)g, bits);
#pragma unroll
    for (int l = 0; l < 4; ++l) {
      const long long i = 4 * g + l;
      if (i < n) amp_store<T>(y, i, amp_drop_apply(amp_load<T>(x, i), amp_drop_keep(bits[l], p), scale));
    }
  }
}

// The entry points.
#define AMP_SHP_EMBEDDING_KERNELS(tname, T, lname, L)                                                                 \
  extern "C" __global__ void __launch_bounds__(256) amp_embedding_##tname##_##lname(                                  \
      const void* table, const L* ids, void* out, long long tokens, long long numEmbeddings, long long dim) {         \
    amp_shp_embedding_run<T, L>(table, ids, out, tokens, numEmbeddings, dim);                                         \
  }                                                                                                                   \
  extern "C" __global__ void __launch_bounds__(256) amp_embedding_grad_##tname##_##lname(                             \
      const L* ids, const void* dy, float* acc, void* dtable, long long tokens, long long numEmbeddings,              \
      long long dim) {                                                                                                \
    amp_shp_embedding_grad_run<T, L>(ids, dy, acc, dtable, tokens, numEmbeddings, dim);                               \
  }
#define AMP_SHP_FLOAT_KERNELS(tname, T)                                                                               \
  extern "C" __global__ void __launch_bounds__(256)                                                                   \
      amp_gelu_grad_##tname(const void* x, const void* dy, void* dx, long long n) {                                   \
    amp_shp_gelu_grad_run<T, false>(x, dy, dx, n);                                                                    \
  }                                                                                                                   \
  extern "C" __global__ void __launch_bounds__(256)                                                                   \
      amp_gelu_grad_tanh_##tname(const void* x, const void* dy, void* dx, long long n) {                              \
    amp_shp_gelu_grad_run<T, true>(x, dy, dx, n);                                                                     \
  }                                                                                                                   \
  extern "C" __global__ void __launch_bounds__(256) amp_dropout_##tname(                                              \
      const void* x, void* y, long long n, long long seed, double rate, const long long* step) {                      \
    amp_shp_dropout_run<T>(x, y, n, seed, rate, step);                                                                \
  }                                                                                                                   \
  AMP_SHP_EMBEDDING_KERNELS(tname, T, i64, long long)                                                                 \
  AMP_SHP_EMBEDDING_KERNELS(tname, T, i32, int)
#define AMP_SHP_TRANSPOSE_KERNEL(bytes, E)                                                                            \
  extern "C" __global__ void __launch_bounds__(256)                                                                   \
      amp_transpose_##bytes(const void* in, void* out, AmpTransposeShape shape) {                                     \
    amp_shp_transpose_run<E>(in, out, shape);                                                                         \
  }                                                                                                                   \
  extern "C" __global__ void __launch_bounds__(256)                                                                   \
      amp_scatter_##bytes(const void* in, void* out, AmpTransposeShape shape) {                                       \
    amp_shp_scatter_run<E>(in, out, shape);                                                                           \
  }                                                                                                                   \
  extern "C" __global__ void __launch_bounds__(256)                                                                   \
      amp_concat_part_##bytes(const void* in, void* out, long long n, long long chunk, long long row, long long at) {  \
    amp_shp_concat_run<E>(in, out, n, chunk, row, at);                                                                \
  }
AMP_SHP_FLOAT_KERNELS(f32, 0)
AMP_SHP_FLOAT_KERNELS(bf16, 1)
AMP_SHP_FLOAT_KERNELS(f16, 2)
AMP_SHP_TRANSPOSE_KERNEL(1, unsigned char)
AMP_SHP_TRANSPOSE_KERNEL(2, unsigned short)
AMP_SHP_TRANSPOSE_KERNEL(4, unsigned int)
AMP_SHP_TRANSPOSE_KERNEL(8, unsigned long long)

extern "C" __global__ void __launch_bounds__(256) amp_zero_bytes(void* p, long long bytes) {
  for (long long i = amp_shp_first(); i < bytes; i += amp_shp_stride()) ((unsigned char*)p)[i] = 0;
}
