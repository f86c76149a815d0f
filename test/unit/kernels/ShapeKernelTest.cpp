// The shape kernels of runtime/kernels/cuda/ShapeKernels.cu, their own source run on the host
// through BlockEmulation.h, against the reference executor bit for bit: amp_embedding and
// amp_embedding_grad (every (gx, gy) grid, repeated ids, order-sensitive sums, out-of-range ids),
// amp_transpose (every element size and permutation of small ranks), amp.slice through
// amp_transpose, amp.slice_grad through amp_zero_bytes then amp_scatter, amp.concat through
// amp_concat_part, amp_gelu_grad (both forms), and amp_dropout (rates, seeds and steps whose high
// halves matter, the mask bits from the reference's Philox stream), in f32, bf16 and f16, on grids
// smaller than the work (the grid-stride loops take several turns) and in both schedules.
// ShapeMathTest.cpp checks ShapeMath.h's formulas over many more values.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>

#include "gtest/gtest.h"
#include "runtime/numerics/Philox.h"
#include "test/unit/kernels/KernelTestSupport.h"
#include "test/unit/common/BlockEmulation.h"
#include "runtime/kernels/math/HostDevice.h"
#include "runtime/kernels/cuda/DeviceIO.cuh"
#include "runtime/kernels/math/ShapeMath.h"
#include "runtime/kernels/cuda/ShapeKernels.cu"

