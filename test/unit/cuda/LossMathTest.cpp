// The arithmetic of the CUDA device's cross-entropy kernels (runtime/devices/cuda/kernels/LossMath.h),
// compiled here as host C++ with -ffp-contract=off and driven by host loops that do what the
// kernels in LossKernels.cu do, in their order (the block's tree max, thread 0's class-order sums,
// the one-thread row-order mean), against the reference executor's amp.cross_entropy and
// amp.cross_entropy_grad: every result bit for bit, in f32, bf16 and f16, with i64 and i32 labels,
// on random logits with large magnitudes, infinities, signed zeros and NaN, with and without label
// smoothing and with ignored rows. On the GPU the same text runs through NVRTC with --fmad=false;
// only the f64 exp and log there come from CUDA's math library (docs/kernels.md).
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "gtest/gtest.h"
#include "test/unit/cuda/RowTestUtil.h"
#include "runtime/devices/cuda/kernels/LossMath.h"
#include "runtime/reference/ReferenceKernels.h"
#include "runtime/numerics/Convert.h"

namespace amp::rt {
namespace {

constexpr int kBlock = 256;  // the kernels' threads per block
constexpr float kInf = std::numeric_limits<float>::infinity();
const DType kLogitTypes[] = {DType::F32, DType::BF16, DType::F16};
const DType kLabelTypes[] = {DType::I64, DType::I32};

const char* name(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::BF16: return "bf16";
    case DType::F16: return "f16";
    case DType::I64: return "i64";
    case DType::I32: return "i32";
    default: return "?";
  }
}

int64_t labelAt(const Tensor& labels, int64_t i) {
  return labels.dtype() == DType::I64 ? labels.as<int64_t>()[i] : labels.as<int32_t>()[i];
}

std::vector<float> widenAll(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = loadAsF32(t.dtype(), t.data(), i);
  return v;
}

using rowtest::blockMax;
using rowtest::orderedSum;

// amp_cross_entropy_<T>_<L> then amp_cross_entropy_mean_<T>_<L>: the scalar loss of the logits' type.
Tensor deviceLoss(const Tensor& logits, const Tensor& labels, int64_t ignoreIndex, double smoothing) {
  const int64_t rows = logits.shape()[0], classes = logits.shape()[1];
  const std::vector<float> x = widenAll(logits);
  std::vector<float> rowLoss(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t label = labelAt(labels, i);
    const AmpCeLabel state = amp_ce_label_state(label, classes, ignoreIndex);
    if (state != AMP_CE_COUNTED) {
      rowLoss[i] = state == AMP_CE_INVALID ? std::nanf("") : 0.0f;
      continue;
    }
    const float* row = x.data() + i * classes;
    const float max = blockMax(row, classes);
    const float lse = amp_ce_lse(orderedSum(classes, [&](int64_t j) { return amp_ce_exp(row[j], max); }));
    float negLogpSum = 0.0f;
    if (smoothing > 0.0) negLogpSum = orderedSum(classes, [&](int64_t j) { return amp_ce_neg_logp(row[j], max, lse); });
    rowLoss[i] = amp_ce_row_loss(amp_ce_neg_logp(row[label], max, lse), negLogpSum, classes, smoothing);
  }
  float total = 0.0f;
  long long counted = 0;
  bool invalid = false;
  for (int64_t i = 0; i < rows; ++i) {
    const AmpCeLabel state = amp_ce_label_state(labelAt(labels, i), classes, ignoreIndex);
    if (state == AMP_CE_INVALID) invalid = true;
    if (state != AMP_CE_COUNTED) continue;
    total = amp_ce_mean_add(total, rowLoss[i]);
    ++counted;
  }
  Tensor loss(logits.dtype(), {});
  storeFromF32(logits.dtype(), loss.data(), 0, invalid ? std::nanf("") : amp_ce_mean(total, counted));
  return loss;
}

// amp_cross_entropy_count_<L> then amp_cross_entropy_grad_<T>_<L>: dlogits of the logits' type.
Tensor deviceGrad(const Tensor& logits, const Tensor& labels, const Tensor& dloss, int64_t ignoreIndex,
                  double smoothing) {
  const int64_t rows = logits.shape()[0], classes = logits.shape()[1];
  long long counted = 0;
  for (int64_t i = 0; i < rows; ++i) {
    const AmpCeLabel state = amp_ce_label_state(labelAt(labels, i), classes, ignoreIndex);
    if (state == AMP_CE_INVALID) {
      counted = -1;
      break;
    }
    if (state == AMP_CE_COUNTED) ++counted;
  }
  const std::vector<float> x = widenAll(logits);
  const float coeff = amp_ce_grad_coeff(loadAsF32(dloss.dtype(), dloss.data(), 0), counted);
  const float keepWeight = amp_ce_keep_weight(smoothing);
  const float smoothWeight = amp_ce_grad_smooth_weight(smoothing, classes);
  Tensor dx(logits.dtype(), logits.shape());
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t label = labelAt(labels, i);
    const AmpCeLabel state = counted < 0 ? AMP_CE_INVALID : amp_ce_label_state(label, classes, ignoreIndex);
    if (state != AMP_CE_COUNTED) {
      for (int64_t j = 0; j < classes; ++j)
        storeFromF32(dx.dtype(), dx.data(), i * classes + j, state == AMP_CE_INVALID ? std::nanf("") : 0.0f);
      continue;
    }
    const float* row = x.data() + i * classes;
    const float max = blockMax(row, classes);
    const float sum = orderedSum(classes, [&](int64_t j) { return amp_ce_exp(row[j], max); });
    for (int64_t j = 0; j < classes; ++j) {
      const float g = amp_ce_grad_element(amp_ce_exp(row[j], max), sum, j == label, keepWeight, smoothWeight, coeff);
      storeFromF32(dx.dtype(), dx.data(), i * classes + j, g);
    }
  }
  return dx;
}

