#include "runtime/devices/cpu/steps/ConvAsGemm.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace amp::rt::cpu {
namespace {

// dst[r, j] = src[r, at[j]] for rows of `from` and `to` elements of type T.
template <class T>
void gatherColumnsOf(const T* src, int64_t rows, int64_t from, const std::vector<int64_t>& at, T* dst) {
  const int64_t to = static_cast<int64_t>(at.size());
  parallelFor(rows, std::max<int64_t>(1, 65536 / to), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t j = 0; j < to; ++j) dst[r * to + j] = src[r * from + at[j]];
  });
}

// dst[r, at[j]] = src[r, j], every other element of dst's rows +0 (all-zero bits in every float type).
template <class T>
void scatterColumnsOf(const T* src, int64_t rows, int64_t to, const std::vector<int64_t>& at, T* dst) {
  const int64_t from = static_cast<int64_t>(at.size());
  parallelFor(rows, std::max<int64_t>(1, 65536 / to), [&](int64_t r0, int64_t r1) {
    std::fill(dst + r0 * to, dst + r1 * to, T{0});
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t j = 0; j < from; ++j) dst[r * to + at[j]] = src[r * from + j];
  });
}

// The same on raw element bits of `es` bytes (2 or 4: f16/bf16 or f32), copied as integers.
void gatherColumns(const uint8_t* src, int64_t rows, int64_t from, const std::vector<int64_t>& at, size_t es,
                   uint8_t* dst) {
  if (es == 4)
    gatherColumnsOf(reinterpret_cast<const uint32_t*>(src), rows, from, at, reinterpret_cast<uint32_t*>(dst));
  else
    gatherColumnsOf(reinterpret_cast<const uint16_t*>(src), rows, from, at, reinterpret_cast<uint16_t*>(dst));
}

void scatterColumns(const uint8_t* src, int64_t rows, int64_t to, const std::vector<int64_t>& at, size_t es,
                    uint8_t* dst) {
  if (es == 4)
    scatterColumnsOf(reinterpret_cast<const uint32_t*>(src), rows, to, at, reinterpret_cast<uint32_t*>(dst));
  else
    scatterColumnsOf(reinterpret_cast<const uint16_t*>(src), rows, to, at, reinterpret_cast<uint16_t*>(dst));
}

}  // namespace

std::unique_ptr<ConvAsGemm> ConvAsGemm::create(ConvKind kind, const ConvGeom& g, DType t, bool bias,
                                               const CpuFeatures& f, SharedFloats& shared) {
  if (g.oh != 1 || g.ow != 1 || g.og != g.o || (t != DType::F32 && t != DType::BF16 && t != DType::F16))
    return nullptr;
  std::unique_ptr<ConvAsGemm> s(new ConvAsGemm);
  for (int64_t kh = 0; kh < g.kh; ++kh)
    for (int64_t kw = 0; kw < g.kw; ++kw) {
      const int64_t ih = kh * g.dh - g.ph, iw = kw * g.dw - g.pw;  // output position (0, 0)
      if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w) continue;
      s->taps_.push_back(kh * g.kw + kw);
      s->positions_.push_back(ih * g.w + iw);
    }
  const int64_t T = static_cast<int64_t>(s->taps_.size());
  if (T == 0) return nullptr;
  s->kind_ = kind, s->dtype_ = t, s->n_ = g.n, s->c_ = g.c, s->o_ = g.o, s->kernelTaps_ = g.kh * g.kw;
  s->plane_ = g.h * g.w;
  s->planeInOrder_ = T == s->plane_;
  for (int64_t j = 0; j < T && s->planeInOrder_; ++j) s->planeInOrder_ = s->positions_[j] == j;
  const int64_t K = g.c * T;
  GemmDesc d;
  d.dtype = t;
  switch (kind) {
    case ConvKind::Forward: d.a = {g.n, K}, d.b = {g.o, K}, d.transB = true, d.bias = bias; break;
    case ConvKind::GradInput: d.a = {g.n, g.o}, d.b = {g.o, K}; break;
    case ConvKind::GradWeight: d.a = {g.n, g.o}, d.transA = true, d.b = {g.n, K}; break;
  }
  auto gemm = Gemm::create(d, f);
  if (!gemm.ok()) return nullptr;
  s->gemm_ = std::move(*gemm);
  const int64_t es = static_cast<int64_t>(dtypeSize(t));
  auto floatsOf = [&](int64_t elements) { return (elements * es + 3) / 4; };
  if (kind != ConvKind::GradWeight) s->wg_ = shared.reserve(floatsOf(g.o * K));
  if (kind != ConvKind::GradInput && !s->planeInOrder_) s->xg_ = shared.reserve(floatsOf(g.n * K));
  if (kind == ConvKind::GradInput && !s->planeInOrder_) s->resultg_ = shared.reserve(floatsOf(g.n * K));
  if (kind == ConvKind::GradWeight && T != s->kernelTaps_) s->resultg_ = shared.reserve(floatsOf(g.o * K));
  s->gemmScratch_ = shared.reserve(int64_t((s->gemm_->scratchBytes() + 3) / 4));
  return s;
}

void ConvAsGemm::run(const uint8_t* a, const uint8_t* b, const uint8_t* bias, uint8_t* out,
                     const SharedFloats& shared) const {
  const size_t es = dtypeSize(dtype_);
  auto at = [&](int64_t offset) { return reinterpret_cast<uint8_t*>(shared.at(offset)); };
  void* scratch = shared.at(gemmScratch_);
  const int64_t T = static_cast<int64_t>(taps_.size());
  // The input as xg [N, C·T]: x itself when its taps read the plane in order.
  auto inputRows = [&](const uint8_t* x) -> const uint8_t* {
    if (planeInOrder_) return x;
    gatherColumns(x, n_ * c_, plane_, positions_, es, at(xg_));
    return at(xg_);
  };
  switch (kind_) {
    case ConvKind::Forward:
      gatherColumns(b, o_ * c_, kernelTaps_, taps_, es, at(wg_));
      gemm_->run(inputRows(a), at(wg_), bias, out, scratch);
      return;
    case ConvKind::GradInput: {
      gatherColumns(b, o_ * c_, kernelTaps_, taps_, es, at(wg_));
      uint8_t* dxg = planeInOrder_ ? out : at(resultg_);
      gemm_->run(a, at(wg_), dxg, scratch);
      if (!planeInOrder_) scatterColumns(dxg, n_ * c_, plane_, positions_, es, out);
      return;
    }
    case ConvKind::GradWeight: {
      uint8_t* dwg = T == kernelTaps_ ? out : at(resultg_);
      gemm_->run(b, inputRows(a), dwg, scratch);
      if (T != kernelTaps_) scatterColumns(dwg, o_ * c_, kernelTaps_, taps_, es, out);
      return;
    }
  }
}

std::string ConvAsGemm::implName() const {
  return absl::StrCat("one GEMM (1x1 output plane, ", taps_.size(), " of ", kernelTaps_, " taps read the input",
                      planeInOrder_ ? "" : ", input gathered", "): ", gemm_->implName());
}

}  // namespace amp::rt::cpu
