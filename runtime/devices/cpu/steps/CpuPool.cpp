// max_pool2d / avg_pool2d and their gradients on the cpu device (NCHW). Each plane (n, c) is
// independent, so planes are split across threads; inside a plane the loops are the reference's
// (ReferenceLinalg.cpp evalPool2d, ReferenceGrad.cpp evalMaxPool2dGrad/evalAvgPool2dGrad): windows
// scanned row-major with the same comparisons, gradients accumulated in f32 in row-major output
// order. Results are bit for bit the reference's. max_pool2d and its gradient run 16 planes at a
// time as vector lanes (ChannelLanes.h, the planes as the channels of a [1, planes, H·W] tensor):
// ResNet planes are small (7x7 to 56x56), so per-plane loops spent their time on branches and
// per-plane calls; each lane still scans its windows in the reference's order with its
// comparisons and accumulates its gradient in output order.
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "runtime/plan/PoolWindow.h"
#include "runtime/devices/cpu/steps/ChannelLanes.h"
#include "runtime/devices/cpu/steps/CpuKernelUtil.h"
#include "runtime/devices/cpu/CpuStep.h"
#include "runtime/WindowGeometry.h"

namespace amp::rt::cpu {
namespace {

constexpr int64_t kWork = 16384;

struct PoolGeom {
  int64_t planes, h, w, oh, ow;
  int64_t kh, kw, sh, sw, ph, pw;
};

enum class PoolKind { Max, Avg, MaxGrad, AvgGrad };

class PoolStep final : public CpuStep {
 public:
  // Max/Avg: in = x, out = y. MaxGrad: in = x, dy = dy, out = dx. AvgGrad: in = dy, out = dx.
  PoolStep(PoolKind kind, PoolGeom g, DType dtype, int32_t in, int32_t dy, int32_t out)
      : kind_(kind), g_(g), dtype_(dtype), in_(in), dy_(dy), out_(out) {
    slots_ = scratchSlots();
    const int64_t hw = g_.h * g_.w, ohw = g_.oh * g_.ow;
    // Per slot, lanes: x, dy and dx as [.][kLanes] rows and one tile; else one widened input
    // plane, one widened dy plane and one f32 result plane. Planes whose lane scratch would pass
    // 8 MiB a thread (a 2^20-pixel image) keep the per-plane loops.
    const int64_t laneFloats = kLanes * (2 * hw + ohw) + laneTileFloats(std::max(hw, ohw));
    lanes_ = (kind_ == PoolKind::Max || kind_ == PoolKind::MaxGrad) && laneFloats <= (int64_t{1} << 21);
    per_ = lanes_ ? laneFloats : 2 * hw + ohw;
    scratch_ = shared_.reserve(slots_ * per_);
  }
  int64_t sharedScratchBytes() const override { return shared_.bytes(); }
  void bindSharedScratch(uint8_t* p) override { shared_.bind(p); }

  absl::Status run(BufferPtrs ptr) override {
    if (lanes_) {
      maxLanes(ptr);
      return absl::OkStatus();
    }
    const int64_t hw = g_.h * g_.w, ohw = g_.oh * g_.ow;
    const int64_t planeWork = std::max<int64_t>(1, hw + ohw * g_.kh * g_.kw);
    parallelChunks(g_.planes, std::max<int64_t>(1, kWork / planeWork), slots_, [&](int slot, int64_t p0, int64_t p1) {
      float* s = shared_.at(scratch_) + slot * per_;
      for (int64_t p = p0; p < p1; ++p) {
        switch (kind_) {
          case PoolKind::Max:
          case PoolKind::Avg: {
            const float* x = widenRun(dtype_, ptr[in_], p * hw, hw, s);
            float* y = dtype_ == DType::F32 ? reinterpret_cast<float*>(ptr[out_]) + p * ohw : s + 2 * hw;
            forward(x, y);
            if (dtype_ != DType::F32) narrowRun(y, dtype_, ptr[out_], p * ohw, ohw);
            break;
          }
          case PoolKind::MaxGrad: {
            const float* x = widenRun(dtype_, ptr[in_], p * hw, hw, s);
            const float* dy = widenRun(dtype_, ptr[dy_], p * ohw, ohw, s + hw);
            float* dx = dtype_ == DType::F32 ? reinterpret_cast<float*>(ptr[out_]) + p * hw : s + hw + ohw;
            maxGrad(x, dy, dx);
            if (dtype_ != DType::F32) narrowRun(dx, dtype_, ptr[out_], p * hw, hw);
            break;
          }
          case PoolKind::AvgGrad: {
            const float* dy = widenRun(dtype_, ptr[in_], p * ohw, ohw, s + hw);
            float* dx = dtype_ == DType::F32 ? reinterpret_cast<float*>(ptr[out_]) + p * hw : s;
            avgGrad(dy, dx);
            if (dtype_ != DType::F32) narrowRun(dx, dtype_, ptr[out_], p * hw, hw);
            break;
          }
        }
      }
    });
    return absl::OkStatus();
  }

