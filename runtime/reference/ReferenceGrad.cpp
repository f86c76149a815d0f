// Gradient ops inserted by amp-autodiff (ir/AmpGradOps.td). Same contract as the forward kernels:
// float operands widened to f32, sums are sequential f32 running sums from +0 in the order given
// at each kernel (and in docs/reference-executor.md, "Gradient ops"), no FMA
// (-ffp-contract=off), one RNE rounding to the result type at the end.
#include "runtime/plan/PoolWindow.h"
#include "runtime/reference/ReferenceGrad.h"
#include "runtime/WindowGeometry.h"
#include "runtime/numerics/Softmax.h"
#include "runtime/kernels/math/SumOrder.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace amp::rt::ref {
namespace {

// The finished column sums of a norm's weight and bias gradients (over groups, in group order).
std::vector<float> columnSums(const std::vector<AmpBlockedSum<float>>& sums) {
  std::vector<float> out(sums.size());
  for (size_t j = 0; j < sums.size(); ++j) out[j] = sums[j].result();
  return out;
}

constexpr double kSqrt1_2 = 0.70710678118654752440;      // 1/sqrt(2)
constexpr double kInvSqrt2Pi = 0.39894228040143267794;   // 1/sqrt(2*pi)
constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2/pi)

absl::Status expectResults(const OpCall& c, size_t n) {
  if (c.results.size() == n) return absl::OkStatus();
  return c.error("expected ", n, " result type(s), got ", c.results.size());
}

absl::Status expectShape(const OpCall& c, std::string_view what, const Shape& got, const Shape& want) {
  if (got == want) return absl::OkStatus();
  return c.error(what, " has shape ", shapeToString(got), ", expected ", shapeToString(want));
}

struct ConvAttrs {
  std::vector<int64_t> stride, pad, dil;
  int64_t groups = 1;
};

absl::StatusOr<ConvAttrs> convAttrs(const OpCall& c) {
  ConvAttrs a;
  const auto [stride, padding, dilation, groups] = c.withAttrsOf<Conv2DGradInputAttrs, Conv2DGradWeightAttrs>(
      [](const auto& d) { return std::tuple{d.stride, d.padding, d.dilation, d.groups}; });
  REF_ASSIGN_OR_RETURN(a.stride, checkPair(c, "stride", stride, 1));
  REF_ASSIGN_OR_RETURN(a.pad, checkPair(c, "padding", padding, 0));
  REF_ASSIGN_OR_RETURN(a.dil, checkPair(c, "dilation", dilation, 1));
  a.groups = groups;
  return a;
}

// Checks x [N,C,H,W], w [O,C/groups,KH,KW], dy = conv2d(x, w) shape; returns {OH, OW}.
absl::StatusOr<std::pair<int64_t, int64_t>> checkConv(const OpCall& c, const Shape& xs, const Shape& ws,
                                                      const Shape& dys, const ConvAttrs& a) {
  if (xs.size() != 4 || ws.size() != 4 || dys.size() != 4)
    return c.error("input, weight and grad must have rank 4");
  const int64_t C = xs[1], O = ws[0];
  if (a.groups < 1 || C % a.groups != 0 || O % a.groups != 0 || ws[1] != C / a.groups)
    return c.error("groups = ", a.groups, " does not fit input ", shapeToString(xs), " and weight ",
                   shapeToString(ws));
  const std::optional<int64_t> spanHo = windowSpan(xs[2], a.pad[0], a.dil[0], ws[2]),
                               spanWo = windowSpan(xs[3], a.pad[1], a.dil[1], ws[3]);
  if (!spanHo || !spanWo) return c.error("the window's extent overflows int64 (padding, dilation or kernel out of range)");
  const int64_t spanH = *spanHo, spanW = *spanWo;
  if (spanH < 0 || spanW < 0) return c.error("kernel does not fit the padded input ", shapeToString(xs));
  const int64_t OH = spanH / a.stride[0] + 1, OW = spanW / a.stride[1] + 1;
  REF_RETURN_IF_ERROR(expectShape(c, "grad", dys, {xs[0], O, OH, OW}));
  return std::make_pair(OH, OW);
}

