// matmul, linear, conv2d, max/avg pooling. Accumulation is in f32, one rounding per multiply and per add
// (this library is compiled with -ffp-contract=off so no FMA is formed), in the order documented
// at each kernel and in docs/reference-executor.md.
#include <cmath>
#include <limits>

#include "runtime/plan/PoolWindow.h"
#include "runtime/reference/ReferenceCommon.h"
#include "runtime/WindowGeometry.h"
#include "runtime/numerics/Convert.h"

namespace amp::rt::ref {

absl::StatusOr<Tensor> evalMatmul(const OpCall& c) {
  REF_RETURN_IF_ERROR(expectOperands(c, 2, 2));
  REF_RETURN_IF_ERROR(expectFloatOperand(c, 0));
  REF_RETURN_IF_ERROR(expectSameDType(c, 0, 1));
  const bool ta = c.attrsOf<MatmulAttrs>().transposeA, tb = c.attrsOf<MatmulAttrs>().transposeB;
  const Shape& sa = c.in(0).shape();
  const Shape& sb = c.in(1).shape();
  if (sa.size() < 2 || sb.size() < 2)
    return c.error("operands must have rank >= 2, got ", typeString(c.in(0)), " and ", typeString(c.in(1)));
  const size_t ra = sa.size(), rb = sb.size();
  const int64_t M = ta ? sa[ra - 1] : sa[ra - 2], K = ta ? sa[ra - 2] : sa[ra - 1];
  const int64_t Kb = tb ? sb[rb - 1] : sb[rb - 2], N = tb ? sb[rb - 2] : sb[rb - 1];
  if (K != Kb)
    return c.error("contraction dims differ: ", typeString(c.in(0)), (ta ? " (transposed)" : ""), " vs ",
                   typeString(c.in(1)), (tb ? " (transposed)" : ""));
  const Shape batchA(sa.begin(), sa.end() - 2), batchB(sb.begin(), sb.end() - 2);
  REF_ASSIGN_OR_RETURN(Shape batch, broadcastShapes(c, {batchA, batchB}));
  std::vector<int64_t> mapA = broadcastIndexMap(batchA, batch), mapB = broadcastIndexMap(batchB, batch);
  std::vector<float> a = widen(c.in(0)), b = widen(c.in(1));
  Shape outShape = batch;
  outShape.push_back(M);
  outShape.push_back(N);
  std::vector<float> out(static_cast<size_t>(numElements(outShape)));
  // Copies batch matrix `p` of op(X) into row-major rows x cols (undoing a transpose).
  auto pack = [](const std::vector<float>& v, int64_t p, int64_t rows, int64_t cols, bool t) {
    std::vector<float> m(static_cast<size_t>(rows * cols));
    const float* src = v.data() + p * rows * cols;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t col = 0; col < cols; ++col) m[r * cols + col] = t ? src[col * rows + r] : src[r * cols + col];
    return m;
  };
  for (size_t bi = 0; bi < mapA.size(); ++bi) {
    std::vector<float> pa = pack(a, mapA[bi], M, K, ta), pb = pack(b, mapB[bi], K, N, tb);
    float* cm = out.data() + bi * M * N;
    // m-k-n order: each out[m][n] still sees acc = fl(acc + fl(a*b)) for k = 0, 1, ... from +0
    // (the order the contract documents), while the n loop vectorises.
    for (int64_t m = 0; m < M; ++m) {
      float* crow = cm + m * N;
      for (int64_t k = 0; k < K; ++k) {
        const float av = pa[m * K + k];
        const float* brow = pb.data() + k * N;
        for (int64_t n = 0; n < N; ++n) crow[n] += av * brow[n];
      }
    }
  }
  return narrow(c.in(0).dtype(), outShape, out);
}

