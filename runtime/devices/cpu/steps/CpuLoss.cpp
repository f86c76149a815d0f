// cross_entropy and its gradient over [N, C] logits. Labels are checked before anything is
// computed (a bad label is an error, never an out-of-bounds read); the per-row softmax is the
// reference's softmaxSlice in its certified vector form (SoftmaxExact.h), blocks of rows a call
// split across the threads, and the mean accumulates the rows' losses in order, so results are
// bit-exact.
#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "runtime/devices/cpu/CpuStep.h"
#include "runtime/devices/cpu/steps/CpuKernelUtil.h"
#include "runtime/kernels/math/SumOrder.h"
#include "runtime/devices/cpu/kernels/SoftmaxExact.h"
#include "runtime/numerics/Convert.h"

namespace amp::rt::cpu {
namespace {

struct CrossEntropyShape {
  int32_t logits, labels, seed = -1, out;
  DType logitsType, labelsType, outType;
  int64_t n, c, ignoreIndex;
  double smoothing;
};

// Rows per softmax call: whole blocks of lanes, up to 128 rows or ~256 KiB a buffer, no more
// than the logits have.
int64_t rowsPerSoftmaxBlock(int64_t n, int64_t c) {
  const int64_t blocksFit = (int64_t{1} << 16) / (kSoftmaxRowBlock * std::max<int64_t>(c, 1));
  const int64_t blocksNeeded = std::clamp<int64_t>((n + kSoftmaxRowBlock - 1) / kSoftmaxRowBlock, 1, 8);
  return kSoftmaxRowBlock * std::clamp<int64_t>(blocksFit, 1, blocksNeeded);
}

class CrossEntropyStep final : public CpuStep {
 public:
  CrossEntropyStep(CrossEntropyShape s, bool grad, std::string op)
      : s_(s),
        grad_(grad),
        op_(std::move(op)),
        rowsPerBlock_(rowsPerSoftmaxBlock(s.n, s.c)),
        slots_(scratchSlots()),
        perSlot_(2 * rowsPerBlock_ * s.c + softmaxScratchFloats(s.c)) {
    scratch_ = shared_.reserve(slots_ * perSlot_);
    rowLoss_ = shared_.reserve(grad ? 0 : s.n);
  }
  int64_t sharedScratchBytes() const override { return shared_.bytes(); }
  void bindSharedScratch(uint8_t* p) override { shared_.bind(p); }

  absl::Status run(BufferPtrs ptr) override {
    const uint8_t* labels = ptr[s_.labels];
    int64_t counted = 0;
    for (int64_t i = 0; i < s_.n; ++i) {
      const int64_t y = label(labels, i);
      if (y == s_.ignoreIndex) continue;
      if (y < 0 || y >= s_.c)
        return absl::InvalidArgumentError(absl::StrCat(op_, ": label ", y, " at position [", i,
                                                       "] is out of range [0, ", s_.c, ") and is not ignore_index (",
                                                       s_.ignoreIndex, ")"));
      ++counted;
    }
    const size_t es = dtypeSize(s_.logitsType);
    const double eps = s_.smoothing;
    const int64_t blocks = (s_.n + rowsPerBlock_ - 1) / rowsPerBlock_;
    if (!grad_) {
      // Each row's loss, blocks of rows across the threads; then their mean, the counted rows in
      // order (the contract's blocked pairwise sum), on this thread.
      const float keepW = static_cast<float>(1.0 - eps), smoothW = static_cast<float>(eps);
      parallelChunks(blocks, 1, slots_, [&](int slot, int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) {
          const int64_t i0 = b * rowsPerBlock_, rows = std::min(rowsPerBlock_, s_.n - i0);
          const float* probs = softmaxBlock(slot, ptr[s_.logits], i0, rows, /*log=*/true);
          for (int64_t i = i0; i < i0 + rows; ++i) {
            const int64_t y = label(labels, i);
            if (y == s_.ignoreIndex) continue;
            const float* p = probs + (i - i0) * s_.c;
            float loss = -p[y];
            if (eps > 0.0) {
              const float smooth = amp_blocked_sum(s_.c, [&](int64_t k) { return -p[k]; }) / static_cast<float>(s_.c);
              loss = keepW * loss + smoothW * smooth;
            }
            shared_.at(rowLoss_)[i] = loss;
          }
        }
      });
      AmpBlockedSum<float> total;
      total.reset(0.0f);
      for (int64_t i = 0; i < s_.n; ++i)
        if (label(labels, i) != s_.ignoreIndex) total.add(shared_.at(rowLoss_)[i]);
      const float mean = total.result() / static_cast<float>(counted);  // all ignored: 0/0 = NaN
      convertBuffer(DType::F32, &mean, s_.outType, ptr[s_.out], 1);
      return absl::OkStatus();
    }
    const float seed = loadAsF32(s_.logitsType, ptr[s_.seed], 0);
    const float coeff = seed / static_cast<float>(counted);
    const float keepW = static_cast<float>(1.0 - eps), smoothW = static_cast<float>(eps / double(s_.c));
    parallelChunks(blocks, 1, slots_, [&](int slot, int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) {
        const int64_t i0 = b * rowsPerBlock_, rows = std::min(rowsPerBlock_, s_.n - i0);
        float* probs = softmaxBlock(slot, ptr[s_.logits], i0, rows, /*log=*/false);
        for (int64_t i = i0; i < i0 + rows; ++i) {
          const int64_t y = label(labels, i);
          float* p = probs + (i - i0) * s_.c;
          if (y == s_.ignoreIndex) {
            for (int64_t k = 0; k < s_.c; ++k) p[k] = 0.0f;
          } else {
            for (int64_t k = 0; k < s_.c; ++k) {
              const float target = (k == y ? keepW : 0.0f) + smoothW;
              p[k] = (p[k] - target) * coeff;
            }
          }
        }
        convertBuffer(DType::F32, probs, s_.outType, ptr[s_.out] + i0 * s_.c * es, rows * s_.c);
      }
    });
    return absl::OkStatus();
  }