struct PoolAttrs {
  std::vector<int64_t> k, stride, pad;
};

// Pool attributes (stride defaults to the kernel) and the forward output size for input `xs`.
absl::StatusOr<PoolAttrs> poolAttrs(const OpCall& c, const Shape& xs, const Shape& dys) {
  PoolAttrs a;
  const PoolWindow window = *poolWindowOf(c.decoded);  // the dispatcher routes only pooling here
  REF_ASSIGN_OR_RETURN(a.k, checkPair(c, "kernel", window.kernel, 1));
  REF_ASSIGN_OR_RETURN(a.stride, checkPair(c, "stride", window.stride, 1));
  REF_ASSIGN_OR_RETURN(a.pad, checkPair(c, "padding", window.padding, 0));
  if (a.pad[0] > a.k[0] / 2 || a.pad[1] > a.k[1] / 2)
    return c.error("padding must be at most half the kernel");
  if (xs.size() != 4) return c.error("input must be NCHW (rank 4), got ", shapeToString(xs));
  const std::optional<int64_t> spanHo = windowSpan(xs[2], a.pad[0], 1, a.k[0]), spanWo = windowSpan(xs[3], a.pad[1], 1, a.k[1]);
  if (!spanHo || !spanWo) return c.error("the window's extent overflows int64 (padding, dilation or kernel out of range)");
  const int64_t spanH = *spanHo, spanW = *spanWo;
  if (spanH < 0 || spanW < 0) return c.error("kernel does not fit the padded input ", shapeToString(xs));
  REF_RETURN_IF_ERROR(expectShape(c, "grad", dys,
                                  {xs[0], xs[1], spanH / a.stride[0] + 1, spanW / a.stride[1] + 1}));
  return a;
}

// Shared setup of the norm gradients: operands x, [weight], dy.
struct NormGradSetup {
  int64_t groups = 0, n = 0;
  double eps = 0;
  Shape trailing;
  std::vector<float> x, w, dy;  // w empty without weight
};

absl::StatusOr<NormGradSetup> setupNormGrad(const OpCall& c, size_t numResults) {
  REF_RETURN_IF_ERROR(expectOperands(c, 2, 3));
  REF_RETURN_IF_ERROR(expectResults(c, numResults));
  REF_RETURN_IF_ERROR(expectFloatOperand(c, 0));
  for (size_t i = 1; i < c.numOperands(); ++i) REF_RETURN_IF_ERROR(expectSameDType(c, 0, i));
  const auto [ndim, eps] = c.withAttrsOf<LayerNormGradAttrs, RmsNormGradAttrs>(
      [](const auto& a) { return std::pair{a.normalizedNdim, a.eps}; });
  const Shape& xs = c.in(0).shape();
  if (ndim < 1 || ndim > c.in(0).rank())
    return c.error("attribute 'normalized_ndim' = ", ndim, " must be in [1, ", c.in(0).rank(), "]");
  if (!(eps >= 0)) return c.error("attribute 'eps' must be >= 0, got ", eps);
  const bool hasWeight = c.numOperands() == 3;
  const Tensor& dy = c.in(hasWeight ? 2 : 1);
  REF_RETURN_IF_ERROR(expectShape(c, "grad", dy.shape(), xs));
  NormGradSetup s;
  s.trailing.assign(xs.end() - ndim, xs.end());
  if (hasWeight) REF_RETURN_IF_ERROR(expectShape(c, "weight", c.in(1).shape(), s.trailing));
  s.n = numElements(s.trailing);
  s.groups = s.n ? c.in(0).numel() / s.n : 0;
  s.eps = eps;
  s.x = widen(c.in(0));
  s.dy = widen(dy);
  if (hasWeight) s.w = widen(c.in(1));
  return s;
}

}  // namespace

