// The arithmetic and index math of the CUDA device's embedding, embedding_grad, transpose, gelu_grad
// and dropout kernels (runtime/kernels/math/ShapeMath.h), compiled here as host C++ with
// -ffp-contract=off and driven by host loops that do what the kernels in ShapeKernels.cu do, in
// their order (embedding_grad's per-chunk, per-column walk over the tokens; dropout's one Philox
// call per group of 4 elements), against the reference executor: every result bit for bit, in f32,
// bf16 and f16 (transpose: every element size), with i64 and i32 ids, repeated ids, every
// permutation of small ranks, infinities, NaN, signed zeros and subnormals, and dropout over rates,
// seeds and steps whose high halves matter. On the GPU the same text runs through NVRTC with
// --fmad=false; only gelu_grad's f64 erf/exp/tanh come from CUDA's math library there.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>

#include "gtest/gtest.h"
#include "runtime/kernels/math/ShapeMath.h"
#include "runtime/reference/ReferenceKernels.h"
#include "runtime/numerics/Convert.h"
#include "runtime/numerics/Philox.h"

namespace amp::rt {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
const DType kFloatTypes[] = {DType::F32, DType::BF16, DType::F16};
const DType kIdTypes[] = {DType::I64, DType::I32};

const char* name(DType t) { return dtypeName(t).data(); }

// The kernels' type code: 0 f32, 1 bf16, 2 f16.
int typeCode(DType t) { return t == DType::F32 ? 0 : t == DType::BF16 ? 1 : 2; }

float fromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

int64_t idAt(const Tensor& ids, int64_t i) {
  return ids.dtype() == DType::I64 ? ids.as<int64_t>()[i] : ids.as<int32_t>()[i];
}

Tensor idTensor(DType t, const Shape& shape, const std::vector<int64_t>& values) {
  Tensor out(t, shape);
  for (size_t i = 0; i < values.size(); ++i) {
    if (t == DType::I64) out.as<int64_t>()[i] = values[i];
    else out.as<int32_t>()[i] = static_cast<int32_t>(values[i]);
  }
  return out;
}

Tensor fromValues(DType t, const Shape& shape, const std::vector<float>& values) {
  Tensor out(t, shape);
  for (size_t i = 0; i < values.size(); ++i) storeFromF32(t, out.data(), static_cast<int64_t>(i), values[i]);
  return out;
}

std::vector<float> widenAll(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = loadAsF32(t.dtype(), t.data(), i);
  return v;
}

Tensor randomBytes(DType t, const Shape& shape, std::mt19937& rng) {
  Tensor out(t, shape);
  for (size_t b = 0; b < out.nbytes(); ++b) out.data()[b] = static_cast<uint8_t>(rng());
  return out;
}

absl::StatusOr<std::vector<Tensor>> evalOp(std::string_view op, std::vector<const Tensor*> operands,
                                           const AttrMap& attrs, const TensorType& result, int64_t step = 0) {
  EvalContext ctx;
  ctx.step = step;
  return evalReferenceOp(op, operands, attrs, {result}, ctx);
}

Tensor reference(std::string_view op, std::vector<const Tensor*> operands, const AttrMap& attrs,
                 const TensorType& result, int64_t step = 0) {
  auto out = evalOp(op, std::move(operands), attrs, result, step);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() && out->size() == 1 ? (*out)[0] : Tensor();
}

// Element i of both tensors, byte for byte. Arithmetic results (`anyNaN`) may differ in a NaN's
// sign and payload, which the numeric contract exempts (docs/numerics.md): the GPU makes every
// computed NaN canonical, x86 propagates an operand's, and which operand depends on the compiler.
// Bit copies (embedding, transpose) must keep them.
void expectSameBits(const Tensor& device, const Tensor& ref, const char* what, bool anyNaN = false) {
  ASSERT_EQ(device.dtype(), ref.dtype()) << what;
  ASSERT_EQ(device.shape(), ref.shape()) << what;
  const size_t es = dtypeSize(ref.dtype());
  for (int64_t i = 0; i < ref.numel(); ++i) {
    if (std::memcmp(device.data() + i * es, ref.data() + i * es, es) == 0) continue;
    if (anyNaN && std::isnan(loadAsF32(ref.dtype(), device.data(), i)) &&
        std::isnan(loadAsF32(ref.dtype(), ref.data(), i)))
      continue;
    uint64_t a = 0, b = 0;
    std::memcpy(&a, device.data() + i * es, es);
    std::memcpy(&b, ref.data() + i * es, es);
    FAIL() << what << "[" << i << "]: bits 0x" << std::hex << a << " vs reference 0x" << b << std::dec << " ("
           << loadAsF32(ref.dtype(), device.data(), i) << " vs " << loadAsF32(ref.dtype(), ref.data(), i) << ")";
  }
}

//===----------------------------------------------------------------------===//
// Host loops doing what the kernels do
//===----------------------------------------------------------------------===//

// amp_embedding_<T>_<L>: element e = i * D + d copies table[ids[i] * D + d] or writes the NaN.
Tensor deviceEmbedding(const Tensor& table, const Tensor& ids) {
  const long long rows = table.shape()[0], dim = table.shape()[1], tokens = ids.numel();
  Shape outShape = ids.shape();
  outShape.push_back(dim);
  Tensor out(table.dtype(), outShape);
  const size_t es = dtypeSize(table.dtype());
  const unsigned nan = amp_shp_nan_bits(typeCode(table.dtype()));
  for (long long e = 0; e < tokens * dim; ++e) {
    const long long i = e / dim, d = e - i * dim;
    const long long id = idAt(ids, i);
    if (amp_shp_id_valid(id, rows)) std::memcpy(out.data() + e * es, table.data() + (id * dim + d) * es, es);
    else std::memcpy(out.data() + e * es, &nan, es);  // little-endian: the low bytes
  }
  return out;
}

// amp_embedding_grad_<T>_<L> launched with gridDim.y = chunks: each (chunk, column) thread zeroes
// its cells, walks every token in order, then stores. The accumulator starts as garbage, as scratch
// does. Columns run in reverse to show that threads are independent.
Tensor deviceEmbeddingGrad(const Tensor& ids, const Tensor& dy, long long rows, long long chunks) {
  const long long dim = dy.shape().back(), tokens = ids.numel();
  const std::vector<float> g = widenAll(dy);
  std::vector<float> acc(static_cast<size_t>(rows * dim), std::nanf("1"));
  Tensor out(dy.dtype(), {rows, dim});
  for (long long c = 0; c < chunks; ++c) {
    long long v0, v1;
    amp_shp_row_chunk(rows, chunks, c, &v0, &v1);
    if (v0 >= v1) continue;
    for (long long d = dim - 1; d >= 0; --d) {
      for (long long v = v0; v < v1; ++v) acc[v * dim + d] = 0.0f;
      bool invalid = false;
      for (long long i = 0; i < tokens; ++i) {
        const long long id = idAt(ids, i);
        if (!amp_shp_id_valid(id, rows)) {
          invalid = true;
          continue;
        }
        if (id < v0 || id >= v1) continue;
        acc[id * dim + d] = amp_shp_accumulate(acc[id * dim + d], g[i * dim + d]);
      }
      for (long long v = v0; v < v1; ++v)
        storeFromF32(dy.dtype(), out.data(), v * dim + d, invalid ? fromBits(amp_shp_nan_bits(0)) : acc[v * dim + d]);
    }
  }
  return out;
}

// The shape the host fills for amp_transpose_<B>; false when it refuses.
bool transposeShape(const Shape& xs, const std::vector<int64_t>& perm, AmpTransposeShape* s) {
  std::vector<long long> shape(xs.begin(), xs.end()), p(perm.begin(), perm.end());
  return amp_shp_transpose_shape(s, static_cast<int>(xs.size()), shape.data(), p.data()) != 0;
}

// amp_transpose_<B>: out[o] = in[source(o)].
Tensor deviceTranspose(const Tensor& x, const std::vector<int64_t>& perm, const AmpTransposeShape& s) {
  Shape outShape(x.shape().size());
  for (size_t d = 0; d < perm.size(); ++d) outShape[d] = x.shape()[perm[d]];
  Tensor out(x.dtype(), outShape);
  EXPECT_EQ(s.elements, out.numel());
  const size_t es = dtypeSize(x.dtype());
  for (long long o = 0; o < s.elements; ++o)
    std::memcpy(out.data() + o * es, x.data() + amp_shp_transpose_source(&s, o) * es, es);
  return out;
}

// amp_gelu_grad_<T> / amp_gelu_grad_tanh_<T>.
Tensor deviceGeluGrad(const Tensor& x, const Tensor& dy, bool tanhForm) {
  Tensor dx(x.dtype(), x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float xv = loadAsF32(x.dtype(), x.data(), i), g = loadAsF32(dy.dtype(), dy.data(), i);
    storeFromF32(x.dtype(), dx.data(), i, tanhForm ? amp_shp_gelu_grad_tanh(xv, g) : amp_shp_gelu_grad(xv, g));
  }
  return dx;
}

// amp_dropout_<T>: one Philox call per group of 4 elements.
Tensor deviceDropout(const Tensor& x, double rate, int64_t seed, int64_t step) {
  const float p = amp_drop_rate(rate), scale = amp_drop_scale(p);
  const long long n = x.numel(), groups = (n + 3) / 4;
  Tensor y(x.dtype(), x.shape());
  for (long long g = 0; g < groups; ++g) {
    unsigned bits[4];
    amp_drop_group_bits(static_cast<unsigned long long>(seed), static_cast<unsigned long long>(step),
                        static_cast<unsigned long long>(g), bits);
    for (int l = 0; l < 4; ++l) {
      const long long i = 4 * g + l;
      if (i >= n) continue;
      const float v = loadAsF32(x.dtype(), x.data(), i);
      storeFromF32(x.dtype(), y.data(), i, amp_drop_apply(v, amp_drop_keep(bits[l], p), scale));
    }
  }
  return y;
}

//===----------------------------------------------------------------------===//
// amp.embedding, amp.embedding_grad
//===----------------------------------------------------------------------===//

std::vector<int64_t> randomIds(int64_t count, int64_t rows, std::mt19937& rng) {
  std::vector<int64_t> ids(static_cast<size_t>(count));
  for (int64_t& id : ids) id = static_cast<int64_t>(rng() % rows);
  return ids;
}

const Shape kIdShapes[] = {{}, {0}, {1}, {7}, {3, 4}, {2, 3, 5}};

TEST(CudaShapeMath, EmbeddingMatchesTheReferenceBitForBit) {
  std::mt19937 rng(3);
  for (DType t : kFloatTypes)
    for (DType l : kIdTypes)
      for (int64_t rows : {int64_t{1}, int64_t{5}, int64_t{300}})
        for (int64_t dim : {int64_t{0}, int64_t{1}, int64_t{3}, int64_t{64}})
          for (const Shape& idShape : kIdShapes) {
            SCOPED_TRACE(testing::Message() << name(t) << " ids " << name(l) << shapeToString(idShape) << " V "
                                            << rows << " D " << dim);
            const Tensor table = randomBytes(t, {rows, dim}, rng);  // any bits, NaN payloads included
            const Tensor ids = idTensor(l, idShape, randomIds(numElements(idShape), rows, rng));
            Shape outShape = idShape;
            outShape.push_back(dim);
            const Tensor ref = reference("amp.embedding", {&table, &ids}, {}, {t, outShape});
            expectSameBits(deviceEmbedding(table, ids), ref, "embedding");
          }
}

// dy rows mixing magnitudes 1e7 apart, so a cell's sum depends on the order its tokens are added.
Tensor orderSensitiveGrad(DType t, const Shape& shape, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(numElements(shape)));
  for (size_t i = 0; i < v.size(); ++i) {
    const int kind = static_cast<int>(rng() % 8);
    v[i] = u(rng) * (kind == 0 ? 1e7f : kind == 1 ? 1e-3f : 1.0f);
    if (kind == 2) v[i] = fromBits(0x00000123u);  // an f32 subnormal
    if (kind == 3 && t != DType::F32) v[i] *= 3000.0f;  // overflows f16 sums, not the f32 accumulator
  }
  return fromValues(t, shape, v);
}