 private:
  // max_pool2d (dy_ < 0) or its gradient over blocks of kLanes planes, one plane per lane.
  void maxLanes(BufferPtrs ptr) const {
    const int64_t hw = g_.h * g_.w, ohw = g_.oh * g_.ow, blocks = channelBlockCount(g_.planes, slots_);
    parallelChunks(blocks, 1, slots_, [&](int slot, int64_t b0, int64_t b1) {
      float* xT = shared_.at(scratch_) + slot * per_;
      float* dxT = xT + kLanes * hw;
      float* dyT = dxT + kLanes * hw;
      float* tile = dyT + kLanes * ohw;
      for (int64_t b = b0; b < b1; ++b) {
        const ChannelBlock blk = channelBlock(g_.planes, blocks, b);
        gatherLanes(dtype_, ptr[in_], 1, g_.planes, hw, blk, tile, xT);
        if (kind_ == PoolKind::Max) {
          scatterLanes(dtype_, ptr[out_], 1, g_.planes, ohw, blk, tile,
                       [&](int64_t o, float* y) { windowMax(xT, o, y, nullptr); });
          continue;
        }
        gatherLanes(dtype_, ptr[dy_], 1, g_.planes, ohw, blk, tile, dyT);
        std::fill(dxT, dxT + kLanes * hw, 0.0f);
        alignas(64) int32_t pos[kLanes];
        for (int64_t o = 0; o < ohw; ++o) {
          const int64_t first = windowMax(xT, o, nullptr, pos);
          if (first < 0) continue;
          for (int64_t l = 0; l < blk.width; ++l) dxT[(pos[l] < 0 ? first : pos[l]) * kLanes + l] += dyT[o * kLanes + l];
        }
        scatterLanes(dtype_, ptr[out_], 1, g_.planes, hw, blk, tile, [&](int64_t k, float* dx) {
          std::copy(dxT + k * kLanes, dxT + (k + 1) * kLanes, dx);
        });
      }
    });
  }

  // The window of output o in every lane, scanned as the reference does (strict >, a NaN is taken
  // whenever seen): its maximum into `best` and/or the taken element's index into `pos` (-1 where
  // none was taken: an all -inf window). Returns the window's first in-bounds index (-1 if none).
  int64_t windowMax(const float* xT, int64_t o, float* best, int32_t* pos) const {
    const int64_t oh = o / g_.ow, ow = o % g_.ow;
    int64_t first = -1;
    Quad m[kQuads];
    QuadInts at[kQuads];
    for (int q = 0; q < kQuads; ++q) {
      m[q] = Quad{} - std::numeric_limits<float>::infinity();
      at[q] = QuadInts{} - 1;
    }
    visitWindow(oh, ow, [&](int64_t idx) {
      if (first < 0) first = idx;
      for (int q = 0; q < kQuads; ++q) {
        const Quad v = loadQuad(xT + idx * kLanes + 4 * q);
        const QuadInts take = (v > m[q]) | (v != v);
        m[q] = take ? v : m[q];
        at[q] = take ? QuadInts{} + int32_t(idx) : at[q];
      }
    });
    for (int q = 0; q < kQuads; ++q) {
      if (best) storeQuad(best + 4 * q, m[q]);
      if (pos) std::memcpy(pos + 4 * q, &at[q], sizeof at[q]);
    }
    return first;
  }