absl::StatusOr<Tensor> evalGeluGrad(const OpCall& c) {
  REF_RETURN_IF_ERROR(expectOperands(c, 2, 2));
  REF_RETURN_IF_ERROR(expectFloatOperand(c, 0));
  REF_RETURN_IF_ERROR(expectSameDType(c, 0, 1));
  REF_RETURN_IF_ERROR(expectShape(c, "grad", c.in(1).shape(), c.in(0).shape()));
  const std::string_view approx = geluApproximationKeyword(c.attrsOf<GeluGradAttrs>().approximate);
  std::vector<float> x = widen(c.in(0)), dy = widen(c.in(1));
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    double d;
    if (approx == "tanh") {
      const double t = std::tanh(kSqrt2OverPi * (v + 0.044715 * v * v * v));
      d = 0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * kSqrt2OverPi * (1.0 + 3.0 * 0.044715 * v * v);
    } else {
      d = 0.5 * (1.0 + std::erf(v * kSqrt1_2)) + v * kInvSqrt2Pi * std::exp(-0.5 * v * v);
    }
    x[i] = f32(double(dy[i]) * d);
  }
  return narrow(c.in(0).dtype(), c.in(0).shape(), x);
}

// amp.softmax_grad: per slice along `axis`, softmaxGradSlice (runtime/numerics/Softmax.h). grad
// is read widened: its type is the output's, or bf16/f16 under an f32 output.
absl::StatusOr<Tensor> evalSoftmaxGrad(const OpCall& c) {
  REF_RETURN_IF_ERROR(expectOperands(c, 2, 2));
  REF_RETURN_IF_ERROR(expectFloatOperand(c, 0));
  REF_RETURN_IF_ERROR(expectFloatOperand(c, 1));
  REF_RETURN_IF_ERROR(expectShape(c, "grad", c.in(1).shape(), c.in(0).shape()));
  const DType t = c.in(0).dtype(), g = c.in(1).dtype();
  if (g != t && !(t == DType::F32 && (g == DType::BF16 || g == DType::F16)))
    return c.error("grad must have the output's type, or bf16/f16 under an f32 output, got ", typeString(c.in(1)),
                   " for ", typeString(c.in(0)));
  const int64_t axis = c.attrsOf<SoftmaxGradAttrs>().axis;
  const Shape& s = c.in(0).shape();
  if (axis < 0 || axis >= c.in(0).rank())
    return c.error("attribute 'axis' = ", axis, " is out of range for ", typeString(c.in(0)));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= s[d];
  for (int64_t d = axis + 1; d < c.in(0).rank(); ++d) inner *= s[d];
  const int64_t len = s[axis];
  std::vector<float> y = widen(c.in(0)), dy = widen(c.in(1)), dx(y.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * len * inner + i;
      softmaxGradSlice(y.data() + base, dy.data() + base, len, inner, t, dx.data() + base);
    }
  return narrow(t, s, dx);
}

absl::StatusOr<Tensor> evalConv2dGradInput(const OpCall& c) {
  REF_RETURN_IF_ERROR(expectOperands(c, 2, 2));
  REF_RETURN_IF_ERROR(expectFloatOperand(c, 0));
  REF_RETURN_IF_ERROR(expectSameDType(c, 0, 1));
  REF_ASSIGN_OR_RETURN(ConvAttrs a, convAttrs(c));
  const Shape& xs = c.result().shape;
  const Shape& ws = c.in(1).shape();
  REF_ASSIGN_OR_RETURN(auto ohw, checkConv(c, xs, ws, c.in(0).shape(), a));
  const auto [OH, OW] = ohw;
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  const int64_t O = ws[0], CG = ws[1], KH = ws[2], KW = ws[3], OG = O / a.groups;
  std::vector<float> dy = widen(c.in(0)), w = widen(c.in(1));
  std::vector<float> dx(static_cast<size_t>(numElements(xs)));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t ch = 0; ch < C; ++ch) {
      const int64_t g = ch / CG, ci = ch % CG;
      for (int64_t ih = 0; ih < H; ++ih)
        for (int64_t iw = 0; iw < W; ++iw) {
          // Sum over (o in group, kh, kw) row-major of the taps that read this input element.
          float acc = 0.0f;
          for (int64_t o = g * OG; o < (g + 1) * OG; ++o)
            for (int64_t kh = 0; kh < KH; ++kh) {
              const int64_t th = ih + a.pad[0] - kh * a.dil[0];
              if (th < 0 || th % a.stride[0] != 0 || th / a.stride[0] >= OH) continue;
              const int64_t oh = th / a.stride[0];
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t tw = iw + a.pad[1] - kw * a.dil[1];
                if (tw < 0 || tw % a.stride[1] != 0 || tw / a.stride[1] >= OW) continue;
                const int64_t ow = tw / a.stride[1];
                acc += dy[((n * O + o) * OH + oh) * OW + ow] * w[((o * CG + ci) * KH + kh) * KW + kw];
              }
            }
          dx[((n * C + ch) * H + ih) * W + iw] = acc;
        }
    }
  return narrow(c.result().dtype, xs, dx);
}