TEST(CudaShapeMath, EmbeddingGradMatchesTheReferenceWithRepeatedIds) {
  std::mt19937 rng(5);
  for (DType t : kFloatTypes)
    for (DType l : kIdTypes)
      for (int64_t rows : {int64_t{1}, int64_t{3}, int64_t{17}, int64_t{100}})
        for (int64_t dim : {int64_t{1}, int64_t{5}, int64_t{64}})
          for (const Shape& idShape : kIdShapes) {
            SCOPED_TRACE(testing::Message() << name(t) << " ids " << name(l) << shapeToString(idShape) << " V "
                                            << rows << " D " << dim);
            const int64_t tokens = numElements(idShape);
            // Few distinct ids: most cells sum many tokens.
            const Tensor ids = idTensor(l, idShape, randomIds(tokens, std::min<int64_t>(rows, 4), rng));
            Shape gradShape = idShape;
            gradShape.push_back(dim);
            const Tensor dy = orderSensitiveGrad(t, gradShape, rng);
            const Tensor ref = reference("amp.embedding_grad", {&ids, &dy}, {{"num_embeddings", rows}},
                                         {t, {rows, dim}});
            for (long long chunks : {1LL, 2LL, 3LL, 7LL, static_cast<long long>(rows) + 5})
              expectSameBits(deviceEmbeddingGrad(ids, dy, rows, chunks), ref, "dtable", true);
          }
}

