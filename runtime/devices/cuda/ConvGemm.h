// The cuda device's implicit-GEMM convolutions: amp.conv2d, conv2d_grad_input and
// conv2d_grad_weight as gathers into column buffers (kernels/ConvGather.h) followed by one cuBLASLt
// GEMM, so convolutions run on the tensor cores like linear layers. Every GEMM sums its k in the
// reference's loop order and rounds once, so with a GEMM that sums in k order the result is the
// reference's bits (test/unit/cuda/ConvGemmTest.cpp checks this with a column-major emulator);
// cuBLASLt's own order makes it "within summation-order bounds", as for amp.linear. The columns
// cost memory (KH·KW times the input, or the output gradient), in one workspace per executor. Pure
// host logic.
#ifndef AMP_RUNTIME_DEVICES_CUDA_CONVGEMM_H
#define AMP_RUNTIME_DEVICES_CUDA_CONVGEMM_H

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/devices/cuda/GemmPlan.h"
#include "runtime/kernels/math/ConvMath.h"

namespace amp::rt::cuda {

enum class ConvPass { Forward, GradInput, GradWeight };

// A convolution step as the kernels see it.
struct ConvProblem {
  ConvPass pass = ConvPass::Forward;
  AmpConvShape shape{};
  bool bias = false;  // the forward has a bias operand
  DType dtype = DType::F32;
};

// A buffer of the lowering: one of the step's operands, its result, or a part of the workspace.
struct ConvBuffer {
  enum class Kind { Operand, Result, Workspace } kind = Kind::Workspace;
  int operand = 0;     // Operand: its index among the step's operands
  int64_t offset = 0;  // Workspace: bytes from its start (256-byte aligned)
  int64_t chunkStride = 0;  // bytes each chunk of images moves it by (0: every chunk reads the same)
};

struct ConvGather {
  int mode = 0;  // AmpConvGatherMode (kernels/ConvGather.h), over `shape` (one chunk's images)
  ConvBuffer source, target;
  int64_t elements = 0;
  bool everyChunk = true;  // false: its target holds the same for every chunk (w by input channel)
};

// For each of `chunks` chunks of shape.N images: the gathers in order, then the GEMM
// D = a . b (+ D when gemm.accumulate), D the step's result.
struct ConvGemmLowering {
  AmpConvShape shape{};  // one chunk's: N is the images per chunk
  int64_t chunks = 1;
  std::vector<ConvGather> gathers;
  ConvBuffer a, b, d;
  GemmPlan gemm;
  int64_t workspaceBytes = 0;
};

// What a gather mode builds, for reports: "columns of x", "bias rows", ...
const char* convGatherName(int mode);

// The lowering of one ungrouped convolution pass of element type `dtype` (f32, f16 or bf16);
// `bias`: the forward has a bias operand (operand 2). Operands as the plan orders them: forward
// (x, w[, bias]), grad_input (dy, w), grad_weight (x, dy). Columns of more than
// `maxWorkspaceBytes` split the forward and input gradient into chunks of images. Refuses grouped
// convolutions, and a weight gradient (or one image) whose columns exceed the limit; the caller
// then runs the direct kernels.
absl::StatusOr<ConvGemmLowering> lowerConvToGemm(ConvPass pass, DType dtype, const AmpConvShape& shape, bool bias,
                                                 int64_t maxWorkspaceBytes);

}  // namespace amp::rt::cuda

#endif  // AMP_RUNTIME_DEVICES_CUDA_CONVGEMM_H