absl::StatusOr<Tensor> evalConv2dGradWeight(const OpCall& c) {
  REF_RETURN_IF_ERROR(expectOperands(c, 2, 2));
  REF_RETURN_IF_ERROR(expectFloatOperand(c, 0));
  REF_RETURN_IF_ERROR(expectSameDType(c, 0, 1));
  REF_ASSIGN_OR_RETURN(ConvAttrs a, convAttrs(c));
  const Shape& xs = c.in(0).shape();
  const Shape& ws = c.result().shape;
  REF_ASSIGN_OR_RETURN(auto ohw, checkConv(c, xs, ws, c.in(1).shape(), a));
  const auto [OH, OW] = ohw;
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  const int64_t O = ws[0], CG = ws[1], KH = ws[2], KW = ws[3], OG = O / a.groups;
  std::vector<float> x = widen(c.in(0)), dy = widen(c.in(1));
  std::vector<float> dw(static_cast<size_t>(numElements(ws)));
  for (int64_t o = 0; o < O; ++o) {
    const int64_t g = o / OG;
    for (int64_t ci = 0; ci < CG; ++ci)
      for (int64_t kh = 0; kh < KH; ++kh)
        for (int64_t kw = 0; kw < KW; ++kw) {
          // Sum over (n, oh, ow) row-major; padded taps add fl(0 * dy) (explicit zero padding).
          float acc = 0.0f;
          for (int64_t n = 0; n < N; ++n)
            for (int64_t oh = 0; oh < OH; ++oh)
              for (int64_t ow = 0; ow < OW; ++ow) {
                const int64_t ih = oh * a.stride[0] - a.pad[0] + kh * a.dil[0];
                const int64_t iw = ow * a.stride[1] - a.pad[1] + kw * a.dil[1];
                const bool inside = ih >= 0 && ih < H && iw >= 0 && iw < W;
                const float xv = inside ? x[((n * C + g * CG + ci) * H + ih) * W + iw] : 0.0f;
                acc += xv * dy[((n * O + o) * OH + oh) * OW + ow];
              }
          dw[((o * CG + ci) * KH + kh) * KW + kw] = acc;
        }
  }
  return narrow(c.in(0).dtype(), ws, dw);
}