// The data above is order sensitive: adding each cell's tokens in reverse would change bits, so the
// comparison would catch a kernel that reorders them (atomics, a tree).
TEST(CudaShapeMath, EmbeddingGradDataDependsOnTheTokenOrder) {
  std::mt19937 rng(7);
  const int64_t rows = 3, dim = 16, tokens = 256;
  const Tensor ids = idTensor(DType::I64, {tokens}, randomIds(tokens, rows, rng));
  const Tensor dy = orderSensitiveGrad(DType::F32, {tokens, dim}, rng);
  const Tensor ref =
      reference("amp.embedding_grad", {&ids, &dy}, {{"num_embeddings", rows}}, {DType::F32, {rows, dim}});
  const std::vector<float> g = widenAll(dy);
  std::vector<float> reversed(static_cast<size_t>(rows * dim), 0.0f);
  for (int64_t i = tokens - 1; i >= 0; --i)
    for (int64_t d = 0; d < dim; ++d) reversed[idAt(ids, i) * dim + d] += g[i * dim + d];
  EXPECT_NE(std::memcmp(reversed.data(), ref.data(), ref.nbytes()), 0);
}

// The reference rejects the op; the kernels write NaN: the invalid token's row (embedding), the
// whole table (embedding_grad).
TEST(CudaShapeMath, OutOfRangeIdsAreRejectedAndBecomeNaN) {
  std::mt19937 rng(11);
  const int64_t rows = 6, dim = 4;
  for (DType t : kFloatTypes)
    for (DType l : kIdTypes)
      for (int64_t bad : {int64_t{6}, int64_t{-1}, int64_t{1} << 40, int64_t{std::numeric_limits<int32_t>::min()}}) {
        if (l == DType::I32 && bad != static_cast<int32_t>(bad)) continue;
        SCOPED_TRACE(testing::Message() << name(t) << " ids " << name(l) << " bad " << bad);
        EXPECT_FALSE(amp_shp_id_valid(bad, rows));
        std::vector<int64_t> values = randomIds(8, rows, rng);
        values[5] = bad;
        const Tensor ids = idTensor(l, {2, 4}, values);
        const Tensor table = fromValues(t, {rows, dim}, std::vector<float>(rows * dim, 1.5f));
        EXPECT_FALSE(evalOp("amp.embedding", {&table, &ids}, {}, {t, {2, 4, dim}}).ok());
        const Tensor out = deviceEmbedding(table, ids);
        for (int64_t e = 0; e < out.numel(); ++e) {
          const float v = loadAsF32(t, out.data(), e);
          if (e / dim == 5) ASSERT_TRUE(std::isnan(v)) << e;
          else ASSERT_EQ(v, 1.5f) << e;
        }
        const Tensor dy = fromValues(t, {2, 4, dim}, std::vector<float>(8 * dim, 1.0f));
        EXPECT_FALSE(evalOp("amp.embedding_grad", {&ids, &dy}, {{"num_embeddings", rows}}, {t, {rows, dim}}).ok());
        for (long long chunks : {1LL, 4LL}) {
          const Tensor dt = deviceEmbeddingGrad(ids, dy, rows, chunks);
          for (int64_t e = 0; e < dt.numel(); ++e) ASSERT_TRUE(std::isnan(loadAsF32(t, dt.data(), e))) << e;
        }
      }
  EXPECT_TRUE(amp_shp_id_valid(0, rows));
  EXPECT_TRUE(amp_shp_id_valid(rows - 1, rows));
}

