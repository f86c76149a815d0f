#include "runtime/train/Evaluate.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "runtime/numerics/Convert.h"
#include "runtime/train/BatchFeeds.h"
#include "runtime/train/Scalars.h"

namespace amp::rt {

absl::StatusOr<EvalResult> evaluate(Session& session, const Dataset& data) {
  auto b = findBatchBindings(session.plan());
  if (!b.ok()) return b.status();
  int64_t n = data.size(), batch = b->batch;
  if (n == 0) return absl::InvalidArgumentError(absl::StrCat(data.name, ": no examples to evaluate"));
  int64_t correct = 0, counted = 0, fullBatches = 0;
  double lossSum = 0;
  for (int64_t start = 0; start < n; start += batch) {
    std::vector<int64_t> idx;
    int64_t real = std::min(batch, n - start);
    for (int64_t i = 0; i < batch; ++i) idx.push_back(start + (i < real ? i : 0));  // pad, count only real
    auto feeds = feedBatch(*b, data, idx);
    if (!feeds.ok()) return feeds.status();
    auto outs = session.run("eval", *feeds);
    if (!outs.ok()) return outs.status();
    if (outs->size() < 2)
      return absl::InvalidArgumentError("the eval entry returns no logits (a second result) to score");
    const Tensor& logits = (*outs)[1].tensor;
    const Tensor& labels = feeds->at(b->label->name);
    int64_t perExample = labels.numel() / batch;
    int64_t classes = labels.numel() ? logits.numel() / labels.numel() : 0;
    if (classes < 1 || classes * labels.numel() != logits.numel())
      return absl::InvalidArgumentError("the eval entry's logits do not have one row per label");
    for (int64_t row = 0; row < real * perExample; ++row) {
      int64_t best = 0;
      float bestValue = loadAsF32(logits.dtype(), logits.data(), row * classes);
      for (int64_t c = 1; c < classes; ++c) {
        float v = loadAsF32(logits.dtype(), logits.data(), row * classes + c);
        if (v > bestValue) bestValue = v, best = c;
      }
      int64_t label = labels.dtype() == DType::I64 ? labels.as<int64_t>()[row] : labels.as<int32_t>()[row];
      correct += best == label;
      ++counted;
    }
    if (real == batch) {
      lossSum += scalarOf((*outs)[0].tensor);
      ++fullBatches;
    }
  }
  EvalResult r;
  r.accuracy = static_cast<double>(correct) / static_cast<double>(counted);
  r.loss = fullBatches ? lossSum / fullBatches : 0;
  return r;
}

}  // namespace amp::rt
