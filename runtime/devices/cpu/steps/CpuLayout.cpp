// Layout and GEMM steps of the cpu device: transpose (a strided copy) and matmul (oneDNN, see
// Gemm.h). Reshape needs no step: the memory plan makes it an alias of its operand.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "runtime/devices/cpu/CpuStep.h"
#include "runtime/devices/cpu/kernels/Gemm.h"
#include "runtime/devices/cpu/kernels/TransposeTile.h"

namespace amp::rt::cpu {
namespace {

// Copies element runs of `es` bytes: dst[k] = src[k * stride] for k < n.
inline void gatherRun(uint8_t* dst, const uint8_t* src, int64_t n, int64_t stride, size_t es) {
  switch (es) {
    case 4:
      for (int64_t k = 0; k < n; ++k)
        reinterpret_cast<uint32_t*>(dst)[k] = reinterpret_cast<const uint32_t*>(src)[k * stride];
      break;
    case 2:
      for (int64_t k = 0; k < n; ++k)
        reinterpret_cast<uint16_t*>(dst)[k] = reinterpret_cast<const uint16_t*>(src)[k * stride];
      break;
    default:
      for (int64_t k = 0; k < n; ++k) std::memcpy(dst + k * es, src + k * stride * es, es);
  }
}

// The output read as a strided view of the input (out dim d steps `strides[d]` input elements).
// Dims of size 1 are dropped and neighbours that are one run in the input merged at construction,
// so the run picks one of three shapes of copy:
//  - the last dim has stride 1: rows are contiguous in the input too (e.g. [B,T,H,D] -> [B,H,T,D]):
//    one memcpy per row;
//  - some other dim p has stride 1 (a transpose of the last two dims, or [B,T,D] -> [B,D,T]):
//    kTile x kTile tiles of (p, last), transposed through registers in 8x8 (2-byte) or 4x4
//    (4-byte) blocks (TransposeTile.h);
//  - otherwise (8-byte and odd element sizes, or no stride-1 dim) a strided gather per row.
// Pure data movement, so every variant is exact.
class TransposeStep final : public CpuStep {
 public:
  static constexpr size_t kMaxRank = 64;  // larger ranks stay on the reference (makeLayoutStep)

  TransposeStep(int32_t in, int32_t out, size_t es, const Shape& outShape, const std::vector<int64_t>& strides)
      : in_(in), out_(out), es_(es) {
    for (size_t d = 0; d < outShape.size(); ++d) {
      if (outShape[d] == 1) continue;
      if (!shape_.empty() && strides_.back() == strides[d] * outShape[d]) {
        shape_.back() *= outShape[d];  // one run of the input: merge
        strides_.back() = strides[d];
      } else {
        shape_.push_back(outShape[d]);
        strides_.push_back(strides[d]);
      }
    }
    if (shape_.empty()) {  // every dim of size 1 (or none): one element
      shape_.push_back(1);
      strides_.push_back(1);
    }
    outStrides_.assign(shape_.size(), 1);
    for (size_t d = shape_.size(); d-- > 1;) outStrides_[d - 1] = outStrides_[d] * shape_[d];
    for (size_t d = 0; d + 1 < shape_.size(); ++d)
      if (strides_[d] == 1 && (es_ == 2 || es_ == 4)) tiledDim_ = static_cast<int>(d);
  }

  absl::Status run(BufferPtrs ptr) override {
    for (int64_t s : shape_)
      if (s == 0) return absl::OkStatus();
    if (tiledDim_ >= 0) {
      if (es_ == 4) tiled<uint32_t>(ptr); else tiled<uint16_t>(ptr);
    } else {
      rows(ptr);
    }
    return absl::OkStatus();
  }

 private:
  static constexpr int64_t kTile = 32;

  // Input offset of the element at output index `index` over dims [0, rank) except `skip`, the
  // last dim excluded too: `index` enumerates those dims in order.
  int64_t inputOffset(int64_t index, int skip) const {
    int64_t pos = 0;
    for (size_t d = shape_.size() - 1; d-- > 0;) {
      if (static_cast<int>(d) == skip) continue;
      pos += (index % shape_[d]) * strides_[d];
      index /= shape_[d];
    }
    return pos;
  }
  int64_t outputOffset(int64_t index, int skip) const {
    int64_t pos = 0;
    for (size_t d = shape_.size() - 1; d-- > 0;) {
      if (static_cast<int>(d) == skip) continue;
      pos += (index % shape_[d]) * outStrides_[d];
      index /= shape_[d];
    }
    return pos;
  }

  // One output row (the last dim) at a time. Each task finds its first row's input offset by
  // division, then steps an odometer over the outer dims from row to row.
  void rows(BufferPtrs ptr) const {
    const int64_t inner = shape_.back(), innerStride = strides_.back();
    const int64_t rows = numElements(shape_) / inner;
    const int outerRank = static_cast<int>(shape_.size()) - 1;
    const uint8_t* x = ptr[in_];
    uint8_t* y = ptr[out_];
    parallelFor(rows, std::max<int64_t>(1, 4096 / inner), [&](int64_t begin, int64_t end) {
      int64_t idx[kMaxRank];
      int64_t pos = 0, rem = begin;
      for (int d = outerRank; d-- > 0;) {
        idx[d] = rem % shape_[d];
        rem /= shape_[d];
        pos += idx[d] * strides_[d];
      }
      for (int64_t r = begin; r < end; ++r) {
        uint8_t* dst = y + r * inner * es_;
        if (innerStride == 1)
          transpose::copyRow(dst, x + pos * es_, size_t(inner) * es_);
        else
          gatherRun(dst, x + pos * es_, inner, innerStride, es_);
        for (int d = outerRank; d-- > 0;) {  // next row: carry through the dims as needed
          pos += strides_[d];
          if (++idx[d] < shape_[d]) break;
          pos -= strides_[d] * shape_[d];
          idx[d] = 0;
        }
      }
    });
  }

