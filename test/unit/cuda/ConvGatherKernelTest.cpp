// The column gathers of the implicit-GEMM convolutions (runtime/kernels/cuda/ConvGatherKernels.cu),
// their own source run on the host through BlockEmulation.h on grids far smaller than the columns
// (every thread's grid-stride loop takes several turns; both schedules):
//  - every gather mode, in 2- and 4-byte elements, against the column layouts ConvGather.h and
//    ConvGemm.h document, written here as plain loops over the convolution's indices (the input
//    gradient's columns as a scatter from dy), so the kernels' index arithmetic is checked against
//    an independent statement of the layout, bit for bit, +0 where no element lands;
//  - end to end, the lowering of runtime/devices/cuda/ConvGemm.h with these kernels as its gathers
//    and the column-major cuBLASLt emulator (GemmEmulator.h, k summed in order) as its GEMM, against
//    the reference's conv2d and its gradients bit for bit in f32, bf16 and f16 (ConvGemm.h: a GEMM
//    that sums k in order gives the reference's bits; cuBLASLt's own order is the device's bound).
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "runtime/devices/cuda/ConvGemm.h"
#include "test/unit/common/ConvTestSupport.h"
#include "test/unit/cuda/GemmEmulator.h"
#include "test/unit/common/BlockEmulation.h"
#include "runtime/kernels/cuda/ConvGather.h"
#include "runtime/kernels/cuda/ConvGatherKernels.cu"