  // Calls fn(index) for the in-bounds elements of output (oh, ow)'s window, row by row: the
  // reference's scan order, which the max's tie and NaN rules depend on.
  template <class Fn>
  void visitWindow(int64_t oh, int64_t ow, Fn&& fn) const {
    for (int64_t kh = 0; kh < g_.kh; ++kh) {
      const int64_t ih = oh * g_.sh - g_.ph + kh;
      if (ih < 0 || ih >= g_.h) continue;
      for (int64_t kw = 0; kw < g_.kw; ++kw) {
        const int64_t iw = ow * g_.sw - g_.pw + kw;
        if (iw >= 0 && iw < g_.w) fn(ih * g_.w + iw);
      }
    }
  }

  void forward(const float* x, float* y) const {
    const bool isMax = kind_ == PoolKind::Max;
    const float divisor = static_cast<float>(g_.kh * g_.kw);  // count_include_pad = True
    for (int64_t oh = 0; oh < g_.oh; ++oh)
      for (int64_t ow = 0; ow < g_.ow; ++ow) {
        float acc = isMax ? -std::numeric_limits<float>::infinity() : 0.0f;
        visitWindow(oh, ow, [&](int64_t idx) {
          const float v = x[idx];
          if (!isMax) acc += v;
          else if (v > acc || std::isnan(v)) acc = v;  // NaN propagates and sticks
        });
        y[oh * g_.ow + ow] = isMax ? acc : acc / divisor;
      }
  }

  void maxGrad(const float* x, const float* dy, float* dx) const {
    std::memset(dx, 0, static_cast<size_t>(g_.h * g_.w) * sizeof(float));
    for (int64_t oh = 0; oh < g_.oh; ++oh)
      for (int64_t ow = 0; ow < g_.ow; ++ow) {
        // The reference's scan: strict >, a NaN is taken whenever seen; an all -inf window picks
        // its first in-bounds element.
        float best = -std::numeric_limits<float>::infinity();
        int64_t pos = -1, first = -1;
        visitWindow(oh, ow, [&](int64_t idx) {
          if (first < 0) first = idx;
          if (x[idx] > best || std::isnan(x[idx])) {
            best = x[idx];
            pos = idx;
          }
        });
        if (pos < 0) pos = first;
        if (pos >= 0) dx[pos] += dy[oh * g_.ow + ow];
      }
  }

  void avgGrad(const float* dy, float* dx) const {
    std::memset(dx, 0, static_cast<size_t>(g_.h * g_.w) * sizeof(float));
    const float divisor = static_cast<float>(g_.kh * g_.kw);
    for (int64_t oh = 0; oh < g_.oh; ++oh)
      for (int64_t ow = 0; ow < g_.ow; ++ow) {
        const float share = dy[oh * g_.ow + ow] / divisor;
        visitWindow(oh, ow, [&](int64_t idx) { dx[idx] += share; });
      }
  }