absl::StatusOr<Tensor> evalMaxPool2dGrad(const OpCall& c) {
  REF_RETURN_IF_ERROR(expectOperands(c, 2, 2));
  REF_RETURN_IF_ERROR(expectFloatOperand(c, 0));
  REF_RETURN_IF_ERROR(expectSameDType(c, 0, 1));
  const Shape& xs = c.in(0).shape();
  REF_ASSIGN_OR_RETURN(PoolAttrs a, poolAttrs(c, xs, c.in(1).shape()));
  const int64_t NC = xs[0] * xs[1], H = xs[2], W = xs[3];
  const int64_t OH = c.in(1).shape()[2], OW = c.in(1).shape()[3];
  std::vector<float> x = widen(c.in(0)), dy = widen(c.in(1));
  std::vector<float> dx(x.size(), 0.0f);
  for (int64_t nc = 0; nc < NC; ++nc)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        // The forward scan (row-major, strict >, NaN sticks); an all -inf window picks its first
        // in-bounds element, as PyTorch.
        float best = -std::numeric_limits<float>::infinity();
        int64_t pos = -1, first = -1;
        for (int64_t kh = 0; kh < a.k[0]; ++kh)
          for (int64_t kw = 0; kw < a.k[1]; ++kw) {
            const int64_t ih = oh * a.stride[0] - a.pad[0] + kh, iw = ow * a.stride[1] - a.pad[1] + kw;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
            const int64_t idx = (nc * H + ih) * W + iw;
            if (first < 0) first = idx;
            if (x[idx] > best || std::isnan(x[idx])) {
              best = x[idx];
              pos = idx;
            }
          }
        if (pos < 0) pos = first;
        if (pos >= 0) dx[pos] += dy[(nc * OH + oh) * OW + ow];
      }
  return narrow(c.in(0).dtype(), xs, dx);
}

absl::StatusOr<Tensor> evalAvgPool2dGrad(const OpCall& c) {
  REF_RETURN_IF_ERROR(expectOperands(c, 1, 1));
  REF_RETURN_IF_ERROR(expectFloatOperand(c, 0));
  const Shape& xs = c.result().shape;
  if (c.result().dtype != c.in(0).dtype()) return c.error("result element type must be grad's");
  REF_ASSIGN_OR_RETURN(PoolAttrs a, poolAttrs(c, xs, c.in(0).shape()));
  const int64_t NC = xs[0] * xs[1], H = xs[2], W = xs[3];
  const int64_t OH = c.in(0).shape()[2], OW = c.in(0).shape()[3];
  const float divisor = static_cast<float>(a.k[0] * a.k[1]);
  std::vector<float> dy = widen(c.in(0));
  std::vector<float> dx(static_cast<size_t>(numElements(xs)), 0.0f);
  for (int64_t nc = 0; nc < NC; ++nc)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        const float share = dy[(nc * OH + oh) * OW + ow] / divisor;
        for (int64_t kh = 0; kh < a.k[0]; ++kh)
          for (int64_t kw = 0; kw < a.k[1]; ++kw) {
            const int64_t ih = oh * a.stride[0] - a.pad[0] + kh, iw = ow * a.stride[1] - a.pad[1] + kw;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
            dx[(nc * H + ih) * W + iw] += share;
          }
      }
  return narrow(c.result().dtype, xs, dx);
}

absl::StatusOr<std::vector<Tensor>> evalLayerNormGrad(const OpCall& c) {
  REF_ASSIGN_OR_RETURN(NormGradSetup s, setupNormGrad(c, 3));
  const float n = static_cast<float>(s.n);
  std::vector<float> dx(s.x.size());
  std::vector<AmpBlockedSum<float>> dw(static_cast<size_t>(s.n)), db(static_cast<size_t>(s.n));  // over groups
  for (int64_t j = 0; j < s.n; ++j) dw[j].reset(0.0f), db[j].reset(0.0f);
  std::vector<float> xhat(static_cast<size_t>(s.n)), g(static_cast<size_t>(s.n));
  for (int64_t grp = 0; grp < s.groups; ++grp) {
    const float* xg = s.x.data() + grp * s.n;
    const float* dyg = s.dy.data() + grp * s.n;
    // Statistics exactly as amp.layer_norm computes them.
    const float mean = amp_blocked_sum(s.n, [&](int64_t j) { return xg[j]; }) / n;
    const float sq = amp_blocked_sum(s.n, [&](int64_t j) { return (xg[j] - mean) * (xg[j] - mean); });
    const float rstd = f32(1.0 / std::sqrt(double(sq / n) + s.eps));
    for (int64_t j = 0; j < s.n; ++j) {
      xhat[j] = (xg[j] - mean) * rstd;
      g[j] = s.w.empty() ? dyg[j] : dyg[j] * s.w[j];
      dw[j].add(dyg[j] * xhat[j]);  // group order
      db[j].add(dyg[j]);
    }
    const float sg = amp_blocked_sum(s.n, [&](int64_t j) { return g[j]; });
    const float sgx = amp_blocked_sum(s.n, [&](int64_t j) { return g[j] * xhat[j]; });
    const float mg = sg / n, mgx = sgx / n;
    for (int64_t j = 0; j < s.n; ++j) dx[grp * s.n + j] = rstd * ((g[j] - mg) - xhat[j] * mgx);
  }
  const DType dt = c.in(0).dtype();
  std::vector<Tensor> out;
  out.push_back(narrow(dt, c.in(0).shape(), dx));
  out.push_back(narrow(dt, s.trailing, columnSums(dw)));
  out.push_back(narrow(dt, s.trailing, columnSums(db)));
  return out;
}