absl::StatusOr<Tensor> evalLinear(const OpCall& c) {
  REF_RETURN_IF_ERROR(expectOperands(c, 2, 3));
  REF_RETURN_IF_ERROR(expectFloatOperand(c, 0));
  for (size_t i = 1; i < c.numOperands(); ++i) REF_RETURN_IF_ERROR(expectSameDType(c, 0, i));
  const bool tw = c.attrsOf<LinearAttrs>().transposeW;
  const std::string_view activation = linearActivationKeyword(c.attrsOf<LinearAttrs>().activation);
  const Shape& xs = c.in(0).shape();
  const Shape& ws = c.in(1).shape();
  if (xs.size() < 2) return c.error("input must be [..., in] with rank >= 2, got ", typeString(c.in(0)));
  REF_RETURN_IF_ERROR(expectRank(c, 1, 2));
  const int64_t in = xs.back(), out = tw ? ws[0] : ws[1], win = tw ? ws[1] : ws[0];
  if (in != win)
    return c.error("input ", typeString(c.in(0)), " has ", in, " features but weight ", typeString(c.in(1)),
                   tw ? " ([out, in], transpose_w)" : " ([in, out])", " takes ", win);
  if (c.numOperands() == 3 && c.in(2).shape() != Shape{out})
    return c.error("bias must have shape [", out, "], got ", typeString(c.in(2)));
  const int64_t rows = in ? c.in(0).numel() / in : numElements(Shape(xs.begin(), xs.end() - 1));
  std::vector<float> x = widen(c.in(0)), w = widen(c.in(1));
  // W as [in, out] row-major (undoing transpose_w), so the j loop below is contiguous.
  std::vector<float> wk(static_cast<size_t>(in * out));
  for (int64_t k = 0; k < in; ++k)
    for (int64_t j = 0; j < out; ++j) wk[k * out + j] = tw ? w[j * in + k] : w[k * out + j];
  std::vector<float> y(static_cast<size_t>(rows * out));
  for (int64_t r = 0; r < rows; ++r) {
    float* yrow = y.data() + r * out;
    // acc = fl(acc + fl(x[k]*w[k][j])) for k = 0, 1, ... from +0 (k-outer, j-inner keeps that
    // order per element while the j loop vectorises), then the bias in f32, then one rounding.
    for (int64_t k = 0; k < in; ++k) {
      const float xv = x[r * in + k];
      const float* wrow = wk.data() + k * out;
      for (int64_t j = 0; j < out; ++j) yrow[j] += xv * wrow[j];
    }
  }
  if (c.numOperands() == 3) {
    std::vector<float> b = widen(c.in(2));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < out; ++j) y[r * out + j] += b[j];
  }
  Shape outShape(xs.begin(), xs.end() - 1);
  outShape.push_back(out);
  Tensor result = narrow(c.in(0).dtype(), outShape, y);
  if (activation == "relu")  // on the rounded values, as amp.relu after the layer: NaN stays, -0 -> +0
    for (int64_t i = 0; i < result.numel(); ++i) {
      const float v = loadAsF32(result.dtype(), result.data(), i);
      if (!(v > 0 || std::isnan(v))) storeFromF32(result.dtype(), result.data(), i, 0.0f);
    }
  return result;
}

absl::StatusOr<Tensor> evalConv2d(const OpCall& c) {
  REF_RETURN_IF_ERROR(expectOperands(c, 2, 3));
  REF_RETURN_IF_ERROR(expectFloatOperand(c, 0));
  for (size_t i = 1; i < c.numOperands(); ++i) REF_RETURN_IF_ERROR(expectSameDType(c, 0, i));
  REF_RETURN_IF_ERROR(expectRank(c, 0, 4));
  REF_RETURN_IF_ERROR(expectRank(c, 1, 4));
  const Conv2DAttrs& attrs = c.attrsOf<Conv2DAttrs>();
  REF_ASSIGN_OR_RETURN(std::vector<int64_t> stride, checkPair(c, "stride", attrs.stride, 1));
  REF_ASSIGN_OR_RETURN(std::vector<int64_t> pad, checkPair(c, "padding", attrs.padding, 0));
  REF_ASSIGN_OR_RETURN(std::vector<int64_t> dil, checkPair(c, "dilation", attrs.dilation, 1));
  const int64_t groups = attrs.groups;
  const Shape& xs = c.in(0).shape();
  const Shape& ws = c.in(1).shape();
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  const int64_t O = ws[0], CG = ws[1], KH = ws[2], KW = ws[3];
  if (groups < 1 || C % groups != 0 || O % groups != 0)
    return c.error("groups = ", groups, " must be >= 1 and divide the input channels (", C,
                   ") and output channels (", O, ")");
  if (CG != C / groups)
    return c.error("weight ", typeString(c.in(1)), " must have ", C / groups,
                   " input channels per group for input ", typeString(c.in(0)), " and groups = ", groups);
  if (c.numOperands() == 3 && c.in(2).shape() != Shape{O})
    return c.error("bias must have shape [", O, "], got ", typeString(c.in(2)));
  const std::optional<int64_t> spanHo = windowSpan(H, pad[0], dil[0], KH), spanWo = windowSpan(W, pad[1], dil[1], KW);
  if (!spanHo || !spanWo) return c.error("the window's extent overflows int64 (padding, dilation or kernel out of range)");
  const int64_t spanH = *spanHo, spanW = *spanWo;
  if (spanH < 0 || spanW < 0 || KH < 1 || KW < 1)
    return c.error("kernel ", KH, "x", KW, " (dilation ", dil[0], "x", dil[1],
                   ") does not fit the padded input ", typeString(c.in(0)));
  const int64_t OH = spanH / stride[0] + 1, OW = spanW / stride[1] + 1;
  std::vector<float> x = widen(c.in(0)), w = widen(c.in(1));
  std::vector<float> bias = c.numOperands() == 3 ? widen(c.in(2)) : std::vector<float>();
  const int64_t OG = O / groups;
  std::vector<float> out(static_cast<size_t>(N * O * OH * OW));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o) {
      const int64_t g = o / OG;
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          // Sum over (ci, kh, kw) in row-major order; padded taps contribute fl(0 * w) so that a
          // non-finite weight poisons the output exactly as explicit zero padding would.
          float acc = 0.0f;
          for (int64_t ci = 0; ci < CG; ++ci)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t ih = oh * stride[0] - pad[0] + kh * dil[0];
                const int64_t iw = ow * stride[1] - pad[1] + kw * dil[1];
                const bool inside = ih >= 0 && ih < H && iw >= 0 && iw < W;
                const float xv = inside ? x[((n * C + g * CG + ci) * H + ih) * W + iw] : 0.0f;
                acc += xv * w[((o * CG + ci) * KH + kh) * KW + kw];
              }
          if (!bias.empty()) acc += bias[o];  // bias last, like a GEMM epilogue
          out[((n * O + o) * OH + oh) * OW + ow] = acc;
        }
    }
  return narrow(c.in(0).dtype(), {N, O, OH, OW}, out);
}