TEST(CudaShapeMath, RowChunksCoverEveryRowOnce) {
  for (long long rows : {1LL, 2LL, 7LL, 64LL, 1000LL})
    for (long long chunks : {1LL, 2LL, 3LL, 8LL, 999LL, 1001LL, 65535LL}) {
      long long next = 0;
      for (long long c = 0; c < chunks; ++c) {
        long long b, e;
        amp_shp_row_chunk(rows, chunks, c, &b, &e);
        if (b >= e) continue;
        ASSERT_EQ(b, next) << rows << " " << chunks << " " << c;
        next = e;
      }
      EXPECT_EQ(next, rows) << rows << " " << chunks;
    }
}

//===----------------------------------------------------------------------===//
// amp.transpose
//===----------------------------------------------------------------------===//

const DType kAnyTypes[] = {DType::U8, DType::Bool, DType::F8E4M3FN, DType::BF16, DType::F16,
                           DType::F32, DType::I32, DType::I64, DType::F64};

void checkTranspose(const Tensor& x, const std::vector<int64_t>& perm) {
  SCOPED_TRACE(testing::Message() << name(x.dtype()) << shapeToString(x.shape()) << " perm " << shapeToString(perm));
  AmpTransposeShape s;
  ASSERT_TRUE(transposeShape(x.shape(), perm, &s));
  ASSERT_LE(s.rank, AMP_SHP_MAX_DIMS);
  Shape outShape(perm.size());
  for (size_t d = 0; d < perm.size(); ++d) outShape[d] = x.shape()[perm[d]];
  const Tensor ref = reference("amp.transpose", {&x}, {{"permutation", perm}}, {x.dtype(), outShape});
  expectSameBits(deviceTranspose(x, perm, s), ref, "transpose");
}