absl::StatusOr<std::vector<Tensor>> evalRmsNormGrad(const OpCall& c) {
  REF_ASSIGN_OR_RETURN(NormGradSetup s, setupNormGrad(c, 2));
  const float n = static_cast<float>(s.n);
  std::vector<float> dx(s.x.size());
  std::vector<AmpBlockedSum<float>> dw(static_cast<size_t>(s.n));  // over groups
  for (auto& d : dw) d.reset(0.0f);
  std::vector<float> xhat(static_cast<size_t>(s.n)), g(static_cast<size_t>(s.n));
  for (int64_t grp = 0; grp < s.groups; ++grp) {
    const float* xg = s.x.data() + grp * s.n;
    const float* dyg = s.dy.data() + grp * s.n;
    const float sq = amp_blocked_sum(s.n, [&](int64_t j) { return xg[j] * xg[j]; });
    const float rstd = f32(1.0 / std::sqrt(double(sq / n) + s.eps));
    for (int64_t j = 0; j < s.n; ++j) {
      xhat[j] = xg[j] * rstd;
      g[j] = s.w.empty() ? dyg[j] : dyg[j] * s.w[j];
      dw[j].add(dyg[j] * xhat[j]);
    }
    const float mgx = amp_blocked_sum(s.n, [&](int64_t j) { return g[j] * xhat[j]; }) / n;
    for (int64_t j = 0; j < s.n; ++j) dx[grp * s.n + j] = rstd * (g[j] - xhat[j] * mgx);
  }
  const DType dt = c.in(0).dtype();
  std::vector<Tensor> out;
  out.push_back(narrow(dt, c.in(0).shape(), dx));
  out.push_back(narrow(dt, s.trailing, columnSums(dw)));
  return out;
}

absl::StatusOr<Tensor> evalEmbeddingGrad(const OpCall& c) {
  REF_RETURN_IF_ERROR(expectOperands(c, 2, 2));
  const Tensor& ids = c.in(0);
  if (!isIndexType(ids.dtype()))
    return c.error("ids (operand 0) must have element type i32 or i64, got ", dtypeName(ids.dtype()));
  REF_RETURN_IF_ERROR(expectFloatOperand(c, 1));
  const int64_t V = c.attrsOf<EmbeddingGradAttrs>().numEmbeddings;
  if (V < 1) return c.error("attribute 'num_embeddings' must be >= 1, got ", V);
  const Shape& gs = c.in(1).shape();
  if (gs.size() != ids.shape().size() + 1 || !std::equal(ids.shape().begin(), ids.shape().end(), gs.begin()))
    return c.error("grad ", typeString(c.in(1)), " must have shape ids + [D] for ids ", typeString(ids));
  const int64_t D = gs.back();
  for (int64_t i = 0; i < ids.numel(); ++i) {
    const int64_t id = loadIndex(ids, i);
    if (id < 0 || id >= V)
      return c.error("id ", id, " at position ", indexString(ids.shape(), i), " is out of range [0, ", V, ")");
  }
  std::vector<float> dy = widen(c.in(1)), dt(static_cast<size_t>(V * D), 0.0f);
  for (int64_t i = 0; i < ids.numel(); ++i) {  // rows in row-major order of ids
    float* row = dt.data() + loadIndex(ids, i) * D;
    const float* src = dy.data() + i * D;
    for (int64_t d = 0; d < D; ++d) row[d] += src[d];
  }
  return narrow(c.in(1).dtype(), {V, D}, dt);
}

