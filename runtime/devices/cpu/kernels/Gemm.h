// A prepared matrix multiply for the CPU device with the semantics of `amp.matmul`
// (docs/reference-executor.md): operands of one float dtype, rank >= 2, optional transposes of the
// last two dims, numpy-broadcast batch dims, result in the operand dtype, f32 accumulation and one
// RNE rounding of each result element. The summation order is oneDNN's, not the reference's
// k = 0, 1, ... order, so f32 results agree with the reference within the usual dot-product error
// bound rather than bit for bit.
//
// With a bias (`amp.linear`): c[..., m, n] = rne_T(acc + f32(bias[n])), the bias added to the f32
// accumulator before the one rounding (oneDNN's matmul bias argument, the GEMM epilogue), so it
// costs no pass over c of its own.
//
// All planning (shape checks, oneDNN primitive creation, scratch layout) happens in create(); run()
// only converts (where needed) and executes.
#ifndef AMP_RUNTIME_DEVICES_CPU_KERNELS_GEMM_H
#define AMP_RUNTIME_DEVICES_CPU_KERNELS_GEMM_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/DType.h"
#include "runtime/Tensor.h"
#include "runtime/schema/CpuFeatures.h"

namespace dnnl {
struct engine;
}

namespace amp::rt::cpu {

// The process's one oneDNN cpu engine (Gemm.cpp). Its creation caps oneDNN's ISA at the level
// AMP_CPU_FEATURES leaves (ONEDNN_MAX_CPU_ISA does the same by hand), so every oneDNN primitive of
// the device (GEMMs, convolutions) must be created on it.
const dnnl::engine& cpuEngine();

struct GemmDesc {
  DType dtype = DType::F32;
  Shape a, b;  // a: [..., M, K] ([..., K, M] if transA); b: [..., K, N] ([..., N, K] if transB).
  bool transA = false, transB = false;
  // A bias vector [N] of `dtype`, added to every row of every batch in f32 before the rounding.
  bool bias = false;
};

class Gemm {
 public:
  // Validates the shapes and dtype (InvalidArgument naming both operand types on a mismatch) and
  // creates the oneDNN primitive. Strategy:
  //  - f32: one f32 oneDNN matmul on the caller's buffers.
  //  - bf16 where f.nativeBf16Gemm(2·M·N·K) (CpuFeatures.h): one bf16 matmul (f32 accumulation, bf16 dst). Caveat:
  //    VDPBF16PS/TDPBF16PS treat subnormal operands as zero and flush subnormal results, and the
  //    dst conversion is vcvtneps2bf16, so anything below 2^-126 in magnitude acts as +-0 here,
  //    unlike the reference (docs/numerics.md); everything else obeys the usual bound. Otherwise
  //    the exact (widened) path below.
  //  - f16, FP8, and bf16 without native support: operands widened exactly to f32 in scratch, the
  //    f32 matmul, then one RNE rounding to the result dtype (bit-identical to convertBuffer;
  //    F16C/AVX2 loops when both `f` and the host have them).
  // Transposes are strided memory descriptors (no copies). Batch dims broadcast inside the
  // primitive; a b shared by every batch (no batch dims above 1) with a non-transposed a folds the
  // batch into M; a batch layout oneDNN rejects (or more than its 12 dims) runs as a loop of 2-D
  // products with offsets precomputed here.
  static absl::StatusOr<std::unique_ptr<Gemm>> create(const GemmDesc& d, const CpuFeatures& f);

  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  // [batch..., M, N] where batch is the broadcast of the operands' batch dims.
  const Shape& resultShape() const;

  // Bytes of scratch run() needs (widened operands/bias/result and oneDNN's scratchpad); 0 means
  // the scratch pointer may be null.
  size_t scratchBytes() const;

  // c = op(a) . op(b). a, b, c are dense row-major buffers of the desc's dtype and shapes (c of
  // resultShape()); c must not overlap a or b, which are not read when the result is empty or
  // K == 0. `scratch` is scratchBytes() bytes, 64-byte aligned, and may be reused freely between
  // calls. The work runs on oneDNN's OpenMP threads (omp_get_max_threads() of the calling thread,
  // i.e. OMP_NUM_THREADS). No primitive creation and no allocation by this class;
  // oneDNN's dnnl_primitive_execute itself makes a few small bookkeeping allocations per call (its
  // argument map), independent of the problem size. Concurrent calls on one Gemm are serialised
  // (the oneDNN memory objects are shared); separate Gemm objects run concurrently.
  void run(const void* a, const void* b, void* c, void* scratch) const { run(a, b, nullptr, c, scratch); }
  // The same with the desc's bias vector ([N] of the desc's dtype; must be non-null exactly when
  // the desc has a bias, else the process aborts). c must not overlap bias either.
  void run(const void* a, const void* b, const void* bias, void* c, void* scratch) const;

  // The oneDNN implementation (impl_info_str, e.g. "brg:avx512_core_amx_bf16") plus notes on how
  // it is used: "(f16 widened to f32)", "(bias in the epilogue)", "(batch folded into M)",
  // "(batch loop x6)"; or "none (empty result)" / "none (K = 0: zero fill)" / "none (K = 0: bias
  // broadcast)" when no primitive is needed.
  std::string implName() const;

 private:
  struct Impl;
  explicit Gemm(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace amp::rt::cpu

#endif  // AMP_RUNTIME_DEVICES_CPU_KERNELS_GEMM_H
