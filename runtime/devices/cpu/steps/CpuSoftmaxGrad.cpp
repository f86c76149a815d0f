// amp.softmax_grad on the cpu device: every slice is softmaxGradSlice's (runtime/numerics/
// Softmax.h), the reference's own row kernel, so results are bit for bit the reference's. Slices
// are independent and split across threads. f32 rows (the softmax axis last) run kLanes at a
// time, one per vector lane for the sum (ChannelLanes.h); other rows are widened one at a time
// into per-thread scratch; other axes as tiles of [len, up to 64 slices]. The result may be
// written over the output operand (inPlacePairs, runtime/plan/MemoryPlan.h): each slice is read
// whole into scratch, or (f32 rows) its sum is taken before any element of it is written.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "runtime/devices/cpu/steps/ChannelLanes.h"
#include "runtime/devices/cpu/steps/CpuKernelUtil.h"
#include "runtime/devices/cpu/CpuStep.h"
#include "runtime/numerics/Softmax.h"

namespace amp::rt::cpu {
namespace {

constexpr int64_t kWork = 16384;  // elements of work per thread before splitting pays
constexpr int64_t kTile = 64;     // slices per tile when the axis is not the last

class SoftmaxGradStep final : public CpuStep {
 public:
  SoftmaxGradStep(int32_t y, int32_t dy, int32_t dx, DType type, DType gradType, int64_t outer, int64_t len,
                  int64_t inner)
      : y_(y), dy_(dy), dx_(dx), type_(type), gradType_(gradType), outer_(outer), len_(len), inner_(inner) {
    width_ = inner_ == 1 ? 1 : std::min(inner_, kTile);
    slots_ = scratchSlots();
    rowsPerBlock_ = rowsPerLaneBlock(len_);
    // Rows: f32 ones need dy widened and the products for a block of rows, and the lanes; other
    // types one row each of y, dy and dx. Other axes: a tile of each.
    per_ = inner_ == 1 ? std::max(2 * rowsPerBlock_ * len_ + laneScratchFloats(len_), 3 * len_) : 3 * len_ * width_;
    scratch_ = shared_.reserve(slots_ * per_);
  }
  int64_t sharedScratchBytes() const override { return shared_.bytes(); }
  void bindSharedScratch(uint8_t* p) override { shared_.bind(p); }

