// embedding, embedding_grad and dropout on the cpu device.
// - embedding: row copies (bits, any element type). Every id is checked before anything is
//   written; an id out of range is the reference's error, never an out-of-bounds read.
// - embedding_grad: an f32 table of zeros, each dy row added into row `id` for the ids in
//   row-major order, rounded once at the end: the reference's order. Threads own disjoint ranges
//   of table rows and each scans all ids, so every row still sums its contributions in id order.
// - dropout: the shared Philox stream (runtime/numerics/Philox.h) keyed by (seed, step, element),
//   one Philox call per 4 elements; the step is the current call's counter, read at run time.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "runtime/devices/cpu/steps/CpuKernelUtil.h"
#include "runtime/devices/cpu/CpuStep.h"
#include "runtime/numerics/Philox.h"

namespace amp::rt::cpu {
namespace {

constexpr int64_t kWork = 16384;

// The first id outside [0, v), as the reference reports it; OK when all are in range.
absl::Status checkIds(const std::string& op, DType t, const uint8_t* ids, const Shape& shape, int64_t v) {
  const int64_t n = numElements(shape);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t id = loadId(t, ids, i);
    if (id < 0 || id >= v)
      return absl::InvalidArgumentError(
          absl::StrCat(op, ": id ", id, " at position ", positionString(shape, i), " is out of range [0, ", v, ")"));
  }
  return absl::OkStatus();
}

class EmbeddingStep final : public CpuStep {
 public:
  EmbeddingStep(std::string op, int32_t table, int32_t ids, int32_t out, DType idType, Shape idShape, int64_t v,
                size_t rowBytes)
      : op_(std::move(op)), table_(table), ids_(ids), out_(out), idType_(idType), idShape_(std::move(idShape)), v_(v),
        rowBytes_(rowBytes), n_(numElements(idShape_)) {}

  absl::Status run(BufferPtrs ptr) override {
    const uint8_t* ids = ptr[ids_];
    if (auto s = checkIds(op_, idType_, ids, idShape_, v_); !s.ok()) return s;
    if (rowBytes_ == 0) return absl::OkStatus();
    const uint8_t* table = ptr[table_];
    uint8_t* out = ptr[out_];
    const int64_t grain = std::max<int64_t>(1, int64_t{1 << 16} / static_cast<int64_t>(rowBytes_));
    parallelFor(n_, grain, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i)
        std::memcpy(out + i * rowBytes_, table + loadId(idType_, ids, i) * rowBytes_, rowBytes_);
    });
    return absl::OkStatus();
  }

 private:
  std::string op_;
  int32_t table_, ids_, out_;
  DType idType_;
  Shape idShape_;
  int64_t v_;
  size_t rowBytes_;
  int64_t n_;
};

class EmbeddingGradStep final : public CpuStep {
 public:
  EmbeddingGradStep(std::string op, int32_t ids, int32_t dy, int32_t out, DType idType, Shape idShape, DType dtype,
                    int64_t v, int64_t d)
      : op_(std::move(op)), ids_(ids), dy_(dy), out_(out), idType_(idType), idShape_(std::move(idShape)),
        dtype_(dtype), v_(v), d_(d), n_(numElements(idShape_)) {
    slots_ = scratchSlots();
    if (dtype_ != DType::F32) {  // an f32 result is its own accumulator
      table_ = shared_.reserve(v_ * d_);
      rows_ = shared_.reserve(slots_ * d_);
    }
  }
  int64_t sharedScratchBytes() const override { return shared_.bytes(); }
  void bindSharedScratch(uint8_t* p) override { shared_.bind(p); }

