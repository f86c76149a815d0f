// Softmax and log-softmax for the cpu device, bit-exact with the reference's softmaxSlice but
// without libm's exp per element where the CPU has AVX2 + FMA or AVX-512.
//
// softmaxSlice computes m = max (in order, NaN skipped), e_j = f32(exp(f64(x_j - m))) with glibc,
// s = the f32 sum of e_j in the contract's blocked pairwise order (runtime/kernels/math/SumOrder.h),
// then e_j / s or (x_j - m) - f32(log s). The vector paths run many slices at once, one per f32
// lane, so every lane does exactly those operations in that order (max_ps is the reference's
// `x > m ? x : m`, the sum keeps the order per slice); only e^w is a polynomial (ExpNonPositiveSimd.h) whose f32 rounding is used where a bound
// proves glibc's value rounds to the same bits, and recomputed with glibc elsewhere (NaN, or a
// value within ~2^-48 of a rounding boundary: about one element in 10^7); a slice holding a NaN
// runs softmaxSlice itself (which of two NaNs an f32 sum keeps is the compiler's operand order,
// there and here: only the reference's own code is sure to match it). Contiguous rows go
// through a transposed tile of 8 (AVX2) or 16 (AVX-512) rows. SoftmaxExactTest checks every path
// against softmaxSlice; docs/cpu-device.md ("Softmax without libm per element") has the method.
#ifndef AMP_RUNTIME_DEVICES_CPU_KERNELS_SOFTMAXEXACT_H
#define AMP_RUNTIME_DEVICES_CPU_KERNELS_SOFTMAXEXACT_H

#include <cstdint>

#include "runtime/devices/cpu/kernels/VectorPath.h"

namespace amp::rt::cpu {

// What the vector paths need (SoftmaxExactAvx2.cpp, SoftmaxExactAvx512.cpp): fma on both, VL and
// DQ on AVX-512; callers take hostVectorPath(kSoftmaxNeeds). VectorPath::Scalar is softmaxSlice
// itself.
inline constexpr VectorPathNeeds kSoftmaxNeeds{/*fma=*/true, /*avx512VlDq=*/true};

// Rows per call that fill every lane of the widest path; callers batch rows in multiples of it.
inline constexpr int64_t kSoftmaxRowBlock = 16;
// f32 scratch the calls below need for slices of `len` values.
inline int64_t softmaxScratchFloats(int64_t len) { return 2 * kSoftmaxRowBlock * len; }

// softmaxSlice(x + r len, len, 1, log, y + r len) for r < rows, on `path` (which the caller
// checked the host runs). y may be x. Returns how many e^w were computed with libm.
int64_t softmaxRows(VectorPath path, const float* x, int64_t rows, int64_t len, bool log, float* y, float* scratch);
// softmaxSlice(x + c, len, stride, log, y + c) for c < width. y must not overlap x.
int64_t softmaxColumns(VectorPath path, const float* x, int64_t len, int64_t stride, int64_t width, bool log, float* y,
                       float* scratch);

// For tests, on a vector path: e[i] the fast f32 e^w[i] whether or not certified, ok[i] = 1 where
// the bound certifies it (any n). The polynomial alone on doubles (n a multiple of 8).
void softmaxExpLanes(VectorPath path, const float* w, float* e, uint8_t* ok, int64_t n);
void softmaxApproxExp(VectorPath path, const double* w, double* e, int64_t n);

}  // namespace amp::rt::cpu

#endif  // AMP_RUNTIME_DEVICES_CPU_KERNELS_SOFTMAXEXACT_H
