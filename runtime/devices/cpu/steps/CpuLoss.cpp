// cross_entropy and its gradient over [N, C] logits. Labels are checked before anything is
// computed (a bad label is an error, never an out-of-bounds read); the per-row softmax is the
// reference's softmaxSlice in its certified vector form (SoftmaxExact.h), blocks of rows a call,
// and the mean accumulates rows in order, so results are bit-exact.
#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "runtime/devices/cpu/CpuStep.h"
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
        row_(static_cast<size_t>(rowsPerBlock_ * s.c)),
        p_(static_cast<size_t>(rowsPerBlock_ * s.c)),
        work_(static_cast<size_t>(softmaxScratchFloats(s.c))) {}

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
    if (!grad_) {
      const float keepW = static_cast<float>(1.0 - eps), smoothW = static_cast<float>(eps);
      AmpBlockedSum<float> total;  // the counted rows in order, the contract's blocked pairwise sum
      total.reset(0.0f);
      for (int64_t i0 = 0; i0 < s_.n; i0 += rowsPerBlock_) {
        const int64_t rows = std::min(rowsPerBlock_, s_.n - i0);
        softmaxBlock(ptr[s_.logits], i0, rows, /*log=*/true);
        for (int64_t i = i0; i < i0 + rows; ++i) {  // rows in order, as the mean's sum takes them
          const int64_t y = label(labels, i);
          if (y == s_.ignoreIndex) continue;
          const float* p = p_.data() + (i - i0) * s_.c;
          float loss = -p[y];
          if (eps > 0.0) {
            const float smooth = amp_blocked_sum(s_.c, [&](int64_t k) { return -p[k]; }) / static_cast<float>(s_.c);
            loss = keepW * loss + smoothW * smooth;
          }
          total.add(loss);
        }
      }
      const float mean = total.result() / static_cast<float>(counted);  // all ignored: 0/0 = NaN
      convertBuffer(DType::F32, &mean, s_.outType, ptr[s_.out], 1);
      return absl::OkStatus();
    }
    const float seed = loadAsF32(s_.logitsType, ptr[s_.seed], 0);
    const float coeff = seed / static_cast<float>(counted);
    const float keepW = static_cast<float>(1.0 - eps), smoothW = static_cast<float>(eps / double(s_.c));
    for (int64_t i0 = 0; i0 < s_.n; i0 += rowsPerBlock_) {
      const int64_t rows = std::min(rowsPerBlock_, s_.n - i0);
      softmaxBlock(ptr[s_.logits], i0, rows, /*log=*/false);
      for (int64_t i = i0; i < i0 + rows; ++i) {
        const int64_t y = label(labels, i);
        float* p = p_.data() + (i - i0) * s_.c;
        if (y == s_.ignoreIndex) {
          for (int64_t k = 0; k < s_.c; ++k) p[k] = 0.0f;
        } else {
          for (int64_t k = 0; k < s_.c; ++k) {
            const float target = (k == y ? keepW : 0.0f) + smoothW;
            p[k] = (p[k] - target) * coeff;
          }
        }
      }
      convertBuffer(DType::F32, p_.data(), s_.outType, ptr[s_.out] + i0 * s_.c * es, rows * s_.c);
    }
    return absl::OkStatus();
  }

 private:
  int64_t label(const uint8_t* base, int64_t i) const {
    return s_.labelsType == DType::I64 ? reinterpret_cast<const int64_t*>(base)[i]
                                       : reinterpret_cast<const int32_t*>(base)[i];
  }
  // (Log-)softmax of logits rows [i0, i0 + rows) into p_ (every row, ignored ones too: their
  // values are not read), through SoftmaxExact.h's certified kernels: softmaxSlice's bits.
  void softmaxBlock(const uint8_t* logits, int64_t i0, int64_t rows, bool log) {
    const size_t es = dtypeSize(s_.logitsType);
    convertBuffer(s_.logitsType, logits + i0 * s_.c * es, DType::F32, row_.data(), rows * s_.c);
    softmaxRows(hostVectorPath(kSoftmaxNeeds), row_.data(), rows, s_.c, log, p_.data(), work_.data());
  }

  CrossEntropyShape s_;
  bool grad_;
  std::string op_;
  int64_t rowsPerBlock_;
  std::vector<float> row_, p_, work_;  // a block of logits rows, of (log-)probabilities, kernel work
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