// amp.slice as the transpose kernel's gather from x + offset; amp.concat as one amp_concat_part
// launch per operand: bit copies, against the reference, over ranks 1-4, steps and every axis.
TEST(CudaShapeMath, SliceAndConcatMatchTheReference) {
  std::mt19937 rng(29);
  for (DType t : {DType::F32, DType::BF16, DType::I64, DType::U8})
    for (int rank = 1; rank <= 4; ++rank)
      for (int trial = 0; trial < 6; ++trial) {
        Shape shape(rank);
        for (auto& d : shape) d = 1 + static_cast<int64_t>(rng() % 5);
        const Tensor x = randomBytes(t, shape, rng);
        std::vector<int64_t> starts(rank), limits(rank), steps(rank);
        Shape outShape(rank);
        for (int d = 0; d < rank; ++d) {
          starts[d] = static_cast<int64_t>(rng() % shape[d]);
          limits[d] = starts[d] + 1 + static_cast<int64_t>(rng() % (shape[d] - starts[d]));
          steps[d] = 1 + static_cast<int64_t>(rng() % 3);
          outShape[d] = (limits[d] - starts[d] + steps[d] - 1) / steps[d];
        }
        SCOPED_TRACE(testing::Message() << name(t) << shapeToString(shape) << " starts " << shapeToString(starts)
                                        << " limits " << shapeToString(limits) << " strides " << shapeToString(steps));
        std::vector<long long> xs(shape.begin(), shape.end()), b(starts.begin(), starts.end()),
            e(limits.begin(), limits.end()), st(steps.begin(), steps.end());
        AmpTransposeShape sl;
        long long offset = -1;
        ASSERT_TRUE(amp_shp_slice_shape(&sl, rank, xs.data(), b.data(), e.data(), st.data(), &offset));
        Tensor sliced(t, outShape);
        ASSERT_EQ(sl.elements, sliced.numel());
        const size_t es = dtypeSize(t);
        for (long long o = 0; o < sl.elements; ++o)
          std::memcpy(sliced.data() + o * es, x.data() + (offset + amp_shp_transpose_source(&sl, o)) * es, es);
        expectSameBits(sliced, reference("amp.slice", {&x}, {{"starts", starts}, {"limits", limits}, {"strides", steps}},
                                         {t, outShape}),
                       "slice");
        // Concatenate x with a second tensor along each axis.
        for (int axis = 0; axis < rank; ++axis) {
          Shape otherShape = shape;
          otherShape[axis] = 1 + static_cast<int64_t>(rng() % 3);
          const Tensor y = randomBytes(t, otherShape, rng);
          Shape catShape = shape;
          catShape[axis] += otherShape[axis];
          long long inner = 1;
          for (int d = axis + 1; d < rank; ++d) inner *= shape[d];
          const long long row = catShape[axis] * inner;
          Tensor cat(t, catShape);
          long long at = 0;
          for (const Tensor* part : {&x, &y}) {
            const long long chunk = part->shape()[axis] * inner;
            for (long long i = 0; i < part->numel(); ++i)
              std::memcpy(cat.data() + amp_shp_concat_target(i, chunk, row, at) * es, part->data() + i * es, es);
            at += chunk;
          }
          expectSameBits(cat, reference("amp.concat", {&x, &y}, {{"axis", int64_t{axis}}}, {t, catShape}), "concat");
        }
      }
  // Out-of-range bounds are refused.
  AmpTransposeShape sl;
  long long offset = 0;
  const long long shape[] = {4}, b[] = {3}, e[] = {5}, st[] = {1};
  EXPECT_FALSE(amp_shp_slice_shape(&sl, 1, shape, b, e, st, &offset));
}