namespace amp::rt {
namespace {

using namespace kerneltest;

constexpr float kInf = std::numeric_limits<float>::infinity();
const DType kFloatTypes[] = {DType::F32, DType::BF16, DType::F16};
const DType kIdTypes[] = {DType::I64, DType::I32};

// Grids of (blocks, threads): one thread doing everything, grids far smaller than the work (the
// grid-stride loops take several turns), and the 256-thread blocks the device launches.
struct Grid {
  unsigned blocks, threads;
};
const Grid kGrids[] = {{1, 1}, {2, 32}, {3, 256}};

// Runs `kernel` on each grid, forwards on even ones and in reverse on odd ones, with `check` after each.
template <class Kernel, class Check>
void onEveryGrid(Kernel&& kernel, Check&& check) {
  for (size_t g = 0; g < std::size(kGrids); ++g) {
    SCOPED_TRACE(testing::Message() << "grid " << kGrids[g].blocks << " x " << kGrids[g].threads);
    ASSERT_EQ(emu::launch({kGrids[g].blocks, 1, 1}, {kGrids[g].threads, 1, 1}, kernel,
                          g % 2 ? emu::Schedule::Reverse : emu::Schedule::Forward),
              "");
    check();
  }
}

// Every byte of every element; with `anyNaN`, a NaN matches any NaN (the GPU's arithmetic makes its
// NaN canonical, docs/numerics.md). Bit copies must keep every payload.
void expectSameBytes(const Tensor& device, const Tensor& ref, const char* what, bool anyNaN = false) {
  ASSERT_EQ(device.dtype(), ref.dtype()) << what;
  ASSERT_EQ(device.numel(), ref.numel()) << what;
  const size_t es = dtypeSize(ref.dtype());
  for (int64_t i = 0; i < ref.numel(); ++i) {
    if (std::memcmp(device.data() + i * es, ref.data() + i * es, es) == 0) continue;
    if (anyNaN && std::isnan(loadAsF32(ref.dtype(), device.data(), i)) && std::isnan(loadAsF32(ref.dtype(), ref.data(), i)))
      continue;
    uint64_t a = 0, b = 0;
    std::memcpy(&a, device.data() + i * es, es);
    std::memcpy(&b, ref.data() + i * es, es);
    FAIL() << what << "[" << i << "]: bits 0x" << std::hex << a << " vs reference 0x" << b;
  }
}

Tensor referenceAt(std::string_view op, const std::vector<const Tensor*>& operands, const AttrMap& attrs,
                   const TensorType& type, int64_t step = 0) {
  EvalContext ctx;
  ctx.step = step;
  auto out = evalReferenceOp(op, operands, attrs, {type}, ctx);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() && out->size() == 1 ? (*out)[0] : Tensor();
}

Tensor randomBytes(DType t, const Shape& shape, std::mt19937& rng) {
  Tensor out(t, shape);
  for (size_t b = 0; b < out.nbytes(); ++b) out.data()[b] = static_cast<uint8_t>(rng());
  return out;
}

Tensor idTensor(DType t, const Shape& shape, const std::vector<int64_t>& values) {
  Tensor out(t, shape);
  for (size_t i = 0; i < values.size(); ++i) {
    if (t == DType::I64) out.as<int64_t>()[i] = values[i];
    else out.as<int32_t>()[i] = static_cast<int32_t>(values[i]);
  }
  return out;
}

std::vector<int64_t> randomIds(int64_t count, int64_t rows, std::mt19937& rng) {
  std::vector<int64_t> ids(static_cast<size_t>(count));
  for (int64_t& id : ids) id = static_cast<int64_t>(rng() % rows);
  return ids;
}

//===----------------------------------------------------------------------===//
// The entry points by element type and id type
//===----------------------------------------------------------------------===//

#define AMP_TEST_BY_ID_TYPE(call, tname)                                                  \
  if (l == DType::I64) call(tname, i64, long long);                                       \
  else call(tname, i32, int);
#define AMP_TEST_BY_TYPE(call)                                                            \
  switch (typeCode(t)) {                                                                  \
    case 0: AMP_TEST_BY_ID_TYPE(call, f32) break;                                         \
    case 1: AMP_TEST_BY_ID_TYPE(call, bf16) break;                                        \
    default: AMP_TEST_BY_ID_TYPE(call, f16) break;                                        \
  }

void embeddingKernel(DType t, DType l, const void* table, const void* ids, void* out, long long tokens, long long rows,
                     long long dim) {
#define AMP_TEST_CALL(tname, lname, L) \
  amp_embedding_##tname##_##lname(table, static_cast<const L*>(ids), out, tokens, rows, dim)
  AMP_TEST_BY_TYPE(AMP_TEST_CALL)
#undef AMP_TEST_CALL
}

void embeddingGradKernel(DType t, DType l, const void* ids, const void* dy, float* acc, void* dtable,
                         long long tokens, long long rows, long long dim) {
#define AMP_TEST_CALL(tname, lname, L) \
  amp_embedding_grad_##tname##_##lname(static_cast<const L*>(ids), dy, acc, dtable, tokens, rows, dim)
  AMP_TEST_BY_TYPE(AMP_TEST_CALL)
#undef AMP_TEST_CALL
}

using CopyKernel = void (*)(const void*, void*, AmpTransposeShape);
CopyKernel transposeKernel(size_t bytes) {
  return bytes == 1 ? amp_transpose_1 : bytes == 2 ? amp_transpose_2 : bytes == 4 ? amp_transpose_4 : amp_transpose_8;
}
CopyKernel scatterKernel(size_t bytes) {
  return bytes == 1 ? amp_scatter_1 : bytes == 2 ? amp_scatter_2 : bytes == 4 ? amp_scatter_4 : amp_scatter_8;
}
using ConcatKernel = void (*)(const void*, void*, long long, long long, long long, long long);
ConcatKernel concatKernel(size_t bytes) {
  return bytes == 1 ? amp_concat_part_1 : bytes == 2 ? amp_concat_part_2 : bytes == 4 ? amp_concat_part_4 : amp_concat_part_8;
}

using GeluGradKernel = void (*)(const void*, const void*, void*, long long);
const GeluGradKernel kGeluGrad[2][3] = {{amp_gelu_grad_f32, amp_gelu_grad_bf16, amp_gelu_grad_f16},
                                        {amp_gelu_grad_tanh_f32, amp_gelu_grad_tanh_bf16, amp_gelu_grad_tanh_f16}};
using DropoutKernel = void (*)(const void*, void*, long long, long long, double, const long long*);
const DropoutKernel kDropout[3] = {amp_dropout_f32, amp_dropout_bf16, amp_dropout_f16};

//===----------------------------------------------------------------------===//
// amp.embedding, amp.embedding_grad
//===----------------------------------------------------------------------===//

const Shape kIdShapes[] = {{}, {0}, {1}, {7}, {3, 4}, {2, 3, 5}};

TEST(CudaShapeKernel, EmbeddingMatchesTheReferenceBitForBit) {
  std::mt19937 rng(3);
  for (DType t : kFloatTypes)
    for (DType l : kIdTypes)
      for (int64_t rows : {int64_t{1}, int64_t{5}, int64_t{300}})
        for (int64_t dim : {int64_t{0}, int64_t{1}, int64_t{3}, int64_t{64}})
          for (const Shape& idShape : kIdShapes) {
            SCOPED_TRACE(testing::Message() << name(t) << " ids " << dtypeName(l) << shapeToString(idShape) << " V "
                                            << rows << " D " << dim);
            const Tensor table = randomBytes(t, {rows, dim}, rng);  // any bits, NaN payloads included
            const Tensor ids = idTensor(l, idShape, randomIds(numElements(idShape), rows, rng));
            Shape outShape = idShape;
            outShape.push_back(dim);
            const Tensor ref = referenceAt("amp.embedding", {&table, &ids}, {}, {t, outShape});
            Tensor out(t, outShape);
            onEveryGrid([&] { embeddingKernel(t, l, table.data(), ids.data(), out.data(), ids.numel(), rows, dim); },
                        [&] { expectSameBytes(out, ref, "embedding"); });
          }
}

// dy rows mixing magnitudes 1e7 apart, so a cell's sum depends on the order its tokens are added.
Tensor orderSensitiveGrad(DType t, const Shape& shape, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(numElements(shape)));
  for (size_t i = 0; i < v.size(); ++i) {
    const int kind = static_cast<int>(rng() % 8);
    v[i] = u(rng) * (kind == 0 ? 1e7f : kind == 1 ? 1e-3f : 1.0f);
    if (kind == 2) v[i] = __uint_as_float(0x00000123u);  // an f32 subnormal
    if (kind == 3 && t != DType::F32) v[i] *= 3000.0f;  // overflows f16 sums, not the f32 accumulator
    if (kind == 4 && rng() % 50 == 0) v[i] = rng() % 2 ? kInf : std::nanf("");
  }
  return fromValues(t, shape, v);
}

// The device's call (CudaShapeActions.cpp): f32 accumulates in dtable itself, bf16 and f16 in
// scratch that starts as garbage. Grids (gx, gy, threads): gy chunks of table rows, gx * threads
// columns per turn.
struct GradGrid {
  unsigned x, y, threads;
};

Tensor deviceEmbeddingGrad(const Tensor& ids, const Tensor& dy, long long rows, GradGrid grid, emu::Schedule schedule) {
  const long long dim = dy.shape().back();
  Tensor dtable(dy.dtype(), {rows, dim});
  std::vector<float> scratch(static_cast<size_t>(rows * dim), std::nanf("1"));
  float* acc = dy.dtype() == DType::F32 ? dtable.as<float>() : scratch.data();
  if (dy.dtype() == DType::F32) std::fill(acc, acc + rows * dim, std::nanf("1"));
  EXPECT_EQ(emu::launch({grid.x, grid.y, 1}, {grid.threads, 1, 1},
                        [&] {
                          embeddingGradKernel(dy.dtype(), ids.dtype(), ids.data(), dy.data(), acc, dtable.data(),
                                              ids.numel(), rows, dim);
                        },
                        schedule),
            "");
  return dtable;
}

TEST(CudaShapeKernel, EmbeddingGradMatchesTheReferenceOnEveryGrid) {
  std::mt19937 rng(5);
  for (DType t : kFloatTypes)
    for (DType l : kIdTypes)
      for (int64_t rows : {int64_t{1}, int64_t{3}, int64_t{17}, int64_t{100}})
        for (int64_t dim : {int64_t{1}, int64_t{5}, int64_t{64}})
          for (const Shape& idShape : kIdShapes) {
            SCOPED_TRACE(testing::Message() << name(t) << " ids " << dtypeName(l) << shapeToString(idShape) << " V "
                                            << rows << " D " << dim);
            const int64_t tokens = numElements(idShape);
            // Few distinct ids: most cells sum many tokens.
            const Tensor ids = idTensor(l, idShape, randomIds(tokens, std::min<int64_t>(rows, 4), rng));
            Shape gradShape = idShape;
            gradShape.push_back(dim);
            const Tensor dy = orderSensitiveGrad(t, gradShape, rng);
            const Tensor ref =
                referenceAt("amp.embedding_grad", {&ids, &dy}, {{"num_embeddings", rows}}, {t, {rows, dim}});
            const GradGrid grids[] = {{1, 1, 256}, {2, 3, 2}, {1, static_cast<unsigned>(rows) + 5, 1}, {3, 2, 32}};
            for (size_t g = 0; g < std::size(grids); ++g) {
              SCOPED_TRACE(testing::Message() << "grid (" << grids[g].x << ", " << grids[g].y << ") x "
                                              << grids[g].threads);
              expectSameBytes(deviceEmbeddingGrad(ids, dy, rows, grids[g],
                                                  g % 2 ? emu::Schedule::Reverse : emu::Schedule::Forward),
                              ref, "dtable", true);
              if (HasFatalFailure()) return;
            }
          }
}

// The reference rejects the op; the kernels write NaN: the invalid token's row (embedding), the
// whole table (embedding_grad).
TEST(CudaShapeKernel, OutOfRangeIdsBecomeNaN) {
  std::mt19937 rng(11);
  const int64_t rows = 6, dim = 4;
  for (DType t : kFloatTypes)
    for (DType l : kIdTypes)
      for (int64_t bad : {int64_t{6}, int64_t{-1}, int64_t{1} << 40, int64_t{std::numeric_limits<int32_t>::min()}}) {
        if (l == DType::I32 && bad != static_cast<int32_t>(bad)) continue;
        SCOPED_TRACE(testing::Message() << name(t) << " ids " << dtypeName(l) << " bad " << bad);
        std::vector<int64_t> values = randomIds(8, rows, rng);
        values[5] = bad;
        const Tensor ids = idTensor(l, {2, 4}, values);
        const Tensor table = fromValues(t, {rows, dim}, std::vector<float>(rows * dim, 1.5f));
        EXPECT_FALSE(evalReferenceOp("amp.embedding", {&table, &ids}, {}, {{t, {2, 4, dim}}}, EvalContext{}).ok());
        Tensor out(t, {2, 4, dim});
        onEveryGrid([&] { embeddingKernel(t, l, table.data(), ids.data(), out.data(), 8, rows, dim); },
                    [&] {
                      for (int64_t e = 0; e < out.numel(); ++e) {
                        const uint32_t want = e / dim == 5 ? amp_shp_nan_bits(typeCode(t)) : elementBits(table, 0);
                        ASSERT_EQ(elementBits(out, e), want) << e;
                      }
                    });
        const Tensor dy = fromValues(t, {2, 4, dim}, std::vector<float>(8 * dim, 1.0f));
        for (GradGrid grid : {GradGrid{1, 1, 256}, GradGrid{2, 4, 1}}) {
          const Tensor dt = deviceEmbeddingGrad(ids, dy, rows, grid, emu::Schedule::Forward);
          for (int64_t e = 0; e < dt.numel(); ++e) ASSERT_EQ(elementBits(dt, e), amp_shp_nan_bits(typeCode(t))) << e;
        }
      }
}

//===----------------------------------------------------------------------===//
// amp.transpose, amp.slice, amp.slice_grad, amp.concat
//===----------------------------------------------------------------------===//

const DType kAnyTypes[] = {DType::U8, DType::F8E4M3FN, DType::BF16, DType::F16, DType::F32, DType::I32, DType::I64, DType::F64};

void checkTranspose(const Tensor& x, const std::vector<int64_t>& perm) {
  SCOPED_TRACE(testing::Message() << dtypeName(x.dtype()) << shapeToString(x.shape()) << " perm "
                                  << shapeToString(perm));
  std::vector<long long> shape(x.shape().begin(), x.shape().end()), p(perm.begin(), perm.end());
  AmpTransposeShape s;
  ASSERT_TRUE(amp_shp_transpose_shape(&s, static_cast<int>(shape.size()), shape.data(), p.data()));
  Shape outShape(perm.size());
  for (size_t d = 0; d < perm.size(); ++d) outShape[d] = x.shape()[perm[d]];
  const Tensor ref = referenceAt("amp.transpose", {&x}, {{"permutation", perm}}, {x.dtype(), outShape});
  Tensor out(x.dtype(), outShape);
  const CopyKernel kernel = transposeKernel(dtypeSize(x.dtype()));
  onEveryGrid([&] { kernel(x.data(), out.data(), s); }, [&] { expectSameBytes(out, ref, "transpose"); });
}

TEST(CudaShapeKernel, TransposeMatchesTheReferenceForEveryPermutationOfSmallRanks) {
  std::mt19937 rng(13);
  const int64_t sizes[] = {1, 2, 3, 5};
  for (DType t : kAnyTypes)
    for (int rank = 0; rank <= 4; ++rank) {
      Shape shape(rank);
      for (int64_t& d : shape) d = sizes[rng() % 4];
      const Tensor x = randomBytes(t, shape, rng);
      std::vector<int64_t> perm(rank);
      std::iota(perm.begin(), perm.end(), 0);
      do checkTranspose(x, perm);
      while (std::next_permutation(perm.begin(), perm.end()));
    }
  checkTranspose(randomBytes(DType::F32, {3, 1000}, rng), {1, 0});
  checkTranspose(randomBytes(DType::U8, {7, 1, 9, 1}, rng), {3, 2, 1, 0});
  checkTranspose(randomBytes(DType::I64, {2, 1, 3, 2, 1, 2, 3, 2}, rng), {7, 5, 3, 1, 0, 2, 4, 6});
}

// Random bounds and steps over ranks 1-4: amp.slice is amp_transpose on x + offset; amp.slice_grad
// is amp_zero_bytes over dx, then amp_scatter into x's elements; amp.concat is one amp_concat_part
// per operand along each axis.
TEST(CudaShapeKernel, SliceSliceGradAndConcatMatchTheReference) {
  std::mt19937 rng(29);
  for (DType t : {DType::F32, DType::BF16, DType::I64, DType::U8})
    for (int rank = 1; rank <= 4; ++rank)
      for (int trial = 0; trial < 4; ++trial) {
        Shape shape(rank);
        for (auto& d : shape) d = 1 + static_cast<int64_t>(rng() % 5);
        const Tensor x = randomBytes(t, shape, rng);
        std::vector<int64_t> starts(rank), limits(rank), steps(rank);
        Shape outShape(rank);
        for (int d = 0; d < rank; ++d) {
          starts[d] = static_cast<int64_t>(rng() % shape[d]);
          limits[d] = starts[d] + static_cast<int64_t>(rng() % (shape[d] - starts[d] + 1));  // empty slices too
          steps[d] = 1 + static_cast<int64_t>(rng() % 3);
          outShape[d] = (limits[d] - starts[d] + steps[d] - 1) / steps[d];
        }
        SCOPED_TRACE(testing::Message() << dtypeName(t) << shapeToString(shape) << " starts " << shapeToString(starts)
                                        << " limits " << shapeToString(limits) << " strides " << shapeToString(steps));
        const AttrMap sliceAttrs = {{"starts", starts}, {"limits", limits}, {"strides", steps}};
        std::vector<long long> xs(shape.begin(), shape.end()), b(starts.begin(), starts.end()),
            e(limits.begin(), limits.end()), st(steps.begin(), steps.end());
        AmpTransposeShape sl;
        long long offset = -1;
        ASSERT_TRUE(amp_shp_slice_shape(&sl, rank, xs.data(), b.data(), e.data(), st.data(), &offset));
        const size_t es = dtypeSize(t);
        Tensor sliced(t, outShape);
        ASSERT_EQ(sl.elements, sliced.numel());
        const Tensor sliceRef = referenceAt("amp.slice", {&x}, sliceAttrs, {t, outShape});
        onEveryGrid([&] { transposeKernel(es)(x.data() + offset * es, sliced.data(), sl); },
                    [&] { expectSameBytes(sliced, sliceRef, "slice"); });
        // slice_grad: dy the slice's shape, dx x's.
        const Tensor dy = randomBytes(t, outShape, rng);
        const Tensor gradRef = referenceAt("amp.slice_grad", {&dy}, sliceAttrs, {t, shape});
        Tensor dx = randomBytes(t, shape, rng);  // garbage, as a fresh buffer holds
        // Two launches, as the device enqueues them: the zeroing, then the scatter.
        for (const Grid& grid : kGrids) {
          ASSERT_EQ(emu::launch({grid.blocks, 1, 1}, {grid.threads, 1, 1},
                                [&] { amp_zero_bytes(dx.data(), static_cast<long long>(dx.nbytes())); }),
                    "");
          if (sl.elements > 0)
            ASSERT_EQ(emu::launch({grid.blocks, 1, 1}, {grid.threads, 1, 1},
                                  [&] { scatterKernel(es)(dy.data(), dx.data() + offset * es, sl); },
                                  emu::Schedule::Reverse),
                      "");
          expectSameBytes(dx, gradRef, "slice_grad");
        }
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
          const Tensor catRef = referenceAt("amp.concat", {&x, &y}, {{"axis", int64_t{axis}}}, {t, catShape});
          Tensor cat(t, catShape);
          onEveryGrid(
              [&] {
                long long at = 0;
                for (const Tensor* part : {&x, &y}) {
                  const long long chunk = part->shape()[axis] * inner;
                  concatKernel(es)(part->data(), cat.data(), part->numel(), chunk, row, at);
                  at += chunk;
                }
              },
              [&] { expectSameBytes(cat, catRef, "concat"); });
        }
      }
}