namespace amp::rt::cuda {
namespace {

using namespace convtest;

// Three blocks of 32 threads, forwards then in reverse on alternate launches.
int launches = 0;
void launchSmall(const std::function<void()>& kernel) {
  ASSERT_EQ(emu::launch({3, 1, 1}, {32, 1, 1}, kernel, launches++ % 2 ? emu::Schedule::Reverse : emu::Schedule::Forward),
            "");
}

// Runs the gather kernel for elements of `elementBytes` bytes.
void gather(size_t elementBytes, const void* src, void* dst, const AmpConvShape& s, int mode) {
  launchSmall([&] {
    if (elementBytes == 2)
      amp_conv_gather_b16(src, dst, s, mode);
    else
      amp_conv_gather_b32(src, dst, s, mode);
  });
}

// Where each element of a gather's target comes from, -1 for +0, from the layouts as ConvGather.h
// documents them: loops over the convolution's own indices, not amp_conv_gather_source.
std::vector<long long> documentedSources(const AmpConvShape& s, int mode) {
  const long long K = s.C * s.KH * s.KW, P = s.OH * s.OW, R = s.O * s.KH * s.KW, HW = s.H * s.W;
  auto x = [&](long long n, long long c, long long ih, long long iw) { return ((n * s.C + c) * s.H + ih) * s.W + iw; };
  auto inside = [&](long long ih, long long iw) { return ih >= 0 && ih < s.H && iw >= 0 && iw < s.W; };
  std::vector<long long> from;
  switch (mode) {
    case AMP_CONV_COLUMNS:         // cols [N][K = (c, kh, kw)][P = (oh, ow)]
    case AMP_CONV_COLUMNS_BY_TAP:  // colsT [K][N][P]
      from.assign(static_cast<size_t>(s.N * K * P), -1);
      for (long long n = 0; n < s.N; ++n)
        for (long long c = 0; c < s.C; ++c)
          for (long long kh = 0; kh < s.KH; ++kh)
            for (long long kw = 0; kw < s.KW; ++kw)
              for (long long oh = 0; oh < s.OH; ++oh)
                for (long long ow = 0; ow < s.OW; ++ow) {
                  const long long k = (c * s.KH + kh) * s.KW + kw, p = oh * s.OW + ow;
                  const long long ih = oh * s.strideH - s.padH + kh * s.dilH, iw = ow * s.strideW - s.padW + kw * s.dilW;
                  const long long at = mode == AMP_CONV_COLUMNS ? (n * K + k) * P + p : (k * s.N + n) * P + p;
                  from[static_cast<size_t>(at)] = inside(ih, iw) ? x(n, c, ih, iw) : -1;
                }
      break;
    case AMP_CONV_DY_COLUMNS:  // dcols [N][R = (o, kh, kw)][HW = (ih, iw)]: dy scattered to the inputs its taps read
      from.assign(static_cast<size_t>(s.N * R * HW), -1);
      for (long long n = 0; n < s.N; ++n)
        for (long long o = 0; o < s.O; ++o)
          for (long long kh = 0; kh < s.KH; ++kh)
            for (long long kw = 0; kw < s.KW; ++kw)
              for (long long oh = 0; oh < s.OH; ++oh)
                for (long long ow = 0; ow < s.OW; ++ow) {
                  const long long ih = oh * s.strideH - s.padH + kh * s.dilH, iw = ow * s.strideW - s.padW + kw * s.dilW;
                  if (!inside(ih, iw)) continue;
                  const long long r = (o * s.KH + kh) * s.KW + kw;
                  from[static_cast<size_t>((n * R + r) * HW + ih * s.W + iw)] = ((n * s.O + o) * s.OH + oh) * s.OW + ow;
                }
      break;
    case AMP_CONV_DY_BY_CHANNEL:  // dy [N][O][P] -> dyt [O][N][P]
      for (long long o = 0; o < s.O; ++o)
        for (long long n = 0; n < s.N; ++n)
          for (long long p = 0; p < P; ++p) from.push_back((n * s.O + o) * P + p);
      break;
    case AMP_CONV_W_BY_INPUT:  // w [O][C][KH][KW] -> wt [C][O][KH][KW]
      for (long long c = 0; c < s.C; ++c)
        for (long long o = 0; o < s.O; ++o)
          for (long long t = 0; t < s.KH * s.KW; ++t) from.push_back((o * s.C + c) * s.KH * s.KW + t);
      break;
    case AMP_CONV_BIAS_ROWS:  // bias [O] -> y [N][O][P]
      for (long long n = 0; n < s.N; ++n)
        for (long long o = 0; o < s.O; ++o)
          for (long long p = 0; p < P; ++p) from.push_back(o);
      break;
  }
  return from;
}

// Bit patterns no zero fill can produce: element i of a source is i + 1 (shifted into the high half
// for 4-byte elements, so both halves matter).
template <class Bits>
std::vector<Bits> numberedSource(long long count) {
  std::vector<Bits> v(static_cast<size_t>(count));
  for (long long i = 0; i < count; ++i)
    v[static_cast<size_t>(i)] = sizeof(Bits) == 2 ? Bits(i + 1) : Bits((uint64_t(i + 1) << 16) | uint64_t(i % 7));
  return v;
}

template <class Bits>
void expectDocumentedLayout(const AmpConvShape& s, int mode) {
  SCOPED_TRACE(absl::StrCat("mode ", mode, ", ", sizeof(Bits), "-byte elements"));
  const std::vector<long long> from = documentedSources(s, mode);
  ASSERT_EQ(static_cast<long long>(from.size()), amp_conv_gather_count(s, mode));
  long long sourceCount = 0;
  for (long long j : from) sourceCount = std::max(sourceCount, j + 1);
  const std::vector<Bits> src = numberedSource<Bits>(sourceCount);
  std::vector<Bits> dst(from.size(), Bits(0x5a5a));  // a fill the kernel must overwrite everywhere
  gather(sizeof(Bits), src.data(), dst.data(), s, mode);
  int64_t mismatches = 0;
  for (size_t i = 0; i < from.size(); ++i) {
    const Bits want = from[i] >= 0 ? src[static_cast<size_t>(from[i])] : Bits(0);
    if (dst[i] != want && ++mismatches <= 3)
      ADD_FAILURE() << "element " << i << " is " << dst[i] << ", the layout's " << want;
  }
  EXPECT_EQ(mismatches, 0);
}

const ConvCase kCases[] = {
    {2, 3, 7, 6, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1},  // same padding
    {1, 4, 9, 8, 6, 3, 2, 1, 2, 1, 1, 0, 1, 1},  // stride, asymmetric kernel
    {2, 2, 8, 9, 3, 2, 3, 1, 1, 2, 0, 1, 2, 2},  // dilation
    {1, 3, 5, 5, 5, 5, 5, 1, 3, 3, 2, 2, 1, 1},  // a kernel as large as the input, stride 3
    {3, 1, 6, 6, 2, 1, 1, 1, 2, 2, 0, 0, 1, 1},  // a 1x1 kernel with stride: taps the stride skips
};

TEST(CudaConvGatherKernel, EveryModeBuildsTheDocumentedColumns) {
  for (const ConvCase& k : kCases) {
    SCOPED_TRACE(k.name());
    for (int mode : {AMP_CONV_COLUMNS, AMP_CONV_COLUMNS_BY_TAP, AMP_CONV_DY_COLUMNS, AMP_CONV_DY_BY_CHANNEL,
                     AMP_CONV_W_BY_INPUT, AMP_CONV_BIAS_ROWS}) {
      expectDocumentedLayout<uint16_t>(k.shape(), mode);
      expectDocumentedLayout<uint32_t>(k.shape(), mode);
    }
  }
}

// ConvGemm.h's lowering on the host, chunk by chunk, with the kernels as its gathers.
Tensor runLowering(const ConvGemmLowering& l, DType t, const std::vector<const Tensor*>& operands, const Shape& resultShape) {
  const size_t es = dtypeSize(t);
  std::vector<uint8_t> workspace(static_cast<size_t>(l.workspaceBytes));
  Tensor result(t, resultShape);
  auto at = [&](const ConvBuffer& b, int64_t chunk) -> uint8_t* {
    const size_t moved = static_cast<size_t>(chunk * b.chunkStride);
    switch (b.kind) {
      case ConvBuffer::Kind::Operand: return const_cast<uint8_t*>(operands[static_cast<size_t>(b.operand)]->data()) + moved;
      case ConvBuffer::Kind::Result: return result.data() + moved;
      case ConvBuffer::Kind::Workspace: return workspace.data() + b.offset + moved;
    }
    return nullptr;
  };
  // The emulator reads its operands by index: copies of a buffer from its chunk's start.
  auto view = [&](const ConvBuffer& b, int64_t chunk, int64_t elements) {
    Tensor v(t, {elements});
    std::memcpy(v.data(), at(b, chunk), v.nbytes());
    return v;
  };
  const GemmPlan& g = l.gemm;
  for (int64_t chunk = 0; chunk < l.chunks; ++chunk) {
    for (const ConvGather& gather : l.gathers)
      if (chunk == 0 || gather.everyChunk) cuda::gather(es, at(gather.source, chunk), at(gather.target, chunk), l.shape, gather.mode);
    Tensor prior(t, g.resultShape);
    std::memcpy(prior.data(), at(l.d, chunk), prior.nbytes());
    const auto bufferElements = [&](const ConvBuffer& b, int64_t chunk) {
      switch (b.kind) {
        case ConvBuffer::Kind::Operand: return operands[static_cast<size_t>(b.operand)]->numel() - chunk * b.chunkStride / int64_t(es);
        case ConvBuffer::Kind::Result: return result.numel() - chunk * b.chunkStride / int64_t(es);
        case ConvBuffer::Kind::Workspace: return (l.workspaceBytes - b.offset - chunk * b.chunkStride) / int64_t(es);
      }
      return int64_t{0};
    };
    const Tensor out = emulateGemm(g, view(l.a, chunk, bufferElements(l.a, chunk)), view(l.b, chunk, bufferElements(l.b, chunk)),
                                   nullptr, &prior);
    std::memcpy(at(l.d, chunk), out.data(), out.nbytes());
  }
  return result;
}

TEST(CudaConvGatherKernel, GathersAndOneGemmGiveTheReferencesConvolution) {
  std::mt19937 rng(29);
  int chunkedRuns = 0;
  for (const ConvCase& k : kCases)
    for (DType t : kFloatTypes)
      for (bool specials : {false, true}) {
        SCOPED_TRACE(absl::StrCat(std::string(dtypeName(t)), " ", k.name(), specials ? " specials" : ""));
        const AmpConvShape s = k.shape();
        const Shape xs{k.N, k.C, k.H, k.W}, ws{k.O, k.C, k.KH, k.KW}, ys{k.N, k.O, s.OH, s.OW};
        const Tensor x = randomTensor(t, xs, rng, specials), w = randomTensor(t, ws, rng, specials);
        const Tensor b = randomTensor(t, {k.O}, rng, false), dy = randomTensor(t, ys, rng, specials);
        // The input gradient's GEMM multiplies the taps no output reaches as zeros, where the
        // reference skips them: a non-finite weight there would make NaN. Finite weights.
        const Tensor wFinite = randomTensor(t, ws, rng, false);
        const AttrMap attrs = k.attrs();
        // Each pass with room for all its columns, then with a byte less: the forward and the input
        // gradient then run a few images at a time.
        auto expectReference = [&](ConvPass pass, bool bias, const std::vector<const Tensor*>& operands,
                                   const char* op, const Shape& resultShape) {
          auto whole = lowerConvToGemm(pass, t, s, bias, int64_t{1} << 30);
          ASSERT_TRUE(whole.ok()) << whole.status();
          const Tensor want = reference(op, operands, attrs, {t, resultShape});
          EXPECT_TRUE(sameBits(runLowering(*whole, t, operands, resultShape), want)) << op << (bias ? " with bias" : "");
          if (whole->workspaceBytes == 0) return;
          auto chunked = lowerConvToGemm(pass, t, s, bias, whole->workspaceBytes - 1);
          if (!chunked.ok()) return;  // not even one image fits, or the weight gradient
          ASSERT_GT(chunked->chunks, 1);
          ++chunkedRuns;
          EXPECT_TRUE(sameBits(runLowering(*chunked, t, operands, resultShape), want))
              << op << (bias ? " with bias" : "") << " in " << chunked->chunks << " chunks";
        };
        expectReference(ConvPass::Forward, false, {&x, &w}, "amp.conv2d", ys);
        expectReference(ConvPass::Forward, true, {&x, &w, &b}, "amp.conv2d", ys);
        expectReference(ConvPass::GradInput, false, {&dy, &wFinite}, "amp.conv2d_grad_input", xs);
        expectReference(ConvPass::GradWeight, false, {&x, &dy}, "amp.conv2d_grad_weight", ws);
      }
  EXPECT_GT(chunkedRuns, 0) << "no case ran in chunks of images";
}

}  // namespace
}  // namespace amp::rt::cuda
