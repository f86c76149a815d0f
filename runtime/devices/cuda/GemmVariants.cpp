#include "runtime/devices/cuda/GemmVariants.h"

namespace amp::rt::cuda {

std::vector<GemmVariant> gemmVariants(const GemmPlan& planned, bool trainingEpilogue, bool libraryPasses) {
  GemmVariant first;
  first.plan = planned;
  if (trainingEpilogue || !libraryPasses) return {first};
  if (planned.epilogue == GemmEpilogue::ReluBias || planned.epilogue == GemmEpilogue::Relu) {
    first.relu = true;
    first.plan.epilogue = planned.epilogue == GemmEpilogue::ReluBias ? GemmEpilogue::Bias : GemmEpilogue::None;
  }
  std::vector<GemmVariant> variants{first};
  if (first.plan.epilogue == GemmEpilogue::Bias && !planned.accumulate) {
    GemmVariant v = first;
    v.plan.epilogue = GemmEpilogue::None;
    v.plan.accumulate = true;
    v.plan.alignment.bias = 256;  // no bias pointer any more
    v.biasRows = true;
    v.change = "DEFAULT onto the bias rows";
    variants.push_back(v);
  }
  if (planned.batch > 1) {
    GemmVariant v = variants.back();
    v.plan.batch = 1;
    v.plan.strideA = v.plan.strideB = v.plan.strideC = 0;
    v.perBatch = true;
    v.change = v.change.empty() ? "one call per batch" : v.change + ", one call per batch";
    variants.push_back(v);
  }
  return variants;
}

}  // namespace amp::rt::cuda