//===----------------------------------------------------------------------===//
// amp.gelu_grad
//===----------------------------------------------------------------------===//

// bf16 and f16: every 16-bit pattern as x, shuffled as dy. f32: the specials, subnormals and a
// sweep of [-12, 12] (ShapeMathTest.cpp runs many more through the formula).
std::vector<float> geluInputs(DType t) {
  std::vector<float> v;
  if (t != DType::F32) {
    for (uint32_t b = 0; b < 65536; ++b) {
      const uint16_t h = static_cast<uint16_t>(b);
      v.push_back(loadAsF32(t, &h, 0));
    }
    return v;
  }
  v = {0.0f, -0.0f, kInf, -kInf, std::nanf(""), __uint_as_float(0x00000001u), __uint_as_float(0x807fffffu),
       std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(), 26.5f, -26.5f, 1e-20f, 3e9f};
  for (int i = -12000; i <= 12000; ++i) v.push_back(static_cast<float>(i) * 1e-3f);
  return v;
}

TEST(CudaShapeKernel, GeluGradMatchesTheReferenceBitForBit) {
  std::mt19937 rng(23);
  for (DType t : kFloatTypes) {
    const std::vector<float> xs = geluInputs(t);
    const int64_t n = static_cast<int64_t>(xs.size());
    const Tensor x = fromValues(t, {n}, xs);
    std::vector<float> dys(xs);
    std::shuffle(dys.begin(), dys.end(), rng);
    const Tensor dy = fromValues(t, {n}, dys);
    for (int tanhForm = 0; tanhForm < 2; ++tanhForm) {
      SCOPED_TRACE(testing::Message() << name(t) << (tanhForm ? " tanh" : " none"));
      AttrMap attrs;
      if (tanhForm) attrs.set("approximate", std::string("tanh"));
      const Tensor ref = referenceAt("amp.gelu_grad", {&x, &dy}, attrs, {t, {n}});
      Tensor dx(t, {n});
      onEveryGrid([&] { kGeluGrad[tanhForm][typeCode(t)](x.data(), dy.data(), dx.data(), n); },
                  [&] { expectSameBytes(dx, ref, "dx", true); });
      // In place over dy, as the device may run it.
      Tensor inPlace = dy;
      ASSERT_EQ(emu::launch({2, 1, 1}, {64, 1, 1},
                            [&] { kGeluGrad[tanhForm][typeCode(t)](x.data(), inPlace.data(), inPlace.data(), n); }),
                "");
      expectSameBytes(inPlace, ref, "dx in place", true);
    }
  }
}

