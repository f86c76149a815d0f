// Internal to the reference kernels: the loss-scaling, clipping, schedule and optimizer kernels
// (ir/AmpTrainOps.td). Several of these ops have more than one result, so they are MultiKernels.
// docs/reference-executor.md ("Training ops") gives each formula's exact f32 order.
#ifndef AMP_RUNTIME_REFERENCE_REFERENCETRAIN_H
#define AMP_RUNTIME_REFERENCE_REFERENCETRAIN_H

#include <vector>

#include "runtime/reference/ReferenceCommon.h"

namespace amp::rt::ref {

// A kernel with any number of results; it must return exactly c.results.size() tensors.
using MultiKernel = absl::StatusOr<std::vector<Tensor>> (*)(const OpCall&);

absl::StatusOr<std::vector<Tensor>> evalUnscaleCheck(const OpCall& c);
absl::StatusOr<std::vector<Tensor>> evalGradStats(const OpCall& c);
// amp.all_reduce through the context's communicator (ReferenceCollective.cpp).
absl::StatusOr<std::vector<Tensor>> evalAllReduce(const OpCall& c);
// ZeRO-1: amp.reduce_scatter, amp.all_gather (communicating) and amp.rank_chunk (local).
absl::StatusOr<std::vector<Tensor>> evalReduceScatter(const OpCall& c);
absl::StatusOr<std::vector<Tensor>> evalAllGather(const OpCall& c);
absl::StatusOr<Tensor> evalRankChunk(const OpCall& c);
absl::StatusOr<std::vector<Tensor>> evalUpdateScale(const OpCall& c);
absl::StatusOr<std::vector<Tensor>> evalClipGrads(const OpCall& c);
absl::StatusOr<std::vector<Tensor>> evalStepCounters(const OpCall& c);
absl::StatusOr<std::vector<Tensor>> evalSgdUpdate(const OpCall& c);
absl::StatusOr<std::vector<Tensor>> evalAdamUpdate(const OpCall& c);
absl::StatusOr<Tensor> evalGlobalNorm(const OpCall& c);
absl::StatusOr<Tensor> evalLrSchedule(const OpCall& c);

}  // namespace amp::rt::ref

#endif  // AMP_RUNTIME_REFERENCE_REFERENCETRAIN_H
