// Data-movement steps of the cpu device: broadcast_to, slice, slice_grad and concat. They copy
// bits (any element type, no rounding), so they equal the reference by construction; the copies
// are strided row loops (memcpy where a row is contiguous), split across threads by rows.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "runtime/devices/cpu/steps/CpuKernelUtil.h"
#include "runtime/devices/cpu/CpuStep.h"

namespace amp::rt::cpu {
namespace {

constexpr int64_t kCopyBytes = 1 << 16;  // bytes per thread before splitting a copy pays

// Copies `n` elements of size `es` from src (element stride `stride`) to contiguous dst.
inline void copyRun(uint8_t* dst, const uint8_t* src, int64_t n, int64_t stride, size_t es) {
  if (stride == 1) {
    std::memcpy(dst, src, static_cast<size_t>(n) * es);
    return;
  }
  switch (es) {
    case 4:
      for (int64_t k = 0; k < n; ++k) reinterpret_cast<uint32_t*>(dst)[k] = reinterpret_cast<const uint32_t*>(src)[k * stride];
      return;
    case 2:
      for (int64_t k = 0; k < n; ++k) reinterpret_cast<uint16_t*>(dst)[k] = reinterpret_cast<const uint16_t*>(src)[k * stride];
      return;
    case 8:
      for (int64_t k = 0; k < n; ++k) reinterpret_cast<uint64_t*>(dst)[k] = reinterpret_cast<const uint64_t*>(src)[k * stride];
      return;
    default:
      for (int64_t k = 0; k < n; ++k) std::memcpy(dst + k * es, src + k * stride * es, es);
  }
}

// Scatter: n contiguous src elements to dst with element stride `stride`.
inline void scatterRun(uint8_t* dst, const uint8_t* src, int64_t n, int64_t stride, size_t es) {
  if (stride == 1) {
    std::memcpy(dst, src, static_cast<size_t>(n) * es);
    return;
  }
  switch (es) {
    case 4:
      for (int64_t k = 0; k < n; ++k) reinterpret_cast<uint32_t*>(dst)[k * stride] = reinterpret_cast<const uint32_t*>(src)[k];
      return;
    case 2:
      for (int64_t k = 0; k < n; ++k) reinterpret_cast<uint16_t*>(dst)[k * stride] = reinterpret_cast<const uint16_t*>(src)[k];
      return;
    default:
      for (int64_t k = 0; k < n; ++k) std::memcpy(dst + k * stride * es, src + k * es, es);
  }
}

// A strided view of `shape`: element idx lives at offset + sum_d idx[d] * strides[d].
struct View {
  Shape shape;
  std::vector<int64_t> strides;
  int64_t offset = 0;

  int64_t inner() const { return shape.empty() ? 1 : shape.back(); }
  int64_t innerStride() const { return shape.empty() ? 1 : strides.back(); }
  int64_t rows() const {
    const int64_t n = numElements(shape), in = inner();
    return in ? n / in : 0;
  }
  // Offset of the first element of row r (all dims but the last).
  int64_t rowOffset(int64_t r) const {
    int64_t pos = offset;
    for (size_t d = shape.size() - (shape.empty() ? 0 : 1); d-- > 0;) {
      pos += (r % shape[d]) * strides[d];
      r /= shape[d];
    }
    return pos;
  }
};

// out (contiguous) = the strided view of `in`: broadcast_to (stride 0 on stretched dims) and slice.
class GatherStep final : public CpuStep {
 public:
  GatherStep(int32_t in, int32_t out, size_t es, View view) : in_(in), out_(out), es_(es), view_(std::move(view)) {}
  absl::Status run(BufferPtrs ptr) override {
    const uint8_t* x = ptr[in_];
    uint8_t* y = ptr[out_];
    const int64_t inner = view_.inner(), stride = view_.innerStride();
    const int64_t rowBytes = inner * static_cast<int64_t>(es_);
    parallelFor(view_.rows(), std::max<int64_t>(1, kCopyBytes / std::max<int64_t>(rowBytes, 1)), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) copyRun(y + r * rowBytes, x + view_.rowOffset(r) * es_, inner, stride, es_);
    });
    return absl::OkStatus();
  }

 private:
  int32_t in_, out_;
  size_t es_;
  View view_;
};

