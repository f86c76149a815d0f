// Layout and GEMM steps of the cpu device: transpose (a strided copy) and matmul (oneDNN, see
// Gemm.h). Reshape needs no step: the memory plan makes it an alias of its operand.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "runtime/devices/cpu/CpuStep.h"
#include "runtime/devices/cpu/Gemm.h"

namespace amp::rt::cpu {
namespace {

class TransposeStep final : public CpuStep {
 public:
  TransposeStep(int32_t in, int32_t out, size_t es, Shape outShape, std::vector<int64_t> strides)
      : in_(in), out_(out), es_(es), shape_(std::move(outShape)), strides_(std::move(strides)) {}
  absl::Status run(BufferPtrs ptr) override {
    const int64_t n = numElements(shape_);
    const size_t rank = shape_.size();
    const int64_t inner = rank ? shape_.back() : 1, innerStride = rank ? strides_.back() : 1;
    const int64_t rows = inner ? n / inner : 0;
    const uint8_t* x = ptr[in_];
    uint8_t* y = ptr[out_];
    parallelFor(rows, 64, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        int64_t pos = 0, rem = r;  // source offset of row r's first element
        for (size_t d = rank - 1; d-- > 0;) {
          pos += (rem % shape_[d]) * strides_[d];
          rem /= shape_[d];
        }
        uint8_t* dst = y + r * inner * es_;
        switch (es_) {
          case 4:
            for (int64_t k = 0; k < inner; ++k)
              reinterpret_cast<uint32_t*>(dst)[k] = reinterpret_cast<const uint32_t*>(x)[pos + k * innerStride];
            break;
          case 2:
            for (int64_t k = 0; k < inner; ++k)
              reinterpret_cast<uint16_t*>(dst)[k] = reinterpret_cast<const uint16_t*>(x)[pos + k * innerStride];
            break;
          default:
            for (int64_t k = 0; k < inner; ++k) std::memcpy(dst + k * es_, x + (pos + k * innerStride) * es_, es_);
        }
      }
    });
    return absl::OkStatus();
  }

 private:
  int32_t in_, out_;
  size_t es_;
  Shape shape_;
  std::vector<int64_t> strides_;  // source element stride of each output dim
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
  const std::string& op = c.step.op;
  if (c.code != OpCode::Transpose) return nullptr;
  if (c.step.operands.size() != 1 || c.step.results.size() != 1) return c.error("expected 1 operand and 1 result");
  const BufferDesc &x = c.operand(0), &y = c.result(0);
  auto perm = c.step.attrs.getInts(op, "permutation");
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
  if (rank == 0) return nullptr;
  return std::unique_ptr<CpuStep>(new TransposeStep(c.step.operands[0], c.step.results[0], dtypeSize(x.dtype), outShape, strides));
}

absl::StatusOr<std::unique_ptr<CpuStep>> makeMatmulStep(const StepContext& c) {
  const std::string& op = c.step.op;
  if (c.code != OpCode::Matmul) return nullptr;
  if (c.step.operands.size() != 2 || c.step.results.size() != 1) return c.error("expected 2 operands and 1 result");
  const BufferDesc &a = c.operand(0), &b = c.operand(1), &y = c.result(0);
  if (a.dtype != b.dtype) return c.error("operands must have the same element type");
  if (a.dtype != DType::F32 && a.dtype != DType::BF16 && a.dtype != DType::F16) return nullptr;
  auto ta = c.step.attrs.getBool(op, "transpose_a", false);
  auto tb = c.step.attrs.getBool(op, "transpose_b", false);
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
