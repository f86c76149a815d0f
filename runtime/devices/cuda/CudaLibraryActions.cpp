// The cuda device's lowering of the library ops: reductions, the norms and softmax, the shape ops,
// the losses, convolutions and pooling (kernels/ReduceKernels.cu, NormKernels.cu, ShapeKernels.cu,
// LossKernels.cu, ConvKernels.cu; convolutions as implicit GEMMs through ConvGemm.h and
// ConvGatherKernels.cu).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "runtime/devices/cuda/KernelTypes.h"
#include "runtime/devices/cuda/ConvGemm.h"
#include "runtime/devices/cuda/CudaActions.h"
#include "runtime/devices/cuda/LaunchConfig.h"
#include "runtime/devices/cuda/kernels/ConvMath.h"
#include "runtime/devices/cuda/kernels/ReduceArgs.h"
#include "runtime/devices/cuda/kernels/ShapeMath.h"

namespace amp::rt::cuda {

// A reduction over any sorted set of dims: one thread per output element (kernels/ReduceKernels.cu).
absl::Status ActionBuilder::reduce(size_t s) {
  const PlanStep& step = entry_.steps[s];
  if (step.operands.size() != 1 || step.results.size() != 1) return absl::InvalidArgumentError("expected one operand and one result");
  const BufferDesc& x = plan_.buffers[step.operands[0]];
  const BufferDesc& out = plan_.buffers[step.results[0]];
  auto type = floatSuffix(x.dtype);
  if (!type || out.dtype != x.dtype) return absl::InvalidArgumentError("the operand and result must share one float type");
  auto dims = step.attrs.getInts(step.op, "dims");
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
  ++report_.kernels;
  return absl::OkStatus();
}

// Softmax, log_softmax, layer_norm, rms_norm and their gradients: kernels/NormKernels.cu. Every
// kernel takes a block of 256 threads per unit (a slice, a group, or 256 columns), grid-strided.
absl::Status ActionBuilder::normOp(size_t s) {
  const PlanStep& step = entry_.steps[s];
  const BufferDesc& x = plan_.buffers[step.operands.empty() ? 0 : step.operands[0]];
  auto type = floatSuffix(x.dtype);
  if (step.operands.empty() || step.results.empty() || !type)
    return absl::InvalidArgumentError("expected a float operand and a result");
  for (int32_t id : step.operands)
    if (plan_.buffers[id].dtype != x.dtype) return absl::InvalidArgumentError("operands of different types");
  for (int32_t id : step.results)
    if (plan_.buffers[id].dtype != x.dtype) return absl::InvalidArgumentError("results must have the operand's type");
  auto emit = [&](const std::string& name, long long units, auto&& args) -> absl::Status {
    auto fn = kernel(name);
    if (!fn.ok()) return fn.status();
    Action a = launch(name, s);
    a.fn = *fn;
    a.blocks = std::max<long long>(1, std::min<long long>(units, int64_t{8} * api_.info().multiprocessors));
    a.threads = 256;
    args(a);
    actions_.push_back(std::move(a));
    ++report_.kernels;
    return absl::OkStatus();
  };
  auto in = [&](size_t i) { return device<const void>(ptr_[step.operands[i]]); };
  auto out = [&](size_t i) { return device<void>(ptr_[step.results[i]]); };
  if (step.code == OpCode::Softmax || step.code == OpCode::LogSoftmax) {
    auto axis = step.attrs.getInt(step.op, "axis");
    if (!axis.ok()) return axis.status();
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    if (*axis < 0 || *axis >= rank || step.operands.size() != 1 || step.results.size() != 1 ||
        plan_.buffers[step.results[0]].numel() != x.numel())
      return absl::InvalidArgumentError("axis out of range, or a result unlike the operand");
    long long outer = 1, inner = 1;
    for (int64_t d = 0; d < *axis; ++d) outer *= x.shape[static_cast<size_t>(d)];
    for (int64_t d = *axis + 1; d < rank; ++d) inner *= x.shape[static_cast<size_t>(d)];
    const long long len = x.shape[static_cast<size_t>(*axis)];
    if (len == 0 || outer * inner == 0) return absl::OkStatus();
    const long long units = inner == 1 ? outer : outer * ((inner + 255) / 256);
    return emit(absl::StrCat(step.code == OpCode::Softmax ? "amp_softmax_" : "amp_log_softmax_", *type), units,
                [&](Action& a) {
                  a.arg(in(0));
                  a.arg(out(0));
                  a.arg(outer);
                  a.arg(len);
                  a.arg(inner);
                });
  }
  auto ndim = step.attrs.getInt(step.op, "normalized_ndim");
  auto eps = step.attrs.getDouble(step.op, "eps");
  if (!ndim.ok()) return ndim.status();
  if (!eps.ok()) return eps.status();
  if (*ndim < 1 || *ndim > static_cast<int64_t>(x.shape.size()))
    return absl::InvalidArgumentError("normalized_ndim out of range");
  long long n = 1;
  for (size_t d = x.shape.size() - static_cast<size_t>(*ndim); d < x.shape.size(); ++d) n *= x.shape[d];
  const long long groups = n > 0 ? x.numel() / n : 0;
  const bool layer = step.code == OpCode::LayerNorm || step.code == OpCode::LayerNormGrad;
  const bool grad = step.code == OpCode::LayerNormGrad || step.code == OpCode::RmsNormGrad;
  if (!grad) {
    auto hasWeight = step.attrs.getBool(step.op, "has_weight", false);
    auto hasBias = step.attrs.getBool(step.op, "has_bias", false);
    if (!hasWeight.ok()) return hasWeight.status();
    if (!hasBias.ok()) return hasBias.status();
    const bool bias = layer && *hasBias;
    if (step.operands.size() != 1u + *hasWeight + bias || step.results.size() != 1)
      return absl::InvalidArgumentError("operands disagree with has_weight/has_bias");
    const void* weight = *hasWeight ? in(1) : nullptr;
    const void* biasPtr = bias ? in(1 + *hasWeight) : nullptr;
    if (n == 0 || groups == 0) return absl::OkStatus();
    return emit(absl::StrCat(layer ? "amp_layer_norm_" : "amp_rms_norm_", *type), groups, [&](Action& a) {
      a.arg(in(0));
      a.arg(weight);
      if (layer) a.arg(biasPtr);
      a.arg(out(0));
      a.arg(groups);
      a.arg(n);
      a.arg(*eps);
    });
  }
  // Gradients: (x, [weight], dy) -> (dx, dweight[, dbias]); the row pass, then the column pass.
  if ((step.operands.size() != 2 && step.operands.size() != 3) || step.results.size() != (layer ? 3u : 2u))
    return absl::InvalidArgumentError("expected (x, [weight], dy) -> (dx, dweight[, dbias])");
  if (n == 0) return absl::OkStatus();
  const void* weight = step.operands.size() == 3 ? in(1) : nullptr;
  const void* dy = in(step.operands.size() - 1);
  auto stats = scratch(4 * std::max<long long>(1, (layer ? 2 : 1) * groups));
  if (!stats.ok()) return stats.status();
  const std::string prefix = layer ? "amp_layer_norm_grad_" : "amp_rms_norm_grad_";
  if (groups > 0)
    if (auto st = emit(prefix + *type, groups, [&](Action& a) {
          a.arg(in(0));
          a.arg(weight);
          a.arg(dy);
          a.arg(out(0));
          a.arg(device<float>(*stats));
          a.arg(groups);
          a.arg(n);
          a.arg(*eps);
        });
        !st.ok())
      return st;
  return emit(prefix + "affine_" + *type, (n + 255) / 256, [&](Action& a) {
    a.arg(in(0));
    a.arg(dy);
    a.arg(device<const float>(*stats));
    a.arg(out(1));
    if (layer) a.arg(out(2));
    a.arg(groups);
    a.arg(n);
  });
}

// Embedding and its gradient, transpose, gelu_grad and dropout: kernels/ShapeKernels.cu, one launch
// each.
absl::Status ActionBuilder::shapeKernels(size_t s) {
  const PlanStep& step = entry_.steps[s];
  if (step.results.size() != 1 || step.operands.empty()) return absl::InvalidArgumentError("expected one result");
  const BufferDesc& out = plan_.buffers[step.results[0]];
  const BufferDesc& in0 = plan_.buffers[step.operands[0]];
  const int sms = api_.info().multiprocessors;
  auto emit = [&](const std::string& name, int64_t work, auto&& args, int64_t blocksY = 1) -> absl::Status {
    auto fn = kernel(name);
    if (!fn.ok()) return fn.status();
    Action a = launch(name, s);
    a.fn = *fn;
    const LaunchConfig grid = gridStrideLaunch(work, sms);
    a.blocks = std::max<int64_t>(grid.blocks, 1);
    a.blocksY = blocksY;
    a.threads = grid.threads;
    args(a);
    actions_.push_back(std::move(a));
    ++report_.kernels;
    return absl::OkStatus();
  };
  if (step.code == OpCode::Slice || step.code == OpCode::SliceGrad) {
    const bool grad = step.code == OpCode::SliceGrad;
    const BufferDesc& whole = grad ? out : in0;  // the tensor the slice is taken of
    auto starts = step.attrs.getInts(step.op, "starts");
    auto limits = step.attrs.getInts(step.op, "limits");
    auto steps = step.attrs.getInts(step.op, "strides");
    for (const absl::Status& st : {starts.status(), limits.status(), steps.status()})
      if (!st.ok()) return st;
    const size_t rank = whole.shape.size();
    if (starts->size() != rank || limits->size() != rank || steps->size() != rank || out.dtype != in0.dtype)
      return absl::InvalidArgumentError("starts, limits and strides must cover the sliced tensor's dims");
    std::vector<long long> shape(whole.shape.begin(), whole.shape.end()), b(starts->begin(), starts->end()),
        e(limits->begin(), limits->end()), st(steps->begin(), steps->end());
    AmpTransposeShape t = {};
    long long offset = 0;
    if (!amp_shp_slice_shape(&t, static_cast<int>(rank), shape.data(), b.data(), e.data(), st.data(), &offset))
      return absl::UnimplementedError("a slice out of bounds, or with more than 8 dims after merging");
    if (t.elements != (grad ? in0 : out).numel()) return absl::InvalidArgumentError("the slice's size is not the piece's");
    const DevicePtr base = ptr_[grad ? step.results[0] : step.operands[0]];
    const DevicePtr at = base + static_cast<DevicePtr>(offset * static_cast<long long>(dtypeSize(in0.dtype)));
    if (grad && out.byteSize() > 0)
      if (auto z = emit("amp_zero_bytes", out.byteSize(), [&](Action& a) {
            a.arg(device<void>(base));
            a.arg(static_cast<long long>(out.byteSize()));
          });
          !z.ok())
        return z;
    if (t.elements == 0) return absl::OkStatus();
    return emit(absl::StrCat(grad ? "amp_scatter_" : "amp_transpose_", dtypeSize(in0.dtype)), t.elements, [&](Action& a) {
      a.arg(device<const void>(grad ? ptr_[step.operands[0]] : at));
      a.arg(device<void>(grad ? at : ptr_[step.results[0]]));
      a.arg(t);
    });
  }
  if (step.code == OpCode::Concat) {
    auto axis = step.attrs.getInt(step.op, "axis");
    if (!axis.ok()) return axis.status();
    const int64_t rank = static_cast<int64_t>(out.shape.size());
    if (*axis < 0 || *axis >= rank) return absl::InvalidArgumentError("axis out of range");
    int64_t inner = 1;
    for (int64_t d = *axis + 1; d < rank; ++d) inner *= out.shape[static_cast<size_t>(d)];
    const long long row = out.shape[static_cast<size_t>(*axis)] * inner;
    long long at = 0, total = 0;
    for (int32_t id : step.operands) {
      const BufferDesc& in = plan_.buffers[id];
      bool fits = in.dtype == out.dtype && static_cast<int64_t>(in.shape.size()) == rank;
      for (int64_t d = 0; fits && d < rank; ++d) fits = d == *axis || in.shape[static_cast<size_t>(d)] == out.shape[static_cast<size_t>(d)];
      if (!fits) return absl::InvalidArgumentError("operands must match the result outside the axis");
      const long long chunk = in.shape[static_cast<size_t>(*axis)] * inner;
      total += in.numel();
      if (in.numel() > 0)
        if (auto st = emit(absl::StrCat("amp_concat_part_", dtypeSize(in.dtype)), in.numel(), [&](Action& a) {
              a.arg(device<const void>(ptr_[id]));
              a.arg(device<void>(ptr_[step.results[0]]));
              a.arg(static_cast<long long>(in.numel()));
              a.arg(chunk);
              a.arg(row);
              a.arg(at);
            });
            !st.ok())
          return st;
      at += chunk;
    }
    if (total != out.numel()) return absl::InvalidArgumentError("the operands' sizes do not add up to the result's");
    return absl::OkStatus();
  }
  if (step.code == OpCode::Transpose) {
    auto perm = step.attrs.getInts(step.op, "permutation");
    if (!perm.ok()) return perm.status();
    const int rank = static_cast<int>(in0.shape.size());
    if (static_cast<int>(perm->size()) != rank || out.dtype != in0.dtype || out.numel() != in0.numel())
      return absl::InvalidArgumentError("the permutation must cover the input's dims, the result its elements");
    std::vector<long long> shape(in0.shape.begin(), in0.shape.end()), p(perm->begin(), perm->end());
    AmpTransposeShape t = {};
    if (!amp_shp_transpose_shape(&t, rank, shape.data(), p.data()))
      return absl::UnimplementedError("a permutation that is invalid or leaves more than 8 dims after merging");
    if (t.elements == 0) return absl::OkStatus();
    const std::string name = absl::StrCat("amp_transpose_", dtypeSize(in0.dtype));
    return emit(name, t.elements, [&](Action& a) {
      a.arg(device<const void>(ptr_[step.operands[0]]));
      a.arg(device<void>(ptr_[step.results[0]]));
      a.arg(t);
    });
  }
  if (step.code == OpCode::GeluGrad || step.code == OpCode::Dropout) {
    auto type = floatSuffix(in0.dtype);
    if (!type || out.dtype != in0.dtype || out.numel() != in0.numel())
      return absl::InvalidArgumentError("operands and result must share one float type and size");
    const long long n = out.numel();
    if (step.code == OpCode::GeluGrad) {
      if (step.operands.size() != 2 || plan_.buffers[step.operands[1]].dtype != in0.dtype)
        return absl::InvalidArgumentError("expected (x, dy) of one type");
      auto approximate = step.attrs.getString(step.op, "approximate", "none");
      if (!approximate.ok()) return approximate.status();
      if (*approximate != "none" && *approximate != "tanh") return absl::InvalidArgumentError("approximate must be none or tanh");
      return emit(absl::StrCat("amp_gelu_grad_", *approximate == "tanh" ? "tanh_" : "", *type), n, [&](Action& a) {
        a.arg(device<const void>(ptr_[step.operands[0]]));
        a.arg(device<const void>(ptr_[step.operands[1]]));
        a.arg(device<void>(ptr_[step.results[0]]));
        a.arg(n);
      });
    }
    auto rate = step.attrs.getDouble(step.op, "rate");
    auto seed = step.attrs.getInt(step.op, "seed");
    if (!rate.ok()) return rate.status();
    if (!seed.ok()) return seed.status();
    if (!(*rate >= 0.0 && *rate < 1.0)) return absl::InvalidArgumentError("rate must be in [0, 1)");
    return emit(absl::StrCat("amp_dropout_", *type), (n + 3) / 4, [&](Action& a) {
      a.arg(device<const void>(ptr_[step.operands[0]]));
      a.arg(device<void>(ptr_[step.results[0]]));
      a.arg(n);
      a.arg(static_cast<long long>(*seed));
      a.arg(*rate);
      a.arg(device<const long long>(stepWord_));
    });
  }
  // Embedding: the table and ids; its gradient: the ids, dy and num_embeddings.
  const bool grad = step.code == OpCode::EmbeddingGrad;
  if (step.operands.size() != 2) return absl::InvalidArgumentError("expected two operands");
  const BufferDesc& ids = plan_.buffers[step.operands[grad ? 0 : 1]];
  const BufferDesc& values = plan_.buffers[step.operands[grad ? 1 : 0]];
  auto type = floatSuffix(values.dtype);
  if (!type || out.dtype != values.dtype || (ids.dtype != DType::I64 && ids.dtype != DType::I32))
    return absl::InvalidArgumentError("a float table and i64/i32 ids");
  const std::string suffix = absl::StrCat(*type, "_", ids.dtype == DType::I64 ? "i64" : "i32");
  const long long tokens = ids.numel();
  long long rows = 0, dim = 0;
  if (grad) {
    auto v = step.attrs.getInt(step.op, "num_embeddings");
    if (!v.ok()) return v.status();
    rows = *v;
    dim = out.shape.size() == 2 ? out.shape[1] : 0;
    if (out.shape.size() != 2 || out.shape[0] != rows || values.numel() != tokens * dim)
      return absl::InvalidArgumentError("the gradient must be [num_embeddings, D] and dy one row per id");
  } else {
    if (values.shape.size() != 2) return absl::InvalidArgumentError("the table must be [V, D]");
    rows = values.shape[0];
    dim = values.shape[1];
    if (out.numel() != tokens * dim) return absl::InvalidArgumentError("the result must have one row per id");
  }
  if (!grad) {
    if (tokens * dim == 0) return absl::OkStatus();
    return emit("amp_embedding_" + suffix, tokens * dim, [&](Action& a) {
      a.arg(device<const void>(ptr_[step.operands[0]]));
      a.arg(device<const long long>(ptr_[step.operands[1]]));
      a.arg(device<void>(ptr_[step.results[0]]));
      a.arg(tokens);
      a.arg(rows);
      a.arg(dim);
    });
  }
  if (rows * dim == 0) return absl::OkStatus();
  DevicePtr acc = ptr_[step.results[0]];  // f32: the result is its own accumulator
  if (values.dtype != DType::F32) {
    auto scratchAcc = scratch(4 * rows * dim);
    if (!scratchAcc.ok()) return scratchAcc.status();
    acc = *scratchAcc;
  }
  const int64_t gx = (dim + 255) / 256;
  const int64_t gy = std::min<int64_t>({rows, 65535, std::max<int64_t>(1, int64_t{8} * sms / gx)});
  auto fn = kernel("amp_embedding_grad_" + suffix);
  if (!fn.ok()) return fn.status();
  Action a = launch("amp_embedding_grad_" + suffix, s);
  a.fn = *fn;
  a.blocks = gx;
  a.blocksY = gy;
  a.threads = 256;
  a.arg(device<const long long>(ptr_[step.operands[0]]));
  a.arg(device<const void>(ptr_[step.operands[1]]));
  a.arg(device<float>(acc));
  a.arg(device<void>(ptr_[step.results[0]]));
  a.arg(tokens);
  a.arg(rows);
  a.arg(dim);
  actions_.push_back(std::move(a));
  ++report_.kernels;
  return absl::OkStatus();
}

// amp.cross_entropy (row losses, then their mean in row order) and amp.cross_entropy_grad (the
// counted rows, then every gradient element): the launch protocol of kernels/LossKernels.cu.
absl::Status ActionBuilder::crossEntropy(size_t s) {
  const PlanStep& step = entry_.steps[s];
  const bool grad = step.code == OpCode::CrossEntropyGrad;
  if (step.operands.size() != (grad ? 3u : 2u) || step.results.size() != 1)
    return absl::InvalidArgumentError(grad ? "expected (logits, labels, dloss) -> dlogits" : "expected (logits, labels) -> loss");
  const BufferDesc& logits = plan_.buffers[step.operands[0]];
  const BufferDesc& labels = plan_.buffers[step.operands[1]];
  const BufferDesc& out = plan_.buffers[step.results[0]];
  auto type = floatSuffix(logits.dtype);
  if (!type || out.dtype != logits.dtype || (grad && plan_.buffers[step.operands[2]].dtype != logits.dtype))
    return absl::InvalidArgumentError("logits, loss and gradients must share one float type (f32, bf16, f16)");
  if (labels.dtype != DType::I64 && labels.dtype != DType::I32)
    return absl::InvalidArgumentError("labels must be i64 or i32");
  if (logits.shape.size() < 2) return absl::InvalidArgumentError("logits must be [rows, classes]");
  const long long classes = logits.shape.back();
  const long long rows = classes > 0 ? logits.numel() / classes : 0;
  if (labels.numel() != rows) return absl::InvalidArgumentError("one label per row of logits");
  auto ignore = step.attrs.getInt(step.op, "ignore_index", -100);
  auto smoothing = step.attrs.getDouble(step.op, "label_smoothing", 0.0);
  if (!ignore.ok()) return ignore.status();
  if (!smoothing.ok()) return smoothing.status();
  const std::string labelType = labels.dtype == DType::I64 ? "i64" : "i32";
  const std::string suffix = *type + "_" + labelType;
  // Rows are grid-strided, one block each at a time: a wave of the GPU is enough.
  const int64_t rowBlocks = std::max<int64_t>(1, std::min<int64_t>(rows, int64_t{8} * api_.info().multiprocessors));
  auto add = [&](const std::string& name, int64_t blocks, int threads, auto&& args) -> absl::Status {
    auto fn = kernel(name);
    if (!fn.ok()) return fn.status();
    Action a = launch(name, s);
    a.fn = *fn;
    a.blocks = blocks;
    a.threads = threads;
    args(a);
    actions_.push_back(std::move(a));
    ++report_.kernels;
    return absl::OkStatus();
  };
  const DevicePtr x = ptr_[step.operands[0]], y = ptr_[step.operands[1]], result = ptr_[step.results[0]];
  if (!grad) {
    auto rowLoss = scratch(4 * std::max<int64_t>(rows, 1));
    if (!rowLoss.ok()) return rowLoss.status();
    if (auto st = add("amp_cross_entropy_" + suffix, rowBlocks, 256, [&](Action& a) {
          a.arg(device<const void>(x));
          a.arg(device<const void>(y));
          a.arg(device<float>(*rowLoss));
          a.arg(rows);
          a.arg(classes);
          a.arg(static_cast<long long>(*ignore));
          a.arg(*smoothing);
        });
        !st.ok())
      return st;
    return add("amp_cross_entropy_mean_" + suffix, 1, 1, [&](Action& a) {
      a.arg(device<const float>(*rowLoss));
      a.arg(device<const void>(y));
      a.arg(device<void>(result));
      a.arg(rows);
      a.arg(classes);
      a.arg(static_cast<long long>(*ignore));
    });
  }
  auto counted = scratch(8);
  if (!counted.ok()) return counted.status();
  if (auto st = add("amp_cross_entropy_count_" + labelType, 1, 256, [&](Action& a) {
        a.arg(device<const void>(y));
        a.arg(rows);
        a.arg(classes);
        a.arg(static_cast<long long>(*ignore));
        a.arg(device<long long>(*counted));
      });
      !st.ok())
    return st;
  return add("amp_cross_entropy_grad_" + suffix, rowBlocks, 256, [&](Action& a) {
    a.arg(device<const void>(x));
    a.arg(device<const void>(y));
    a.arg(device<const void>(ptr_[step.operands[2]]));
    a.arg(device<const long long>(*counted));
    a.arg(device<void>(result));
    a.arg(rows);
    a.arg(classes);
    a.arg(static_cast<long long>(*ignore));
    a.arg(*smoothing);
  });
}

namespace {

// A pair attribute ([h, w]) of a conv or pooling step, every value at least `least`.
absl::StatusOr<std::pair<long long, long long>> pairAttr(const PlanStep& step, const char* name, long long least) {
  auto v = step.attrs.getInts(step.op, name);
  if (!v.ok()) return v.status();
  if (v->size() != 2 || (*v)[0] < least || (*v)[1] < least)
    return absl::InvalidArgumentError(absl::StrCat("attribute '", name, "' must be two integers >= ", least));
  return std::make_pair(static_cast<long long>((*v)[0]), static_cast<long long>((*v)[1]));
}

}  // namespace

// One thread per result element, a wave of the GPU at a time (grid-strided).
Action ActionBuilder::elementKernel(const std::string& name, size_t s, int64_t elements, KernelFn fn) {
  Action a = launch(name, s);
  a.fn = fn;
  a.threads = 256;
  a.blocks = std::max<int64_t>(1, std::min<int64_t>((elements + 255) / 256, int64_t{8} * api_.info().multiprocessors));
  return a;
}

namespace {

absl::StatusOr<ConvProblem> convProblem(const Plan& plan, const PlanStep& step) {
  ConvProblem out;
  const bool forward = step.code == OpCode::Conv2D, gradInput = step.code == OpCode::Conv2DGradInput;
  out.pass = forward ? ConvPass::Forward : gradInput ? ConvPass::GradInput : ConvPass::GradWeight;
  if (step.results.size() != 1 || step.operands.size() < 2 || step.operands.size() > (forward ? 3u : 2u))
    return absl::InvalidArgumentError("unexpected operands for the convolution");
  // The shapes: x and w of the forward; dy and w (dx the result); x and dy (dw the result).
  const BufferDesc& r = plan.buffers[step.results[0]];
  const BufferDesc& a = plan.buffers[step.operands[0]];
  const BufferDesc& b = plan.buffers[step.operands[1]];
  const Shape& xs = forward || !gradInput ? a.shape : r.shape;
  const Shape& ws = forward || gradInput ? b.shape : r.shape;
  const Shape& ys = forward ? r.shape : gradInput ? a.shape : b.shape;
  if (!floatSuffix(r.dtype) || a.dtype != r.dtype || b.dtype != r.dtype || xs.size() != 4 || ws.size() != 4 || ys.size() != 4)
    return absl::InvalidArgumentError("convolution tensors must be NCHW of one float type");
  out.dtype = r.dtype;
  auto stride = pairAttr(step, "stride", 1), pad = pairAttr(step, "padding", 0), dil = pairAttr(step, "dilation", 1);
  auto groups = step.attrs.getInt(step.op, "groups");
  for (const absl::Status& st : {stride.status(), pad.status(), dil.status(), groups.status()})
    if (!st.ok()) return st;
  AmpConvShape& c = out.shape;
  c.N = xs[0], c.C = xs[1], c.H = xs[2], c.W = xs[3];
  c.O = ws[0], c.CG = ws[1], c.KH = ws[2], c.KW = ws[3], c.OH = ys[2], c.OW = ys[3];
  c.strideH = stride->first, c.strideW = stride->second, c.padH = pad->first, c.padW = pad->second;
  c.dilH = dil->first, c.dilW = dil->second;
  // The shapes must be the ones the kernels' index math assumes (validated plans are).
  const bool consistent = *groups >= 1 && c.C % *groups == 0 && c.O % *groups == 0 && c.CG == c.C / *groups &&
                          ys[0] == c.N && ys[1] == c.O && c.KH >= 1 && c.KW >= 1 &&
                          c.OH == (c.H + 2 * c.padH - c.dilH * (c.KH - 1) - 1) / c.strideH + 1 &&
                          c.OW == (c.W + 2 * c.padW - c.dilW * (c.KW - 1) - 1) / c.strideW + 1 &&
                          c.H + 2 * c.padH - c.dilH * (c.KH - 1) - 1 >= 0 && c.W + 2 * c.padW - c.dilW * (c.KW - 1) - 1 >= 0;
  if (!consistent) return absl::InvalidArgumentError("convolution shapes disagree with its attributes");
  c.OG = c.O / *groups;
  if (forward && step.operands.size() == 3) {
    const BufferDesc& bias = plan.buffers[step.operands[2]];
    if (bias.dtype != r.dtype || bias.shape != Shape{c.O}) return absl::InvalidArgumentError("bias must be [O] of the type");
    out.bias = true;
  }
  return out;
}

bool isConv(const PlanStep& step) {
  return step.code == OpCode::Conv2D || step.code == OpCode::Conv2DGradInput || step.code == OpCode::Conv2DGradWeight;
}

const char* gatherKernel(DType t) { return dtypeSize(t) == 2 ? "amp_conv_gather_b16" : "amp_conv_gather_b32"; }

}  // namespace

// amp.conv2d and its gradients: an implicit GEMM (ConvGemm.h), or the direct, exact kernels
// (ConvKernels.cu) when asked for, or when the GEMM form declines the step.
absl::Status ActionBuilder::convOp(size_t s) {
  const PlanStep& step = entry_.steps[s];
  auto conv = convProblem(plan_, step);
  if (!conv.ok()) return conv.status();
  std::string declined;
  if (options_.conv == ConvAlgorithm::ImplicitGemm) {
    auto done = convAsGemm(s, *conv, &declined);
    if (!done.ok()) return done.status();
    if (*done) return absl::OkStatus();
  }
  const bool forward = conv->pass == ConvPass::Forward, gradInput = conv->pass == ConvPass::GradInput;
  const std::string name = absl::StrCat(forward ? "amp_conv2d_" : gradInput ? "amp_conv2d_grad_input_" : "amp_conv2d_grad_weight_",
                                        *floatSuffix(conv->dtype));
  auto fn = kernel(name);
  if (!fn.ok()) return fn.status();
  Action k = elementKernel(name, s, plan_.buffers[step.results[0]].numel(), *fn);
  if (!declined.empty()) absl::StrAppend(&k.what, " (direct: ", declined, ")");
  k.arg(device<const void>(ptr_[step.operands[0]]));
  k.arg(device<const void>(ptr_[step.operands[1]]));
  if (forward) k.arg(device<const void>(conv->bias ? ptr_[step.operands[2]] : 0));
  k.arg(device<void>(ptr_[step.results[0]]));
  k.arg(conv->shape);
  actions_.push_back(std::move(k));
  ++report_.kernels;
  return absl::OkStatus();
}

absl::StatusOr<DevicePtr> ActionBuilder::convColumns(int64_t needed) {
  if (columns_.ptr && columns_.bytes >= needed) return *columns_.ptr;
  int64_t most = needed;  // more than the plan's largest: an executor given another plan
  for (const EntryPoint& e : plan_.entries)  // the device's rewrites leave convolutions as they are
    for (const PlanStep& step : e.steps) {
      if (!isConv(step)) continue;
      auto conv = convProblem(plan_, step);
      if (!conv.ok()) continue;  // its own lowering reports it
      auto lowered = lowerConvToGemm(conv->pass, conv->dtype, conv->shape, conv->bias, options_.convColumnsLimitBytes);
      if (lowered.ok()) most = std::max(most, lowered->workspaceBytes);
    }
  auto columns = sharedMemory_.device(std::max<int64_t>(most, 1));
  if (!columns.ok()) return columns.status();
  report_.scratchBytes += most;  // counted once, in the entry that allocated it
  columns_.ptr = *columns;
  columns_.bytes = most;
  return *columns;
}

absl::StatusOr<bool> ActionBuilder::convAsGemm(size_t s, const ConvProblem& conv, std::string* declined) {
  const PlanStep& step = entry_.steps[s];
  auto lowered = lowerConvToGemm(conv.pass, conv.dtype, conv.shape, conv.bias, options_.convColumnsLimitBytes);
  if (!lowered.ok()) {
    *declined = std::string(lowered.status().message());
    return false;
  }
  auto gather = kernel(gatherKernel(conv.dtype));
  if (!gather.ok()) {  // a bundle compiled before the gathers existed
    *declined = "the bundle's code has no column gathers; recompile it with this ampc";
    return false;
  }
  absl::StatusOr<DevicePtr> columns = DevicePtr{0};  // a pointwise forward or input gradient needs none
  if (lowered->workspaceBytes > 0) columns = convColumns(lowered->workspaceBytes);
  if (!columns.ok()) return columns.status();
  auto address = [&](const ConvBuffer& b, int64_t chunk) -> DevicePtr {
    const DevicePtr moved = static_cast<DevicePtr>(chunk * b.chunkStride);
    switch (b.kind) {
      case ConvBuffer::Kind::Operand: return ptr_[step.operands[static_cast<size_t>(b.operand)]] + moved;
      case ConvBuffer::Kind::Result: return ptr_[step.results[0]] + moved;
      case ConvBuffer::Kind::Workspace: return *columns + static_cast<DevicePtr>(b.offset);
    }
    return 0;
  };
  // One algorithm serves every chunk: it must work at each chunk's addresses.
  GemmPlan plan = lowered->gemm;
  for (int64_t chunk = 0; chunk < lowered->chunks; ++chunk)
    alignForCall(plan, address(lowered->a, chunk), address(lowered->b, chunk), 0, address(lowered->d, chunk), 0);
  auto id = api_.prepareGemm(plan);
  if (!id.ok() && absl::IsUnimplemented(id.status())) {  // cuBLASLt has no algorithm for the shape
    *declined = std::string(id.status().message());
    return false;
  }
  if (!id.ok()) return id.status();
  for (int64_t chunk = 0; chunk < lowered->chunks; ++chunk) {
    const std::string images =
        lowered->chunks > 1 ? absl::StrCat(", images ", chunk * lowered->shape.N, "..", (chunk + 1) * lowered->shape.N - 1) : "";
    for (const ConvGather& g : lowered->gathers) {
      if (chunk > 0 && !g.everyChunk) continue;
      Action k = elementKernel(gatherKernel(conv.dtype), s, g.elements, *gather);
      absl::StrAppend(&k.what, " ", convGatherName(g.mode), ", ", g.elements, " elements", images);
      k.arg(device<const void>(address(g.source, chunk)));
      k.arg(device<void>(address(g.target, chunk)));
      k.arg(lowered->shape);
      k.arg(static_cast<int>(g.mode));
      actions_.push_back(std::move(k));
      ++report_.kernels;
    }
    pushGemm(s, *id, plan, "implicit GEMM, ", absl::StrCat(plan.accumulate ? " onto the bias" : "", images),
             address(lowered->a, chunk), address(lowered->b, chunk), 0, address(lowered->d, chunk));
  }
  return true;
}

// amp.max_pool2d, amp.avg_pool2d and their gradients (ConvKernels.cu).
absl::Status ActionBuilder::poolOp(size_t s) {
  const PlanStep& step = entry_.steps[s];
  const bool grad = step.code == OpCode::MaxPool2DGrad || step.code == OpCode::AvgPool2DGrad;
  const bool isMax = step.code == OpCode::MaxPool2D || step.code == OpCode::MaxPool2DGrad;
  const size_t operands = step.code == OpCode::MaxPool2DGrad ? 2 : 1;
  if (step.results.size() != 1 || step.operands.size() != operands)
    return absl::InvalidArgumentError("unexpected operands for the pooling");
  const BufferDesc& r = plan_.buffers[step.results[0]];
  const Shape& xs = grad ? r.shape : plan_.buffers[step.operands[0]].shape;
  const Shape& ys = grad ? plan_.buffers[step.operands.back()].shape : r.shape;
  auto type = floatSuffix(r.dtype);
  for (int32_t id : step.operands)
    if (plan_.buffers[id].dtype != r.dtype) type.reset();
  if (!type || xs.size() != 4 || ys.size() != 4) return absl::InvalidArgumentError("pooling tensors must be NCHW of one float type");
  auto k = pairAttr(step, "kernel", 1), stride = pairAttr(step, "stride", 1), pad = pairAttr(step, "padding", 0);
  for (const absl::Status& st : {k.status(), stride.status(), pad.status()})
    if (!st.ok()) return st;
  AmpPoolShape p{};
  p.NC = xs[0] * xs[1], p.H = xs[2], p.W = xs[3], p.OH = ys[2], p.OW = ys[3];
  p.KH = k->first, p.KW = k->second, p.strideH = stride->first, p.strideW = stride->second;
  p.padH = pad->first, p.padW = pad->second;
  const bool consistent = ys[0] == xs[0] && ys[1] == xs[1] && p.padH <= p.KH / 2 && p.padW <= p.KW / 2 &&
                          p.H + 2 * p.padH - p.KH >= 0 && p.W + 2 * p.padW - p.KW >= 0 &&
                          p.OH == (p.H + 2 * p.padH - p.KH) / p.strideH + 1 && p.OW == (p.W + 2 * p.padW - p.KW) / p.strideW + 1;
  if (!consistent) return absl::InvalidArgumentError("pooling shapes disagree with its attributes");
  const std::string name = absl::StrCat(isMax ? "amp_max_pool2d_" : "amp_avg_pool2d_", grad ? "grad_" : "", *type);
  auto fn = kernel(name);
  if (!fn.ok()) return fn.status();
  Action a = elementKernel(name, s, r.numel(), *fn);
  for (int32_t id : step.operands) a.arg(device<const void>(ptr_[id]));
  a.arg(device<void>(ptr_[step.results[0]]));
  a.arg(p);
  actions_.push_back(std::move(a));
  ++report_.kernels;
  return absl::OkStatus();
}

// amp.mse_loss: per-block sums of squares in a fixed tree, then their mean (LossKernels.cu).
absl::Status ActionBuilder::mseLoss(size_t s) {
  const PlanStep& step = entry_.steps[s];
  if (step.operands.size() != 2 || step.results.size() != 1) return absl::InvalidArgumentError("expected (pred, target) -> loss");
  const BufferDesc& pred = plan_.buffers[step.operands[0]];
  const BufferDesc& target = plan_.buffers[step.operands[1]];
  const BufferDesc& loss = plan_.buffers[step.results[0]];
  auto type = floatSuffix(pred.dtype);
  if (!type || target.dtype != pred.dtype || target.shape != pred.shape || loss.dtype != pred.dtype || loss.numel() != 1)
    return absl::InvalidArgumentError("pred and target must have one float type and shape, the loss a scalar of it");
  constexpr int64_t kChunk = 16384;  // AMP_MSE_CHUNK
  const long long n = pred.numel();
  const long long blocks = (n + kChunk - 1) / kChunk;
  if (blocks > int64_t{2147483647}) return absl::InvalidArgumentError("mse_loss over more than 2^31 - 1 chunks");
  auto partials = scratch(4 * std::max<int64_t>(blocks, 1));
  if (!partials.ok()) return partials.status();
  if (blocks > 0) {
    auto fn = kernel("amp_mse_partials_" + *type);
    if (!fn.ok()) return fn.status();
    Action a = launch("amp_mse_partials_" + *type, s);
    a.fn = *fn;
    a.blocks = blocks;
    a.threads = 256;
    a.arg(device<const void>(ptr_[step.operands[0]]));
    a.arg(device<const void>(ptr_[step.operands[1]]));
    a.arg(n);
    a.arg(device<float>(*partials));
    actions_.push_back(std::move(a));
    ++report_.kernels;
  }
  auto fn = kernel("amp_mse_mean_" + *type);
  if (!fn.ok()) return fn.status();
  Action a = launch("amp_mse_mean_" + *type, s);
  a.fn = *fn;
  a.blocks = 1;
  a.threads = 1;
  a.arg(device<const float>(*partials));
  a.arg(blocks);
  a.arg(n);
  a.arg(device<void>(ptr_[step.results[0]]));
  actions_.push_back(std::move(a));
  ++report_.kernels;
  return absl::OkStatus();
}

}  // namespace amp::rt::cuda