absl::StatusOr<Tensor> evalPool2d(const OpCall& c) {
  const bool isMax = c.code == OpCode::MaxPool2D;
  REF_RETURN_IF_ERROR(expectOperands(c, 1, 1));
  REF_RETURN_IF_ERROR(expectFloatOperand(c, 0));
  REF_RETURN_IF_ERROR(expectRank(c, 0, 4));
  const PoolWindow window = *poolWindowOf(c.decoded);  // the dispatcher routes only pooling here
  REF_ASSIGN_OR_RETURN(std::vector<int64_t> k, checkPair(c, "kernel", window.kernel, 1));
  REF_ASSIGN_OR_RETURN(std::vector<int64_t> stride, checkPair(c, "stride", window.stride, 1));
  REF_ASSIGN_OR_RETURN(std::vector<int64_t> pad, checkPair(c, "padding", window.padding, 0));
  if (pad[0] > k[0] / 2 || pad[1] > k[1] / 2)  // PyTorch's rule: no window lies fully in padding
    return c.error("padding [", pad[0], ", ", pad[1], "] must be at most half the kernel [", k[0], ", ", k[1], "]");
  const Shape& xs = c.in(0).shape();
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  const std::optional<int64_t> spanHo = windowSpan(H, pad[0], 1, k[0]), spanWo = windowSpan(W, pad[1], 1, k[1]);
  if (!spanHo || !spanWo) return c.error("the window's extent overflows int64 (padding, dilation or kernel out of range)");
  const int64_t spanH = *spanHo, spanW = *spanWo;
  if (spanH < 0 || spanW < 0)
    return c.error("kernel [", k[0], ", ", k[1], "] does not fit the padded input ", typeString(c.in(0)));
  const int64_t OH = spanH / stride[0] + 1, OW = spanW / stride[1] + 1;
  const float divisor = static_cast<float>(k[0] * k[1]);  // count_include_pad = True
  std::vector<float> x = widen(c.in(0));
  std::vector<float> out(static_cast<size_t>(N * C * OH * OW));
  for (int64_t nc = 0; nc < N * C; ++nc)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        float acc = isMax ? -std::numeric_limits<float>::infinity() : 0.0f;
        for (int64_t kh = 0; kh < k[0]; ++kh)  // window in row-major order
          for (int64_t kw = 0; kw < k[1]; ++kw) {
            const int64_t ih = oh * stride[0] - pad[0] + kh, iw = ow * stride[1] - pad[1] + kw;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;  // -inf (max) or 0 (avg)
            const float v = x[(nc * H + ih) * W + iw];
            if (!isMax) acc += v;
            else if (v > acc || std::isnan(v)) acc = v;  // NaN propagates and sticks
          }
        out[(nc * OH + oh) * OW + ow] = isMax ? acc : acc / divisor;
      }
  return narrow(c.in(0).dtype(), {N, C, OH, OW}, out);
}

}  // namespace amp::rt::ref
