// The CUDA device's loss kernels (runtime/kernels/cuda/LossKernels.cu, arithmetic in
// LossMath.h), their own source run on the host through BlockEmulation.h with -ffp-contract=off:
// amp_cross_entropy_* then amp_cross_entropy_mean_*, and amp_cross_entropy_count_* then
// amp_cross_entropy_grad_*, against the reference executor's amp.cross_entropy and
// amp.cross_entropy_grad, every result bit for bit, in f32, bf16 and f16, with i64 and i32 labels,
// on random logits with large magnitudes, infinities, signed zeros and NaN, with and without label
// smoothing and with ignored rows; and amp_mse_partials_* then amp_mse_mean_* against amp.mse_loss.
// On the GPU the same text runs through NVRTC with --fmad=false; only the f64 exp and log there come
// from CUDA's math library (docs/kernels.md).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "gtest/gtest.h"
#include "runtime/reference/ReferenceKernels.h"
#include "runtime/numerics/Convert.h"
#include "test/unit/common/BlockEmulation.h"
#include "runtime/kernels/math/HostDevice.h"
#include "runtime/kernels/math/SumOrder.h"
#include "runtime/kernels/cuda/DeviceIO.cuh"
#include "runtime/kernels/math/RowMath.h"
#include "runtime/kernels/cuda/RowKernels.cuh"
#include "runtime/kernels/math/LossMath.h"
#include "runtime/kernels/cuda/LossKernels.cu"