TEST(CudaShapeMath, TransposeMatchesTheReferenceForEveryPermutationOfSmallRanks) {
  std::mt19937 rng(13);
  const int64_t sizes[] = {1, 2, 3, 5};
  for (DType t : kAnyTypes)
    for (int rank = 0; rank <= 4; ++rank)
      for (int trial = 0; trial < 3; ++trial) {
        Shape shape(rank);
        for (int64_t& d : shape) d = sizes[rng() % 4];
        const Tensor x = randomBytes(t, shape, rng);
        std::vector<int64_t> perm(rank);
        std::iota(perm.begin(), perm.end(), 0);
        do checkTranspose(x, perm);
        while (std::next_permutation(perm.begin(), perm.end()));
      }
}

TEST(CudaShapeMath, TransposeMatchesTheReferenceForLargerRanks) {
  std::mt19937 rng(17);
  for (DType t : {DType::U8, DType::F16, DType::F32, DType::I64})
    for (int rank = 5; rank <= 8; ++rank)
      for (int trial = 0; trial < 20; ++trial) {
        Shape shape(rank);
        for (int64_t& d : shape) d = 1 + static_cast<int64_t>(rng() % 3);
        std::vector<int64_t> perm(rank);
        std::iota(perm.begin(), perm.end(), 0);
        std::shuffle(perm.begin(), perm.end(), rng);
        checkTranspose(randomBytes(t, shape, rng), perm);
      }
}

// Runs contiguous in the input merge into one dim, so ranks above 8 work when few runs remain;
// size-1 and empty dims, scalars, identity and a large last dim too.
TEST(CudaShapeMath, TransposeMergesDimsAndHandlesEdgeShapes) {
  std::mt19937 rng(19);
  const Shape rank10 = {2, 3, 1, 4, 1, 2, 3, 1, 2, 2};
  const std::vector<int64_t> runs = {8, 9, 4, 5, 6, 7, 0, 1, 2, 3};  // three runs
  AmpTransposeShape s;
  ASSERT_TRUE(transposeShape(rank10, runs, &s));
  EXPECT_EQ(s.rank, 3);
  checkTranspose(randomBytes(DType::F32, rank10, rng), runs);
  std::vector<int64_t> identity(10);
  std::iota(identity.begin(), identity.end(), 0);
  ASSERT_TRUE(transposeShape(rank10, identity, &s));
  EXPECT_EQ(s.rank, 1);
  checkTranspose(randomBytes(DType::BF16, rank10, rng), identity);
  // Ten size-1 dims and one of 5 around them: any order is a copy.
  Shape ones(11, 1);
  ones[4] = 5;
  std::vector<int64_t> perm(11);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  checkTranspose(randomBytes(DType::I64, ones, rng), perm);
  checkTranspose(randomBytes(DType::F32, {}, rng), {});
  ASSERT_TRUE(transposeShape({}, {}, &s));
  EXPECT_EQ(s.rank, 0);
  EXPECT_EQ(s.elements, 1);
  checkTranspose(randomBytes(DType::F16, {3, 0, 2}, rng), {2, 0, 1});
  checkTranspose(randomBytes(DType::F32, {3, 1000}, rng), {1, 0});
  checkTranspose(randomBytes(DType::U8, {7, 1, 9, 1}, rng), {3, 2, 1, 0});
}

TEST(CudaShapeMath, TransposeShapeRefusesWhatTheKernelCannotWalk) {
  AmpTransposeShape s;
  const Shape nine(9, 2);
  std::vector<int64_t> reversed(9);
  std::iota(reversed.rbegin(), reversed.rend(), 0);
  EXPECT_FALSE(transposeShape(nine, reversed, &s));  // nine dims, no two contiguous
  const std::vector<int64_t> eight(reversed.begin() + 1, reversed.end());  // 7, ..., 0
  EXPECT_TRUE(transposeShape(Shape(8, 2), eight, &s));
  EXPECT_EQ(s.rank, 8);
  EXPECT_FALSE(transposeShape({2, 3}, {0, 0}, &s));
  EXPECT_FALSE(transposeShape({2, 3}, {1, 2}, &s));
  EXPECT_FALSE(transposeShape({2, 3}, {-1, 0}, &s));
}

//===----------------------------------------------------------------------===//
// amp.gelu_grad
//===----------------------------------------------------------------------===//