  absl::Status run(BufferPtrs ptr) override {
    const uint8_t* ids = ptr[ids_];
    if (auto s = checkIds(op_, idType_, ids, idShape_, v_); !s.ok()) return s;
    const uint8_t* dy = ptr[dy_];
    uint8_t* out = ptr[out_];
    const bool f32 = dtype_ == DType::F32;
    float* acc = f32 ? reinterpret_cast<float*>(out) : shared_.at(table_);
    // Work is ~n*d adds plus a scan of the ids per thread; split table rows only when it pays.
    const int64_t work = n_ * d_ + v_ * d_;
    const int64_t chunks = std::min<int64_t>(slots_, std::max<int64_t>(1, work / kWork));
    parallelChunks(v_, std::max<int64_t>(1, (v_ + chunks - 1) / chunks), slots_, [&](int slot, int64_t v0, int64_t v1) {
      float* rowBuf = f32 ? nullptr : shared_.at(rows_) + slot * d_;
      std::memset(acc + v0 * d_, 0, static_cast<size_t>((v1 - v0) * d_) * sizeof(float));
      for (int64_t i = 0; i < n_; ++i) {  // ids in row-major order
        const int64_t id = loadId(idType_, ids, i);
        if (id < v0 || id >= v1) continue;
        const float* src = widenRun(dtype_, dy, i * d_, d_, rowBuf);
        float* row = acc + id * d_;
        for (int64_t k = 0; k < d_; ++k) row[k] += src[k];
      }
      if (!f32) narrowRun(acc + v0 * d_, dtype_, out, v0 * d_, (v1 - v0) * d_);
    });
    return absl::OkStatus();
  }

 private:
  std::string op_;
  int32_t ids_, dy_, out_;
  DType idType_;
  Shape idShape_;
  DType dtype_;
  int64_t v_, d_, n_;
  int slots_ = 1;
  SharedFloats shared_;
  int64_t table_ = 0, rows_ = 0;  // the f32 table; one widened dy row per slot
};

class DropoutStep final : public CpuStep {
 public:
  DropoutStep(int32_t in, int32_t out, DType dtype, int64_t n, uint64_t seed, float p, const int64_t* step)
      : in_(in), out_(out), dtype_(dtype), n_(n), seed_(seed), p_(p), step_(step) {
    scale_ = static_cast<float>(1.0 / (1.0 - double(p_)));
  }
  bool elementwiseInPlace() const override { return true; }

  absl::Status run(BufferPtrs ptr) override {
    constexpr int64_t kBlock = 512;  // a multiple of 4: one Philox call serves 4 elements
    const uint64_t step = static_cast<uint64_t>(*step_);
    const uint32_t key[2] = {uint32_t(seed_), uint32_t(seed_ >> 32)};
    const uint8_t* x = ptr[in_];
    uint8_t* y = ptr[out_];
    const int64_t blocks = (n_ + kBlock - 1) / kBlock;
    parallelFor(blocks, std::max<int64_t>(1, kWork / kBlock / 4), [&](int64_t b0, int64_t b1) {
      alignas(64) float xs[kBlock], ys[kBlock];
      for (int64_t b = b0; b < b1; ++b) {
        const int64_t i0 = b * kBlock, m = std::min(kBlock, n_ - i0);
        const float* xv = widenRun(dtype_, x, i0, m, xs);
        for (int64_t k = 0; k < m; k += 4) {
          const uint64_t block = static_cast<uint64_t>(i0 + k) >> 2;
          const uint32_t ctr[4] = {uint32_t(block), uint32_t(block >> 32), uint32_t(step), uint32_t(step >> 32)};
          const std::array<uint32_t, 4> bits = philox4x32_10(key, ctr);
          for (int64_t l = 0; l < 4 && k + l < m; ++l) {
            const bool keep = uniformFromBits(bits[l]) >= p_;
            ys[k + l] = xv[k + l] * (keep ? scale_ : 0.0f);
          }
        }
        narrowRun(ys, dtype_, y, i0, m);
      }
    });
    return absl::OkStatus();
  }

