// The weight gradient of a convolution over a small output plane (a ResNet's layer3 on 28x28
// images: 3x3 kernels over 2x2 maps) as one GEMM per kernel tap. Tap t = (kh, kw) reads, for each
// output position p that it does not place on padding, the input position q_t(p); so
//   dw[:, :, kh, kw] = Σ_n Σ_{p valid for t} dy[n, :, p] ⊗ x[n, :, q_t(p)] = A_tᵀ · B_t,
// with A_t [N·P_t, O] and B_t [N·P_t, C] the rows (n, p) of dy and x in channels-last order
// (gathered from one NHWC copy of each). oneDNN's direct kernels walk every tap at every position,
// padded ones included (5 of 9 over a 2x2 map), and block poorly over such planes; these GEMMs sum
// only real terms. The reference adds fl(0 · dy) for the padded taps, +0 for a finite dy; the
// caller keeps the direct loops for runs where dy is not finite. Each weight is one GEMM's result:
// the GEMM bound of docs/cpu-device.md with K = N·P_t terms (at most N·OH·OW, the bound's K).
#ifndef AMP_RUNTIME_DEVICES_CPU_STEPS_CONVTAPGEMMS_H
#define AMP_RUNTIME_DEVICES_CPU_STEPS_CONVTAPGEMMS_H

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/DType.h"
#include "runtime/devices/cpu/kernels/Gemm.h"
#include "runtime/devices/cpu/steps/ConvGeom.h"
#include "runtime/devices/cpu/steps/CpuKernelUtil.h"

namespace amp::rt::cpu {

class ConvTapGemms {
 public:
  // Output planes of at most this many positions take this form.
  static constexpr int64_t kMaxPlane = 16;

  // nullptr unless g is a grad_weight with one group, an output plane of 2..kMaxPlane positions,
  // and t is f32, bf16 or f16. Scratch is reserved in `shared`.
  static std::unique_ptr<ConvTapGemms> create(ConvKind kind, const ConvGeom& g, DType t, const CpuFeatures& f,
                                              SharedFloats& shared);
  // x [N, C, H, W] and dy [N, O, OH, OW] -> dw [O, C, KH, KW].
  void run(const uint8_t* x, const uint8_t* dy, uint8_t* dw, const SharedFloats& shared) const;
  std::string implName() const;

 private:
  struct Tap {
    int64_t index;                                // kh·KW + kw
    std::vector<int64_t> outputs, inputs;         // the positions p it reads from, q_t(p)
    std::unique_ptr<Gemm> gemm;                   // null when no position is valid (dw is +0)
  };
  ConvTapGemms() = default;
  ConvGeom g_{};
  DType dtype_ = DType::F32;
  std::vector<Tap> taps_;
  int64_t dyT_ = 0, xT_ = 0, a_ = 0, b_ = 0, dwTaps_ = 0, gemmScratch_ = 0;  // SharedFloats offsets
};

}  // namespace amp::rt::cpu

#endif  // AMP_RUNTIME_DEVICES_CPU_STEPS_CONVTAPGEMMS_H