//===----------------------------------------------------------------------===//
// amp.dropout
//===----------------------------------------------------------------------===//

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
      case 17: v[i] = __uint_as_float(0x80000005u); break;  // a negative subnormal (f32)
      case 19: v[i] = 60000.0f; break;                       // times the scale overflows f16
      default: break;
    }
  }
  return fromValues(t, shape, v);
}

// The device's call: the step is read from a device word when the kernel runs.
Tensor deviceDropout(const Tensor& x, double rate, int64_t seed, int64_t step, Grid grid,
                     emu::Schedule schedule = emu::Schedule::Forward) {
  Tensor y(x.dtype(), x.shape());
  const long long stepWord = step;
  EXPECT_EQ(emu::launch({grid.blocks, 1, 1}, {grid.threads, 1, 1},
                        [&] { kDropout[typeCode(x.dtype())](x.data(), y.data(), x.numel(), seed, rate, &stepWord); },
                        schedule),
            "");
  return y;
}

TEST(CudaShapeKernel, DropoutMatchesTheReferenceForRatesSeedsAndSteps) {
  std::mt19937 rng(37);
  const double rates[] = {0.0, 1e-9, 0.1, 1.0 / 3.0, 0.5, 0.99999999};
  const int64_t seeds[] = {0, -1, (int64_t{1} << 40) + 5, std::numeric_limits<int64_t>::min()};
  const int64_t steps[] = {0, 999, (int64_t{1} << 32) + 3, -2};
  const Shape shapes[] = {{}, {0}, {3}, {4}, {2, 513}};
  for (DType t : kFloatTypes)
    for (const Shape& shape : shapes) {
      const Tensor x = dropoutInput(t, shape, rng);
      for (double rate : rates)
        for (int64_t seed : seeds)
          for (int64_t step : steps) {
            SCOPED_TRACE(testing::Message() << name(t) << shapeToString(shape) << " rate " << rate << " seed " << seed
                                            << " step " << step);
            const Tensor ref = referenceAt("amp.dropout", {&x}, {{"rate", rate}, {"seed", seed}}, {t, shape}, step);
            for (size_t g = 0; g < std::size(kGrids); ++g)
              expectSameBytes(deviceDropout(x, rate, seed, step, kGrids[g],
                                            g % 2 ? emu::Schedule::Reverse : emu::Schedule::Forward),
                              ref, "y", true);
            if (HasFatalFailure()) return;
          }
    }
}

