// The arithmetic and index math of the CUDA device's embedding, embedding_grad, transpose (and
// slice, a strided transpose), concat, gelu_grad and dropout kernels (ShapeKernels.cu), written once for the GPU and the host. ampc
// compiles it into every CUDA bundle's kernels with NVRTC; the host tests compile the same text as
// C++ (test/unit/kernels/ShapeMathTest.cpp) and require bit-identical results against the reference
// executor: amp.embedding and amp.transpose (runtime/reference/ReferenceShape.cpp), amp.dropout
// (ReferenceDropout.cpp with the Philox stream of runtime/numerics/Philox.cpp), amp.gelu_grad and
// amp.embedding_grad (ReferenceGrad.cpp). Every formula below follows the reference's operation
// order; gelu_grad is evaluated in f64 and rounded once to f32, as there. The host code that
// launches the kernels also uses this header (AmpTransposeShape, amp_shp_transpose_shape). Compile
// with no multiply-add contraction (nvrtc --fmad=false, g++ -ffp-contract=off).
#ifndef AMP_RUNTIME_KERNELS_MATH_SHAPEMATH_H
#define AMP_RUNTIME_KERNELS_MATH_SHAPEMATH_H

#if !defined(__CUDACC_RTC__)  // NVRTC sees HostDevice.h first in the same translation unit
#include "runtime/kernels/math/HostDevice.h"
#endif

//===----------------------------------------------------------------------===//
// amp.embedding, amp.embedding_grad
//===----------------------------------------------------------------------===//

// An id names a table row iff 0 <= id < rows; the reference rejects the op for any other.
AMP_TM bool amp_shp_id_valid(long long id, long long rows) { return id >= 0 && id < rows; }

// The quiet NaN the kernels write where the reference reports an invalid id, as the bits of an
// element of type 0 f32, 1 bf16, 2 f16 (each format's canonical quiet NaN, so storing the f32 one
// through RNE narrowing gives the same 16-bit patterns).
AMP_TM unsigned amp_shp_nan_bits(int type) { return type == 0 ? 0x7fc00000u : type == 1 ? 0x7fc0u : 0x7e00u; }

// Table rows [*begin, *end) of chunk `chunk` of `chunks` contiguous chunks of ceil(rows / chunks)
// rows (empty for the chunks past the end).
AMP_TM void amp_shp_row_chunk(long long rows, long long chunks, long long chunk, long long* begin, long long* end) {
  const long long per = (rows + chunks - 1) / chunks;
  long long b = chunk * per, e = b + per;
  if (b > rows) b = rows;
  if (e > rows) e = rows;
  *begin = b;
  *end = e;
}

// One token's contribution to a table cell: the reference's sequential f32 sum from +0, tokens in
// row-major order of ids.
AMP_TM float amp_shp_accumulate(float acc, float dy) { return acc + dy; }

//===----------------------------------------------------------------------===//
// amp.transpose
//===----------------------------------------------------------------------===//

#define AMP_SHP_MAX_DIMS 8

// A transpose as the kernel walks it: the output's dims (row-major) with each one's stride in the
// input, in elements. out[o] = in[sum_d idx_d(o) * stride[d]]. Dims of size 1 are dropped and
// neighbouring output dims that are contiguous in the input are merged, so `rank` may be smaller
// than the tensor's: 1 for an identity permutation, 0 for one element or none.
struct AmpTransposeShape {
  int rank;
  long long size[AMP_SHP_MAX_DIMS];
  long long stride[AMP_SHP_MAX_DIMS];
  long long elements;  // of the result (= of the input)
};

// Appends an output dim of `size` elements `stride` apart in the input, merged into the previous
// one when they are contiguous there: idx_a * T_a + idx_b * T_b with T_a == T_b * S_b is one index
// of size S_a * S_b and stride T_b. Returns 0 when AMP_SHP_MAX_DIMS dims are already in use.
AMP_TM int amp_shp_push_dim(AmpTransposeShape* s, long long size, long long stride) {
  if (s->rank > 0 && s->stride[s->rank - 1] == stride * size) {
    s->size[s->rank - 1] *= size;
    s->stride[s->rank - 1] = stride;
    return 1;
  }
  if (s->rank == AMP_SHP_MAX_DIMS) return 0;
  s->size[s->rank] = size;
  s->stride[s->rank] = stride;
  ++s->rank;
  return 1;
}

