// A convolution whose output plane is 1x1 (a ResNet's last stage on small images: 3x3 kernels
// over a 2x2 or 1x1 map) is one GEMM: the one output position reads T of the KH·KW taps, the rest
// read padding. With xg[N, C·T] the input values those taps read and wg[O, C·T] their weights:
//   forward      y[N, O]   = xg · wgᵀ (+ bias)
//   grad_input   dxg       = dy[N, O] · wg, scattered back into dx (+0 where no tap reads)
//   grad_weight  dwg       = dy[N, O]ᵀ · xg, scattered into dw (+0 at the padded taps)
// When the taps read the whole input plane in order (a 1x1 map, or a 3x3/stride-2 window over a
// 2x2 map), xg and dxg are x and dx as stored and nothing is gathered; wg is gathered into scratch.
// The padded taps add fl(0 · v) in the reference: +0 for a finite v, which changes nothing; the
// caller keeps the direct loops for runs where v is not finite (NaN). Results obey the GEMM bound
// of docs/cpu-device.md with K = C·T, O or N terms.
#ifndef AMP_RUNTIME_DEVICES_CPU_STEPS_CONVASGEMM_H
#define AMP_RUNTIME_DEVICES_CPU_STEPS_CONVASGEMM_H

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/DType.h"
#include "runtime/devices/cpu/kernels/Gemm.h"
#include "runtime/devices/cpu/steps/ConvGeom.h"
#include "runtime/devices/cpu/steps/CpuKernelUtil.h"

namespace amp::rt::cpu {

class ConvAsGemm {
 public:
  // nullptr unless g has a 1x1 output plane, one group and at least one tap inside the input, and
  // t is f32, bf16 or f16. Scratch is reserved in `shared`.
  static std::unique_ptr<ConvAsGemm> create(ConvKind kind, const ConvGeom& g, DType t, bool bias,
                                            const CpuFeatures& f, SharedFloats& shared);
  // a, b, bias, out as ConvStep names them (forward: x, w, bias -> y; grad_input: dy, w -> dx;
  // grad_weight: x, dy -> dw).
  void run(const uint8_t* a, const uint8_t* b, const uint8_t* bias, uint8_t* out, const SharedFloats& shared) const;
  std::string implName() const;

 private:
  ConvAsGemm() = default;
  ConvKind kind_ = ConvKind::Forward;
  DType dtype_ = DType::F32;
  int64_t n_ = 0, c_ = 0, o_ = 0, kernelTaps_ = 0, plane_ = 0;
  std::vector<int64_t> taps_;       // kh·KW + kw of each tap that reads the input, in order
  std::vector<int64_t> positions_;  // ih·W + iw it reads
  bool planeInOrder_ = false;       // positions_ == 0, 1, ..., H·W - 1: xg is x
  std::unique_ptr<Gemm> gemm_;
  int64_t wg_ = 0, xg_ = 0, resultg_ = 0, gemmScratch_ = 0;  // SharedFloats offsets
};

}  // namespace amp::rt::cpu

#endif  // AMP_RUNTIME_DEVICES_CPU_STEPS_CONVASGEMM_H