// out = +0 everywhere, then the strided view of `out` = dy (slice_grad).
class ScatterStep final : public CpuStep {
 public:
  ScatterStep(int32_t in, int32_t out, size_t es, int64_t outBytes, View view)
      : in_(in), out_(out), es_(es), outBytes_(outBytes), view_(std::move(view)) {}
  absl::Status run(BufferPtrs ptr) override {
    const uint8_t* dy = ptr[in_];
    uint8_t* y = ptr[out_];
    parallelFor(outBytes_, kCopyBytes, [&](int64_t b0, int64_t b1) { std::memset(y + b0, 0, static_cast<size_t>(b1 - b0)); });
    const int64_t inner = view_.inner(), stride = view_.innerStride();
    const int64_t rowBytes = inner * static_cast<int64_t>(es_);
    parallelFor(view_.rows(), std::max<int64_t>(1, kCopyBytes / std::max<int64_t>(rowBytes, 1)), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) scatterRun(y + view_.rowOffset(r) * es_, dy + r * rowBytes, inner, stride, es_);
    });
    return absl::OkStatus();
  }

 private:
  int32_t in_, out_;
  size_t es_;
  int64_t outBytes_;
  View view_;
};

class ConcatStep final : public CpuStep {
 public:
  ConcatStep(std::vector<int32_t> in, std::vector<int64_t> chunkBytes, int32_t out, int64_t outer)
      : in_(std::move(in)), chunk_(std::move(chunkBytes)), out_(out), outer_(outer) {
    for (int64_t b : chunk_) rowBytes_ += b;
  }
  absl::Status run(BufferPtrs ptr) override {
    uint8_t* y = ptr[out_];
    parallelFor(outer_, std::max<int64_t>(1, kCopyBytes / std::max<int64_t>(rowBytes_, 1)), [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o) {
        uint8_t* dst = y + o * rowBytes_;
        for (size_t i = 0; i < in_.size(); ++i) {  // operands in order along the axis
          if (chunk_[i]) std::memcpy(dst, ptr[in_[i]] + o * chunk_[i], static_cast<size_t>(chunk_[i]));
          dst += chunk_[i];
        }
      }
    });
    return absl::OkStatus();
  }

 private:
  std::vector<int32_t> in_;
  std::vector<int64_t> chunk_;
  int32_t out_;
  int64_t outer_, rowBytes_ = 0;
};

