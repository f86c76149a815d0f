// The cuda device's lowering of amp.reduce_sum/mean/max (kernels/ReduceKernels.cu).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "runtime/devices/cuda/CudaActions.h"
#include "runtime/devices/cuda/KernelTypes.h"
#include "runtime/devices/cuda/LaunchConfig.h"
#include "runtime/kernels/cuda/ReduceArgs.h"

namespace amp::rt::cuda {

// A reduction over any sorted set of dims: one thread per output element (kernels/ReduceKernels.cu).
absl::Status ActionBuilder::reduce(size_t s) {
  const PlanStep& step = entry_.steps[s];
  if (step.operands.size() != 1 || step.results.size() != 1) return absl::InvalidArgumentError("expected one operand and one result");
  const BufferDesc& x = plan_.buffers[step.operands[0]];
  const BufferDesc& out = plan_.buffers[step.results[0]];
  auto type = floatSuffix(x.dtype);
  if (!type || out.dtype != x.dtype) return absl::InvalidArgumentError("the operand and result must share one float type");
  auto dims = step.withAttrsOf<ReduceSumAttrs, ReduceMeanAttrs, ReduceMaxAttrs>([](const auto& a) { return a.dims; });
  if (!dims.ok()) return dims.status();
  const int rank = static_cast<int>(x.shape.size());
  if (rank > AMP_REDUCE_MAX_DIMS) return absl::UnimplementedError(absl::StrCat("reductions of rank above ", AMP_REDUCE_MAX_DIMS));
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (size_t i = 0; i < dims->size(); ++i) {
    const int64_t d = (*dims)[i];
    if (d < 0 || d >= rank || (i > 0 && d <= (*dims)[i - 1]))
      return absl::InvalidArgumentError("attribute 'dims' must be sorted, unique and in range");
    reduced[static_cast<size_t>(d)] = true;
  }
  AmpReduceShape shape = {};
  long long stride = 1;
  std::vector<long long> strides(static_cast<size_t>(rank));
  for (int d = rank - 1; d >= 0; --d) {
    strides[static_cast<size_t>(d)] = stride;
    stride *= x.shape[static_cast<size_t>(d)];
  }
  shape.outputs = 1;
  shape.reducedCount = 1;
  for (int d = 0; d < rank; ++d) {
    const long long size = x.shape[static_cast<size_t>(d)];
    if (reduced[static_cast<size_t>(d)]) {
      shape.reducedSize[shape.reducedDims] = size;
      shape.reducedStride[shape.reducedDims++] = strides[static_cast<size_t>(d)];
      shape.reducedCount *= size;
    } else {
      shape.keptSize[shape.keptDims] = size;
      shape.keptStride[shape.keptDims++] = strides[static_cast<size_t>(d)];
      shape.outputs *= size;
    }
  }
  if (shape.outputs != out.numel()) return absl::InvalidArgumentError("the result's size is not the kept dims'");
  if (step.code == OpCode::ReduceMax && shape.reducedCount == 0 && shape.outputs > 0)
    return absl::InvalidArgumentError("maximum over an empty set of elements");
  const char* kind = step.code == OpCode::ReduceSum ? "sum" : step.code == OpCode::ReduceMean ? "mean" : "max";
  const std::string name = absl::StrCat("amp_reduce_", kind, "_", *type);
  auto fn = kernel(name);
  if (!fn.ok()) return fn.status();
  Action a = launch(name, s);
  a.fn = *fn;
  const LaunchConfig grid = gridStrideLaunch(shape.outputs, api_.info().multiprocessors);
  a.blocks = grid.blocks;
  a.threads = grid.threads;
  a.arg(device<const void>(ptr_[step.operands[0]]));
  a.arg(device<void>(ptr_[step.results[0]]));
  a.arg(shape);
  if (a.blocks > 0) actions_.push_back(std::move(a));
  report_.add(kGeneratedKernels);
  return absl::OkStatus();
}

}  // namespace amp::rt::cuda