 private:
  int32_t in_, out_;
  DType dtype_;
  int64_t n_;
  uint64_t seed_;
  float p_, scale_ = 1.0f;
  const int64_t* step_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<CpuStep>> makeEmbeddingStep(const StepContext& c) {
  const std::string& op = c.step.op;
  if (c.code == OpCode::Embedding) {
    if (c.step.operands.size() != 2 || c.step.results.size() != 1) return c.error("expected 2 operands and 1 result");
    const BufferDesc &table = c.operand(0), &ids = c.operand(1), &out = c.result(0);
    if (table.shape.size() != 2) return c.error("the table (operand 0) must have rank 2");
    if (!isIndex(ids.dtype)) return c.error("ids (operand 1) must have element type i32 or i64");
    Shape want = ids.shape;
    want.push_back(table.shape[1]);
    if (out.dtype != table.dtype || out.shape != want)
      return c.error(absl::StrCat("the result must be ", std::string(dtypeName(table.dtype)), shapeToString(want)));
    return std::unique_ptr<CpuStep>(new EmbeddingStep(op, c.step.operands[0], c.step.operands[1], c.step.results[0],
                                                      ids.dtype, ids.shape, table.shape[0],
                                                      static_cast<size_t>(table.shape[1]) * dtypeSize(table.dtype)));
  }
  if (c.code == OpCode::EmbeddingGrad) {
    if (c.step.operands.size() != 2 || c.step.results.size() != 1) return c.error("expected 2 operands and 1 result");
    const BufferDesc &ids = c.operand(0), &dy = c.operand(1), &out = c.result(0);
    if (!isIndex(ids.dtype)) return c.error("ids (operand 0) must have element type i32 or i64");
    if (!isKernelFloat(dy.dtype)) return c.error("grad (operand 1) must have a float element type");
    auto v = c.step.withAttrsOf<EmbeddingGradAttrs>([](const auto& a) { return a.numEmbeddings; });
    if (!v.ok()) return v.status();
    if (*v < 1) return c.error("attribute 'num_embeddings' must be >= 1");
    if (dy.shape.size() != ids.shape.size() + 1 || !std::equal(ids.shape.begin(), ids.shape.end(), dy.shape.begin()))
      return c.error("grad must have shape ids + [D]");
    const int64_t d = dy.shape.back();
    if (out.dtype != dy.dtype || out.shape != Shape{*v, d})
      return c.error(absl::StrCat("the result must be ", std::string(dtypeName(dy.dtype)), shapeToString(Shape{*v, d})));
    return std::unique_ptr<CpuStep>(new EmbeddingGradStep(op, c.step.operands[0], c.step.operands[1], c.step.results[0],
                                                          ids.dtype, ids.shape, dy.dtype, *v, d));
  }
  if (c.code == OpCode::Dropout) {
    if (c.step.operands.size() != 1 || c.step.results.size() != 1) return c.error("expected 1 operand and 1 result");
    const BufferDesc &x = c.operand(0), &out = c.result(0);
    if (!isKernelFloat(x.dtype)) return c.error("operand 0 must have a float element type");
    if (out.dtype != x.dtype || out.shape != x.shape) return c.error("the result type must be the operand's");
    auto rate = c.step.withAttrsOf<DropoutAttrs>([](const auto& a) { return a.rate; });
    if (!rate.ok()) return rate.status();
    auto seed = c.step.withAttrsOf<DropoutAttrs>([](const auto& a) { return a.seed; });
    if (!seed.ok()) return seed.status();
    if (!(*rate >= 0.0 && *rate < 1.0)) return c.error(absl::StrCat("attribute 'rate' must be in [0, 1), got ", *rate));
    return std::unique_ptr<CpuStep>(new DropoutStep(c.step.operands[0], c.step.results[0], x.dtype, x.numel(),
                                                    static_cast<uint64_t>(*seed), static_cast<float>(*rate),
                                                    c.dropoutStep));
  }
  return nullptr;
}

}  // namespace amp::rt::cpu