  template <typename T>
  void tiled(BufferPtrs ptr) const {
    const int p = tiledDim_;
    const int64_t m = shape_[p], n = shape_.back(), ldx = strides_.back(), ldy = outStrides_[p];
    const int64_t outer = numElements(shape_) / (m * n);
    const int64_t stripes = (m + kTile - 1) / kTile;  // a task: kTile values of dim p, all of the last
    const T* x = reinterpret_cast<const T*>(ptr[in_]);
    T* y = reinterpret_cast<T*>(ptr[out_]);
    parallelFor(outer * stripes, std::max<int64_t>(1, 4096 / (kTile * n)), [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const int64_t o = t / stripes, i0 = (t % stripes) * kTile, mi = std::min(kTile, m - i0);
        const T* src = x + inputOffset(o, p) + i0;
        T* dst = y + outputOffset(o, p) + i0 * ldy;
        for (int64_t j0 = 0; j0 < n; j0 += kTile)
          transpose::tile(src + j0 * ldx, ldx, dst + j0, ldy, mi, std::min(kTile, n - j0));
      }
    });
  }

  int32_t in_, out_;
  size_t es_;
  Shape shape_;                          // the output's dims, size-1 dims dropped and runs merged
  std::vector<int64_t> strides_;         // input element stride of each of those dims
  std::vector<int64_t> outStrides_;      // output element stride of each
  int tiledDim_ = -1;                    // a dim before the last with input stride 1, if any
};

class MatmulStep final : public CpuStep {
 public:
  MatmulStep(std::unique_ptr<Gemm> gemm, int32_t a, int32_t b, int32_t out)
      : gemm_(std::move(gemm)), a_(a), b_(b), out_(out) {}
  absl::Status run(BufferPtrs ptr) override {
    gemm_->run(ptr[a_], ptr[b_], ptr[out_], scratch_);
    return absl::OkStatus();
  }
  int64_t sharedScratchBytes() const override { return static_cast<int64_t>(gemm_->scratchBytes()); }
  void bindSharedScratch(uint8_t* scratch) override { scratch_ = scratch; }

 private:
  std::unique_ptr<Gemm> gemm_;
  int32_t a_, b_, out_;
  uint8_t* scratch_ = nullptr;
};

}  // namespace

absl::StatusOr<std::unique_ptr<CpuStep>> makeLayoutStep(const StepContext& c) {
  if (c.code != OpCode::Transpose) return nullptr;
  if (c.step.operands.size() != 1 || c.step.results.size() != 1) return c.error("expected 1 operand and 1 result");
  const BufferDesc &x = c.operand(0), &y = c.result(0);
  auto perm = c.step.withAttrsOf<TransposeAttrs>([](const auto& a) { return a.permutation; });
  if (!perm.ok()) return perm.status();
  const size_t rank = x.shape.size();
  std::vector<bool> seen(rank, false);
  bool ok = perm->size() == rank;
  for (size_t d = 0; ok && d < rank; ++d) {
    ok = (*perm)[d] >= 0 && (*perm)[d] < static_cast<int64_t>(rank) && !seen[(*perm)[d]];
    if (ok) seen[(*perm)[d]] = true;
  }
  if (!ok) return c.error(absl::StrCat("attribute 'permutation' is not a permutation of the ", rank, " dims"));
  std::vector<int64_t> inStrides(rank, 1), strides(rank);
  for (size_t d = rank; d-- > 1;) inStrides[d - 1] = inStrides[d] * x.shape[d];
  Shape outShape(rank);
  for (size_t d = 0; d < rank; ++d) {
    outShape[d] = x.shape[(*perm)[d]];
    strides[d] = inStrides[(*perm)[d]];
  }
  if (y.dtype != x.dtype || y.shape != outShape) return c.error(absl::StrCat("result must be ", shapeToString(outShape)));
  if (rank == 0 || rank > TransposeStep::kMaxRank) return nullptr;
  return std::unique_ptr<CpuStep>(new TransposeStep(c.step.operands[0], c.step.results[0], dtypeSize(x.dtype), outShape, strides));
}

absl::StatusOr<std::unique_ptr<CpuStep>> makeMatmulStep(const StepContext& c) {
  if (c.code != OpCode::Matmul) return nullptr;
  if (c.step.operands.size() != 2 || c.step.results.size() != 1) return c.error("expected 2 operands and 1 result");
  const BufferDesc &a = c.operand(0), &b = c.operand(1), &y = c.result(0);
  if (a.dtype != b.dtype) return c.error("operands must have the same element type");
  if (a.dtype != DType::F32 && a.dtype != DType::BF16 && a.dtype != DType::F16) return nullptr;
  auto ta = c.step.withAttrsOf<MatmulAttrs>([](const auto& m) { return m.transposeA; });
  auto tb = c.step.withAttrsOf<MatmulAttrs>([](const auto& m) { return m.transposeB; });
  if (!ta.ok()) return ta.status();
  if (!tb.ok()) return tb.status();
  auto gemm = Gemm::create(GemmDesc{a.dtype, a.shape, b.shape, *ta, *tb}, c.features);
  if (!gemm.ok()) return c.error(gemm.status().message());
  if ((*gemm)->resultShape() != y.shape || y.dtype != a.dtype)
    return c.error(absl::StrCat("result type must be ", std::string(dtypeName(a.dtype)),
                                shapeToString((*gemm)->resultShape())));
  return std::unique_ptr<CpuStep>(new MatmulStep(std::move(*gemm), c.step.operands[0], c.step.operands[1], c.step.results[0]));
}

}  // namespace amp::rt::cpu
