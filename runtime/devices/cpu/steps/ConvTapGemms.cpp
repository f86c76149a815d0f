#include "runtime/devices/cpu/steps/ConvTapGemms.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "runtime/devices/cpu/kernels/TransposeTile.h"

namespace amp::rt::cpu {
namespace {

// dst[n, s, c] = src[n, c, s] for `channels` channels of `plane` elements per image: bit moves.
void toChannelsLast(const uint8_t* src, int64_t n, int64_t channels, int64_t plane, size_t es, uint8_t* dst) {
  const int64_t image = channels * plane;
  parallelFor(n, std::max<int64_t>(1, 65536 / std::max<int64_t>(image, 1)), [&](int64_t n0, int64_t n1) {
    for (int64_t i = n0; i < n1; ++i)
      transpose::tileBits(es, src + i * image * es, plane, dst + i * image * es, channels, plane, channels);
  });
}

// dst rows (n, k) = src rows (n, at[k]) of `width` elements, src holding `plane` rows per image.
void gatherRows(const uint8_t* src, int64_t n, int64_t plane, const std::vector<int64_t>& at, int64_t width,
                size_t es, uint8_t* dst) {
  const int64_t rows = static_cast<int64_t>(at.size());
  const size_t bytes = static_cast<size_t>(width) * es;
  parallelFor(n, std::max<int64_t>(1, 65536 / std::max<int64_t>(rows * width, 1)), [&](int64_t n0, int64_t n1) {
    for (int64_t i = n0; i < n1; ++i)
      for (int64_t k = 0; k < rows; ++k)
        std::memcpy(dst + (i * rows + k) * bytes, src + (i * plane + at[k]) * bytes, bytes);
  });
}

}  // namespace

std::unique_ptr<ConvTapGemms> ConvTapGemms::create(ConvKind kind, const ConvGeom& g, DType t, const CpuFeatures& f,
                                                   SharedFloats& shared) {
  const int64_t plane = g.oh * g.ow;
  if (kind != ConvKind::GradWeight || g.og != g.o || plane < 2 || plane > kMaxPlane ||
      (t != DType::F32 && t != DType::BF16 && t != DType::F16))
    return nullptr;
  std::unique_ptr<ConvTapGemms> s(new ConvTapGemms);
  s->g_ = g, s->dtype_ = t;
  int64_t widest = 0;
  for (int64_t kh = 0; kh < g.kh; ++kh)
    for (int64_t kw = 0; kw < g.kw; ++kw) {
      Tap tap;
      tap.index = kh * g.kw + kw;
      for (int64_t oy = 0; oy < g.oh; ++oy)
        for (int64_t ox = 0; ox < g.ow; ++ox) {
          const int64_t iy = oy * g.sh + kh * g.dh - g.ph, ix = ox * g.sw + kw * g.dw - g.pw;
          if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
          tap.outputs.push_back(oy * g.ow + ox);
          tap.inputs.push_back(iy * g.w + ix);
        }
      const int64_t K = g.n * static_cast<int64_t>(tap.outputs.size());
      if (K > 0) {
        GemmDesc d;
        d.dtype = t;
        d.a = {K, g.o}, d.transA = true, d.b = {K, g.c};
        auto gemm = Gemm::create(d, f);
        if (!gemm.ok()) return nullptr;
        tap.gemm = std::move(*gemm);
        widest = std::max<int64_t>(widest, static_cast<int64_t>(tap.outputs.size()));
      }
      s->taps_.push_back(std::move(tap));
    }
  const int64_t es = static_cast<int64_t>(dtypeSize(t));
  auto floatsOf = [&](int64_t elements) { return (elements * es + 3) / 4; };
  s->dyT_ = shared.reserve(floatsOf(g.n * plane * g.o));
  s->xT_ = shared.reserve(floatsOf(g.n * g.h * g.w * g.c));
  s->a_ = shared.reserve(floatsOf(g.n * widest * g.o));
  s->b_ = shared.reserve(floatsOf(g.n * widest * g.c));
  s->dwTaps_ = shared.reserve(floatsOf(g.kh * g.kw * g.o * g.c));
  size_t scratch = 0;
  for (const Tap& tap : s->taps_)
    if (tap.gemm) scratch = std::max(scratch, tap.gemm->scratchBytes());
  s->gemmScratch_ = shared.reserve(int64_t((scratch + 3) / 4));
  return s;
}

void ConvTapGemms::run(const uint8_t* x, const uint8_t* dy, uint8_t* dw, const SharedFloats& shared) const {
  const ConvGeom& g = g_;
  const size_t es = dtypeSize(dtype_);
  auto at = [&](int64_t offset) { return reinterpret_cast<uint8_t*>(shared.at(offset)); };
  const int64_t plane = g.oh * g.ow, taps = g.kh * g.kw;
  toChannelsLast(dy, g.n, g.o, plane, es, at(dyT_));
  toChannelsLast(x, g.n, g.c, g.h * g.w, es, at(xT_));
  uint8_t* dwTaps = at(dwTaps_);  // [taps][O·C]
  const int64_t oc = g.o * g.c;
  for (const Tap& tap : taps_) {
    uint8_t* dwTap = dwTaps + tap.index * oc * es;
    if (!tap.gemm) {
      std::memset(dwTap, 0, static_cast<size_t>(oc) * es);  // every position pads: +0
      continue;
    }
    gatherRows(at(dyT_), g.n, plane, tap.outputs, g.o, es, at(a_));
    gatherRows(at(xT_), g.n, g.h * g.w, tap.inputs, g.c, es, at(b_));
    tap.gemm->run(at(a_), at(b_), dwTap, shared.at(gemmScratch_));
  }
  // dw[o, c, tap] = dwTaps[tap][o, c]: one transpose of [taps][O·C].
  parallelFor(oc, 4096, [&](int64_t i0, int64_t i1) {
    transpose::tileBits(es, dwTaps + i0 * es, oc, dw + i0 * taps * es, taps, i1 - i0, taps);
  });
}

std::string ConvTapGemms::implName() const {
  int64_t gemms = 0;
  for (const Tap& tap : taps_) gemms += tap.gemm != nullptr;
  const Tap* any = nullptr;
  for (const Tap& tap : taps_)
    if (tap.gemm) any = &tap;
  return absl::StrCat("one GEMM per tap (", gemms, " of ", taps_.size(), " taps read the input, ", g_.oh, "x", g_.ow,
                      " output plane)", any ? ": " + any->gemm->implName() : "");
}

}  // namespace amp::rt::cpu