  PoolKind kind_;
  PoolGeom g_;
  DType dtype_;
  int32_t in_, dy_, out_;
  int slots_ = 1;
  bool lanes_ = false;  // max pooling, one plane per vector lane
  int64_t per_ = 0;
  SharedFloats shared_;
  int64_t scratch_ = 0;
};

// A two-entry int attribute with every entry >= minValue; `dflt` (if non-null) when absent.
absl::StatusOr<std::vector<int64_t>> pair(const StepContext& c, const char* name,
                                          const absl::StatusOr<std::vector<int64_t>>& v, int64_t minValue) {
  if (!v.ok()) return v.status();
  if (v->size() != 2) return c.error(absl::StrCat("attribute '", name, "' must have 2 entries"));
  for (int64_t x : *v)
    if (x < minValue) return c.error(absl::StrCat("attribute '", name, "' entries must be >= ", minValue));
  return *v;
}

// kernel/stride/padding against input xs [N, C, H, W]: the pooling geometry (output size floor).
absl::StatusOr<PoolGeom> poolGeom(const StepContext& c, const Shape& xs) {
  auto window = poolWindowOf(c.step);
  if (!window.ok()) return window.status();
  auto k = pair(c, "kernel", window->kernel, 1);
  if (!k.ok()) return k.status();
  auto stride = pair(c, "stride", window->stride, 1);
  if (!stride.ok()) return stride.status();
  auto pad = pair(c, "padding", window->padding, 0);
  if (!pad.ok()) return pad.status();
  if ((*pad)[0] > (*k)[0] / 2 || (*pad)[1] > (*k)[1] / 2) return c.error("padding must be at most half the kernel");
  if (xs.size() != 4) return c.error(absl::StrCat("input must be NCHW (rank 4), got ", shapeToString(xs)));
  const std::optional<int64_t> spanHo = windowSpan(xs[2], (*pad)[0], 1, (*k)[0]),
                               spanWo = windowSpan(xs[3], (*pad)[1], 1, (*k)[1]);
  if (!spanHo || !spanWo) return c.error("the window's extent overflows int64 (padding, dilation or kernel out of range)");
  const int64_t spanH = *spanHo, spanW = *spanWo;
  if (spanH < 0 || spanW < 0) return c.error(absl::StrCat("kernel does not fit the padded input ", shapeToString(xs)));
  return PoolGeom{xs[0] * xs[1], xs[2], xs[3], spanH / (*stride)[0] + 1, spanW / (*stride)[1] + 1,
                  (*k)[0], (*k)[1], (*stride)[0], (*stride)[1], (*pad)[0], (*pad)[1]};
}

}  // namespace

absl::StatusOr<std::unique_ptr<CpuStep>> makePoolStep(const StepContext& c) {
  PoolKind kind;
  if (c.code == OpCode::MaxPool2D) kind = PoolKind::Max;
  else if (c.code == OpCode::AvgPool2D) kind = PoolKind::Avg;
  else if (c.code == OpCode::MaxPool2DGrad) kind = PoolKind::MaxGrad;
  else if (c.code == OpCode::AvgPool2DGrad) kind = PoolKind::AvgGrad;
  else return nullptr;
  const size_t want = kind == PoolKind::MaxGrad ? 2 : 1;
  if (c.step.operands.size() != want || c.step.results.size() != 1)
    return c.error(absl::StrCat("expected ", want, " operand(s) and 1 result"));
  const BufferDesc& in = c.operand(0);
  const BufferDesc& out = c.result(0);
  if (!isKernelFloat(in.dtype)) return c.error("operand 0 must have a float element type");
  // The input shape: the operand's, or (avg_pool2d_grad) the result type's.
  const Shape& xs = kind == PoolKind::AvgGrad ? out.shape : in.shape;
  auto g = poolGeom(c, xs);
  if (!g.ok()) return g.status();
  const Shape ys{xs[0], xs[1], g->oh, g->ow};
  if (kind == PoolKind::Max || kind == PoolKind::Avg) {
    if (out.dtype != in.dtype || out.shape != ys)
      return c.error(absl::StrCat("the result must be ", std::string(dtypeName(in.dtype)), shapeToString(ys)));
    return std::unique_ptr<CpuStep>(new PoolStep(kind, *g, in.dtype, c.step.operands[0], -1, c.step.results[0]));
  }
  if (kind == PoolKind::MaxGrad) {
    const BufferDesc& dy = c.operand(1);
    if (dy.dtype != in.dtype) return c.error("operands must have the same element type");
    if (dy.shape != ys) return c.error(absl::StrCat("grad must have shape ", shapeToString(ys)));
    if (out.dtype != in.dtype || out.shape != xs) return c.error("the result type must be the input's");
    return std::unique_ptr<CpuStep>(
        new PoolStep(kind, *g, in.dtype, c.step.operands[0], c.step.operands[1], c.step.results[0]));
  }
  if (out.dtype != in.dtype) return c.error("result element type must be grad's");
  if (in.shape != ys) return c.error(absl::StrCat("grad must have shape ", shapeToString(ys)));
  return std::unique_ptr<CpuStep>(new PoolStep(kind, *g, in.dtype, c.step.operands[0], -1, c.step.results[0]));
}

}  // namespace amp::rt::cpu