// Fills *s for amp.transpose of an input of shape inShape[0..rank) with result dim d = input dim
// perm[d] (the reference's "permutation" attribute). Returns 0 (leaving *s unusable) when perm is
// not a permutation of [0, rank), a dim is negative, or more than AMP_SHP_MAX_DIMS dims remain
// after dropping and merging; 1 otherwise. Pure integer code for the host; O(rank^2).
AMP_TM int amp_shp_transpose_shape(AmpTransposeShape* s, int rank, const long long* inShape, const long long* perm) {
  s->rank = 0;
  s->elements = 1;
  for (int d = 0; d < rank; ++d) {
    if (perm[d] < 0 || perm[d] >= rank || inShape[d] < 0) return 0;
    for (int e = 0; e < d; ++e)
      if (perm[e] == perm[d]) return 0;
    s->elements *= inShape[d];
  }
  if (s->elements == 0) return 1;  // nothing to move: no dims needed
  for (int d = 0; d < rank; ++d) {
    const int from = (int)perm[d];
    const long long size = inShape[from];
    if (size == 1) continue;  // contributes index 0 only
    long long stride = 1;     // row-major stride of input dim `from`
    for (int e = from + 1; e < rank; ++e) stride *= inShape[e];
    if (!amp_shp_push_dim(s, size, stride)) return 0;
  }
  return 1;
}

// The input element that output element `o` copies.
AMP_TM long long amp_shp_transpose_source(const AmpTransposeShape* s, long long o) {
  long long offset = 0;
  for (int d = s->rank - 1; d >= 0; --d) {
    const long long q = o / s->size[d];
    offset += (o - q * s->size[d]) * s->stride[d];
    o = q;
  }
  return offset;
}

// amp.slice as the transpose kernel's strided gather: result dim d has (limits - starts + steps
// - 1) / steps elements read every steps[d] along input dim d, from *offset (elements) on. Size-1
// dims are dropped and contiguous neighbours merged, as above. Returns 0 when a bound is out of
// range (0 <= start <= limit <= size, step >= 1) or more than AMP_SHP_MAX_DIMS dims remain.
AMP_TM int amp_shp_slice_shape(AmpTransposeShape* s, int rank, const long long* inShape, const long long* starts,
                               const long long* limits, const long long* steps, long long* offset) {
  s->rank = 0;
  s->elements = 1;
  *offset = 0;
  long long inStride = 1;
  long long strides[AMP_SHP_MAX_DIMS * 4];  // per input dim, innermost last; rank <= 32 checked below
  if (rank > AMP_SHP_MAX_DIMS * 4) return 0;
  for (int d = rank - 1; d >= 0; --d) {
    strides[d] = inStride;
    inStride *= inShape[d];
  }
  for (int d = 0; d < rank; ++d) {
    if (starts[d] < 0 || starts[d] > limits[d] || limits[d] > inShape[d] || steps[d] < 1) return 0;
    s->elements *= (limits[d] - starts[d] + steps[d] - 1) / steps[d];
    *offset += starts[d] * strides[d];
  }
  if (s->elements == 0) return 1;
  for (int d = 0; d < rank; ++d) {
    const long long size = (limits[d] - starts[d] + steps[d] - 1) / steps[d];
    if (size == 1) continue;
    const long long stride = strides[d] * steps[d];
    if (!amp_shp_push_dim(s, size, stride)) return 0;
  }
  return 1;
}

// amp.concat: element j of row o of an operand (its [outer, chunk] view around the axis) lands at
// this element of the result, whose rows are `row` elements and hold the operand from `at` on.
AMP_TM long long amp_shp_concat_target(long long i, long long chunk, long long row, long long at) {
  const long long o = i / chunk;
  return o * row + at + (i - o * chunk);
}

