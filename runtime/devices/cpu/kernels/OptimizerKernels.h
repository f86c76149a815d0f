// The per-element updates of the cpu device's Adam(W) and SGD steps (CpuTrain.cpp) on one block of
// f32 gradients, with AVX2 (8 lanes) and AVX-512 (16 lanes) paths chosen at run time.
//
// Every path runs the reference executor's f32 operations (ReferenceTrain.cpp) in the same order,
// one rounding each: add, sub, mul, div and sqrt are correctly rounded in a vector lane exactly as
// in scalar SSE, and nothing is fused (-ffp-contract=off, no FMA intrinsics). So each path gives the
// scalar loop's bits for every input; OptimizerKernelTest checks it. The scalar path is the
// original loop, kept as the fallback and the tests' oracle.
#ifndef AMP_RUNTIME_DEVICES_CPU_KERNELS_OPTIMIZERKERNELS_H
#define AMP_RUNTIME_DEVICES_CPU_KERNELS_OPTIMIZERKERNELS_H

#include <cstdint>

#include "runtime/devices/cpu/kernels/VectorPath.h"

namespace amp::rt::cpu {

// What the vector paths need (OptimizerAvx2.cpp, OptimizerAvx512.cpp): AVX2 and AVX-512 F alone,
// nothing to fuse; callers take hostVectorPath(kOptimizerNeeds).
inline constexpr VectorPathNeeds kOptimizerNeeds{/*fma=*/false, /*avx512VlDq=*/false};

// Adam's f32 constants for one step, rounded from the step's f64 scalars as the reference does.
struct AdamCoefficients {
  float decay;        // 1 - lr wd (decoupled weight decay)
  float wd;           // coupled weight decay
  float w;            // 1 - beta1 (the lerp weight)
  float oneMinusW;    // 1 - w
  float b2, c2;       // beta2, 1 - beta2
  float bc2Sqrt;      // sqrt(1 - beta2^step)
  float eps;
  float negStepSize;  // -lr / (1 - beta1^step)
  bool weightDecay;   // wd != 0
  bool decoupled;     // AdamW
  bool smallWeight;   // |w| < 0.5: ATen's lerp form
};

// One block: element i reads g, pin, min, vin [i] and writes p, m, v [i]. Outputs may be their
// inputs (p == pin, m == min, v == vin: in-place updates) or any input at the same index; they must
// not overlap them otherwise.
struct AdamBlock {
  const float* g;
  const float* pin;
  const float* min;
  const float* vin;
  float* p;
  float* m;
  float* v;
};

struct SgdCoefficients {
  float lr;
  float momentum;
  float wd;
  bool weightDecay;  // wd != 0
  bool nesterov;     // only with a momentum buffer
};

// bin and buf are null without momentum. The same aliasing rules as AdamBlock.
struct SgdBlock {
  const float* g;
  const float* pin;
  const float* bin;
  float* p;
  float* buf;
};

// n elements on `path`, which the caller checked the host runs.
void adamUpdateBlock(VectorPath path, const AdamCoefficients& c, const AdamBlock& b, int64_t n);
void sgdUpdateBlock(VectorPath path, const SgdCoefficients& c, const SgdBlock& b, int64_t n);

// The vector paths' entry points (OptimizerAvx2.cpp, OptimizerAvx512.cpp, each compiled for its
// ISA): call them only through the functions above.
namespace optimizer_isa {
void adamAvx2(const AdamCoefficients& c, const AdamBlock& b, int64_t n);
void adamAvx512(const AdamCoefficients& c, const AdamBlock& b, int64_t n);
void sgdAvx2(const SgdCoefficients& c, const SgdBlock& b, int64_t n);
void sgdAvx512(const SgdCoefficients& c, const SgdBlock& b, int64_t n);
}  // namespace optimizer_isa

}  // namespace amp::rt::cpu

#endif  // AMP_RUNTIME_DEVICES_CPU_KERNELS_OPTIMIZERKERNELS_H
