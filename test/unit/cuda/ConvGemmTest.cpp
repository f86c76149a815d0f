// The cuda device's implicit-GEMM convolutions (runtime/devices/cuda/ConvGemm.h), run on the host:
// the gathers of kernels/ConvGather.h copy elements as ConvGatherKernels.cu's threads do, and the
// planned cuBLASLt call runs through the column-major emulator (GemmEmulator.h), which sums k in
// order as the reference's loops do. The result must be the reference executor's bits, in f32,
// bf16 and f16, over strides, padding, dilation and bias. That proves the index maps and the GEMM
// shapes; on a GPU, cuBLASLt's own summation order makes the results "within summation-order
// bounds" (docs/cuda-device.md). Compiled with -ffp-contract=off.
#include <cstring>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "runtime/devices/cuda/ConvGemm.h"
#include "runtime/kernels/cuda/ConvGather.h"
#include "test/unit/common/ConvTestSupport.h"
#include "test/unit/cuda/GemmEmulator.h"

namespace amp::rt::cuda {
namespace {

using namespace convtest;

// Runs a lowering on the host, chunk by chunk: `operands` as the step's, the result of
// `resultShape`.
Tensor runLowering(const ConvGemmLowering& l, DType t, const std::vector<const Tensor*>& operands, const Shape& resultShape) {
  const size_t es = dtypeSize(t);
  std::vector<uint8_t> workspace(static_cast<size_t>(l.workspaceBytes));
  Tensor result(t, resultShape);
  auto base = [&](const ConvBuffer& b) -> std::pair<uint8_t*, size_t> {  // start and size in bytes
    switch (b.kind) {
      case ConvBuffer::Kind::Operand: {
        const Tensor* o = operands[static_cast<size_t>(b.operand)];
        return {const_cast<uint8_t*>(o->data()), o->nbytes()};
      }
      case ConvBuffer::Kind::Result: return {result.data(), result.nbytes()};
      case ConvBuffer::Kind::Workspace: return {workspace.data() + b.offset, workspace.size() - static_cast<size_t>(b.offset)};
    }
    return {nullptr, 0};
  };
  auto at = [&](const ConvBuffer& b, int64_t chunk) {
    auto [p, n] = base(b);
    const size_t moved = static_cast<size_t>(chunk * b.chunkStride);
    EXPECT_LE(moved, n);
    return std::make_pair(p + moved, n - moved);
  };
  for (int64_t chunk = 0; chunk < l.chunks; ++chunk) {
    for (const ConvGather& g : l.gathers) {
      if (chunk > 0 && !g.everyChunk) continue;
      EXPECT_EQ(g.elements, amp_conv_gather_count(l.shape, g.mode));
      const uint8_t* src = at(g.source, chunk).first;
      auto [dst, room] = at(g.target, chunk);
      EXPECT_LE(static_cast<size_t>(g.elements) * es, room);
      for (long long i = 0; i < g.elements; ++i) {
        const long long j = amp_conv_gather_source(l.shape, g.mode, i);
        if (j >= 0)
          std::memcpy(dst + i * es, src + j * es, es);
        else
          std::memset(dst + i * es, 0, es);
      }
    }
    // The emulator reads its operands by index: copies of the buffers from the chunk's start.
    auto view = [&](const ConvBuffer& b) {
      auto [p, n] = at(b, chunk);
      Tensor v(t, {static_cast<int64_t>(n / es)});
      std::memcpy(v.data(), p, v.nbytes());
      return v;
    };
    auto [d, room] = at(l.d, chunk);
    Tensor prior(t, l.gemm.resultShape);
    EXPECT_LE(prior.nbytes(), room);
    std::memcpy(prior.data(), d, prior.nbytes());
    const Tensor out = emulateGemm(l.gemm, view(l.a), view(l.b), nullptr, &prior);
    std::memcpy(d, out.data(), out.nbytes());
  }
  return result;
}

const ConvCase kCases[] = {
    {2, 3, 7, 6, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1},  // same padding
    {1, 4, 9, 8, 6, 3, 2, 1, 2, 1, 1, 0, 1, 1},  // stride, asymmetric kernel
    {2, 2, 8, 9, 3, 2, 3, 1, 1, 2, 0, 1, 2, 2},  // dilation
    {1, 3, 5, 5, 5, 5, 5, 1, 3, 3, 2, 2, 1, 1},  // a kernel as large as the input, stride 3
    {3, 1, 6, 6, 2, 1, 1, 1, 2, 2, 0, 0, 1, 1},  // a 1x1 kernel with stride: taps the stride skips
    {2, 5, 4, 3, 3, 1, 1, 1, 1, 1, 0, 0, 1, 1},  // pointwise: the GEMM reads x, dy and w as stored
};

TEST(ConvGemm, TheGathersAndOneGemmGiveTheReferencesBits) {
  std::mt19937 rng(13);
  for (const ConvCase& k : kCases)
    for (DType t : kFloatTypes)
      for (bool specials : {false, true}) {
        const std::string what = absl::StrCat(std::string(dtypeName(t)), " ", k.name(), specials ? " specials" : "");
        SCOPED_TRACE(what);
        const AmpConvShape s = k.shape();
        const Shape xs{k.N, k.C, k.H, k.W}, ws{k.O, k.C, k.KH, k.KW}, ys{k.N, k.O, s.OH, s.OW};
        const Tensor x = randomTensor(t, xs, rng, specials), w = randomTensor(t, ws, rng, specials);
        const Tensor b = randomTensor(t, {k.O}, rng, false), dy = randomTensor(t, ys, rng, specials);
        // The input gradient's GEMM also multiplies the taps no output reaches, as zeros: a
        // non-finite weight there gives NaN where the reference skips the tap. Finite weights.
        const Tensor wFinite = randomTensor(t, ws, rng, false);
        const AttrMap attrs = k.attrs();
        for (bool bias : {false, true}) {
          auto l = lowerConvToGemm(ConvPass::Forward, t, s, bias, int64_t{1} << 30);
          ASSERT_TRUE(l.ok()) << l.status();
          EXPECT_EQ(l->gemm.accumulate, bias);
          std::vector<const Tensor*> operands{&x, &w};
          if (bias) operands.push_back(&b);
          EXPECT_TRUE(sameBits(runLowering(*l, t, operands, ys),
                               reference("amp.conv2d", operands, attrs, {t, ys}))) << (bias ? "conv2d with bias" : "conv2d");
        }
        auto gi = lowerConvToGemm(ConvPass::GradInput, t, s, false, int64_t{1} << 30);
        ASSERT_TRUE(gi.ok()) << gi.status();
        EXPECT_TRUE(sameBits(runLowering(*gi, t, {&dy, &wFinite}, xs),
                             reference("amp.conv2d_grad_input", {&dy, &wFinite}, attrs, {t, xs}))) << "conv2d_grad_input";
        auto gw = lowerConvToGemm(ConvPass::GradWeight, t, s, false, int64_t{1} << 30);
        ASSERT_TRUE(gw.ok()) << gw.status();
        EXPECT_TRUE(sameBits(runLowering(*gw, t, {&x, &dy}, ws),
                             reference("amp.conv2d_grad_weight", {&x, &dy}, attrs, {t, ws}))) << "conv2d_grad_weight";
      }
}

// Columns beyond the limit: the forward and the input gradient run a few images at a time, with
// the same bits; the weight gradient, whose GEMM sums over the images, declines.
TEST(ConvGemm, ChunksOfImagesKeepTheColumnsUnderTheLimit) {
  std::mt19937 rng(17);
  const ConvCase k{6, 3, 7, 6, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1};
  const AmpConvShape s = k.shape();
  const Shape xs{k.N, k.C, k.H, k.W}, ws{k.O, k.C, k.KH, k.KW}, ys{k.N, k.O, s.OH, s.OW};
  for (DType t : kFloatTypes) {
    SCOPED_TRACE(std::string(dtypeName(t)));
    const Tensor x = randomTensor(t, xs, rng, true), w = randomTensor(t, ws, rng, false);
    const Tensor b = randomTensor(t, {k.O}, rng, false), dy = randomTensor(t, ys, rng, true);
    // One image's forward columns: 27 taps x 42 positions.
    const int64_t perImage = (27 * 42 * int64_t(dtypeSize(t)) + 255) / 256 * 256;
    auto f = lowerConvToGemm(ConvPass::Forward, t, s, true, 2 * perImage + 255);
    ASSERT_TRUE(f.ok()) << f.status();
    EXPECT_EQ(f->chunks, 3) << "two of the six images at a time";
    EXPECT_EQ(f->shape.N, 2);
    EXPECT_LE(f->workspaceBytes, 2 * perImage + 255);
    EXPECT_TRUE(sameBits(runLowering(*f, t, {&x, &w, &b}, ys),
                         reference("amp.conv2d", {&x, &w, &b}, k.attrs(), {t, ys}))) << "conv2d in chunks";
    // Two images' dy columns (36 taps x 42 positions each) and w by input channel.
    const int64_t twoImages = (2 * 36 * 42 * int64_t(dtypeSize(t)) + 255) / 256 * 256 + 512;
    auto gi = lowerConvToGemm(ConvPass::GradInput, t, s, false, twoImages);
    ASSERT_TRUE(gi.ok()) << gi.status();
    EXPECT_EQ(gi->chunks, 3);
    EXPECT_TRUE(sameBits(runLowering(*gi, t, {&dy, &w}, xs),
                         reference("amp.conv2d_grad_input", {&dy, &w}, k.attrs(), {t, xs}))) << "conv2d_grad_input in chunks";
    auto gw = lowerConvToGemm(ConvPass::GradWeight, t, s, false, twoImages);
    ASSERT_FALSE(gw.ok());
    EXPECT_TRUE(absl::IsResourceExhausted(gw.status())) << gw.status();
  }
}

TEST(ConvGemm, TheColumnsAreSizedAndAligned) {
  const AmpConvShape s = ConvCase{8, 16, 10, 10, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1}.shape();
  const int64_t K = 16 * 9, P = 100;
  auto f = lowerConvToGemm(ConvPass::Forward, DType::BF16, s, true, int64_t{1} << 30);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->workspaceBytes, (8 * K * P * 2 + 255) / 256 * 256);
  EXPECT_EQ(f->gemm.batch, 8);  // one GEMM per image, w shared
  EXPECT_EQ(f->gemm.strideB, 0);
  EXPECT_EQ(f->gemm.k, K);
  auto gw = lowerConvToGemm(ConvPass::GradWeight, DType::BF16, s, false, int64_t{1} << 30);
  ASSERT_TRUE(gw.ok());
  EXPECT_EQ(gw->gemm.batch, 1);  // the images are the contraction: one GEMM
  EXPECT_EQ(gw->gemm.k, 8 * P);
  ASSERT_EQ(gw->gathers.size(), 2u);
  EXPECT_EQ(gw->a.offset % 256, 0);
  EXPECT_EQ(gw->a.offset, (K * 8 * P * 2 + 255) / 256 * 256);
}

TEST(ConvGemm, APointwiseConvolutionGathersOnlyForItsWeightGradient) {
  const AmpConvShape s = ConvCase{4, 64, 7, 7, 32, 1, 1, 1, 1, 1, 0, 0, 1, 1}.shape();
  auto f = lowerConvToGemm(ConvPass::Forward, DType::BF16, s, false, int64_t{1} << 30);
  auto gi = lowerConvToGemm(ConvPass::GradInput, DType::BF16, s, false, int64_t{1} << 30);
  auto gw = lowerConvToGemm(ConvPass::GradWeight, DType::BF16, s, false, int64_t{1} << 30);
  ASSERT_TRUE(f.ok() && gi.ok() && gw.ok());
  EXPECT_TRUE(f->gathers.empty());
  EXPECT_EQ(f->workspaceBytes, 0);
  EXPECT_TRUE(gi->gathers.empty());
  EXPECT_EQ(gi->workspaceBytes, 0);
  EXPECT_EQ(gi->a.kind, ConvBuffer::Kind::Operand);
  EXPECT_EQ(gw->gathers.size(), 2u) << "the images are the contraction: x and dy by channel";
  // Stride 2 is not pointwise: its columns skip positions.
  const AmpConvShape strided = ConvCase{4, 64, 7, 7, 32, 1, 1, 1, 2, 2, 0, 0, 1, 1}.shape();
  auto fs = lowerConvToGemm(ConvPass::Forward, DType::BF16, strided, false, int64_t{1} << 30);
  ASSERT_TRUE(fs.ok());
  EXPECT_EQ(fs->gathers.size(), 1u);
}

TEST(ConvGemm, DeclinesGroupsAndColumnsBeyondTheLimit) {
  const AmpConvShape grouped = ConvCase{1, 4, 9, 8, 6, 3, 2, 2, 2, 1, 1, 0, 1, 1}.shape();
  auto g = lowerConvToGemm(ConvPass::Forward, DType::F16, grouped, false, int64_t{1} << 30);
  ASSERT_FALSE(g.ok());
  EXPECT_TRUE(absl::IsUnimplemented(g.status())) << g.status();
  const AmpConvShape big = ConvCase{64, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1}.shape();
  auto b = lowerConvToGemm(ConvPass::GradWeight, DType::F16, big, false, int64_t{128} << 20);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("more than the 134217728"), std::string::npos) << b.status();
  auto one = lowerConvToGemm(ConvPass::GradInput, DType::F16, big, false, int64_t{1} << 20);
  ASSERT_FALSE(one.ok());
  EXPECT_NE(one.status().message().find("even one image at a time"), std::string::npos) << one.status();
}

}  // namespace
}  // namespace amp::rt::cuda
