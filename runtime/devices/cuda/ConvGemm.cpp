#include "runtime/devices/cuda/ConvGemm.h"

#include "absl/strings/str_cat.h"
#include "runtime/kernels/cuda/ConvGather.h"

namespace amp::rt::cuda {
namespace {

ConvBuffer operand(int i, int64_t chunkStride = 0) { return {ConvBuffer::Kind::Operand, i, 0, chunkStride}; }
ConvBuffer result(int64_t chunkStride) { return {ConvBuffer::Kind::Result, 0, 0, chunkStride}; }

// Workspace parts, each 256-byte aligned (cuBLASLt's preferred operand alignment).
struct Workspace {
  int64_t bytes = 0;
  ConvBuffer take(int64_t elements, int64_t elementBytes) {
    ConvBuffer b{ConvBuffer::Kind::Workspace, 0, bytes, 0};
    bytes += (elements * elementBytes + 255) / 256 * 256;
    return b;
  }
};

}  // namespace

const char* convGatherName(int mode) {
  switch (mode) {
    case AMP_CONV_COLUMNS: return "columns of x";
    case AMP_CONV_COLUMNS_BY_TAP: return "columns of x by tap";
    case AMP_CONV_DY_COLUMNS: return "columns of dy";
    case AMP_CONV_DY_BY_CHANNEL: return "dy by channel";
    case AMP_CONV_W_BY_INPUT: return "w by input channel";
    case AMP_CONV_BIAS_ROWS: return "bias rows";
  }
  return "?";
}

namespace {

// The lowering of `s.N` images at once: one chunk.
absl::StatusOr<ConvGemmLowering> lowerChunk(ConvPass pass, DType dtype, const AmpConvShape& s, bool bias) {
  const int64_t elementBytes = static_cast<int64_t>(dtypeSize(dtype));
  const int64_t K = s.C * s.KH * s.KW, P = s.OH * s.OW, R = s.O * s.KH * s.KW, HW = s.H * s.W;
  // What one chunk of images moves each per-image tensor by.
  const int64_t xChunk = s.N * s.C * HW * elementBytes, yChunk = s.N * s.O * P * elementBytes;
  ConvGemmLowering out;
  out.shape = s;
  Workspace ws;
  auto gather = [&](int mode, ConvBuffer source, ConvBuffer target) {
    ConvGather g;
    g.mode = mode;
    g.source = source;
    g.target = target;
    g.elements = amp_conv_gather_count(s, mode);
    g.everyChunk = source.chunkStride != 0 || target.chunkStride != 0;
    out.gathers.push_back(g);
    return target;
  };
  // A pointwise convolution (1x1, stride 1, no padding) is a GEMM as stored: x is its own
  // columns, dy its own dcols, and w^T is wt.
  const bool pointwise = s.KH == 1 && s.KW == 1 && s.strideH == 1 && s.strideW == 1 && s.padH == 0 && s.padW == 0;
  GemmProblem p;
  p.dtype = dtype;
  switch (pass) {
    case ConvPass::Forward:  // y[n] [O, P] = w [O, K] . cols[n] [K, P]
      out.b = pointwise ? operand(0, xChunk) : gather(AMP_CONV_COLUMNS, operand(0, xChunk), ws.take(s.N * K * P, elementBytes));
      out.a = operand(1);
      out.d = result(yChunk);
      if (bias) gather(AMP_CONV_BIAS_ROWS, operand(2), out.d);
      p.a = {s.O, K};
      p.b = {s.N, K, P};
      break;
    case ConvPass::GradInput:  // dx[n] [C, HW] = wt [C, R] . dcols[n] [R, HW]
      out.d = result(xChunk);
      if (pointwise) {  // R = O: dx[n] = w^T [C, O] . dy[n] [O, HW]
        out.b = operand(0, yChunk);
        out.a = operand(1);
        p.a = {s.O, s.C};
        p.transA = true;
      } else {
        out.b = gather(AMP_CONV_DY_COLUMNS, operand(0, yChunk), ws.take(s.N * R * HW, elementBytes));
        out.a = gather(AMP_CONV_W_BY_INPUT, operand(1), ws.take(s.C * R, elementBytes));
        p.a = {s.C, R};
      }
      p.b = {s.N, R, HW};
      break;
    case ConvPass::GradWeight:  // dw [O, K] = dyt [O, NP] . colsT [K, NP]^T
      out.b = gather(AMP_CONV_COLUMNS_BY_TAP, operand(0), ws.take(K * s.N * P, elementBytes));
      out.a = gather(AMP_CONV_DY_BY_CHANNEL, operand(1), ws.take(s.O * s.N * P, elementBytes));
      out.d = result(0);
      p.a = {s.O, s.N * P};
      p.b = {K, s.N * P};
      p.transB = true;
      break;
  }
  auto gemm = planGemm(p);
  if (!gemm.ok()) return gemm.status();
  out.gemm = *gemm;
  out.gemm.accumulate = pass == ConvPass::Forward && bias;
  out.workspaceBytes = ws.bytes;
  return out;
}

}  // namespace

absl::StatusOr<ConvGemmLowering> lowerConvToGemm(ConvPass pass, DType dtype, const AmpConvShape& s, bool bias,
                                                 int64_t maxWorkspaceBytes) {
  if (s.CG != s.C || s.OG != s.O) return absl::UnimplementedError("a grouped convolution has no single GEMM");
  auto whole = lowerChunk(pass, dtype, s, bias);
  if (!whole.ok() || whole->workspaceBytes <= maxWorkspaceBytes) return whole;
  // The forward and the input gradient treat each image on its own: fewer images at a time, in
  // equal chunks (a divisor of N), give the same bits with smaller columns. The weight gradient
  // sums over the images inside its one GEMM, which chunks would round between.
  if (pass != ConvPass::GradWeight)
    for (int64_t images = s.N / 2; images >= 1; --images) {
      if (s.N % images != 0) continue;
      AmpConvShape part = s;
      part.N = images;
      auto chunk = lowerChunk(pass, dtype, part, bias);
      if (!chunk.ok()) return chunk;
      if (chunk->workspaceBytes > maxWorkspaceBytes) continue;
      chunk->chunks = s.N / images;
      return chunk;
    }
  return absl::ResourceExhaustedError(absl::StrCat("its columns need ", whole->workspaceBytes, " bytes, more than the ",
                                                   maxWorkspaceBytes, " the device gives them",
                                                   pass == ConvPass::GradWeight ? "" : ", even one image at a time"));
}

}  // namespace amp::rt::cuda