namespace amp::rt {
namespace {

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

int typeCode(DType t) { return t == DType::BF16 ? 1 : t == DType::F16 ? 2 : 0; }

// The entry points of one logits type and labels type L.
template <class L>
struct CeKernels {
  void (*forward)(const void*, const L*, float*, long long, long long, long long, double);
  void (*mean)(const float*, const L*, void*, long long, long long, long long);
  void (*count)(const L*, long long, long long, long long, long long*);
  void (*grad)(const void*, const L*, const void*, const long long*, void*, long long, long long, long long, double);
};
#define AMP_CE_ENTRY(tname, lname)                                                        \
  {amp_cross_entropy_##tname##_##lname, amp_cross_entropy_mean_##tname##_##lname,       \
   amp_cross_entropy_count_##lname, amp_cross_entropy_grad_##tname##_##lname}
const CeKernels<long long> kI64Kernels[3] = {AMP_CE_ENTRY(f32, i64), AMP_CE_ENTRY(bf16, i64), AMP_CE_ENTRY(f16, i64)};
const CeKernels<int> kI32Kernels[3] = {AMP_CE_ENTRY(f32, i32), AMP_CE_ENTRY(bf16, i32), AMP_CE_ENTRY(f16, i32)};

// Rows are grid-strided: a grid smaller than the batch gives blocks several rows.
unsigned rowBlocks(int64_t rows) { return static_cast<unsigned>(std::clamp<int64_t>(rows, 1, 5)); }

template <class L>
Tensor deviceLossAs(const CeKernels<L>& k, const Tensor& logits, const Tensor& labels, int64_t ignoreIndex,
                    double smoothing, emu::Schedule schedule) {
  const int64_t rows = logits.shape()[0], classes = logits.shape()[1];
  const L* y = labels.as<L>();
  std::vector<float> rowLoss(static_cast<size_t>(rows));
  EXPECT_EQ(emu::launch({rowBlocks(rows), 1, 1}, {256, 1, 1},
                        [&] { k.forward(logits.data(), y, rowLoss.data(), rows, classes, ignoreIndex, smoothing); },
                        schedule),
            "");
  Tensor loss(logits.dtype(), {});
  EXPECT_EQ(emu::launch({1, 1, 1}, {1, 1, 1},
                        [&] { k.mean(rowLoss.data(), y, loss.data(), rows, classes, ignoreIndex); }, schedule),
            "");
  return loss;
}

// amp_cross_entropy_<T>_<L> then amp_cross_entropy_mean_<T>_<L>: the scalar loss of the logits' type.
Tensor deviceLoss(const Tensor& logits, const Tensor& labels, int64_t ignoreIndex, double smoothing,
                  emu::Schedule schedule = emu::Schedule::Forward) {
  const int t = typeCode(logits.dtype());
  return labels.dtype() == DType::I64
             ? deviceLossAs(kI64Kernels[t], logits, labels, ignoreIndex, smoothing, schedule)
             : deviceLossAs(kI32Kernels[t], logits, labels, ignoreIndex, smoothing, schedule);
}

template <class L>
Tensor deviceGradAs(const CeKernels<L>& k, const Tensor& logits, const Tensor& labels, const Tensor& dloss,
                    int64_t ignoreIndex, double smoothing) {
  const int64_t rows = logits.shape()[0], classes = logits.shape()[1];
  const L* y = labels.as<L>();
  long long counted = 12345;  // the scratch need not be initialised
  EXPECT_EQ(emu::launch({1, 1, 1}, {256, 1, 1}, [&] { k.count(y, rows, classes, ignoreIndex, &counted); }), "");
  Tensor dx(logits.dtype(), logits.shape());
  EXPECT_EQ(emu::launch({rowBlocks(rows), 1, 1}, {256, 1, 1},
                        [&] {
                          k.grad(logits.data(), y, dloss.data(), &counted, dx.data(), rows, classes, ignoreIndex,
                                 smoothing);
                        }),
            "");
  return dx;
}

// amp_cross_entropy_count_<L> then amp_cross_entropy_grad_<T>_<L>: dlogits of the logits' type.
Tensor deviceGrad(const Tensor& logits, const Tensor& labels, const Tensor& dloss, int64_t ignoreIndex,
                  double smoothing) {
  const int t = typeCode(logits.dtype());
  return labels.dtype() == DType::I64 ? deviceGradAs(kI64Kernels[t], logits, labels, dloss, ignoreIndex, smoothing)
                                      : deviceGradAs(kI32Kernels[t], logits, labels, dloss, ignoreIndex, smoothing);
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

uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
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
            // The threads of a phase and the blocks run backwards: a race would change the bits.
            expectSameBits(deviceLoss(b.logits, b.labels, ignoreIndex, smoothing, emu::Schedule::Reverse), ref,
                           "loss, reversed schedule");
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

// ---------------------------------------------------------------------------------------------
// amp.mse_loss

using MseKernels = std::pair<void (*)(const void*, const void*, long long, float*),
                             void (*)(const float*, long long, long long, void*)>;
const MseKernels kMseKernels[3] = {{amp_mse_partials_f32, amp_mse_mean_f32},
                                   {amp_mse_partials_bf16, amp_mse_mean_bf16},
                                   {amp_mse_partials_f16, amp_mse_mean_f16}};

// amp_mse_partials_<T> on ceil(n / AMP_MSE_CHUNK) blocks (none for n = 0), then amp_mse_mean_<T>.
Tensor deviceMse(const Tensor& pred, const Tensor& target, emu::Schedule schedule = emu::Schedule::Forward) {
  const MseKernels& k = kMseKernels[typeCode(pred.dtype())];
  const long long n = pred.numel(), blocks = (n + AMP_MSE_CHUNK - 1) / AMP_MSE_CHUNK;
  std::vector<float> partials(static_cast<size_t>(blocks), std::nanf(""));
  if (blocks > 0) {
    EXPECT_EQ(emu::launch({static_cast<unsigned>(blocks), 1, 1}, {256, 1, 1},
                          [&] { k.first(pred.data(), target.data(), n, partials.data()); }, schedule),
              "");
  }
  Tensor loss(pred.dtype(), {});
  EXPECT_EQ(emu::launch({1, 1, 1}, {1, 1, 1}, [&] { k.second(partials.data(), blocks, n, loss.data()); }, schedule),
            "");
  return loss;
}

Tensor referenceMse(const Tensor& pred, const Tensor& target) {
  auto out = evalReferenceOp("amp.mse_loss", {&pred, &target}, AttrMap{}, {{pred.dtype(), {}}}, EvalContext{});
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? (*out)[0] : Tensor();
}

// Integer differences of at most 16 in magnitude: every square and every partial sum (below 2^24)
// is exact in f32, so any order of additions gives the reference's bits, and the kernels must.
TEST(CudaMseKernel, ExactSumsMatchTheReferenceBitForBit) {
  std::mt19937 rng(59);
  std::uniform_int_distribution<int> value(-8, 8);
  for (DType t : kLogitTypes)
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{255}, int64_t{257}, int64_t{AMP_MSE_CHUNK},
                      int64_t{AMP_MSE_CHUNK + 1}, int64_t{3 * AMP_MSE_CHUNK - 7}})
      for (int special = 0; special < 4; ++special) {
        std::vector<float> p(static_cast<size_t>(n)), q(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) {
          p[i] = static_cast<float>(value(rng));
          q[i] = static_cast<float>(value(rng));
        }
        if (n > 0 && special == 1) p[n / 2] = kInf;                        // inf
        if (n > 0 && special == 2) p[n - 1] = std::nanf("");               // NaN
        if (n > 1 && special == 3) {  // inf - inf: NaN
          p[n - 1] = kInf;
          q[n - 1] = kInf;
        }
        SCOPED_TRACE(testing::Message() << name(t) << " n " << n << " special " << special);
        const Tensor pred = fromValues(t, {n}, p), target = fromValues(t, {n}, q);
        expectSameBits(deviceMse(pred, target), referenceMse(pred, target), "mse");
      }
}

// The kernels' documented order, which the reference's one sequential sum does not share: 256
// strided sums and a shared-memory tree inside a block, then the blocks in order. Squares 2^24,
// 1, 0, 1 on threads 0-3: the tree adds 1 + 1 before meeting 2^24, where the reference loses both.
TEST(CudaMseKernel, SumsInTheDocumentedTreeNotTheReferencesOrder) {
  const Tensor pred = fromValues(DType::F32, {4}, {4096.0f, 1.0f, 0.0f, 1.0f});
  const Tensor zero = fromValues(DType::F32, {4}, {0.0f, 0.0f, 0.0f, 0.0f});
  EXPECT_EQ(deviceMse(pred, zero).as<float>()[0], (16777216.0f + 2.0f) / 4.0f);
  EXPECT_EQ(referenceMse(pred, zero).as<float>()[0], 16777216.0f / 4.0f);
  // Across blocks the partials are added in block order: 2^24, then 1 and 1 are each lost, as in
  // the reference (block order reversed would keep them).
  const int64_t n = 2 * AMP_MSE_CHUNK + 1;
  std::vector<float> p(static_cast<size_t>(n), 0.0f), q(static_cast<size_t>(n), 0.0f);
  p[0] = 4096.0f;
  p[AMP_MSE_CHUNK] = 1.0f;
  p[2 * AMP_MSE_CHUNK] = 1.0f;
  const Tensor bigPred = fromValues(DType::F32, {n}, p), bigZero = fromValues(DType::F32, {n}, q);
  EXPECT_EQ(deviceMse(bigPred, bigZero).as<float>()[0], 16777216.0f / static_cast<float>(n));
  expectSameBits(deviceMse(bigPred, bigZero), referenceMse(bigPred, bigZero), "mse");
}

// Random values: within the summation-order bound of the reference (n ulps of the sum), and the
// same bits under the forward and the reversed schedule of the emulated threads and blocks.
TEST(CudaMseKernel, RandomValuesAreWithinTheSummationBoundAndDeterministic) {
  std::mt19937 rng(61);
  std::uniform_real_distribution<float> value(-3.0f, 3.0f);
  for (int64_t n : {int64_t{1000}, int64_t{50000}}) {
    std::vector<float> p(static_cast<size_t>(n)), q(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) p[i] = value(rng), q[i] = value(rng);
    const Tensor pred = fromValues(DType::F32, {n}, p), target = fromValues(DType::F32, {n}, q);
    const float got = deviceMse(pred, target).as<float>()[0], want = referenceMse(pred, target).as<float>()[0];
    EXPECT_NEAR(got, want, want * static_cast<float>(n) * std::numeric_limits<float>::epsilon()) << n;
    EXPECT_EQ(floatBits(deviceMse(pred, target, emu::Schedule::Reverse).as<float>()[0]), floatBits(got)) << n;
  }
}

}  // namespace
}  // namespace amp::rt