AttrMap attrsOf(int64_t ignoreIndex, double smoothing) {
  return AttrMap{{"ignore_index", ignoreIndex}, {"label_smoothing", smoothing}};
}

Tensor referenceLoss(const Tensor& logits, const Tensor& labels, int64_t ignoreIndex, double smoothing) {
  const std::vector<TensorType> types = {{logits.dtype(), {}}};
  auto out = evalReferenceOp("amp.cross_entropy", {&logits, &labels}, attrsOf(ignoreIndex, smoothing), types,
                             EvalContext{});
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() && out->size() == 1 ? (*out)[0] : Tensor();
}

Tensor referenceGrad(const Tensor& logits, const Tensor& labels, const Tensor& dloss, int64_t ignoreIndex,
                     double smoothing) {
  const std::vector<TensorType> types = {{logits.dtype(), logits.shape()}};
  auto out = evalReferenceOp("amp.cross_entropy_grad", {&logits, &labels, &dloss}, attrsOf(ignoreIndex, smoothing),
                             types, EvalContext{});
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() && out->size() == 1 ? (*out)[0] : Tensor();
}

uint32_t elementBits(const Tensor& t, int64_t i) {
  uint32_t u = 0;
  const size_t size = t.dtype() == DType::F32 ? 4 : 2;
  std::memcpy(&u, t.data() + i * size, size);
  return u;
}

void expectSameBits(const Tensor& device, const Tensor& ref, const char* what) {
  ASSERT_EQ(device.dtype(), ref.dtype()) << what;
  ASSERT_EQ(device.shape(), ref.shape()) << what;
  for (int64_t i = 0; i < ref.numel(); ++i)
    ASSERT_EQ(elementBits(device, i), elementBits(ref, i))
        << what << "[" << i << "]: " << loadAsF32(device.dtype(), device.data(), i) << " vs reference "
        << loadAsF32(ref.dtype(), ref.data(), i);
}

Tensor fromValues(DType t, const Shape& shape, const std::vector<float>& values) {
  Tensor out(t, shape);
  for (size_t i = 0; i < values.size(); ++i) storeFromF32(t, out.data(), static_cast<int64_t>(i), values[i]);
  return out;
}