// starts/limits/strides of slice and slice_grad against the full shape `xs`: the view of the
// sliced elements inside a contiguous xs.
absl::StatusOr<View> sliceView(const StepContext& c, const Shape& xs) {
  auto starts = c.step.withAttrsOf<SliceAttrs>([](const auto& a) { return a.starts; });
  if (!starts.ok()) return starts.status();
  auto limits = c.step.withAttrsOf<SliceAttrs>([](const auto& a) { return a.limits; });
  if (!limits.ok()) return limits.status();
  auto steps = c.step.withAttrsOf<SliceAttrs>(
      [&](const auto& a) { return a.strides.value_or(std::vector<int64_t>(xs.size(), 1)); });
  if (!steps.ok()) return steps.status();
  const size_t r = xs.size();
  if (starts->size() != r || limits->size() != r || steps->size() != r)
    return c.error(absl::StrCat("attributes 'starts', 'limits' and 'strides' must each have ", r, " entries"));
  std::vector<int64_t> inStrides = rowMajor(xs);
  View v;
  v.shape.resize(r);
  v.strides.resize(r);
  for (size_t d = 0; d < r; ++d) {
    const int64_t s = (*starts)[d], l = (*limits)[d], st = (*steps)[d];
    if (s < 0 || s > l || l > xs[d] || st < 1)
      return c.error(absl::StrCat("dim ", d, ": need 0 <= start <= limit <= ", xs[d], " and stride >= 1"));
    v.shape[d] = (l - s + st - 1) / st;
    v.strides[d] = inStrides[d] * st;
    v.offset += s * inStrides[d];
  }
  return v;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CpuStep>> makeShapeStep(const StepContext& c) {
  if (c.code == OpCode::BroadcastTo) {
    if (c.step.operands.size() != 1 || c.step.results.size() != 1) return c.error("expected 1 operand and 1 result");
    const BufferDesc &x = c.operand(0), &y = c.result(0);
    const Shape& xs = x.shape;
    const Shape& to = y.shape;
    bool ok = xs.size() <= to.size() && y.dtype == x.dtype;
    for (size_t d = 0; ok && d < xs.size(); ++d) {
      const int64_t t = to[to.size() - xs.size() + d];
      ok = xs[d] == t || xs[d] == 1;
    }
    if (!ok) return c.error(absl::StrCat("cannot broadcast ", shapeToString(xs), " to ", shapeToString(to)));
    View v;
    v.shape = to;
    v.strides.assign(to.size(), 0);
    std::vector<int64_t> inStrides = rowMajor(xs);
    const size_t off = to.size() - xs.size();
    for (size_t d = 0; d < xs.size(); ++d) v.strides[off + d] = xs[d] == 1 ? 0 : inStrides[d];
    return std::unique_ptr<CpuStep>(new GatherStep(c.step.operands[0], c.step.results[0], dtypeSize(x.dtype), std::move(v)));
  }
  if (c.code == OpCode::Slice) {
    if (c.step.operands.size() != 1 || c.step.results.size() != 1) return c.error("expected 1 operand and 1 result");
    const BufferDesc &x = c.operand(0), &y = c.result(0);
    auto v = sliceView(c, x.shape);
    if (!v.ok()) return v.status();
    if (y.dtype != x.dtype || y.shape != v->shape)
      return c.error(absl::StrCat("the result must be ", std::string(dtypeName(x.dtype)), shapeToString(v->shape)));
    return std::unique_ptr<CpuStep>(new GatherStep(c.step.operands[0], c.step.results[0], dtypeSize(x.dtype), std::move(*v)));
  }
  if (c.code == OpCode::SliceGrad) {
    if (c.step.operands.size() != 1 || c.step.results.size() != 1) return c.error("expected 1 operand and 1 result");
    const BufferDesc &dy = c.operand(0), &y = c.result(0);
    if (y.dtype != dy.dtype) return c.error("result element type must be grad's");
    auto v = sliceView(c, y.shape);
    if (!v.ok()) return v.status();
    if (dy.shape != v->shape) return c.error(absl::StrCat("grad must have shape ", shapeToString(v->shape)));
    return std::unique_ptr<CpuStep>(
        new ScatterStep(c.step.operands[0], c.step.results[0], dtypeSize(dy.dtype), y.byteSize(), std::move(*v)));
  }
  if (c.code == OpCode::Concat) {
    if (c.step.operands.empty() || c.step.results.size() != 1) return c.error("expected at least 1 operand and 1 result");
    auto axis = c.step.withAttrsOf<ConcatAttrs>([](const auto& a) { return a.axis; });
    if (!axis.ok()) return axis.status();
    const BufferDesc& x0 = c.operand(0);
    const int64_t rank = static_cast<int64_t>(x0.shape.size());
    if (*axis < 0 || *axis >= rank) return c.error(absl::StrCat("attribute 'axis' = ", *axis, " is out of range"));
    Shape outShape = x0.shape;
    outShape[*axis] = 0;
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < *axis; ++d) outer *= x0.shape[d];
    for (int64_t d = *axis + 1; d < rank; ++d) inner *= x0.shape[d];
    const int64_t es = static_cast<int64_t>(dtypeSize(x0.dtype));
    std::vector<int64_t> chunks;
    for (size_t i = 0; i < c.step.operands.size(); ++i) {
      const BufferDesc& xi = c.operand(i);
      bool ok = xi.dtype == x0.dtype && xi.shape.size() == x0.shape.size();
      for (int64_t d = 0; ok && d < rank; ++d) ok = d == *axis || xi.shape[d] == x0.shape[d];
      if (!ok) return c.error(absl::StrCat("operand ", i, " does not match operand 0 outside axis ", *axis));
      outShape[*axis] += xi.shape[*axis];
      chunks.push_back(xi.shape[*axis] * inner * es);
    }
    if (c.result(0).dtype != x0.dtype || c.result(0).shape != outShape)
      return c.error(absl::StrCat("the result must be ", std::string(dtypeName(x0.dtype)), shapeToString(outShape)));
    return std::unique_ptr<CpuStep>(new ConcatStep(c.step.operands, std::move(chunks), c.step.results[0], outer));
  }
  return nullptr;
}

}  // namespace amp::rt::cpu