 private:
  int64_t label(const uint8_t* base, int64_t i) const {
    return s_.labelsType == DType::I64 ? reinterpret_cast<const int64_t*>(base)[i]
                                       : reinterpret_cast<const int32_t*>(base)[i];
  }
  // (Log-)softmax of logits rows [i0, i0 + rows) into the slot's probabilities (every row, ignored
  // ones too: their values are not read), through SoftmaxExact.h's certified kernels:
  // softmaxSlice's bits.
  float* softmaxBlock(int slot, const uint8_t* logits, int64_t i0, int64_t rows, bool log) {
    const size_t es = dtypeSize(s_.logitsType);
    float* row = shared_.at(scratch_) + slot * perSlot_;
    float* p = row + rowsPerBlock_ * s_.c;
    float* work = p + rowsPerBlock_ * s_.c;
    convertBuffer(s_.logitsType, logits + i0 * s_.c * es, DType::F32, row, rows * s_.c);
    softmaxRows(hostVectorPath(kSoftmaxNeeds), row, rows, s_.c, log, p, work);
    return p;
  }

  CrossEntropyShape s_;
  bool grad_;
  std::string op_;
  int64_t rowsPerBlock_;
  int slots_;
  int64_t perSlot_;  // a block of logits rows, of (log-)probabilities, the kernel's work
  SharedFloats shared_;
  int64_t scratch_ = 0, rowLoss_ = 0;  // per slot; the forward's per-row losses
};

}  // namespace

absl::StatusOr<std::unique_ptr<CpuStep>> makeLossStep(const StepContext& c) {
  const std::string& op = c.step.op;
  const bool grad = c.code == OpCode::CrossEntropyGrad;
  if (c.code != OpCode::CrossEntropy && !grad) return nullptr;
  if (c.step.operands.size() != (grad ? 3u : 2u) || c.step.results.size() != 1)
    return c.error(absl::StrCat("expected ", grad ? 3 : 2, " operands and 1 result"));
  const BufferDesc &logits = c.operand(0), &labels = c.operand(1), &out = c.result(0);
  if (logits.dtype != DType::F32 && logits.dtype != DType::BF16 && logits.dtype != DType::F16) return nullptr;
  if (logits.shape.size() != 2 || labels.shape.size() != 1 || labels.shape[0] != logits.shape[0])
    return c.error("expected logits [N, C] and labels [N]");
  if (labels.dtype != DType::I64 && labels.dtype != DType::I32)
    return c.error("labels (operand 1) must have element type i32 or i64");
  if (out.dtype != logits.dtype || out.shape != (grad ? logits.shape : Shape{}))
    return c.error("result type does not match the logits");
  if (grad && (c.operand(2).dtype != logits.dtype || !c.operand(2).shape.empty()))
    return c.error("the incoming gradient (operand 2) must be a scalar of the logits' type");
  auto attrs = c.step.withAttrsOf<CrossEntropyAttrs, CrossEntropyGradAttrs>(
      [](const auto& a) { return std::pair{a.ignoreIndex, a.labelSmoothing}; });
  if (!attrs.ok()) return attrs.status();
  const int64_t* ignore = &attrs->first;
  const double* smoothing = &attrs->second;
  if (!(*smoothing >= 0.0 && *smoothing <= 1.0)) return c.error("attribute 'label_smoothing' must be in [0, 1]");
  CrossEntropyShape s{c.step.operands[0], c.step.operands[1], grad ? c.step.operands[2] : -1, c.step.results[0],
                      logits.dtype, labels.dtype, out.dtype, logits.shape[0], logits.shape[1], *ignore, *smoothing};
  return std::unique_ptr<CpuStep>(new CrossEntropyStep(s, grad, op));
}

}  // namespace amp::rt::cpu