  absl::Status run(BufferPtrs ptr) override {
    if (len_ == 0) return absl::OkStatus();
    const uint8_t *y = ptr[y_], *dy = ptr[dy_];
    uint8_t* dx = ptr[dx_];
    if (inner_ == 1 && type_ == DType::F32) {
      // f32 rows, kLanes at a time: s = the blocked sum of fl(dy·y) per row, one row per vector
      // lane (ChannelLanes.h), then dx = fl(y·fl(dy - s)) along each row: softmaxGradSlice's f32
      // operations. A block's sums are taken before any of its dx is written (dx may be y).
      parallelChunks(outer_, std::max<int64_t>(rowsPerBlock_, kWork / len_), slots_, [&](int slot, int64_t r0, int64_t r1) {
        float* dys = shared_.at(scratch_) + slot * per_;
        float* prod = dys + rowsPerBlock_ * len_;
        float* lanes = prod + rowsPerBlock_ * len_;
        for (int64_t r = r0; r < r1;) {
          const int64_t rows = std::min<int64_t>(rowsPerBlock_, r1 - r), m = rows * len_;
          const float* yb = reinterpret_cast<const float*>(y) + r * len_;
          const float* dyb = widenRun(gradType_, dy, r * len_, m, dys);
          float* dxb = reinterpret_cast<float*>(dx) + r * len_;
          for (int64_t k = 0; k < m; ++k) prod[k] = dyb[k] * yb[k];
          float s[kLanes];
          rowSumsLanes(prod, rows, len_, lanes, s);
          for (int64_t l = 0; l < rows; ++l) {
            const float* yr = yb + l * len_;
            const float* dyr = dyb + l * len_;
            float* dxr = dxb + l * len_;
            for (int64_t j = 0; j < len_; ++j) dxr[j] = yr[j] * (dyr[j] - s[l]);
          }
          r += rows;
        }
      });
      return absl::OkStatus();
    }
    if (inner_ == 1) {
      parallelChunks(outer_, std::max<int64_t>(1, kWork / len_), slots_, [&](int slot, int64_t r0, int64_t r1) {
        float* ys = shared_.at(scratch_) + slot * per_;
        float* dys = ys + len_;
        float* dxs = dys + len_;
        for (int64_t r = r0; r < r1; ++r) {
          const float* yr = widenRun(type_, y, r * len_, len_, ys);
          const float* dyr = widenRun(gradType_, dy, r * len_, len_, dys);
          float* dxr = type_ == DType::F32 ? reinterpret_cast<float*>(dx) + r * len_ : dxs;
          softmaxGradSlice(yr, dyr, len_, 1, type_, dxr);
          if (type_ != DType::F32) narrowRun(dxr, type_, dx, r * len_, len_);
        }
      });
      return absl::OkStatus();
    }
    const int64_t tilesPerOuter = (inner_ + width_ - 1) / width_;
    parallelChunks(outer_ * tilesPerOuter, std::max<int64_t>(1, kWork / (len_ * width_)), slots_,
                   [&](int slot, int64_t t0, int64_t t1) {
                     float* ys = shared_.at(scratch_) + slot * per_;
                     float* dys = ys + len_ * width_;
                     float* dxs = dys + len_ * width_;
                     for (int64_t t = t0; t < t1; ++t) {
                       const int64_t o = t / tilesPerOuter, i0 = (t % tilesPerOuter) * width_;
                       const int64_t w = std::min(width_, inner_ - i0);
                       const int64_t base = o * len_ * inner_ + i0;
                       for (int64_t j = 0; j < len_; ++j) {
                         convertBuffer(type_, y + (base + j * inner_) * dtypeSize(type_), DType::F32, ys + j * w, w);
                         convertBuffer(gradType_, dy + (base + j * inner_) * dtypeSize(gradType_), DType::F32,
                                       dys + j * w, w);
                       }
                       for (int64_t i = 0; i < w; ++i) softmaxGradSlice(ys + i, dys + i, len_, w, type_, dxs + i);
                       for (int64_t j = 0; j < len_; ++j) narrowRun(dxs + j * w, type_, dx, base + j * inner_, w);
                     }
                   });
    return absl::OkStatus();
  }

 private:
  int32_t y_, dy_, dx_;
  DType type_, gradType_;
  int64_t outer_, len_, inner_, width_ = 1, rowsPerBlock_ = 1;
  int slots_ = 1;
  int64_t per_ = 0, scratch_ = 0;
  SharedFloats shared_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<CpuStep>> makeSoftmaxGradStep(const StepContext& c) {
  if (c.step.operands.size() != 2 || c.step.results.size() != 1) return c.error("expected 2 operands and 1 result");
  const BufferDesc &y = c.operand(0), &dy = c.operand(1), &dx = c.result(0);
  const auto kernelType = [](DType t) { return t == DType::F32 || t == DType::BF16 || t == DType::F16; };
  if (!kernelType(y.dtype) || !kernelType(dy.dtype)) return nullptr;  // FP8: the reference kernel
  if (dy.dtype != y.dtype && y.dtype != DType::F32)
    return c.error("grad must have the output's type, or bf16/f16 under an f32 output");
  if (dy.shape != y.shape) return c.error("grad must have the output's shape");
  if (dx.dtype != y.dtype || dx.shape != y.shape) return c.error("the result type must be the output's");
  auto axis = c.step.withAttrsOf<SoftmaxGradAttrs>([](const auto& a) { return a.axis; });
  if (!axis.ok()) return axis.status();
  const int64_t rank = static_cast<int64_t>(y.shape.size());
  if (*axis < 0 || *axis >= rank) return c.error(absl::StrCat("attribute 'axis' = ", *axis, " is out of range"));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < *axis; ++d) outer *= y.shape[d];
  for (int64_t d = *axis + 1; d < rank; ++d) inner *= y.shape[d];
  return std::unique_ptr<CpuStep>(new SoftmaxGradStep(c.step.operands[0], c.step.operands[1], c.step.results[0],
                                                      y.dtype, dy.dtype, outer, y.shape[*axis], inner));
}

}  // namespace amp::rt::cpu