absl::StatusOr<Tensor> evalCrossEntropyGrad(const OpCall& c) {
  REF_RETURN_IF_ERROR(expectOperands(c, 3, 3));
  REF_RETURN_IF_ERROR(expectRank(c, 2, 0));
  REF_RETURN_IF_ERROR(expectSameDType(c, 0, 2));
  REF_ASSIGN_OR_RETURN(CrossEntropyArgs args, crossEntropyArgs(c));
  const Tensor& labels = c.in(1);
  const int64_t N = args.N, C = args.C, ignoreIndex = args.ignoreIndex, count = args.counted;
  const double eps = args.labelSmoothing;
  std::vector<float> x = widen(c.in(0)), dx(x.size(), 0.0f), p(static_cast<size_t>(C));
  const float coeff = widen(c.in(2))[0] / static_cast<float>(count);  // dloss / count
  const float keepW = f32(1.0 - eps), smoothW = f32(eps / double(C));
  for (int64_t i = 0; i < N; ++i) {
    const int64_t y = loadIndex(labels, i);
    if (y == ignoreIndex) continue;  // ignored rows: +0
    softmaxSlice(x.data() + i * C, C, 1, /*log=*/false, p.data());
    for (int64_t k = 0; k < C; ++k) {
      const float target = (k == y ? keepW : 0.0f) + smoothW;
      dx[i * C + k] = (p[k] - target) * coeff;
    }
  }
  return narrow(c.in(0).dtype(), c.in(0).shape(), dx);
}

absl::StatusOr<Tensor> evalSliceGrad(const OpCall& c) {
  REF_RETURN_IF_ERROR(expectOperands(c, 1, 1));
  const Tensor& dy = c.in(0);
  const Shape& xs = c.result().shape;
  if (c.result().dtype != dy.dtype()) return c.error("result element type must be grad's");
  const SliceGradAttrs& a = c.attrsOf<SliceGradAttrs>();
  const std::vector<int64_t>& starts = a.starts;
  const std::vector<int64_t>& limits = a.limits;
  const std::vector<int64_t>& strides = a.strides;
  const size_t rank = xs.size();
  if (starts.size() != rank || limits.size() != rank || strides.size() != rank)
    return c.error("starts, limits and strides need ", rank, " entries each");
  Shape sliced(rank);
  for (size_t d = 0; d < rank; ++d) {
    if (starts[d] < 0 || starts[d] > limits[d] || limits[d] > xs[d] || strides[d] < 1)
      return c.error("dimension ", d, ": need 0 <= start <= limit <= size and stride >= 1");
    sliced[d] = (limits[d] - starts[d] + strides[d] - 1) / strides[d];
  }
  REF_RETURN_IF_ERROR(expectShape(c, "grad", dy.shape(), sliced));
  std::vector<int64_t> xstr = rowMajorStrides(xs), st(rank);
  int64_t offset = 0;
  for (size_t d = 0; d < rank; ++d) {
    st[d] = xstr[d] * strides[d];
    offset += xstr[d] * starts[d];
  }
  std::vector<int64_t> map = stridedIndexMap(sliced, st, offset);
  Tensor out(dy.dtype(), xs);  // zero-filled: +0 in every float format
  const size_t es = dtypeSize(dy.dtype());
  for (size_t i = 0; i < map.size(); ++i) std::memcpy(out.data() + map[i] * es, dy.data() + i * es, es);
  return out;
}

}  // namespace amp::rt::ref