// The mask bit for bit: on ones, every element is 0 or the scale, and which one is the
// reference's dropoutKeep of the element's index; a rate equal to an element's uniform keeps it.
TEST(CudaShapeKernel, DropoutMaskIsTheReferencesPhiloxStream) {
  const int64_t n = 1001;
  for (DType t : kFloatTypes)
    for (int64_t seed : {int64_t{3}, int64_t{-77}})
      for (int64_t step : {int64_t{0}, int64_t{5} + (int64_t{1} << 33)})
        for (int64_t k : {int64_t{0}, int64_t{1}, int64_t{6}, int64_t{998}}) {
          const uint64_t useed = static_cast<uint64_t>(seed), ustep = static_cast<uint64_t>(step);
          const double rate = uniformFromBits(dropoutBits(useed, ustep, static_cast<uint64_t>(k)));
          SCOPED_TRACE(testing::Message() << name(t) << " seed " << seed << " step " << step << " tie at " << k);
          const Tensor x = fromValues(t, {n}, std::vector<float>(n, 1.0f));
          const Tensor y = deviceDropout(x, rate, seed, step, {2, 32});
          const Tensor ref = referenceAt("amp.dropout", {&x}, {{"rate", rate}, {"seed", seed}}, {t, {n}}, step);
          expectSameBytes(y, ref, "y");
          int64_t kept = 0;
          for (int64_t i = 0; i < n; ++i) {
            const bool keep = dropoutKeep(useed, ustep, static_cast<uint64_t>(i), static_cast<float>(rate));
            ASSERT_EQ(loadAsF32(t, y.data(), i) != 0.0f, keep) << i;
            kept += keep;
          }
          EXPECT_NE(loadAsF32(t, y.data(), k), 0.0f);
          EXPECT_GT(kept, 0);
          EXPECT_LT(kept, n);
        }
}

// Both halves of the step reach the mask, and rate 0 is the identity bit for bit.
TEST(CudaShapeKernel, DropoutMaskDependsOnTheWholeStep) {
  std::mt19937 rng(41);
  const Tensor x = dropoutInput(DType::F32, {4096}, rng);
  const Tensor a = deviceDropout(x, 0.5, 7, 3, {3, 256}), b = deviceDropout(x, 0.5, 7, 3 + (int64_t{1} << 32), {3, 256});
  EXPECT_FALSE(a.bitwiseEquals(b));
  EXPECT_FALSE(a.bitwiseEquals(deviceDropout(x, 0.5, 7, 4, {3, 256})));
  expectSameBytes(deviceDropout(x, 0.0, 7, 3, {3, 256}), x, "rate 0", true);
}

}  // namespace
}  // namespace amp::rt