Tensor labelTensor(DType t, const std::vector<int64_t>& values) {
  Tensor out(t, {static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i) {
    if (t == DType::I64) out.as<int64_t>()[i] = values[i];
    else out.as<int32_t>()[i] = static_cast<int32_t>(values[i]);
  }
  return out;
}

// A batch of logits: most rows in [-8, 8], some scaled to about +-80, some -inf logits away from
// the label (a -inf label logit is an infinite loss, covered one row at a time below), and about a
// fifth of the labels equal to ignore_index.
struct Batch {
  Tensor logits, labels;
};

Batch randomBatch(DType logitType, DType labelType, int64_t rows, int64_t classes, int64_t ignoreIndex, bool withInf,
                  std::mt19937& rng) {
  std::uniform_real_distribution<float> value(-8.0f, 8.0f);
  std::uniform_int_distribution<int64_t> cls(0, classes - 1);
  std::vector<float> x(static_cast<size_t>(rows * classes));
  std::vector<int64_t> y(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) {
    y[i] = rng() % 5 == 0 ? ignoreIndex : cls(rng);
    const float scale = i % 4 == 1 ? 10.0f : 1.0f;
    for (int64_t j = 0; j < classes; ++j) x[i * classes + j] = value(rng) * scale;
    if (withInf && classes > 1 && i % 3 == 0)
      for (int k = 0; k < 3; ++k) {
        const int64_t j = cls(rng);
        if (j != y[i]) x[i * classes + j] = -kInf;
      }
  }
  return {fromValues(logitType, {rows, classes}, x), labelTensor(labelType, y)};
}

TEST(CudaLossMath, MeanLossMatchesTheReferenceBitForBit) {
  std::mt19937 rng(17);
  for (DType t : kLogitTypes)
    for (DType l : kLabelTypes)
      for (int64_t classes : {int64_t{1}, int64_t{10}, int64_t{257}, int64_t{1000}})
        for (double smoothing : {0.0, 0.1, 1.0})
          for (int64_t ignoreIndex : {int64_t{-100}, int64_t{3}}) {
            SCOPED_TRACE(testing::Message() << name(t) << " labels " << name(l) << " C " << classes << " eps "
                                            << smoothing << " ignore " << ignoreIndex);
            // With smoothing every -inf logit makes its row's loss infinite, hiding the rest.
            const Batch b = randomBatch(t, l, 64, classes, ignoreIndex, smoothing == 0.0, rng);
            const Tensor ref = referenceLoss(b.logits, b.labels, ignoreIndex, smoothing);
            ASSERT_EQ(ref.numel(), 1);
            expectSameBits(deviceLoss(b.logits, b.labels, ignoreIndex, smoothing), ref, "loss");
          }
}

// Rows whose loss a batch mean would hide or swamp, each as a batch of one (its mean is its loss).
std::vector<std::vector<float>> awkwardRows(int64_t classes, std::mt19937& rng) {
  std::uniform_real_distribution<float> value(-8.0f, 8.0f);
  auto random = [&](float scale) {
    std::vector<float> r(static_cast<size_t>(classes));
    for (float& v : r) v = value(rng) * scale;
    return r;
  };
  std::vector<std::vector<float>> rows = {random(1.0f), random(10.0f), random(1e-3f)};
  rows.push_back(std::vector<float>(classes, 80.0f));   // all equal, large
  rows.push_back(std::vector<float>(classes, -80.0f));
  std::vector<float> r = random(1.0f);
  for (float& v : r) v = -std::fabs(v) - 1.0f;
  r[0] = -0.0f;  // the max is a zero of either sign, first one kept
  if (classes > 1) r[classes - 1] = 0.0f;
  rows.push_back(r);
  std::swap(r[0], r[classes - 1]);
  rows.push_back(r);
  r = random(10.0f);
  r[0] = -kInf;  // the label logit in the loop below is -inf for label 0
  rows.push_back(r);
  r = std::vector<float>(classes, -kInf);  // one finite logit left
  r[classes / 2] = 1.5f;
  rows.push_back(r);
  rows.push_back(std::vector<float>(classes, -kInf));  // max -inf: (-inf) - (-inf) = NaN
  r = random(1.0f);
  r[classes / 3] = std::nanf("");
  rows.push_back(r);
  r = random(1.0f);
  r[classes - 1] = kInf;
  rows.push_back(r);
  r = random(1e6f);  // f32 only: the others round these to inf
  rows.push_back(r);
  r = random(1.0f);
  r[0] = 3e38f;
  if (classes > 1) r[1] = -3e38f;  // x - max overflows to -inf
  rows.push_back(r);
  return rows;
}

TEST(CudaLossMath, RowLossesMatchTheReferenceOneRowAtATime) {
  std::mt19937 rng(23);
  for (DType t : kLogitTypes)
    for (int64_t classes : {int64_t{1}, int64_t{10}, int64_t{1000}})
      for (double smoothing : {0.0, 0.1}) {
        const std::vector<std::vector<float>> rows = awkwardRows(classes, rng);
        for (size_t r = 0; r < rows.size(); ++r)
          for (int64_t label : {int64_t{0}, classes / 2, classes - 1}) {
            SCOPED_TRACE(testing::Message() << name(t) << " C " << classes << " eps " << smoothing << " row " << r
                                            << " label " << label);
            const Tensor logits = fromValues(t, {1, classes}, rows[r]);
            const Tensor labels = labelTensor(DType::I64, {label});
            const Tensor ref = referenceLoss(logits, labels, -100, smoothing);
            ASSERT_EQ(ref.numel(), 1);
            expectSameBits(deviceLoss(logits, labels, -100, smoothing), ref, "loss");
          }
      }
}

// Many short rows, one batch each: every row's loss shows its lse = f32(log(s)) to the bit (a single
// f32 logf differs from it about once in 600 sums), which a batch mean would blur.
TEST(CudaLossMath, ManySmallRowsMatchTheReferenceOneRowAtATime) {
  std::mt19937 rng(53);
  std::uniform_int_distribution<int64_t> classCount(1, 16);
  std::uniform_real_distribution<float> value(-6.0f, 6.0f);
  for (int trial = 0; trial < 20000; ++trial) {
    const int64_t classes = classCount(rng);
    const double smoothing = trial % 3 == 0 ? 0.1 : 0.0;
    std::vector<float> x(static_cast<size_t>(classes));
    for (float& v : x) v = value(rng);
    const int64_t label = static_cast<int64_t>(rng() % classes);
    SCOPED_TRACE(testing::Message() << "trial " << trial << " C " << classes << " eps " << smoothing);
    const Tensor logits = fromValues(DType::F32, {1, classes}, x), labels = labelTensor(DType::I64, {label});
    const Tensor ref = referenceLoss(logits, labels, -100, smoothing);
    ASSERT_EQ(ref.numel(), 1);
    expectSameBits(deviceLoss(logits, labels, -100, smoothing), ref, "loss");
    if (HasFatalFailure()) return;
  }
}

TEST(CudaLossMath, GradientMatchesTheReferenceBitForBit) {
  std::mt19937 rng(29);
  for (DType t : kLogitTypes)
    for (DType l : kLabelTypes)
      for (int64_t classes : {int64_t{1}, int64_t{10}, int64_t{257}, int64_t{1000}})
        for (double smoothing : {0.0, 0.1, 1.0})
          for (int64_t ignoreIndex : {int64_t{-100}, int64_t{3}})
            for (double upstream : {1.0, 65536.0, 0.37}) {
              SCOPED_TRACE(testing::Message() << name(t) << " labels " << name(l) << " C " << classes << " eps "
                                              << smoothing << " ignore " << ignoreIndex << " dloss " << upstream);
              const Batch b = randomBatch(t, l, 48, classes, ignoreIndex, true, rng);
              const Tensor dloss = fromValues(t, {}, {static_cast<float>(upstream)});
              const Tensor ref = referenceGrad(b.logits, b.labels, dloss, ignoreIndex, smoothing);
              expectSameBits(deviceGrad(b.logits, b.labels, dloss, ignoreIndex, smoothing), ref, "dlogits");
            }
}

TEST(CudaLossMath, GradientOfAwkwardRowsMatchesTheReference) {
  std::mt19937 rng(31);
  for (DType t : kLogitTypes)
    for (int64_t classes : {int64_t{1}, int64_t{10}, int64_t{1000}})
      for (double smoothing : {0.0, 0.1}) {
        const std::vector<std::vector<float>> rows = awkwardRows(classes, rng);
        std::vector<float> x;
        std::vector<int64_t> y;
        for (size_t r = 0; r < rows.size(); ++r) {  // every row a NaN row does not reach: one batch
          x.insert(x.end(), rows[r].begin(), rows[r].end());
          y.push_back(static_cast<int64_t>(r) % classes);
        }
        const int64_t n = static_cast<int64_t>(rows.size());
        SCOPED_TRACE(testing::Message() << name(t) << " C " << classes << " eps " << smoothing);
        const Tensor logits = fromValues(t, {n, classes}, x), labels = labelTensor(DType::I64, y);
        const Tensor dloss = fromValues(t, {}, {2.0f});
        const Tensor ref = referenceGrad(logits, labels, dloss, -100, smoothing);
        expectSameBits(deviceGrad(logits, labels, dloss, -100, smoothing), ref, "dlogits");
      }
}

TEST(CudaLossMath, AllIgnoredBatchesMatchTheReference) {
  std::mt19937 rng(37);
  for (DType t : kLogitTypes)
    for (int64_t rows : {int64_t{0}, int64_t{1}, int64_t{20}}) {
      SCOPED_TRACE(testing::Message() << name(t) << " rows " << rows);
      Batch b = randomBatch(t, DType::I64, rows, 10, -100, false, rng);
      b.labels = labelTensor(DType::I64, std::vector<int64_t>(static_cast<size_t>(rows), -100));
      const Tensor ref = referenceLoss(b.logits, b.labels, -100, 0.1);
      ASSERT_EQ(ref.numel(), 1);
      const Tensor loss = deviceLoss(b.logits, b.labels, -100, 0.1);
      EXPECT_TRUE(std::isnan(loadAsF32(t, loss.data(), 0)));  // 0 / 0
      expectSameBits(loss, ref, "loss");
      const Tensor dloss = fromValues(t, {}, {1.0f});
      const Tensor refGrad = referenceGrad(b.logits, b.labels, dloss, -100, 0.1);
      expectSameBits(deviceGrad(b.logits, b.labels, dloss, -100, 0.1), refGrad, "dlogits");
    }
}

// The reference rejects the op; the kernels write NaN to the loss and to every gradient element.
TEST(CudaLossMath, InvalidLabelsAreRejectedAndBecomeNaN) {
  std::mt19937 rng(41);
  for (int64_t bad : {int64_t{10}, int64_t{-1}, int64_t{-100}, int64_t{1} << 40}) {
    SCOPED_TRACE(testing::Message() << "label " << bad);
    Batch b = randomBatch(DType::F32, DType::I64, 8, 10, 3, false, rng);
    b.labels.as<int64_t>()[5] = bad;
    EXPECT_EQ(amp_ce_label_state(bad, 10, 3), AMP_CE_INVALID);
    const std::vector<TensorType> lossType = {{DType::F32, {}}}, gradType = {{DType::F32, {8, 10}}};
    const Tensor dloss = fromValues(DType::F32, {}, {1.0f});
    const AttrMap attrs = attrsOf(3, 0.0);
    EXPECT_FALSE(evalReferenceOp("amp.cross_entropy", {&b.logits, &b.labels}, attrs, lossType, EvalContext{}).ok());
    EXPECT_FALSE(
        evalReferenceOp("amp.cross_entropy_grad", {&b.logits, &b.labels, &dloss}, attrs, gradType, EvalContext{}).ok());
    EXPECT_TRUE(std::isnan(deviceLoss(b.logits, b.labels, 3, 0.0).as<float>()[0]));
    const Tensor dx = deviceGrad(b.logits, b.labels, dloss, 3, 0.0);
    for (int64_t i = 0; i < dx.numel(); ++i) ASSERT_TRUE(std::isnan(dx.as<float>()[i])) << i;
  }
  EXPECT_EQ(amp_ce_label_state(3, 10, 3), AMP_CE_IGNORED);  // ignore_index wins inside [0, C)
  EXPECT_EQ(amp_ce_label_state(-100, 10, -100), AMP_CE_IGNORED);
  EXPECT_EQ(amp_ce_label_state(9, 10, -100), AMP_CE_COUNTED);
}

// The block's tree gives softmaxSlice's sequential max to the bit (docs in ReferenceCommon.h:
// m = x > m ? x : m from -inf): NaN skipped, the first of equal values kept.
TEST(CudaLossMath, BlockMaxIsTheSequentialMax) {
  std::mt19937 rng(43);
  const float pool[] = {0.0f, -0.0f, -kInf, kInf, std::nanf(""), 1.0f, -1.0f, 3e38f, 1e-45f};
  for (int64_t classes : {int64_t{1}, int64_t{7}, int64_t{256}, int64_t{300}, int64_t{5000}})
    for (int trial = 0; trial < 200; ++trial) {
      std::vector<float> row(static_cast<size_t>(classes));
      const int kinds = 1 + trial % static_cast<int>(std::size(pool));  // fewer kinds: more ties
      for (float& v : row) v = pool[rng() % kinds];
      float sequential = -kInf;
      for (float v : row) sequential = v > sequential ? v : sequential;
      uint32_t a, b;
      const float tree = blockMax(row.data(), classes);
      std::memcpy(&a, &tree, 4);
      std::memcpy(&b, &sequential, 4);
      ASSERT_EQ(a, b) << "C " << classes << " trial " << trial;
    }
}

}  // namespace
}  // namespace amp::rt
