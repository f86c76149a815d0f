// A deterministic batch for a plan, shared by the device tests: every input and label the plan
// declares, float ones drawn from N(0, 1) and integer ones (class labels, token ids) uniform below
// 10, which every example's classes and vocabulary hold. The same seed gives the same batch.
#ifndef AMP_TEST_UNIT_COMMON_RANDOMBATCH_H
#define AMP_TEST_UNIT_COMMON_RANDOMBATCH_H

#include <cstdint>
#include <map>
#include <random>
#include <string>

#include "runtime/Tensor.h"
#include "runtime/plan/Plan.h"

namespace amp::rt::test {

inline std::map<std::string, Tensor> randomBatch(const Plan& plan, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::map<std::string, Tensor> feeds;
  for (const BufferDesc& b : plan.buffers) {
    if (b.kind != BufferKind::Input && b.kind != BufferKind::Label) continue;
    Tensor t(isFloat(b.dtype) ? DType::F32 : DType::I64, b.shape);
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (isFloat(b.dtype)) t.as<float>()[i] = normal(rng);
      else t.as<int64_t>()[i] = static_cast<int64_t>(rng() % 10);
    }
    feeds.emplace(b.name, std::move(t));
  }
  return feeds;
}

}  // namespace amp::rt::test

#endif  // AMP_TEST_UNIT_COMMON_RANDOMBATCH_H