// x and dy values: every 16-bit pattern for bf16 and f16; for f32 the specials, subnormals, a dense
// sweep of [-12, 12] and random bit patterns.
std::vector<float> geluInputs(DType t, std::mt19937& rng) {
  std::vector<float> v;
  if (t != DType::F32) {
    for (uint32_t b = 0; b < 65536; ++b) {
      const uint16_t h = static_cast<uint16_t>(b);
      v.push_back(loadAsF32(t, &h, 0));
    }
    return v;
  }
  v = {0.0f, -0.0f, kInf, -kInf, std::nanf(""), -std::nanf(""), fromBits(0x7f800001u), fromBits(0x00000001u),
       fromBits(0x80000001u), fromBits(0x007fffffu), fromBits(0x807fffffu), fromBits(0x00800000u),
       std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(), 1.0f, -1.0f, 5.0f, -5.0f, 9.5f, -9.5f,
       26.5f, -26.5f, 40.0f, -40.0f, 1e-20f, -1e-20f, 3e9f, -3e9f};
  for (int i = -120000; i <= 120000; ++i) v.push_back(static_cast<float>(i) * 1e-4f);
  for (int i = 0; i < 400000; ++i) v.push_back(fromBits(static_cast<uint32_t>(rng())));
  return v;
}

TEST(CudaShapeMath, GeluGradMatchesTheReferenceBitForBit) {
  std::mt19937 rng(23);
  for (DType t : kFloatTypes) {
    const std::vector<float> xs = geluInputs(t, rng);
    const int64_t n = static_cast<int64_t>(xs.size());
    const Tensor x = fromValues(t, {n}, xs);
    std::vector<float> random(xs);  // dy: the same values shuffled, and all ones
    std::shuffle(random.begin(), random.end(), rng);
    for (const std::vector<float>& dys : {std::vector<float>(xs.size(), 1.0f), random}) {
      const Tensor dy = fromValues(t, {n}, dys);
      for (const char* approx : {"", "none", "tanh"}) {
        SCOPED_TRACE(testing::Message() << name(t) << " approximate '" << approx << "' dy "
                                        << (dys[0] == 1.0f && dys[1] == 1.0f ? "ones" : "random"));
        AttrMap attrs;
        if (*approx) attrs.set("approximate", std::string(approx));
        const Tensor ref = reference("amp.gelu_grad", {&x, &dy}, attrs, {t, {n}});
        expectSameBits(deviceGeluGrad(x, dy, std::string(approx) == "tanh"), ref, "dx", true);
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// amp.dropout
//===----------------------------------------------------------------------===//

TEST(CudaShapeMath, PhiloxMatchesTheReferenceStream) {
  std::mt19937_64 rng(29);
  for (int trial = 0; trial < 20000; ++trial) {
    const uint32_t key[2] = {static_cast<uint32_t>(rng()), static_cast<uint32_t>(rng())};
    uint32_t ctr[4];
    for (uint32_t& c : ctr) c = static_cast<uint32_t>(rng());
    if (trial == 0) std::fill(ctr, ctr + 4, 0u);
    if (trial == 1) std::fill(ctr, ctr + 4, ~0u);
    const std::array<uint32_t, 4> want = philox4x32_10(key, ctr);
    unsigned got[4] = {ctr[0], ctr[1], ctr[2], ctr[3]};
    amp_drop_philox(key[0], key[1], got);
    for (int l = 0; l < 4; ++l) ASSERT_EQ(got[l], want[l]) << "trial " << trial << " word " << l;
  }
}

// Random123's known-answer vectors for philox4x32_10 (kat_vectors; also test/unit/numerics).
TEST(CudaShapeMath, PhiloxMatchesRandom123KnownAnswers) {
  struct Kat {
    unsigned ctr[4], key[2], out[4];
  };
  const Kat kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{~0u, ~0u, ~0u, ~0u}, {~0u, ~0u}, {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const Kat& k : kats) {
    unsigned c[4] = {k.ctr[0], k.ctr[1], k.ctr[2], k.ctr[3]};
    amp_drop_philox(k.key[0], k.key[1], c);
    for (int l = 0; l < 4; ++l) EXPECT_EQ(c[l], k.out[l]) << std::hex << k.ctr[0] << " word " << l;
  }
}

// The counter layout on indices and steps no tensor here could reach: group = index / 4 in the
// low half of the counter (both words), the step in the high half (both words).
TEST(CudaShapeMath, DropoutBitsMatchTheReferenceKeying) {
  std::mt19937_64 rng(31);
  for (int trial = 0; trial < 20000; ++trial) {
    const uint64_t seed = rng(), step = trial % 3 == 0 ? rng() % 1000 : rng();
    const uint64_t index = trial % 2 ? rng() : rng() % 100000;
    unsigned bits[4];
    amp_drop_group_bits(seed, step, index / 4, bits);
    ASSERT_EQ(bits[index % 4], dropoutBits(seed, step, index)) << trial;
    for (float p : {0.0f, 0.1f, 0.5f, 0.999f, 1.0f})
      ASSERT_EQ(amp_drop_keep(bits[index % 4], p), dropoutKeep(seed, step, index, p)) << trial << " p " << p;
    ASSERT_EQ(amp_drop_uniform(bits[index % 4]), uniformFromBits(bits[index % 4]));
  }
}

Tensor dropoutInput(DType t, const Shape& shape, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  std::vector<float> v(static_cast<size_t>(numElements(shape)));
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] = u(rng);
    switch (i % 29) {
      case 3: v[i] = std::nanf(""); break;
      case 7: v[i] = kInf; break;
      case 11: v[i] = -kInf; break;
      case 13: v[i] = -0.0f; break;
      case 17: v[i] = fromBits(0x80000005u); break;  // a negative subnormal (f32)
      case 19: v[i] = 60000.0f; break;               // times the scale overflows f16
      default: break;
    }
  }
  return fromValues(t, shape, v);
}

TEST(CudaShapeMath, DropoutMatchesTheReferenceForRatesSeedsAndSteps) {
  std::mt19937 rng(37);
  const double rates[] = {0.0, 1e-9, 0.1, 1.0 / 3.0, 0.5, 0.9, 0.99999999};
  const int64_t seeds[] = {0, 7, -1, (int64_t{1} << 40) + 5, std::numeric_limits<int64_t>::min(),
                           0x0123456789abcdefLL};
  const int64_t steps[] = {0, 1, 999, (int64_t{1} << 32) + 3, -2};
  const Shape shapes[] = {{}, {1}, {3}, {4}, {2, 513}};
  for (DType t : kFloatTypes)
    for (const Shape& shape : shapes) {
      const Tensor x = dropoutInput(t, shape, rng);
      for (double rate : rates)
        for (int64_t seed : seeds)
          for (int64_t step : steps) {
            SCOPED_TRACE(testing::Message() << name(t) << shapeToString(shape) << " rate " << rate << " seed " << seed
                                            << " step " << step);
            const Tensor ref = reference("amp.dropout", {&x}, {{"rate", rate}, {"seed", seed}}, {t, shape}, step);
            expectSameBits(deviceDropout(x, rate, seed, step), ref, "y", true);
            if (HasFatalFailure()) return;
          }
    }
}

// A rate equal to an element's uniform keeps it (u >= p) and drops every element below it: rates
// taken from the stream itself hit that tie, which random rates almost never do (2^-24).
TEST(CudaShapeMath, DropoutKeepsAnElementWhoseUniformEqualsTheRate) {
  for (DType t : kFloatTypes)
    for (int64_t seed : {int64_t{3}, int64_t{-77}})
      for (int64_t step : {int64_t{0}, int64_t{5} + (int64_t{1} << 33)})
        for (int64_t k : {int64_t{0}, int64_t{1}, int64_t{6}, int64_t{37}}) {
          const double rate = uniformFromBits(
              dropoutBits(static_cast<uint64_t>(seed), static_cast<uint64_t>(step), static_cast<uint64_t>(k)));
          SCOPED_TRACE(testing::Message() << name(t) << " seed " << seed << " step " << step << " element " << k
                                          << " rate " << rate);
          ASSERT_EQ(static_cast<double>(amp_drop_rate(rate)), rate);  // exact in f32: the tie survives
          const Tensor x = fromValues(t, {41}, std::vector<float>(41, 1.0f));
          const Tensor ref = reference("amp.dropout", {&x}, {{"rate", rate}, {"seed", seed}}, {t, {41}}, step);
          const Tensor y = deviceDropout(x, rate, seed, step);
          expectSameBits(y, ref, "y", true);
          EXPECT_NE(loadAsF32(t, y.data(), k), 0.0f);
        }
}

// Both halves of the step reach the mask (a kernel that truncated the step to 32 bits would pass
// only steps below 2^32), and rate 0 is the identity bit for bit.
TEST(CudaShapeMath, DropoutMaskDependsOnTheWholeStep) {
  std::mt19937 rng(41);
  const Tensor x = dropoutInput(DType::F32, {4096}, rng);
  const Tensor a = deviceDropout(x, 0.5, 7, 3), b = deviceDropout(x, 0.5, 7, 3 + (int64_t{1} << 32));
  const Tensor c = deviceDropout(x, 0.5, 7, 4);
  EXPECT_FALSE(a.bitwiseEquals(b));
  EXPECT_FALSE(a.bitwiseEquals(c));
  expectSameBits(deviceDropout(x, 0.0, 7, 3), x, "rate 0", true);
}

}  // namespace
}  // namespace amp::rt