//===----------------------------------------------------------------------===//
// amp.gelu_grad
//===----------------------------------------------------------------------===//

// f32(dy * gelu'(x)) with gelu'(x) = 0.5 (1 + erf(x / sqrt 2)) + x exp(-x^2 / 2) / sqrt(2 pi),
// evaluated in f64 from the f32-widened operands exactly as the reference writes it.
AMP_TM float amp_shp_gelu_grad(float x, float dy) {
  const double v = x;
  const double d = 0.5 * (1.0 + erf(v * 0.70710678118654752440)) + v * 0.39894228040143267794 * exp(-0.5 * v * v);
  return (float)((double)dy * d);
}

// approximate = "tanh": the derivative of 0.5 x (1 + t), t = tanh(sqrt(2/pi) (x + 0.044715 x^3)).
AMP_TM float amp_shp_gelu_grad_tanh(float x, float dy) {
  const double v = x;
  const double k = 0.79788456080286535588;  // sqrt(2/pi)
  const double t = tanh(k * (v + 0.044715 * v * v * v));
  const double d = 0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * k * (1.0 + 3.0 * 0.044715 * v * v);
  return (float)((double)dy * d);
}

//===----------------------------------------------------------------------===//
// amp.dropout
//===----------------------------------------------------------------------===//

// Philox4x32-10 (Random123's philox4x32_10) of counter c[0..4) under key {key0, key1}, in place:
// ten rounds, the key bumped by the Weyl constants between rounds (not before the first).
AMP_TM void amp_drop_philox(unsigned key0, unsigned key1, unsigned c[4]) {
  unsigned c0 = c[0], c1 = c[1], c2 = c[2], c3 = c[3];
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key0 += 0x9E3779B9u;
      key1 += 0xBB67AE85u;
    }
    const unsigned long long p0 = 0xD2511F53ull * c0, p1 = 0xCD9E8D57ull * c2;
    const unsigned hi0 = (unsigned)(p0 >> 32), lo0 = (unsigned)p0;
    const unsigned hi1 = (unsigned)(p1 >> 32), lo1 = (unsigned)p1;
    c0 = hi1 ^ c1 ^ key0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ key1;
    c3 = lo0;
  }
  c[0] = c0;
  c[1] = c1;
  c[2] = c2;
  c[3] = c3;
}

// The random words of elements 4g .. 4g+3 (word l is element 4g + l) of the dropout stream of
// `seed` at training step `step`: key {lo32(seed), hi32(seed)}, counter {lo32(g), hi32(g),
// lo32(step), hi32(step)}. seed and step are the reference's int64 values reinterpreted as uint64.
AMP_TM void amp_drop_group_bits(unsigned long long seed, unsigned long long step, unsigned long long group,
                                unsigned bits[4]) {
  bits[0] = (unsigned)group;
  bits[1] = (unsigned)(group >> 32);
  bits[2] = (unsigned)step;
  bits[3] = (unsigned)(step >> 32);
  amp_drop_philox((unsigned)seed, (unsigned)(seed >> 32), bits);
}

// The top 24 bits times 2^-24: exact, in [0, 1).
AMP_TM float amp_drop_uniform(unsigned bits) { return (float)(bits >> 8) * (1.0f / 16777216.0f); }

// The drop probability as backends receive it (the f64 attribute rounded to f32), and the scale of
// a kept element, f32(1 / (1 - p)) computed in f64 from that p.
AMP_TM float amp_drop_rate(double rate) { return (float)rate; }
AMP_TM float amp_drop_scale(float p) { return (float)(1.0 / (1.0 - (double)p)); }

// Keep iff u >= p: p = 0 keeps everything (u >= 0), p = 1 drops everything.
AMP_TM bool amp_drop_keep(unsigned bits, float p) { return amp_drop_uniform(bits) >= p; }

// A mask multiply, not a select: a dropped NaN or inf stays NaN, a dropped negative is -0.
AMP_TM float amp_drop_apply(float x, bool keep, float scale) { return x * (keep ? scale : 0.0f); }

#endif  // AMP_RUNTIME_KERNELS_MATH_SHAPEMATH_H
